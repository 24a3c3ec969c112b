//! Text forms of a plan: the human diff and a reviewable shell script.

use model::knobpath;
use model::plan::{EthtoolGroup, Plan, Target};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The human view: per phase, `- before` / `+ after` with one line of reason,
/// then the notes and the rules used with their sources.
pub fn human(plan: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Plan: profile {} for {} (fingerprint {}, {} namespace): {} change{}",
        plan.profile,
        plan.hostname.as_deref().unwrap_or("host"),
        plan.fingerprint,
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
        let _ = writeln!(o, "- {t} = {}", c.before.as_deref().unwrap_or("(unknown)"));
        let _ = writeln!(o, "+ {t} = {}", c.after);
        let _ = writeln!(o, "    {} [{}]", c.reason, c.rule);
    }
    if plan.changes.is_empty() {
        let _ = writeln!(o, "\nNothing to change.");
    }
    if !plan.notes.is_empty() {
        let _ = writeln!(o, "\nNotes:");
        for n in &plan.notes {
            let _ = writeln!(o, "  [{}] {}", n.rule, n.message);
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

fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || ",.-_/:=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// `ethtool -L/-G/-C IF ATTR VALUE`, spelled as ethtool(8) takes it.
fn ethtool_cmd(iface: &str, group: EthtoolGroup, attr: &str, value: &str) -> String {
    let args = knobpath::ethtool_set_args(iface, group, attr, value);
    let quoted: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
    format!("ethtool {}", quoted.join(" "))
}

/// A shell script with the same writes as `apply`, for review. Module
/// parameters go to a modprobe.d snippet the script only prints.
pub fn script(plan: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "#!/bin/sh");
    let _ = writeln!(
        o,
        "# nettune plan, profile {} for {} (fingerprint {}).",
        plan.profile,
        plan.hostname.as_deref().unwrap_or("host"),
        plan.fingerprint
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
            c.reason,
            c.before.as_deref().unwrap_or("unknown"),
            c.rule
        );
        let line = match &c.target {
            Target::File { path, .. } => format!("echo {} > {path}", sh_quote(&c.after)),
            Target::IrqAffinity { irq, .. } => {
                format!(
                    "echo {} > {}",
                    sh_quote(&c.after),
                    model::plan::irq_affinity_path(*irq)
                )
            }
            Target::Ethtool { iface, group, attr } => ethtool_cmd(iface, *group, attr, &c.after),
            Target::Service { name } => {
                if c.after == "stopped" {
                    format!("systemctl stop {name}")
                } else {
                    format!("systemctl start {name}")
                }
            }
            Target::Created { path, what } => match what {
                model::plan::CreatedKind::File => format!("cat > {path} <<'EOF'\n{}\nEOF", c.after.trim_end()),
                model::plan::CreatedKind::Symlink => format!("ln -s {} {path}", sh_quote(&c.after)),
                model::plan::CreatedKind::Dir => format!("mkdir {path}"),
            },
            Target::ModuleParam { module, param } => format!(
                "echo 'options {module} {param}={}' > /etc/modprobe.d/nettune-{module}.conf  # effective on module reload",
                c.after
            ),
        };
        let _ = writeln!(o, "{line}");
    }
    if !plan.notes.is_empty() {
        let _ = writeln!(o, "\n# Notes:");
        for n in &plan.notes {
            let _ = writeln!(o, "#   [{}] {}", n.rule, n.message);
        }
    }
    o
}
