//! `nettune drops` over a recorded capture (tests/captures, labelled) and
//! where it cannot run: one line naming the reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/captures/kvm-2vcpu-6.18-drops")
}

/// The binary's output for `args`.
fn nettune(args: &[&str]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nettune"));
    c.args(args).output().unwrap()
}

#[test]
fn a_capture_replays_its_reasons_with_the_catalogues_words() {
    let root = capture();
    let o = nettune(&["drops", "--root", root.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    // the second recorded interval saw every drop: 600 and 150 (LABEL)
    assert!(text.contains("(every drop sampled)"), "{text}");
    assert!(
        text.contains("SOCKET_RCVBUFF") && text.contains("udp-rcvbuf-errors"),
        "{text}"
    );
    assert!(
        text.contains("NO_SOCKET") && text.contains("not a tuning matter"),
        "{text}"
    );
    assert!(text.contains("udp_queue_rcv_one_skb+0x"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("totals")), "{text}");
}

#[test]
fn count_limits_the_replayed_intervals() {
    let root = capture();
    let o = nettune(&[
        "drops",
        "--json",
        "-c",
        "1",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let kinds: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(kinds, ["\"interval\"", "\"totals\""], "{text}");
}

#[test]
fn a_capture_without_drops_says_so_in_one_line() {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/nic-ena-allowance");
    let o = nettune(&["drops", "--root", root.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("this capture has none"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn help_teaches_with_examples() {
    let o = nettune(&["drops", "--help"]);
    let text = String::from_utf8(o.stdout).unwrap();
    for want in [
        "Examples:",
        "--every",
        "--root DIR",
        "not a tuning matter",
        "no device",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
}

/// The human screen, whole: widths, order and the catalogue's words.
#[test]
fn the_human_screen_of_a_capture() {
    let root = capture();
    let o = nettune(&["drops", "--root", root.to_str().unwrap()]);
    assert!(o.status.success());
    insta::assert_snapshot!(String::from_utf8(o.stdout).unwrap());
}
