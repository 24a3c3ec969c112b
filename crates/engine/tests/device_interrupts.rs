//! Device interrupts over the measured window (`cpu.interrupts` of each
//! side), end to end on loopback with an in-process server: both sides
//! report them, one row per CPU, the total is the rows' sum, and no CPU's
//! count exceeds what `/proc/interrupts`' numbered rows say happened on it
//! between a read before the test and one after it (the window lies
//! inside). Loopback has no device interrupt of its own, so nothing is
//! said of how many: the machine's other devices fire or not.

#![allow(clippy::unwrap_used)]

mod common;

use model::parse::interrupts::parse_interrupts;
use nettune_engine::client::{self, ClientOpts};
use nettune_engine::config::{TestConfig, TestKind};
use nettune_engine::report::IrqRates;
use std::collections::BTreeMap;

/// Numbered rows' counts per CPU now.
fn numbered_per_cpu() -> Option<BTreeMap<u32, u64>> {
    let p = parse_interrupts(&std::fs::read_to_string("/proc/interrupts").ok()?).ok()?;
    let mut m = BTreeMap::new();
    for (i, c) in p.cpus.iter().enumerate() {
        let sum = p
            .irqs
            .iter()
            .map(|l| l.per_cpu.get(i).copied().unwrap_or(0))
            .fold(0u64, u64::saturating_add);
        m.insert(c.0, sum);
    }
    Some(m)
}

fn check(side: &str, r: &IrqRates, outer: &BTreeMap<u32, u64>, cpus: &[u32]) {
    let rows: Vec<u32> = r.per_cpu.iter().map(|c| c.cpu).collect();
    assert_eq!(rows, cpus, "{side}: one row per CPU of the per-CPU list");
    let sum: u64 = r.per_cpu.iter().map(|c| c.count).sum();
    assert_eq!(r.count, sum, "{side}");
    assert!(r.per_s.is_finite() && r.per_s >= 0.0, "{side} {}", r.per_s);
    for c in &r.per_cpu {
        let most = outer.get(&c.cpu).copied().unwrap_or(0);
        assert!(
            c.count <= most,
            "{side} cpu{}: {} in the window, {most} around it",
            c.cpu,
            c.count
        );
    }
    assert!(
        r.ifaces.iter().all(|i| i.iface != "lo"),
        "{side}: {:?}",
        r.ifaces
    );
}

#[test]
fn both_sides_report_device_interrupts_within_proc_interrupts_deltas() {
    let Some(before) = numbered_per_cpu() else {
        eprintln!("skipped: /proc/interrupts is not readable here");
        return;
    };
    let addr = common::loopback_server();
    let cfg = TestConfig {
        test: TestKind::TcpRr,
        size: 1,
        warmup_ms: 100,
        duration_ms: 500,
        interval_ms: 250,
        ..TestConfig::default()
    };
    let o = ClientOpts::new("127.0.0.1", addr.port());
    let res = client::run(&o, &cfg, &mut |_| {}).unwrap();
    let after = numbered_per_cpu().unwrap();
    let outer: BTreeMap<u32, u64> = after
        .iter()
        .map(|(c, a)| (*c, a.saturating_sub(before.get(c).copied().unwrap_or(0))))
        .collect();
    for (side, r) in [("client", &res.client), ("server", &res.server_side)] {
        let cpus: Vec<u32> = r.cpu.cpus.iter().map(|c| c.cpu).collect();
        assert!(!cpus.is_empty(), "{side}: {:?}", r.cpu.note);
        let irq = r
            .cpu
            .interrupts
            .as_ref()
            .unwrap_or_else(|| panic!("{side}"));
        check(side, irq, &outer, &cpus);
    }
    // The JSON carries it where docs/engine.md says.
    let v = serde_json::to_value(&res).unwrap();
    for side in ["client", "server_side"] {
        let i = &v[side]["cpu"]["interrupts"];
        assert!(i["count"].is_u64() && i["per_s"].is_number(), "{side}: {i}");
        assert!(
            i["per_cpu"].is_array() && i["ifaces"].is_array(),
            "{side}: {i}"
        );
    }
}
