//! Issue 9, "Queue IRQs of every common driver": one fixture per IRQ naming
//! family (tests/fixtures/nic-*, written by tests/fixtures/nics-make.py).
//! Each plans its queue IRQs single-CPU on distinct physical cores of the
//! NIC's node, leaves non-queue vectors alone, turns RPS off when the queues
//! cover the cores, and says when a mapping is inferred or impossible.
//! Golden plans for `throughput` and `latency` sit beside the assertions.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn ok(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn plan(f: &str, profile: &str, json: bool) -> String {
    let root = fixture(f);
    let mut args = vec![
        "plan",
        "--profile",
        profile,
        "--root",
        root.to_str().unwrap(),
    ];
    if json {
        args.push("--json");
    }
    ok(&args)
}

fn inspect_json(f: &str) -> serde_json::Value {
    let root = fixture(f);
    serde_json::from_str(&ok(&[
        "inspect",
        "--json",
        "--root",
        root.to_str().unwrap(),
    ]))
    .unwrap()
}

/// What a family's fixture must plan.
struct Family {
    fixture: &'static str,
    iface: &'static str,
    queue_irqs: &'static [u32],
    other_irqs: &'static [u32],
    /// CPUs of the NIC's node (all CPUs when the node is unknown).
    node_cpus: &'static [u32],
    /// SMT sibling of a CPU (itself without SMT).
    sibling: fn(u32) -> u32,
    /// Whether the queues cover the usable physical cores (RPS off).
    rps_off: bool,
    /// Queue vectors per physical core: 1, or 2 where RX and TX queue N have
    /// their own vectors (virtio_net input.N/output.N, gve's TX and RX
    /// notify blocks) and share queue N's core.
    per_core: usize,
}

const FAMILIES: &[Family] = &[
    Family {
        fixture: "nic-sfc-2node",
        iface: "eth1",
        queue_irqs: &[60, 61, 62, 63],
        other_irqs: &[64],
        node_cpus: &[1, 3, 5, 7],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-e1000-legacy",
        iface: "eth0",
        queue_irqs: &[16],
        other_irqs: &[],
        node_cpus: &[0, 1],
        sibling: |c| c,
        rps_off: false,
        per_core: 1,
    },
    Family {
        fixture: "nic-vmxnet3",
        iface: "ens192",
        queue_irqs: &[56, 57, 58, 59],
        other_irqs: &[60],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-mlx5",
        iface: "ens1f0np0",
        queue_irqs: &[91, 92, 93, 94],
        other_irqs: &[90, 95],
        node_cpus: &[0, 1, 2, 3, 8, 9, 10, 11],
        sibling: |c| (c + 8) % 16,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-ena",
        iface: "ens5",
        queue_irqs: &[27, 28, 29, 30],
        other_irqs: &[26],
        node_cpus: &[0, 1, 2, 3, 4, 5, 6, 7],
        sibling: |c| (c + 4) % 8,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-ixgbe",
        iface: "eth2",
        queue_irqs: &[100, 101, 102, 103],
        other_irqs: &[104],
        node_cpus: &[0, 1, 2, 3, 8, 9, 10, 11],
        sibling: |c| (c + 8) % 16,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-igb",
        iface: "eno1",
        queue_irqs: &[41, 42, 43, 44],
        other_irqs: &[40],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-igc",
        iface: "enp3s0",
        queue_irqs: &[131, 132, 133, 134],
        other_irqs: &[130],
        node_cpus: &[0, 1, 2, 3, 4, 5, 6, 7],
        sibling: |c| (c + 4) % 8,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-i40e",
        iface: "ens2f0",
        queue_irqs: &[121, 122, 123, 124],
        other_irqs: &[120],
        node_cpus: &[4, 5, 6, 7, 12, 13, 14, 15],
        sibling: |c| (c + 8) % 16,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-ice",
        iface: "ens3f0",
        queue_irqs: &[151, 152, 153, 154],
        other_irqs: &[150],
        node_cpus: &[0, 1, 2, 3, 4, 5, 6, 7],
        sibling: |c| c,
        rps_off: false,
        per_core: 1,
    },
    Family {
        fixture: "nic-iavf",
        iface: "eth0",
        queue_irqs: &[31, 32, 33, 34],
        other_irqs: &[30],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-mlx4",
        iface: "ens4",
        queue_irqs: &[71, 72, 73, 74],
        other_irqs: &[70],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-bnxt",
        iface: "ens5f0np0",
        queue_irqs: &[160, 161, 162, 163],
        other_irqs: &[],
        node_cpus: &[0, 1, 2, 3, 8, 9, 10, 11],
        sibling: |c| (c + 8) % 16,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-qede",
        iface: "ens6f0",
        queue_irqs: &[81, 82, 83, 84],
        other_irqs: &[80],
        node_cpus: &[0, 1, 2, 3, 4, 5, 6, 7],
        sibling: |c| (c + 4) % 8,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-tg3",
        iface: "eth0",
        queue_irqs: &[91, 92, 93, 94],
        other_irqs: &[90],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-be2net",
        iface: "eth1",
        queue_irqs: &[110, 111, 112, 113],
        other_irqs: &[],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-gve",
        iface: "ens4",
        queue_irqs: &[40, 41, 42, 43, 44, 45, 46, 47],
        other_irqs: &[48],
        node_cpus: &[0, 1, 2, 3, 4, 5, 6, 7],
        sibling: |c| (c + 4) % 8,
        rps_off: true,
        per_core: 2,
    },
    Family {
        fixture: "nic-hns3",
        iface: "enp125s0f0",
        queue_irqs: &[201, 202, 203, 204],
        other_irqs: &[200],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 1,
    },
    Family {
        fixture: "nic-virtio-mq",
        iface: "eth0",
        queue_irqs: &[25, 26, 27, 28, 29, 30, 31, 32],
        other_irqs: &[24],
        node_cpus: &[0, 1, 2, 3],
        sibling: |c| c,
        rps_off: true,
        per_core: 2,
    },
];

fn changes(p: &serde_json::Value) -> &Vec<serde_json::Value> {
    p["changes"].as_array().unwrap()
}

fn irq_after(p: &serde_json::Value, irq: u32) -> Option<String> {
    changes(p).iter().find_map(|c| {
        (c["target"]["kind"] == "irq_affinity" && c["target"]["irq"] == irq)
            .then(|| c["after"].as_str().unwrap().to_string())
    })
}

#[test]
fn each_family_plans_queue_irqs_on_distinct_physical_cores_of_the_nic_node() {
    for fam in FAMILIES {
        for profile in ["throughput", "latency"] {
            let what = format!("{} {profile}", fam.fixture);
            let p: serde_json::Value =
                serde_json::from_str(&plan(fam.fixture, profile, true)).unwrap();
            let mut cores = std::collections::BTreeMap::new();
            for &irq in fam.queue_irqs {
                let after = irq_after(&p, irq)
                    .unwrap_or_else(|| panic!("{what}: queue IRQ {irq} is not pinned"));
                let cpu: u32 = after
                    .parse()
                    .unwrap_or_else(|_| panic!("{what}: IRQ {irq} -> {after}, not one CPU"));
                assert!(
                    fam.node_cpus.contains(&cpu),
                    "{what}: IRQ {irq} -> CPU {cpu}, outside the NIC's node {:?}",
                    fam.node_cpus
                );
                let core = cpu.min((fam.sibling)(cpu));
                let n = cores.entry(core).or_insert(0usize);
                *n += 1;
                assert!(
                    *n <= fam.per_core,
                    "{what}: IRQ {irq} -> CPU {cpu} shares a physical core"
                );
            }
            assert_eq!(
                cores.len() * fam.per_core,
                fam.queue_irqs.len(),
                "{what}: queues not spread one per physical core: {cores:?}"
            );
            for &irq in fam.other_irqs {
                assert!(
                    irq_after(&p, irq).is_none(),
                    "{what}: non-queue IRQ {irq} was moved"
                );
            }
            let rps: Vec<&str> = changes(&p)
                .iter()
                .filter(|c| c["knob"] == "rps_cpus")
                .map(|c| c["after"].as_str().unwrap())
                .collect();
            if fam.rps_off {
                assert!(
                    rps.iter().all(|m| m.chars().all(|c| c == '0' || c == ',')),
                    "{what}: RPS on though queues cover the cores: {rps:?}"
                );
            } else if profile == "throughput" {
                // The latency profile does not run the rps rule.
                assert!(
                    rps.iter().any(|m| m.chars().any(|c| c != '0' && c != ',')),
                    "{what}: one queue for more cores and RPS stays off"
                );
            }
        }
    }
}

#[test]
fn snapshot_names_queues_and_non_queue_vectors() {
    for fam in FAMILIES {
        let v = inspect_json(fam.fixture);
        let irqs = v["irqs"].as_array().unwrap();
        let irq = |n: u32| irqs.iter().find(|i| i["number"] == n).unwrap();
        for &n in fam.queue_irqs {
            assert_eq!(irq(n)["interface"], fam.iface, "{} IRQ {n}", fam.fixture);
            assert_ne!(irq(n)["queue"]["kind"], "other", "{} IRQ {n}", fam.fixture);
        }
        for &n in fam.other_irqs {
            assert_eq!(irq(n)["queue"]["kind"], "other", "{} IRQ {n}", fam.fixture);
        }
    }
}

#[test]
fn legacy_e1000_mapping_is_marked_inferred_in_inspect_and_plan() {
    let v = inspect_json("nic-e1000-legacy");
    let eth0 = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "eth0")
        .unwrap();
    assert_eq!(eth0["irq_mapping"], "legacy_irq");
    assert_eq!(eth0["irqs"], serde_json::json!([16]));
    let irq16 = v["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["number"] == 16)
        .unwrap();
    assert_eq!(irq16["queue_source"], "legacy_irq");
    let root = fixture("nic-e1000-legacy");
    let human = ok(&["inspect", "--root", root.to_str().unwrap()]);
    assert!(human.contains("rx/tx-0 (inferred)"), "{human}");
    assert!(human.contains("queue IRQs: inferred"), "{human}");
    let p: serde_json::Value =
        serde_json::from_str(&plan("nic-e1000-legacy", "throughput", true)).unwrap();
    let c = changes(&p)
        .iter()
        .find(|c| c["target"]["irq"] == 16)
        .unwrap();
    assert!(
        c["reason"].as_str().unwrap().contains("inferred"),
        "{}",
        c["reason"]
    );
}

#[test]
fn named_mappings_are_not_marked_inferred() {
    for fam in FAMILIES.iter().filter(|f| f.fixture != "nic-e1000-legacy") {
        let v = inspect_json(fam.fixture);
        let i = v["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == fam.iface)
            .unwrap();
        assert_eq!(i["irq_mapping"], "name", "{}", fam.fixture);
    }
}

#[test]
fn hv_netvsc_says_it_has_no_queue_irqs_instead_of_guessing() {
    let v = inspect_json("nic-hv-netvsc");
    let eth0 = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "eth0")
        .unwrap();
    assert_eq!(eth0["driver"], "hv_netvsc");
    assert_eq!(eth0["irq_mapping"], "no_queue_irqs");
    assert_eq!(eth0["irqs"], serde_json::json!([]));
    for profile in ["throughput", "latency"] {
        let p: serde_json::Value =
            serde_json::from_str(&plan("nic-hv-netvsc", profile, true)).unwrap();
        assert!(
            !changes(&p)
                .iter()
                .any(|c| c["target"]["kind"] == "irq_affinity"),
            "{profile}"
        );
        let notes = serde_json::to_string(&p["notes"]).unwrap();
        assert!(
            notes.contains("eth0: no queue IRQs to pin") && notes.contains("VMBus"),
            "{profile}: {notes}"
        );
        for c in changes(&p).iter().filter(|c| c["knob"] == "rps_cpus") {
            let r = c["reason"].as_str().unwrap();
            assert!(!r.contains("virtual device") && r.contains("VMBus"), "{r}");
        }
    }
}

#[test]
fn golden_plans_for_each_family() {
    let fams = FAMILIES.iter().map(|f| f.fixture);
    for f in fams.chain(["nic-hv-netvsc"]) {
        for p in ["throughput", "latency"] {
            insta::assert_snapshot!(format!("plan_{f}_{p}"), plan(f, p, false));
        }
    }
}

/// Issue 17 item 4, seed 003's headline (InterruptThrottleRate 0 on both
/// ends: TCP_RR 6,543 -> 23,975/s): on the seed's e1000 (an 82545EM,
/// 8086:100f, not an 82547) the latency plan turns moderation off both ways
/// the driver has, ethtool rx-usecs 0 now and InterruptThrottleRate=0 at the
/// next module load, and says to run it on both hosts.
#[test]
fn seed_003_latency_plan_reaches_itr_0() {
    let p: serde_json::Value =
        serde_json::from_str(&plan("nic-e1000-legacy", "latency", true)).unwrap();
    let cs = changes(&p);
    let rx = cs
        .iter()
        .find(|c| c["knob"] == "rx-usecs")
        .unwrap_or_else(|| panic!("no rx-usecs change: {p}"));
    assert_eq!(rx["before"], "3", "{rx}");
    assert_eq!(rx["after"], "0", "{rx}");
    assert!(
        rx["reason"].as_str().unwrap().contains("both hosts"),
        "{rx}"
    );
    let itr = cs
        .iter()
        .find(|c| c["knob"] == "InterruptThrottleRate")
        .unwrap_or_else(|| panic!("no InterruptThrottleRate change: {p}"));
    assert_eq!(itr["after"], "0", "{itr}");
    assert!(itr["reason"].as_str().unwrap().contains("23,975"), "{itr}");
}
