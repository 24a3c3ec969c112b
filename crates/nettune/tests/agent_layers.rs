//! The agent answers from the library (`nettune::ops` and the crates), not
//! from other commands' modules: a command's flags, help and printing may
//! change without the agent's answers changing with them.

use std::path::Path;

/// Modules of `cmd` the agent may name: its own watchdog, and the command
/// line it parses a `bench` request's arguments with.
const ALLOWED: [&str; 2] = ["agent_watchdog", "cli"];

fn commands() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("src/cmd") {
        let name = e
            .expect("src/cmd entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        let stem = name.strip_suffix(".rs").unwrap_or(&name).to_string();
        if stem != "agent" && stem != "mod" {
            out.push(stem);
        }
    }
    out
}

fn agent_sources() -> Vec<(String, String)> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let mut files = vec![base.join("agent.rs")];
    for e in std::fs::read_dir(base.join("agent")).expect("src/cmd/agent") {
        files.push(e.expect("src/cmd/agent entry").path());
    }
    files
        .into_iter()
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).expect("agent source"),
            )
        })
        .collect()
}

#[test]
fn the_agent_names_no_other_commands_module() {
    let cmds = commands();
    assert!(cmds.iter().any(|c| c == "doctor"), "{cmds:?}");
    let mut found = Vec::new();
    for (file, text) in agent_sources() {
        for c in cmds.iter().filter(|c| !ALLOWED.contains(&c.as_str())) {
            for prefix in ["super::", "crate::cmd::"] {
                let needle = format!("{prefix}{c}::");
                // `super::` inside cmd/agent/*.rs is the agent itself.
                if prefix == "super::" && file.contains("/agent/") {
                    continue;
                }
                if text.contains(&needle) || text.contains(&format!("use {prefix}{c}::")) {
                    found.push(format!("{file}: {needle}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the agent calls commands' modules: {found:#?}"
    );
}
