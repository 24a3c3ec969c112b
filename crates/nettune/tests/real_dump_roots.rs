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

/// After `ethtool -L combined 4` an mlx5 port keeps its twelve completion
/// vectors (`mlx5_comp4..11` stay requested): the eight beyond the four
/// queues the interface has are no queue, and no plan pins them.
#[test]
fn vectors_of_channels_ethtool_l_removed_are_no_queues() {
    let c = fixture_copy::copy("real-mlx5-cx5-dual-port");
    let net = std::fs::canonicalize(c.root.join("sys/class/net/enp1s0f0np0")).unwrap();
    for q in 4..12 {
        for d in ["rx", "tx"] {
            std::fs::remove_dir_all(net.join(format!("queues/{d}-{q}"))).unwrap();
        }
    }
    let root = c.root.to_str().unwrap();
    let o = bin()
        .args(["inspect", "--json", "--root", root])
        .output()
        .unwrap();
    let snap: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let comp: Vec<&serde_json::Value> = snap["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["interface"] == "enp1s0f0np0")
        .filter(|i| i["name"].as_str().unwrap().starts_with("mlx5_comp"))
        .collect();
    assert_eq!(comp.len(), 12);
    for i in &comp {
        let n: u32 = i["name"].as_str().unwrap()["mlx5_comp".len()..]
            .split('@')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        if n < 4 {
            assert_eq!(i["queue"]["index"], n, "{i}");
        } else {
            assert_eq!(i["queue"]["kind"], "other", "{i}");
        }
    }
    for p in PROFILES {
        let o = bin()
            .args(["plan", "--profile", p, "--json", "--root", root])
            .output()
            .unwrap();
        let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let pinned = plan["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|ch| ch["target"]["kind"] == "irq_affinity")
            .filter(|ch| ch["target"]["iface"] == "enp1s0f0np0")
            .count();
        assert_eq!(pinned, 4, "{p}: {plan}");
    }
}
