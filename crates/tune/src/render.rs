//! Text forms of a plan: the human diff and a reviewable shell script.
//!
//! A plan may come from a file someone else wrote (`apply --plan FILE`), so
//! nothing in it reaches the terminal or the script raw: control characters
//! are shown escaped (`\n`, `\u{1b}`), every shell word is quoted unless it
//! is plainly safe, comments stay on one line, and a here-document's
//! delimiter never occurs in its body.

use model::knobpath;
use model::plan::{EthtoolGroup, Plan, Target};
use std::collections::BTreeSet;
use std::fmt::Write;

/// `s` with control characters escaped (the one shared escaping, `\x1b`), so
/// that text from a plan file can neither move the cursor nor start a new
/// line (of a script, a shell command).
use model::text::printable as visible;

/// The human view: per phase, `- before` / `+ after` with one line of reason,
/// then the notes and the rules used with their sources.
pub fn human(plan: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Plan: profile {} for {} (fingerprint {}, {} namespace): {} change{}",
        visible(&plan.profile),
        visible(plan.hostname.as_deref().unwrap_or("host")),
        visible(&plan.fingerprint),
        match plan.scope {
            model::plan::NetnsScope::Init => "initial",
            model::plan::NetnsScope::Child => "child",
        },
        plan.changes.len(),
        if plan.changes.len() == 1 { "" } else { "s" }
    );
    let mut phase = None;
    for c in &plan.changes {
        if phase != Some(c.phase) {
            phase = Some(c.phase);
            let _ = writeln!(o, "\n[{}]", c.phase);
        }
        let t = c.target.describe();
        let t = visible(&t);
        let before = visible(c.before.as_deref().unwrap_or("(unknown)"));
        let _ = writeln!(o, "- {t} = {before}");
        let _ = writeln!(o, "+ {t} = {}", visible(&c.after));
        let _ = writeln!(o, "    {} [{}]", visible(&c.reason), c.rule);
    }
    if plan.changes.is_empty() {
        let _ = writeln!(o, "\nNothing to change.");
    }
    if !plan.notes.is_empty() {
        let _ = writeln!(o, "\nNotes:");
        for n in &plan.notes {
            let _ = writeln!(o, "  [{}] {}", visible(&n.rule), visible(&n.message));
        }
    }
    let used: BTreeSet<&str> = plan.changes.iter().map(|c| c.rule.as_str()).collect();
    if !used.is_empty() {
        let _ = writeln!(o, "\nRules:");
        for r in crate::rules::CATALOGUE {
            if used.contains(r.id().as_str()) {
                let _ = writeln!(o, "  {}: {}", r.id(), r.rationale());
                let _ = writeln!(o, "      source: {}", r.source());
            }
        }
    }
    o
}

/// One shell word for `s`: as it is when plainly safe, single-quoted
/// otherwise, and built by `printf '%b'` from octal escapes when it holds
/// control characters (so the script stays one line per command and prints
/// nothing raw to the terminal).
fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || ",.-_/:=".contains(c))
    {
        s.to_string()
    } else if !s.chars().any(char::is_control) {
        format!("'{}'", s.replace('\'', "'\\''"))
    } else {
        let mut esc = String::new();
        for c in s.chars() {
            if c == '\\' {
                esc.push_str("\\\\");
            } else if c.is_control() {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    esc.push_str(&format!("\\0{b:03o}"));
                }
            } else {
                esc.push(c);
            }
        }
        format!("\"$(printf '%b' '{}')\"", esc.replace('\'', "'\\''"))
    }
}

/// A command that prints `value` and a newline: `echo` as field notes write it,
/// `printf '%s\n'` when `echo` could read the value as an option or escapes.
fn print_cmd(value: &str) -> String {
    if value.starts_with('-') || value.contains('\\') || value.chars().any(char::is_control) {
        format!("printf '%s\\n' {}", sh_quote(value))
    } else {
        format!("echo {}", sh_quote(value))
    }
}

/// `ethtool -L/-G/-C IF ATTR VALUE`, spelled as ethtool(8) takes it.
fn ethtool_cmd(iface: &str, group: EthtoolGroup, attr: &str, value: &str) -> String {
    let args = knobpath::ethtool_set_args(iface, group, attr, value);
    let quoted: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
    format!("ethtool {}", quoted.join(" "))
}

/// A shell command writing `content` (its trailing newlines trimmed) to
/// `path`: a quoted here-document, or `printf` when the text has control
/// characters a here-document would carry raw.
fn write_file_cmd(content: &str, path: &str) -> String {
    let body = content.trim_end();
    if body
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        format!("{} > {}", print_cmd(body), sh_quote(path))
    } else {
        let end = heredoc_delimiter(body);
        format!("cat > {} <<'{end}'\n{body}\n{end}", sh_quote(path))
    }
}

/// `EOF`, or `EOF_1`, `EOF_2`... whichever is not a line of `body` (linear:
/// at most one candidate per line is taken).
fn heredoc_delimiter(body: &str) -> String {
    let lines: BTreeSet<&str> = body.lines().filter(|l| l.starts_with("EOF")).collect();
    let mut end = "EOF".to_string();
    let mut n = 0u64;
    while lines.contains(end.as_str()) {
        n += 1;
        end = format!("EOF_{n}");
    }
    end
}

/// A shell script with the same writes as `apply`, for review. Module
/// parameters go to a modprobe.d snippet the script only prints.
pub fn script(plan: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "#!/bin/sh");
    let _ = writeln!(
        o,
        "# nettune plan, profile {} for {} (fingerprint {}).",
        visible(&plan.profile),
        visible(plan.hostname.as_deref().unwrap_or("host")),
        visible(&plan.fingerprint)
    );
    let _ = writeln!(
        o,
        "# Review before running. `nettune apply` does the same writes with a rollback journal."
    );
    let _ = writeln!(o, "set -e");
    let mut phase = None;
    for c in &plan.changes {
        if phase != Some(c.phase) {
            phase = Some(c.phase);
            let _ = writeln!(o, "\n# --- {} ---", c.phase);
        }
        let _ = writeln!(
            o,
            "# {} (was {}) [{}]",
            visible(&c.reason),
            visible(c.before.as_deref().unwrap_or("unknown")),
            c.rule
        );
        let line = match &c.target {
            Target::File { path, .. }
                if model::irqbalance_env::ENV_PATHS.contains(&path.as_str()) =>
            {
                // The whole file, then a restart so irqbalance rereads it.
                let write = write_file_cmd(&c.after, path);
                format!("{write}\nsystemctl try-restart irqbalance")
            }
            Target::File { path, .. } => format!("{} > {}", print_cmd(&c.after), sh_quote(path)),
            Target::IrqAffinity { irq, .. } => format!(
                "{} > {}",
                print_cmd(&c.after),
                model::plan::irq_affinity_path(*irq)
            ),
            Target::Ethtool { iface, group, attr } => ethtool_cmd(iface, *group, attr, &c.after),
            Target::Service { name } => {
                if c.after == "stopped" {
                    format!("systemctl stop {}", sh_quote(name))
                } else {
                    format!("systemctl start {}", sh_quote(name))
                }
            }
            Target::Created { path, what } => match what {
                model::plan::CreatedKind::File => write_file_cmd(&c.after, path),
                model::plan::CreatedKind::Symlink => {
                    format!("ln -s {} {}", sh_quote(&c.after), sh_quote(path))
                }
                model::plan::CreatedKind::Dir => format!("mkdir {}", sh_quote(path)),
            },
            Target::ModuleParam { module, param } => format!(
                "{} > {}  # effective on module reload, which drops the link of every port it drives",
                print_cmd(&format!("options {module} {param}={}", c.after)),
                sh_quote(&format!("/etc/modprobe.d/nettune-{module}.conf"))
            ),
        };
        let _ = writeln!(o, "{line}");
    }
    if !plan.notes.is_empty() {
        let _ = writeln!(o, "\n# Notes:");
        for n in &plan.notes {
            let _ = writeln!(o, "#   [{}] {}", visible(&n.rule), visible(&n.message));
        }
    }
    o
}
