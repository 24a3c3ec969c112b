//! Issue 16, item 11: `nettune inspect | head` and the like. A command whose
//! reader closed the pipe stops quietly with exit 0 (docs/exit-codes.md),
//! never std's panic "failed printing to stdout: Broken pipe" and exit 101.

#![allow(clippy::unwrap_used)]

mod fixture_copy;

use fixture_copy::{bin, copy, fixture};
use std::process::Stdio;

/// Run `args` with stdout a pipe whose read end is closed before the
/// command starts, so its first write fails with EPIPE whatever the timing.
fn run_closed(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn assert_quiet(args: &[&str]) {
    let (code, err) = run_closed(args);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    assert_eq!(code, Some(0), "{args:?}: {err}");
}

#[test]
fn every_printing_command_exits_quietly_on_a_closed_pipe() {
    let c = copy("nic-ena-allowance");
    let root = c.root.to_str().unwrap();
    let state = c.state.to_str().unwrap();
    let c4 = fixture("c4-8xlarge");
    let c4 = c4.to_str().unwrap();
    let out = c.outside("cap");
    let cmds: Vec<Vec<&str>> = vec![
        vec!["inspect", "--root", root],
        vec!["inspect", "--json", "--root", root],
        vec!["plan", "--profile", "throughput", "--root", c4],
        vec!["plan", "--profile", "throughput", "--script", "--root", c4],
        vec!["plan", "--profile", "throughput", "--json", "--root", c4],
        vec![
            "apply",
            "--profile",
            "throughput",
            "--dry-run",
            "--root",
            root,
            "--state-dir",
            state,
        ],
        vec!["history", "--root", root, "--state-dir", state],
        vec!["history", "--json", "--root", root, "--state-dir", state],
        vec!["profile", "list"],
        vec!["profile", "show", "latency", "--root", c4],
        vec!["stat", "-c", "2", "--root", root],
        vec!["stat", "-c", "2", "--json", "--root", root],
        vec!["completions", "bash"],
        vec!["capture", "--out", out.to_str().unwrap()],
    ];
    for a in &cmds {
        assert_quiet(a);
    }
}

/// doctor's exit status is its verdict (0, 1 warning, 2 critical): a closed
/// pipe leaves it as it is, with nothing on stderr.
#[test]
fn doctor_keeps_its_verdict_on_a_closed_pipe() {
    let c = copy("nic-ena-allowance");
    let root = c.root.to_str().unwrap();
    let open = bin().args(["doctor", "--root", root]).output().unwrap();
    let want = open.status.code();
    assert!(matches!(want, Some(0..=2)), "{open:?}");
    for json in [false, true] {
        let mut a = vec!["doctor", "--root", root];
        if json {
            a.push("--json");
        }
        let (code, err) = run_closed(&a);
        assert_eq!(code, want, "{a:?}: {err}");
        assert!(err.is_empty(), "{a:?}: {err}");
    }
}

#[test]
fn a_real_error_still_exits_1_with_its_message() {
    let (code, err) = run_closed(&["inspect", "--root", "/nonexistent-h16"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("not a directory"), "{err}");
}
