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

/// Issue 16, item 9b: `top` ended by SIGTERM or SIGHUP restores the terminal
/// (leaves the alternate screen, shows the cursor, leaves raw mode) and exits
/// 128 + the signal. Run in a pseudo-terminal by util-linux `script`, whose
/// log holds every byte top wrote to it.
#[test]
fn a_stop_signal_restores_the_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    }
    let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/nic-ena-allowance");
    for (sig, code) in [("TERM", 143), ("HUP", 129)] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let pidfile = dir.path().join("pid");
        let cmd = format!(
            "echo $$ > '{}'; exec '{}' top --interval 60 --root '{}'",
            pidfile.display(),
            env!("CARGO_BIN_EXE_nettune"),
            fixture.display()
        );
        let mut child = Command::new("script")
            .args(["-q", "-f", "-e", "-c", &cmd])
            .arg(&log)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait (bounded) until top has entered the alternate screen.
        let entered = (0..600).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            std::fs::read(&log).is_ok_and(|b| contains(&b, b"\x1b[?1049h"))
        });
        let pid = std::fs::read_to_string(&pidfile).unwrap_or_default();
        let pid = pid.trim().to_string();
        if !entered {
            let _ = child.kill();
            panic!("top did not start: {:?}", std::fs::read(&log));
        }
        let st = Command::new("kill")
            .args([&format!("-{sig}"), &pid])
            .status()
            .unwrap();
        assert!(st.success());
        let status = child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        let out = std::fs::read(&log).unwrap();
        let at = find(&out, b"\x1b[?1049h").unwrap();
        let rest = &out[at..];
        assert!(
            contains(rest, b"\x1b[?1049l"),
            "SIG{sig}: {:?}",
            String::from_utf8_lossy(rest)
        );
        assert!(
            contains(rest, b"\x1b[?25h"),
            "SIG{sig}: {:?}",
            String::from_utf8_lossy(rest)
        );
        assert_eq!(status.code(), Some(code), "SIG{sig}: {err}");
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}
