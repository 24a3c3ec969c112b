//! `nettune capture` records what doctor's host-fact rules read, so
//! `doctor --root CAPTURE` runs them as it does live: on this machine
//! (KVM guest, kernel 6.18) the rules that run live run on the capture too,
//! and those skipped live are skipped for the same reason.

#![allow(clippy::unwrap_used)]

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nettune"))
}

/// The `skipped` reasons of a doctor run's JSON, for the rules fed by host facts.
fn skips(args: &[&str]) -> std::collections::BTreeMap<String, String> {
    let o = bin()
        .arg("doctor")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let mine = [
        "conntrack-full",
        "tcp-memory-pressure",
        "bufferbloat",
        "app-on-irq-cpu",
        "enhanced-networking-off",
        "offload-off",
        "boot-override",
    ];
    v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| mine.contains(&s["id"].as_str().unwrap()))
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_capture_runs_the_host_fact_rules_as_the_live_host_does() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("cap");
    let o = bin()
        .arg("capture")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in [
        "proc/net/sockstat",
        "netlink/qdisc.json",
        "netlink/inet_diag.json",
    ] {
        assert!(out.join(f).exists(), "{f} not captured");
    }
    let live = skips(&["--sample", "1"]);
    let back = skips(&["--root", out.to_str().unwrap()]);
    assert_eq!(live, back);
    // Every kernel has sockstat: tcp-memory-pressure ran on both.
    assert!(!back.contains_key("tcp-memory-pressure"), "{back:?}");
    assert!(!back.contains_key("bufferbloat"), "{back:?}");
}
