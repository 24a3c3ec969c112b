//! `apply --plan FILE --dry-run` prints a plan someone else may have written
//! as a shell script and a diff. Nothing in the plan may become a command of
//! the script or a control sequence on the terminal.

#![allow(clippy::unwrap_used)]

use model::plan::*;
use nettune_tune as tune;

const BAD: &str = "reboot";

fn change(target: Target, after: &str) -> Change {
    Change {
        phase: Phase::Sysctls,
        knob: "k\nreboot".into(),
        target,
        before: Some("b\nreboot".into()),
        after: after.into(),
        // A typed origin: a hostile word cannot be read (see
        // `a_hostile_rule_word_is_refused_when_read`).
        rule: RuleId::Rps.into(),
        reason: "why\nreboot\r\u{1b}[2J".into(),
        source: "s".into(),
    }
}

fn hostile_plan() -> Plan {
    let file = |path: &str| Target::File {
        path: path.into(),
        format: ValueFormat::Text,
    };
    let created = |path: &str, what| Target::Created {
        path: path.into(),
        what,
    };
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        profile: "p\nreboot".into(),
        profile_toml: None,
        fingerprint: "\u{1b}]0;x\u{7}".into(),
        hostname: Some("h\nreboot".into()),
        options: PlanOptions::default(),
        scope: NetnsScope::Init,
        changes: vec![
            change(file("/proc/sys/$(reboot)"), "1'; reboot; '"),
            change(file("/proc/sys/net/core/rmem_max"), "1\nreboot"),
            change(
                Target::IrqAffinity {
                    irq: 5,
                    iface: "eth0".into(),
                },
                "0\nreboot",
            ),
            change(
                Target::Ethtool {
                    iface: "eth0;reboot".into(),
                    group: EthtoolGroup::Coalesce,
                    attr: "rx-usecs;reboot".into(),
                },
                "$(reboot)",
            ),
            change(
                Target::Service {
                    name: "irqbalance;reboot".into(),
                },
                "stopped",
            ),
            change(
                Target::ModuleParam {
                    module: "e1000;reboot".into(),
                    param: "x'y".into(),
                },
                "3'; reboot; '",
            ),
            change(
                created("/etc/x y", CreatedKind::File),
                "line\nEOF\nreboot\nEOF_1\n",
            ),
            change(created("/a;reboot", CreatedKind::Symlink), "$(reboot)"),
            change(created("/d`reboot`", CreatedKind::Dir), ""),
        ],
        notes: vec![PlanNote {
            rule: "n".into(),
            message: "m\nreboot".into(),
        }],
    }
}

/// The shell words outside single quotes of each command line (comments and
/// here-document bodies are not commands).
fn unquoted_command_text(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut heredoc: Option<String> = None;
    for line in script.lines() {
        if let Some(end) = &heredoc {
            if line == end {
                heredoc = None;
            }
            continue;
        }
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut bare = String::new();
        let mut quoted = false;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            if c == '\'' {
                quoted = !quoted;
            } else if !quoted && c == '\\' {
                chars.next(); // an escaped character outside quotes is literal
            } else if !quoted {
                bare.push(c);
            }
        }
        assert!(!quoted, "unbalanced quotes: {line}");
        // The one substitution the renderer writes itself, for words with
        // control characters: "$(printf '%b' 'octal escapes')".
        let bare = bare.replace("\"$(printf  )\"", "");
        if let Some(i) = line.find("<<'") {
            let rest = &line[i + 3..];
            heredoc = Some(rest[..rest.find('\'').unwrap()].to_string());
        }
        out.push(bare);
    }
    assert!(heredoc.is_none(), "here-document not closed");
    out
}

#[test]
fn nothing_in_a_plan_becomes_a_command_of_the_script() {
    let script = tune::render::script(&hostile_plan());
    // It is valid shell.
    if let Ok(mut sh) = std::process::Command::new("sh")
        .arg("-n")
        .stdin(std::process::Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        sh.stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        assert!(sh.wait().unwrap().success(), "sh -n refused:\n{script}");
    }
    let bare = unquoted_command_text(&script);
    assert!(bare.len() >= 9, "{script}");
    for b in &bare {
        assert!(
            !b.contains(BAD) && !b.contains("$(") && !b.contains('`') && !b.contains(';'),
            "command text outside quotes: {b:?}\n{script}"
        );
    }
    assert!(
        !script.chars().any(|c| c.is_control() && c != '\n'),
        "{script:?}"
    );
    // The created file's body is kept as it is, under a delimiter it does not hold.
    assert!(
        script.contains("<<'EOF_2'\nline\nEOF\nreboot\nEOF_1\nEOF_2\n"),
        "{script}"
    );
}

#[test]
fn the_diff_shows_control_characters_escaped() {
    let text = tune::render::human(&hostile_plan());
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(!text.lines().any(|l| l.trim() == BAD), "{text}");
    assert!(text.contains("why\\x0areboot"), "{text}");
}

/// A plan file's `rule` is one of the known words: anything else (a control
/// sequence, a command) is refused when the plan is read, so it never reaches
/// the script or the terminal.
#[test]
fn a_hostile_rule_word_is_refused_when_read() {
    let mut plan = hostile_plan();
    plan.changes.truncate(1);
    let good = serde_json::to_string(&plan).unwrap();
    assert!(Plan::from_json(&good).is_ok());
    let bad = good.replace("\"rule\":\"rps\"", "\"rule\":\"r\\nreboot\"");
    assert_ne!(bad, good);
    let e = Plan::from_json(&bad).unwrap_err().to_string();
    assert!(e.contains("unknown rule"), "{e}");
    assert!(!e.contains('\n'), "{e:?}");
}
