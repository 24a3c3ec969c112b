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
    for d in [
        "mlx5_core",
        "ena",
        "virtio_net",
        "bnxt_en",
        "vmxnet3",
        "i40e",
        "iavf",
        "ice",
        "mlx4_en",
    ] {
        assert!(family(d).is_some(), "{d}");
    }
    assert!(family("hv_netvsc").is_none());
}

/// The profiles the family tests plan with: the built-ins and both
/// intents over coalesce_usecs from 0 to 10000 (the most a profile takes),
/// past mlx5's and bnxt's maximum.
fn all_profiles() -> Vec<Profile> {
    let usecs = [
        0u32, 1, 2, 5, 8, 9, 10, 11, 14, 50, 256, 1022, 4095, 4096, 5242, 5243, 9_999, 10_000,
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
    profiles
}

/// Plans every profile on `driver` from each reported `state` and applies
/// the coalesce changes in plan order, one `ethtool -C` each on top of the
/// values the port then has (as the kernel merges them), asserting every
/// one is accepted by the family's validator. Returns how many were checked.
fn assert_every_planned_value_accepted(driver: &str, states: &[&[(&str, u64)]]) -> usize {
    let fam = family(driver).unwrap();
    let mut checked = 0;
    for state in states {
        let snap = host(driver, "1.0", None, state);
        let start: BTreeMap<String, u64> = state.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        for p in &all_profiles() {
            let mut merged = start.clone();
            for (attr, after, why) in coalesce_changes(&plan(&snap, p)) {
                let v: u64 = after.parse().unwrap();
                assert!(
                    start.contains_key(&attr),
                    "{driver} {state:?}: planned {attr}, which the driver did not report"
                );
                if let Err(e) = fam.accepts_on(&attr, v, false, &merged) {
                    panic!(
                        "{driver} from {state:?} (profile {} usecs {}): planned {attr} {v}: {e}; reason: {why}",
                        p.name, p.settings.coalesce_usecs
                    );
                }
                merged.insert(attr, v);
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn mlx5_every_planned_value_is_accepted() {
    let n = assert_every_planned_value_accepted(
        "mlx5_core",
        &[
            // mlx5e defaults: DIM on, 8 µs/128 frames RX, 16 µs/32 frames TX.
            &[
                ("adaptive-rx", 1),
                ("adaptive-tx", 1),
                ("rx-usecs", 8),
                ("rx-frames", 128),
                ("tx-usecs", 16),
                ("tx-frames", 32),
            ],
            &[
                ("adaptive-rx", 0),
                ("adaptive-tx", 0),
                ("rx-usecs", 4095),
                ("rx-frames", 65535),
                ("tx-usecs", 0),
                ("tx-frames", 1),
            ],
            // No adaptive attributes reported: the fixed-interval path.
            &[("rx-usecs", 3), ("tx-usecs", 3)],
        ],
    );
    assert!(n > 50, "only {n} checked");
}

#[test]
fn ena_every_planned_value_is_accepted() {
    let n = assert_every_planned_value_accepted(
        "ena",
        &[
            &[("adaptive-rx", 1), ("rx-usecs", 0), ("tx-usecs", 64)],
            &[("adaptive-rx", 0), ("rx-usecs", 20), ("tx-usecs", 196)],
            &[("rx-usecs", 0), ("tx-usecs", 64)],
        ],
    );
    assert!(n > 50, "only {n} checked");
}

/// virtio_net without VIRTIO_NET_F_NOTF_COAL (what virtnet_get_coalesce
/// reports then), with it, and with VIRTIO_NET_F_VQ_NOTF_COAL and DIM on.
const VIRTIO_NO_NOTF: &[(&str, u64)] = &[
    ("adaptive-rx", 0),
    ("rx-usecs", 0),
    ("tx-usecs", 0),
    ("rx-frames", 1),
    ("tx-frames", 1),
];
const VIRTIO_NO_NOTF_OLD: &[(&str, u64)] = &[
    ("rx-usecs", 0),
    ("tx-usecs", 0),
    ("rx-frames", 1),
    ("tx-frames", 0),
];
const VIRTIO_NOTF: &[(&str, u64)] = &[
    ("adaptive-rx", 0),
    ("rx-usecs", 0),
    ("tx-usecs", 0),
    ("rx-frames", 0),
    ("tx-frames", 0),
];

#[test]
fn virtio_net_every_planned_value_is_accepted() {
    let n = assert_every_planned_value_accepted(
        "virtio_net",
        &[
            VIRTIO_NO_NOTF,
            VIRTIO_NO_NOTF_OLD,
            VIRTIO_NOTF,
            &[
                ("adaptive-rx", 0),
                ("rx-usecs", 64),
                ("tx-usecs", 32),
                ("rx-frames", 32),
                ("tx-frames", 32),
            ],
            &[
                ("adaptive-rx", 1),
                ("rx-usecs", 8),
                ("tx-usecs", 0),
                ("rx-frames", 256),
                ("tx-frames", 0),
            ],
        ],
    );
    assert!(n > 20, "only {n} checked");
}

#[test]
fn bnxt_every_planned_value_is_accepted() {
    let n = assert_every_planned_value_accepted(
        "bnxt_en",
        &[
            &[
                ("adaptive-rx", 1),
                ("rx-usecs", 10),
                ("rx-frames", 15),
                ("tx-usecs", 28),
                ("tx-frames", 30),
            ],
            &[
                ("adaptive-rx", 0),
                ("rx-usecs", 0),
                ("rx-frames", 1),
                ("tx-usecs", 5242),
                ("tx-frames", 1),
            ],
            &[("rx-usecs", 14), ("tx-usecs", 28)],
        ],
    );
    assert!(n > 50, "only {n} checked");
}

/// vmxnet3's four modes as vmxnet3_get_coalesce reports them.
const VMXNET3_DISABLED: &[(&str, u64)] = &[
    ("adaptive-rx", 0),
    ("rx-usecs", 0),
    ("rx-frames", 0),
    ("tx-frames", 0),
];
const VMXNET3_ADAPT: &[(&str, u64)] = &[
    ("adaptive-rx", 1),
    ("rx-usecs", 0),
    ("rx-frames", 0),
    ("tx-frames", 0),
];
const VMXNET3_RBC: &[(&str, u64)] = &[
    ("adaptive-rx", 0),
    ("rx-usecs", 250),
    ("rx-frames", 0),
    ("tx-frames", 0),
];
const VMXNET3_STATIC: &[(&str, u64)] = &[
    ("adaptive-rx", 0),
    ("rx-usecs", 0),
    ("rx-frames", 64),
    ("tx-frames", 64),
];

#[test]
fn vmxnet3_every_planned_value_is_accepted() {
    let n = assert_every_planned_value_accepted(
        "vmxnet3",
        &[VMXNET3_DISABLED, VMXNET3_ADAPT, VMXNET3_RBC, VMXNET3_STATIC],
    );
    assert!(n > 50, "only {n} checked");
}

/// The values each driver rejects are never planned: the cases that were
/// planned before the family tables.
#[test]
fn values_the_drivers_reject_are_not_planned() {
    // vmxnet3 in rate-based mode, latency profile (8 µs): 1000000/8 is
    // above VMXNET3_COAL_RBC_MAX_RATE; 0 (disabled) is planned instead.
    let snap = host("vmxnet3", "1.7.0.0-k-NAPI", None, VMXNET3_RBC);
    let c = coalesce_changes(&plan(&snap, &builtin("latency").unwrap()));
    assert_eq!(
        c.iter()
            .map(|(a, v, _)| (a.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
        [("rx-usecs", "0")],
        "{c:?}"
    );
    assert!(c[0].2.contains("VMXNET3_COALESCE_DISABLED"), "{}", c[0].2);

    // vmxnet3 rate-based, throughput: adaptive-rx alone on a nonzero
    // rx-usecs is EINVAL; rx-usecs 0 goes first.
    let c = coalesce_changes(&plan(&snap, &builtin("throughput").unwrap()));
    assert_eq!(
        c.iter()
            .map(|(a, v, _)| (a.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
        [("rx-usecs", "0"), ("adaptive-rx", "1")],
        "{c:?}"
    );

    // vmxnet3 in static mode: a rate-based rx-usecs needs the frame
    // counts at 0, which nettune does not plan: nothing, and a note.
    let p = plan(
        &host("vmxnet3", "1.7", None, VMXNET3_STATIC),
        &with_usecs("latency", 50),
    );
    assert!(
        coalesce_changes(&p).is_empty(),
        "{:?}",
        coalesce_changes(&p)
    );

    // virtio_net without VIRTIO_NET_F_NOTF_COAL: no usecs, no adaptive-rx.
    for state in [VIRTIO_NO_NOTF, VIRTIO_NO_NOTF_OLD] {
        for prof in ["throughput", "latency"] {
            let p = plan(
                &host("virtio_net", "1.0.0", None, state),
                &builtin(prof).unwrap(),
            );
            assert!(
                coalesce_changes(&p).is_empty(),
                "{prof} {state:?}: {:?}",
                coalesce_changes(&p)
            );
        }
    }
    let p = plan(
        &host("virtio_net", "1.0.0", None, VIRTIO_NO_NOTF_OLD),
        &builtin("throughput").unwrap(),
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.rule == "coalesce" && n.message.contains("VIRTIO_NET_F_NOTF_COAL")),
        "{:?}",
        p.notes
    );
    // With the feature shown, the fixed interval is planned.
    let p = plan(
        &host("virtio_net", "1.0.0", None, VIRTIO_NOTF),
        &builtin("throughput").unwrap(),
    );
    assert!(
        coalesce_changes(&p).iter().any(|(a, _, _)| a == "rx-usecs"),
        "{:?}",
        coalesce_changes(&p)
    );

    // mlx5 with coalesce_usecs above MLX5E_MAX_COAL_TIME: lowered to 4095.
    let p = plan(
        &host(
            "mlx5_core",
            "6.1.0",
            None,
            &[("rx-usecs", 8), ("tx-usecs", 16)],
        ),
        &with_usecs("throughput", 5000),
    );
    let c = coalesce_changes(&p);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0].0.as_str(), c[0].1.as_str()), ("rx-usecs", "4095"));

    // bnxt above its 16-bit timer: lowered to 5242.
    let p = plan(
        &host(
            "bnxt_en",
            "1.10.2",
            None,
            &[("rx-usecs", 14), ("tx-usecs", 28)],
        ),
        &with_usecs("throughput", 6000),
    );
    let c = coalesce_changes(&p);
    assert_eq!(
        (c[0].0.as_str(), c[0].1.as_str()),
        ("rx-usecs", "5242"),
        "{c:?}"
    );
}

#[test]
fn adaptive_modes_are_said_in_both_units() {
    let snap = host(
        "mlx5_core",
        "6.1.0",
        None,
        &[
            ("adaptive-rx", 0),
            ("adaptive-tx", 0),
            ("rx-usecs", 8),
            ("tx-usecs", 16),
        ],
    );
    let c = coalesce_changes(&plan(&snap, &builtin("throughput").unwrap()));
    let rx = c.iter().find(|(a, _, _)| a == "adaptive-rx").unwrap();
    assert_eq!(rx.1, "1");
    assert!(rx.2.contains("3,906-1,000,000 interrupts/s"), "{}", rx.2);
    assert!(rx.2.contains("1-256 µs"), "{}", rx.2);
    let f = family("vmxnet3").unwrap();
    assert!(
        f.describe(100).contains("10,000 interrupts/s"),
        "{}",
        f.describe(100)
    );
    assert!(f.describe(9).contains("EINVAL"), "{}", f.describe(9));
    assert!(family("mlx5_core")
        .unwrap()
        .describe(4096)
        .contains("ERANGE"));
}

/// i40e/iavf/ice: odd values and changes under adaptive-rx/tx are EINVAL.
#[test]
fn i40e_iavf_ice_every_planned_value_is_accepted() {
    for d in ["i40e", "iavf", "ice"] {
        let n = assert_every_planned_value_accepted(
            d,
            &[
                // The drivers' defaults: dynamic ITR, 50 µs RX and TX.
                &[
                    ("adaptive-rx", 1),
                    ("adaptive-tx", 1),
                    ("rx-usecs", 50),
                    ("tx-usecs", 50),
                ],
                &[
                    ("adaptive-rx", 0),
                    ("adaptive-tx", 0),
                    ("rx-usecs", 0),
                    ("tx-usecs", 8160),
                ],
                &[
                    ("adaptive-rx", 1),
                    ("adaptive-tx", 0),
                    ("rx-usecs", 2),
                    ("tx-usecs", 122),
                ],
                &[("rx-usecs", 62), ("tx-usecs", 62)],
            ],
        );
        assert!(n > 50, "{d}: only {n} checked");
    }
    // An odd coalesce_usecs is planned one lower: ice refuses odd values.
    let p = plan(
        &host("ice", "6.1", None, &[("rx-usecs", 62), ("tx-usecs", 62)]),
        &with_usecs("latency", 9),
    );
    let c = coalesce_changes(&p);
    assert!(c.iter().all(|(_, v, _)| v == "8"), "{c:?}");
}

#[test]
fn mlx4_every_planned_value_is_accepted() {
    let n = assert_every_planned_value_accepted(
        "mlx4_en",
        &[
            // mlx4_en defaults: adaptive on, 16 µs/44 frames RX, 16 µs/16 frames TX.
            &[
                ("adaptive-rx", 1),
                ("rx-usecs", 16),
                ("rx-frames", 44),
                ("tx-usecs", 16),
                ("tx-frames", 16),
            ],
            &[("adaptive-rx", 0), ("rx-usecs", 0), ("tx-usecs", 65534)],
        ],
    );
    assert!(n > 50, "only {n} checked");
    let p = plan(
        &host(
            "mlx4_en",
            "4.0-0",
            None,
            &[("adaptive-rx", 0), ("rx-usecs", 16), ("tx-usecs", 16)],
        ),
        &builtin("throughput").unwrap(),
    );
    let c = coalesce_changes(&p);
    assert!(c[0].2.contains("7,813 interrupts/s"), "{c:?}");
}
