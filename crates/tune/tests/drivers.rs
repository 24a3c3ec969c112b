//! Driver knowledge in plans: `InterruptThrottleRate` one value per port,
//! values the driver's code rejects refused or clamped with the reason, and
//! the link drop of a module reload said in every change (issue 9, item 2).
//! Hosts are built in code: a 4-CPU machine with N ports of one driver.

#![allow(clippy::unwrap_used)]

use model::plan::{HostExtras, Plan, PlanOptions};
use model::snapshot::*;
use model::{CpuId, CpuSet, NodeId};
use nettune_tune as tune;
use std::fmt::Write as _;
use tune::profile::{builtin, parse_user, Profile};

fn iface(name: &str, driver: &str, version: &str) -> Interface {
    let ethtool = EthtoolState {
        driver: Probe::Ok {
            value: DriverInfo {
                driver: Some(driver.into()),
                version: Some(version.into()),
                firmware: None,
                bus_info: None,
            },
        },
        ..Default::default()
    };
    Interface {
        name: name.into(),
        ifindex: Some(2),
        driver: Some(driver.into()),
        pci_address: None,
        pci_id: None,
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
    }
}

/// `ports` interfaces `eth0..` bound to `driver` (plus a virtio one).
fn host(driver: &str, version: &str, ports: usize) -> HostSnapshot {
    let cpus = (0..4u32)
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
    let mut interfaces: Vec<Interface> = (0..ports)
        .map(|i| iface(&format!("eth{i}"), driver, version))
        .collect();
    interfaces.push(iface("ens9", "virtio_net", "1.0.0"));
    HostSnapshot {
        schema_version: SNAPSHOT_SCHEMA_VERSION,
        source: Source {
            root: "code".into(),
            hostname: Some("drivers".into()),
            kernel: Some("6.1.0-18-amd64".into()),
            label: None,
        },
        cpu: CpuSummary {
            possible: CpuSet::range(0, 3),
            online: CpuSet::range(0, 3),
            ..Default::default()
        },
        cpus,
        nodes: vec![NumaNode {
            id: NodeId(0),
            cpus: CpuSet::range(0, 3),
            distances: vec![10],
            mem_total_kib: None,
        }],
        interfaces,
        irqs: vec![],
        sysctls: Default::default(),
        owners: ForeignOwners::default(),
        notes: vec![],
    }
}

/// A user profile inheriting `base` with `interrupt_throttle_rate = itr`.
fn with_itr(base: &str, itr: u32) -> Profile {
    let text = format!(
        "name = \"itr{itr}\"\ninherit = \"{base}\"\n[rules]\nmodule-params = {{ enabled = true }}\n[settings]\ninterrupt_throttle_rate = {itr}\n"
    );
    parse_user(&text, "test.toml").unwrap()
}

fn plan(snap: &HostSnapshot, p: &Profile) -> Plan {
    tune::plan(snap, &HostExtras::default(), p, &PlanOptions::default()).unwrap()
}

/// The module-params part of a plan: its changes and notes.
fn module_part(plan: &Plan) -> String {
    let mut o = String::new();
    for c in plan.changes.iter().filter(|c| c.rule == "module-params") {
        let _ = writeln!(
            o,
            "+ {} = {}\n    {}",
            c.target.describe(),
            c.after,
            c.reason
        );
    }
    for n in plan.notes.iter().filter(|n| n.rule == "module-params") {
        let _ = writeln!(o, "  [note] {}", n.message);
    }
    o
}

#[test]
fn the_drivers_default_itr_is_not_written_as_a_change() {
    // Issue 38: throughput asks for InterruptThrottleRate 3, e1000's and
    // e1000e's default (DEFAULT_ITR 3 in their param.c): a snippet that
    // changes nothing is no change, and the note says so.
    for driver in ["e1000", "e1000e"] {
        let snap = host(driver, "7.3.21-k8-NAPI", 2);
        let p = plan(&snap, &builtin("throughput").unwrap());
        assert!(
            !p.changes.iter().any(|c| c.rule == "module-params"),
            "{driver}: {}",
            module_part(&p)
        );
        assert!(
            p.notes
                .iter()
                .any(|n| n.rule == "module-params" && n.message.contains("already the default")),
            "{driver}: {}",
            module_part(&p)
        );
    }
}

#[test]
fn four_e1000e_ports_get_four_values_and_the_reload_warning() {
    let snap = host("e1000e", "3.2.6-k", 4);
    let mut out = String::new();
    // Throughput's ITR 3 is e1000e's default: no change
    // (the_drivers_default_itr_is_not_written_as_a_change).
    let prof = "latency";
    let p = plan(&snap, &builtin(prof).unwrap());
    let c = p
        .changes
        .iter()
        .find(|c| c.rule == "module-params")
        .unwrap();
    assert_eq!(c.after.split(',').count(), 4, "{}", c.after);
    assert!(c.reason.contains("drops the link"), "{}", c.reason);
    let _ = writeln!(out, "## {prof}\n{}", module_part(&p));
    insta::assert_snapshot!("e1000e_four_ports", out);
}

#[test]
fn the_script_says_a_reload_drops_the_link() {
    let p = plan(&host("e1000e", "3.2.6-k", 2), &builtin("latency").unwrap());
    let script = tune::render::script(&p);
    let line = script
        .lines()
        .find(|l| l.contains("InterruptThrottleRate"))
        .unwrap();
    assert!(line.contains("InterruptThrottleRate=0,0"), "{line}");
    assert!(line.contains("drops the link"), "{line}");
}

#[test]
fn values_the_driver_rejects_are_refused_or_clamped() {
    let mut out = String::new();
    let cases: [(&str, &str, usize, Profile); 7] = [
        // Intel: the 82547 must not get 0 and may hang above 75,000.
        ("e1000", "7.3.21-k8-NAPI", 2, builtin("latency").unwrap()),
        ("e1000", "7.3.21-k8-NAPI", 2, with_itr("latency", 100_000)),
        // ixgbevf's code: 0, 1 or 956-488281; 3 falls back to dynamic.
        ("ixgbevf", "2.16.1", 8, builtin("throughput").unwrap()),
        ("ixgbevf", "2.16.1", 2, with_itr("throughput", 500)),
        ("ixgbevf", "2.16.1", 10, with_itr("throughput", 1000)),
        // The in-tree ixgbevf has no InterruptThrottleRate.
        ("ixgbevf", "4.1.0-k", 1, with_itr("throughput", 1000)),
        // e1000e's range floor is 100.
        ("e1000e", "3.2.6-k", 1, with_itr("balanced", 100)),
    ];
    for (driver, version, ports, prof) in cases {
        let p = plan(&host(driver, version, ports), &prof);
        for c in p.changes.iter().filter(|c| c.rule == "module-params") {
            for v in c.after.split(',') {
                let v: u32 = v.parse().unwrap();
                let spec = tune::drivers::itr_spec(driver).unwrap();
                assert!(
                    tune::drivers::check_itr(spec, v) == tune::drivers::ItrVerdict::Ok(v),
                    "{driver}: planned {v}, which the driver rejects"
                );
            }
        }
        let _ = writeln!(
            out,
            "## {driver} {version}, {ports} ports, profile {} (interrupt_throttle_rate {})\n{}",
            prof.name,
            prof.settings.interrupt_throttle_rate,
            module_part(&p)
        );
    }
    insta::assert_snapshot!("itr_refused_and_clamped", out);
}

/// Issue 35: apply reloads only the modules `model::knobpath::KNOWN_MODULES`
/// lists; every driver the tables know must be there, or its plans would be
/// refused.
#[test]
fn every_table_driver_may_be_reloaded() {
    for spec in tune::drivers::ITR_DRIVERS {
        assert!(
            model::knobpath::KNOWN_MODULES.contains(&spec.driver),
            "{}",
            spec.driver
        );
    }
}
