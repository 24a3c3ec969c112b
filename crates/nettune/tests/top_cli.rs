//! `nettune top` outside a terminal and with bad flags: one-line refusals.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

fn nettune(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn refuses_when_stdout_is_not_a_terminal() {
    let (code, out, err) = nettune(&["top"]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not") && err.contains("terminal"), "{err}");
    assert!(err.contains("nettune stat"), "{err}");
    // No escape sequences: the terminal was never touched.
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[test]
fn bad_interval_is_one_line() {
    for bad in ["0", "-1", "x", "1000"] {
        let (code, _, err) = nettune(&["top", "--interval", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(
            err.contains("interval") || err.contains(bad),
            "{bad}: {err}"
        );
    }
}

#[test]
fn help_has_examples() {
    let (code, out, _) = nettune(&["top", "--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("Examples:") && out.contains("nettune top --iface"),
        "{out}"
    );
}

#[test]
fn a_root_without_samples_is_refused_with_a_pointer_to_stat() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, _, err) = nettune(&["top", "--root", d]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("nettune stat --root {d}")), "{err}");
}

#[test]
fn a_capture_with_samples_is_taken_for_replay() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/nic-ena-allowance"
    );
    let (code, _, err) = nettune(&["top", "--root", dir]);
    // Accepted as a replay: what stops it here is only the missing terminal.
    assert_eq!(code, 1);
    assert!(
        err.contains("not a terminal") || err.contains("stdout is not one"),
        "{err}"
    );
    let (code, _, err) = nettune(&["top", "--root", dir, "--iface", "nope0"]);
    assert_eq!(code, 1);
    assert!(err.contains("not one") || err.contains("nope0"), "{err}");
}
