//! Issue 17: the plan, applied, raises no warning from doctor's placement
//! rules (`irq-remote-node`, `irq-stacked`), on every fixture with network
//! interfaces and every built-in profile.

#![allow(clippy::unwrap_used)]

mod fixture_copy;
use fixture_copy::{bin, copy, fixture, ok};

/// Every fixture directory that has `/sys/class/net`.
fn fixtures_with_nics() -> Vec<String> {
    let mut out = Vec::new();
    let dir = fixture("");
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        if e.path().join("sys/class/net").exists() {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    assert!(out.len() >= 20, "{out:?}");
    out
}

/// Warnings and criticals of the placement rules from `doctor --json` on `root`.
fn placement_warnings(root: &std::path::Path, profile: &str) -> Vec<String> {
    let o = bin()
        .args(["doctor", "--json", "--profile", profile, "--root"])
        .arg(root)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "irq-remote-node" || f["id"] == "irq-stacked")
        .filter(|f| f["severity"] != "info")
        .map(|f| f.to_string())
        .collect()
}

#[test]
fn applied_plan_passes_doctor_placement_rules_on_every_fixture_and_profile() {
    let mut bad = Vec::new();
    for f in fixtures_with_nics() {
        for p in ["latency", "throughput", "balanced"] {
            let c = copy(&f);
            ok(&c, &["apply", "--profile", p, "--yes"]);
            for w in placement_warnings(&c.root, p) {
                bad.push(format!("{f} {p}: {w}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The host: a busy 10G port named last, after an idle 1G port and
/// a down port, all on node 0. The busy port keeps node 0's cores.
#[test]
fn busy_nic_named_last_keeps_the_local_cores() {
    let o = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(fixture("two-socket-multi-nic"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Node 0 is CPUs 0-7 (and siblings 16-23).
    let node0 = |cpu: u64| cpu < 8 || (16..24).contains(&cpu);
    let mut busy = 0;
    for ch in v["changes"].as_array().unwrap() {
        if ch["target"]["kind"] != "irq_affinity" {
            continue;
        }
        let iface = ch["target"]["iface"].as_str().unwrap();
        let cpu: u64 = ch["after"].as_str().unwrap().parse().unwrap();
        if iface == "enp2s0" {
            busy += 1;
            assert!(node0(cpu), "busy enp2s0 sent to CPU {cpu}: {ch}");
        }
    }
    assert_eq!(busy, 8, "{v}");
    // The whole plan: idle and down NICs share the busy one's cores (notes
    // say why); enp65s0's 12 queues stack on node 1's 8 cores and their
    // sibling threads, never node 0.
    let o = bin()
        .args(["plan", "--profile", "throughput", "--root"])
        .arg(fixture("two-socket-multi-nic"))
        .output()
        .unwrap();
    assert!(o.status.success());
    insta::assert_snapshot!(
        "plan_two-socket-multi-nic_throughput",
        String::from_utf8(o.stdout).unwrap()
    );
}

/// Issue 17: two NICs on different nodes, each with more queues than its
/// node's cores, never push queues onto each other's node.
#[test]
fn queues_beyond_the_local_cores_stay_local() {
    let o = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(fixture("two-socket-16q"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // ens1f0 is on node 1: CPUs 8-15 and 24-31.
    for ch in v["changes"].as_array().unwrap() {
        if ch["target"]["kind"] == "irq_affinity" {
            let cpu: u64 = ch["after"].as_str().unwrap().parse().unwrap();
            assert!((8..16).contains(&cpu) || (24..32).contains(&cpu), "{ch}");
        }
    }
}
