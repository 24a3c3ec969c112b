//! `nettune apply` inside a network namespace the test creates, on a 4-queue
//! veth: per-device steering and per-namespace sysctls really change, read
//! back, show no drift, then drift after a manual change, and roll back. The
//! root namespace's sysctls and IRQ affinities stay untouched.

#![allow(clippy::unwrap_used)]

mod engine_common;
use lab::TwoHosts;
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn ns_values(lab: &TwoHosts) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    for q in 0..4 {
        paths.push(format!("/sys/class/net/nt1/queues/rx-{q}/rps_cpus"));
        paths.push(format!("/sys/class/net/nt1/queues/rx-{q}/rps_flow_cnt"));
        paths.push(format!("/sys/class/net/nt1/queues/tx-{q}/xps_cpus"));
    }
    paths.push("/proc/sys/net/ipv4/tcp_rmem".into());
    paths.push("/proc/sys/net/ipv4/tcp_wmem".into());
    paths
        .into_iter()
        .map(|p| {
            let v = lab.b.sh(&format!("cat {p}")).unwrap();
            (p, v.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .collect()
}

fn in_ns(lab: &TwoHosts, state: &std::path::Path, args: &[&str]) -> Output {
    lab.b
        .command(BIN)
        .args(args)
        .args(["--root", "/", "--state-dir"])
        .arg(state)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn apply_verify_rollback_inside_a_namespace() {
    if !lab::require_root("tune_netns::apply_verify_rollback_inside_a_namespace") {
        return;
    }
    let lab = TwoHosts::create("nttune", 4).unwrap();
    let state = tempfile::tempdir().unwrap();
    let root_before = engine_common::root_settings();
    let ns_before = ns_values(&lab);

    // The plan knows it is in a child namespace and leaves global knobs out.
    let o = lab
        .b
        .command(BIN)
        .args([
            "plan",
            "--profile",
            "throughput",
            "--root",
            "/",
            "--iface",
            "nt1",
            "--bdp",
            "10gbit,100ms",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["scope"], "child");
    let notes = serde_json::to_string(&plan["notes"]).unwrap();
    assert!(notes.contains("child network namespace"), "{notes}");
    for c in plan["changes"].as_array().unwrap() {
        let t = serde_json::to_string(&c["target"]).unwrap();
        assert!(
            !t.contains("/proc/sys/net/core/") && !t.contains("irq"),
            "{t}"
        );
    }

    let o = in_ns(
        &lab,
        state.path(),
        &[
            "apply",
            "--profile",
            "throughput",
            "--iface",
            "nt1",
            "--bdp",
            "10gbit,100ms",
            "--yes",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let after = ns_values(&lab);
    let get = |p: &str| after.iter().find(|(k, _)| k == p).unwrap().1.clone();
    let all: u64 = (1u64 << std::thread::available_parallelism().unwrap().get()) - 1;
    for q in 0..4 {
        let rps = u64::from_str_radix(
            &get(&format!("/sys/class/net/nt1/queues/rx-{q}/rps_cpus")).replace(',', ""),
            16,
        )
        .unwrap();
        assert_eq!(rps, all, "rx-{q} rps_cpus spreads over every core");
        assert_eq!(
            get(&format!("/sys/class/net/nt1/queues/rx-{q}/rps_flow_cnt")),
            "8192"
        );
        let xps = u64::from_str_radix(
            &get(&format!("/sys/class/net/nt1/queues/tx-{q}/xps_cpus")).replace(',', ""),
            16,
        )
        .unwrap();
        assert_ne!(xps, 0, "tx-{q} xps_cpus set");
    }
    assert!(
        get("/proc/sys/net/ipv4/tcp_rmem").ends_with(" 332500000"),
        "{}",
        get("/proc/sys/net/ipv4/tcp_rmem")
    );
    assert!(get("/proc/sys/net/ipv4/tcp_wmem").ends_with(" 332500000"));

    let v = in_ns(&lab, state.path(), &["verify", "--json"]);
    assert!(v.status.success(), "{}", text(&v));
    let rep: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(rep["drift"], 0);
    assert!(rep["items"].as_array().unwrap().len() >= 14);

    lab.b
        .sh("echo 1 > /sys/class/net/nt1/queues/rx-2/rps_cpus")
        .unwrap();
    let v = in_ns(&lab, state.path(), &["verify"]);
    assert_eq!(v.status.code(), Some(3), "{}", text(&v));
    let t = text(&v);
    assert!(t.contains("DRIFT") && t.contains("rx-2/rps_cpus"), "{t}");
    assert_eq!(t.matches("DRIFT").count(), 1, "{t}");

    let r = in_ns(&lab, state.path(), &["rollback"]);
    assert!(r.status.success(), "{}", text(&r));
    assert_eq!(ns_values(&lab), ns_before);
    assert_eq!(
        engine_common::root_settings(),
        root_before,
        "root namespace untouched"
    );

    let h = in_ns(&lab, state.path(), &["history", "--json"]);
    let hist: serde_json::Value = serde_json::from_slice(&h.stdout).unwrap();
    assert_eq!(hist["generations"][0]["status"], "applied");
    assert!(hist["generations"][0]["rolled_back_at"].is_u64());
}

#[test]
fn live_channel_change_replans_steering_and_rolls_back() {
    if !lab::require_root("tune_netns::live_channel_change_replans_steering_and_rolls_back") {
        return;
    }
    let lab = TwoHosts::create("nttune", 4).unwrap();
    let state = tempfile::tempdir().unwrap();
    let o = lab
        .b
        .command(BIN)
        .args([
            "plan",
            "--profile",
            "balanced",
            "--root",
            "/",
            "--iface",
            "nt1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // veth takes `ethtool -L rx N`: halve its RX channels, then let apply re-plan
    // (a plan file is applied exactly unless --replan asks for this).
    plan["changes"] = serde_json::json!([{
        "phase": "channels", "knob": "rx",
        "target": {"kind": "ethtool", "iface": "nt1", "group": "channels", "attr": "rx"},
        "before": "4", "after": "2", "rule": "channels", "reason": "test", "source": "test"
    }]);
    let pf = state.path().join("plan.json");
    std::fs::write(&pf, serde_json::to_string(&plan).unwrap()).unwrap();
    let st = state.path().join("st");
    let o = in_ns(
        &lab,
        &st,
        &["apply", "--plan", pf.to_str().unwrap(), "--replan", "--yes"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("ethtool channels nt1 rx = 2"), "{out}");
    // Re-planned for 2 RX queues: 32768 / 2 per queue.
    assert!(
        out.contains("rx-1/rps_flow_cnt = 16384") && !out.contains("rx-3/"),
        "{out}"
    );
    let q = lab
        .b
        .sh("ls /sys/class/net/nt1/queues | grep -c rx-")
        .unwrap();
    assert_eq!(q.trim(), "2");
    let r = in_ns(&lab, &st, &["rollback"]);
    assert!(r.status.success(), "{}", text(&r));
    let q = lab
        .b
        .sh("ls /sys/class/net/nt1/queues | grep -c rx-")
        .unwrap();
    assert_eq!(q.trim(), "4");
    assert_eq!(
        lab.b
            .sh("cat /sys/class/net/nt1/queues/rx-0/rps_cpus")
            .unwrap()
            .trim()
            .trim_start_matches('0'),
        ""
    );
}

/// Issue 38: an offload off where the driver supports it (veth's GRO, off
/// by default) is planned back on, applied through `ethtool -K`, read back
/// on, and off again after the rollback.
#[test]
fn an_offload_is_turned_on_and_back_off_on_a_live_veth() {
    if !lab::require_root("tune_netns::an_offload_is_turned_on_and_back_off_on_a_live_veth") {
        return;
    }
    let lab = TwoHosts::create("ntoffl", 1).unwrap();
    let state = tempfile::tempdir().unwrap();
    let gro = || {
        lab.b
            .sh("ethtool -k nt1 | grep generic-receive-offload")
            .unwrap()
    };
    let before = gro();
    if !before.contains(": off") || before.contains("[fixed]") {
        eprintln!("skip: this kernel's veth GRO is not off and changeable ({before})");
        return;
    }
    let o = in_ns(
        &lab,
        state.path(),
        &["apply", "--profile", "latency", "--iface", "nt1", "--yes"],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("ethtool features nt1 rx-gro = 1"),
        "{}",
        text(&o)
    );
    assert!(gro().contains(": on"), "{}", gro());
    let o = in_ns(&lab, state.path(), &["rollback"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(gro(), before);
}
