//! Issue 17: a host root around each real IRQ dump (tests/fixtures/real-*,
//! built by tests/fixtures/real-make.py from tests/fixtures/real-interrupts):
//! golden `inspect` and `plan` output for every built-in profile, and what the
//! real vectors guarantee whatever the golden says: a sideband vector (flow
//! director, control, misc, config) is never planned as a queue, and no plan
//! pins an IRQ to a queue the interface does not have. The placement
//! invariant (the applied plan raises no placement warning from doctor) runs
//! on these roots too, in plan_doctor_invariant.rs.

#![allow(clippy::unwrap_used)]

mod fixture_copy;
use fixture_copy::{bin, fixture};

const PROFILES: [&str; 3] = ["latency", "throughput", "balanced"];

/// Every root built around a real dump.
fn real_roots() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("real-") && fixture(n).join("sys/class/net").is_dir())
        .collect();
    out.sort();
    assert!(out.len() >= 6, "{out:?}");
    out
}

fn run(args: &[&str], root: &str) -> String {
    let o = bin()
        .args(args)
        .arg("--root")
        .arg(fixture(root))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?} {root}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn inspect_and_plan_goldens_of_every_real_dump() {
    for root in real_roots() {
        insta::assert_snapshot!(format!("inspect_{root}"), run(&["inspect"], &root));
        for p in PROFILES {
            insta::assert_snapshot!(
                format!("plan_{root}_{p}"),
                run(&["plan", "--profile", p], &root)
            );
        }
    }
}

fn is_sideband(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "fdir", "ctrl", "misc", "config", "async", "mgmnt", "mbx", "pages", "cmd",
    ]
    .iter()
    .any(|s| n.contains(s))
}

#[test]
fn sideband_vectors_and_missing_queues_are_never_planned() {
    for root in real_roots() {
        let snap: serde_json::Value =
            serde_json::from_str(&run(&["inspect", "--json"], &root)).unwrap();
        for p in PROFILES {
            let plan: serde_json::Value =
                serde_json::from_str(&run(&["plan", "--profile", p, "--json"], &root)).unwrap();
            for ch in plan["changes"].as_array().unwrap() {
                if ch["target"]["kind"] != "irq_affinity" {
                    continue;
                }
                let irq = &ch["target"]["irq"];
                let iface = ch["target"]["iface"].as_str().unwrap();
                let nic = snap["interfaces"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|i| i["name"] == iface)
                    .unwrap();
                let q = snap["irqs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|q| &q["number"] == irq && q["interface"] == iface)
                    .unwrap_or_else(|| panic!("{root} {p}: IRQ {irq} not among {iface}'s"));
                let name = q["name"].as_str().unwrap();
                assert!(
                    !is_sideband(name),
                    "{root} {p}: sideband {name} planned: {ch}"
                );
                let ix = q["queue"]["index"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{root} {p}: {q}"));
                let nrx = nic["rx_queues"].as_array().unwrap().len() as u64;
                let ntx = nic["tx_queues"].as_array().unwrap().len() as u64;
                assert!(
                    ix < nrx.max(ntx),
                    "{root} {p}: {name} pinned as queue {ix} of {nrx} RX / {ntx} TX: {ch}"
                );
            }
        }
    }
}
