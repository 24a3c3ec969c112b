//! Issue 17, item 4 ("Driver semantics"): every coalescing value a profile
//! plans is one the driver family's `set_coalesce` accepts (the validators
//! in `tune::coalesce_family`, transcribed from the driver source), dynamic
//! modes are read as dynamic, and the latency intent reaches ITR 0 where the
//! controller allows it. Hosts are built in code: 2 CPUs, one port.

#![allow(clippy::unwrap_used)]

use model::plan::{HostExtras, Plan, PlanOptions};
use model::snapshot::*;
use model::{CpuId, CpuSet, NodeId};
use nettune_tune as tune;
use std::collections::BTreeMap;
use tune::coalesce_family::{family, FAMILIES};
use tune::profile::{builtin, parse_user, Profile};

fn host(driver: &str, version: &str, pci_id: Option<PciId>, co: &[(&str, u64)]) -> HostSnapshot {
    let coalesce: BTreeMap<String, u64> = co.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let ethtool = EthtoolState {
        driver: Probe::Ok {
            value: DriverInfo {
                driver: Some(driver.into()),
                version: Some(version.into()),
                firmware: None,
                bus_info: None,
            },
        },
        coalesce: Probe::Ok { value: coalesce },
        ..Default::default()
    };
    let iface = Interface {
        name: "eth0".into(),
        ifindex: Some(2),
        driver: Some(driver.into()),
        pci_address: Some("0000:02:01.0".into()),
        pci_id,
        perm_mac: None,
        mac: None,
        numa_node: Some(0),
        local_cpus: None,
        speed_mbps: Some(1000),
        mtu: Some(1500),
        operstate: Some("up".into()),
        tx_queue_len: Some(1000),
        gro_flush_timeout: None,
        napi_defer_hard_irqs: None,
        threaded: None,
        rx_queues: vec![],
        tx_queues: vec![],
        irqs: vec![],
        irq_mapping: None,
        ethtool,
        stats: IfaceStats::default(),
    };
    let cpus = (0..2u32)
        .map(|id| Cpu {
            id: CpuId(id),
            online: true,
            core_id: Some(id),
            package: Some(0),
            node: Some(NodeId(0)),
            siblings: CpuSet::parse_list(&id.to_string()).unwrap(),
            governor: None,
        })
        .collect();
    HostSnapshot {
        schema_version: SNAPSHOT_SCHEMA_VERSION,
        source: Source {
            root: "code".into(),
            hostname: Some("coalesce".into()),
            kernel: Some("6.1.0-18-amd64".into()),
            label: None,
        },
        cpu: CpuSummary {
            possible: CpuSet::range(0, 1),
            online: CpuSet::range(0, 1),
            ..Default::default()
        },
        cpus,
        nodes: vec![NumaNode {
            id: NodeId(0),
            cpus: CpuSet::range(0, 1),
            distances: vec![10],
            mem_total_kib: None,
        }],
        interfaces: vec![iface],
        irqs: vec![],
        sysctls: Default::default(),
        owners: ForeignOwners::default(),
        notes: vec![],
    }
}

fn plan(snap: &HostSnapshot, p: &Profile) -> Plan {
    tune::plan(snap, &HostExtras::default(), p, &PlanOptions::default()).unwrap()
}

/// A user profile on `base` with `coalesce_usecs = us`.
fn with_usecs(base: &str, us: u32) -> Profile {
    let text =
        format!("name = \"us{us}\"\ninherit = \"{base}\"\n[settings]\ncoalesce_usecs = {us}\n");
    parse_user(&text, "test.toml").unwrap()
}

/// The coalesce rule's planned (attr, value) pairs.
fn coalesce_changes(p: &Plan) -> Vec<(String, String, String)> {
    p.changes
        .iter()
        .filter(|c| c.rule == "coalesce")
        .map(|c| (c.knob.clone(), c.after.clone(), c.reason.clone()))
        .collect()
}

const INTEL: u16 = 0x8086;
const E1000_82545EM: PciId = PciId {
    vendor: INTEL,
    device: 0x100f,
};
const E1000_82547GI: PciId = PciId {
    vendor: INTEL,
    device: 0x1075,
};

/// Every value any profile (built-ins and coalesce_usecs from 0 to 20000)
/// plans for every driver of every family, from every accepted current
/// value, is accepted by that family's validator.
#[test]
fn every_planned_value_is_accepted_by_its_family() {
    let usecs = [
        0u32, 1, 2, 3, 4, 5, 8, 9, 10, 14, 50, 1022, 1023, 2000, 9_999, 10_000,
    ];
    let mut profiles: Vec<Profile> = ["latency", "throughput", "balanced"]
        .iter()
        .map(|p| builtin(p).unwrap())
        .collect();
    for base in ["latency", "throughput"] {
        for us in usecs {
            profiles.push(with_usecs(base, us));
        }
    }
    let mut checked = 0;
    for fam in FAMILIES {
        for driver in fam.drivers {
            let currents: Vec<u64> = (0..=20_000u64)
                .filter(|v| [0, 1, 2, 3, 4, 5, 9, 10, 50, 1022, 10_000].contains(v))
                .filter(|v| fam.accepts("rx-usecs", *v, false).is_ok())
                .collect();
            for ids in [None, Some(E1000_82545EM), Some(E1000_82547GI)] {
                for cur in &currents {
                    let snap = host(
                        driver,
                        "1.0-k",
                        ids,
                        &[("rx-usecs", *cur), ("tx-usecs", *cur)],
                    );
                    for p in &profiles {
                        for (attr, after, why) in coalesce_changes(&plan(&snap, p)) {
                            let v: u64 = after.parse().unwrap();
                            assert!(
                                fam.accepts(&attr, v, false).is_ok(),
                                "{driver} (from {cur}, profile {} usecs {}): planned {attr} {v}, which {} rejects: {why}",
                                p.name,
                                p.settings.coalesce_usecs,
                                fam.source
                            );
                            if driver == &"e1000" && ids != Some(E1000_82545EM) {
                                assert!(v >= 14, "{driver} {ids:?}: {attr} {v} may hang an 82547");
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} planned values checked");
}

#[test]
fn igb_rx_usecs_3_is_its_dynamic_conservative_mode_not_a_fixed_interval() {
    let snap = host("igb", "5.6.0-k", None, &[("rx-usecs", 3), ("tx-usecs", 3)]);
    let p = plan(&snap, &builtin("throughput").unwrap());
    assert!(
        coalesce_changes(&p).is_empty(),
        "{:?}",
        coalesce_changes(&p)
    );
    let note = p
        .notes
        .iter()
        .find(|n| n.rule == "coalesce")
        .map(|n| n.message.clone())
        .unwrap_or_default();
    assert!(note.contains("dynamic conservative"), "{note}");
    assert!(note.contains("4,000-20,000 interrupts/s"), "{note}");
    assert!(note.contains("50-250 µs"), "{note}");
}

#[test]
fn latency_on_igb_default_turns_the_dynamic_mode_off() {
    let snap = host("igb", "5.6.0-k", None, &[("rx-usecs", 3), ("tx-usecs", 3)]);
    let c = coalesce_changes(&plan(&snap, &builtin("latency").unwrap()));
    let rx = c.iter().find(|(a, _, _)| a == "rx-usecs").unwrap();
    assert_eq!(rx.1, "0", "{}", rx.2);
    assert!(rx.2.contains("dynamic conservative"), "{}", rx.2);
}

#[test]
fn e1000e_latency_plans_0_not_the_rejected_8() {
    let p = builtin("latency").unwrap();
    assert_eq!(p.settings.coalesce_usecs, 8);
    // From the default (3, dynamic conservative) and from a fixed 50 µs,
    // which used to plan 8: e1000_set_coalesce returns EINVAL for 5-9.
    for cur in [3, 50] {
        let snap = host("e1000e", "3.2.6-k", None, &[("rx-usecs", cur)]);
        let c = coalesce_changes(&plan(&snap, &p));
        assert_eq!(c.len(), 1, "{cur}: {c:?}");
        assert_eq!(c[0].0, "rx-usecs");
        assert_eq!(c[0].1, "0", "{cur}: {}", c[0].2);
        assert!(c[0].2.contains("both hosts"), "{}", c[0].2);
    }
}

#[test]
fn itr_0_is_planned_for_an_e1000_known_not_to_be_an_82547() {
    let module = |id: Option<PciId>| {
        let p = plan(
            &host("e1000", "7.3.21-k8-NAPI", id, &[("rx-usecs", 3)]),
            &builtin("latency").unwrap(),
        );
        let change = p
            .changes
            .iter()
            .find(|c| c.rule == "module-params")
            .map(|c| c.after.clone());
        let rx = coalesce_changes(&p)
            .into_iter()
            .find(|(a, _, _)| a == "rx-usecs")
            .map(|(_, v, _)| v);
        (change, rx)
    };
    assert_eq!(
        module(Some(E1000_82545EM)),
        (Some("0".to_string()), Some("0".to_string()))
    );
    // An 82547, or a port whose controller is unknown: neither 0 nor above
    // 75,000 interrupts/s.
    for id in [Some(E1000_82547GI), None] {
        let (m, rx) = module(id);
        assert_eq!(m, None, "{id:?}");
        assert_eq!(rx.as_deref(), Some("14"), "{id:?}");
    }
}

#[test]
fn every_family_is_found_by_its_drivers() {
    for d in ["e1000", "e1000e", "igb", "igc", "ixgbe", "ixgbevf"] {
        assert!(family(d).is_some(), "{d}");
    }
    assert!(family("virtio_net").is_none());
}
