//! Deltas of hostile-sized samples are linear, and counters that go
//! backwards are resets, not 32-bit wraps (issue 16, defects 3 and 7).
//!
//! The size tests use inputs where the old quadratic code needed minutes to
//! hours (200k IRQ lines: 2·10^10 line comparisons; 32768 CPU columns:
//! 5·10^8 column comparisons per IRQ line) and the linear code a second or
//! two in a debug build; the bound is generous so a busy machine passes.

#![allow(clippy::unwrap_used)]

use nettune_model::parse::interrupts::parse_interrupts;
use nettune_model::parse::netdev::parse_netdev;
use nettune_model::parse::softirqs::parse_softirqs;
use nettune_model::parse::softnet::parse_softnet;
use nettune_model::parse::stat::parse_proc_stat;
use nettune_model::sample::{Sample, Width};
use nettune_model::Nanos;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Far above what the linear code needs on a busy 2-core machine in a debug
/// build, far below what the quadratic code needed.
const BOUND: Duration = Duration::from_secs(60);

const NETDEV_HEAD: &str = "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n";

fn stat(cpus: usize, tick: u64) -> String {
    let mut s = format!("cpu {tick} 0 0 {tick}\n");
    for c in 0..cpus {
        writeln!(s, "cpu{c} {tick} 0 0 {tick}").unwrap();
    }
    s
}

fn header(cpus: usize) -> String {
    let mut h = String::new();
    for c in 0..cpus {
        write!(h, " CPU{c}").unwrap();
    }
    h.push('\n');
    h
}

/// `/proc/interrupts` with `lines` IRQs over `cpus` columns, every count `v`.
fn interrupts(lines: usize, cpus: usize, v: u64) -> String {
    let mut s = header(cpus);
    let counts = format!(" {v}").repeat(cpus);
    for n in 0..lines {
        writeln!(s, "{n}:{counts} PCI-MSI {n}-edge eth{n}").unwrap();
    }
    s
}

fn sample(at_s: u64, stat_text: &str) -> Sample {
    Sample {
        at: Nanos(at_s * 1_000_000_000),
        stat: parse_proc_stat(stat_text).unwrap(),
        ..Sample::default()
    }
}

#[test]
fn two_hundred_thousand_irq_lines_are_linear() {
    let (a, b) = (interrupts(200_000, 2, 1), interrupts(200_000, 2, 3));
    let mut s0 = sample(1, &stat(2, 1));
    let mut s1 = sample(2, &stat(2, 2));
    s0.interrupts = Some(parse_interrupts(&a).unwrap());
    s1.interrupts = Some(parse_interrupts(&b).unwrap());
    let t = Instant::now();
    let d = s1.delta(&s0);
    let took = t.elapsed();
    assert_eq!(d.irqs.len(), 200_000);
    assert!(d.irqs.iter().all(|i| i.count == 4));
    assert!(took < BOUND, "200k IRQ lines took {took:?}");
}

#[test]
fn thirty_two_thousand_cpus_are_linear() {
    let cpus = 32_768;
    let mut s0 = sample(1, &stat(cpus, 1));
    let mut s1 = sample(2, &stat(cpus, 2));
    s0.interrupts = Some(parse_interrupts(&interrupts(40, cpus, 1)).unwrap());
    s1.interrupts = Some(parse_interrupts(&interrupts(40, cpus, 2)).unwrap());
    let sirq = |v: u64| {
        let counts = format!(" {v}").repeat(cpus);
        format!("{}NET_TX:{counts}\nNET_RX:{counts}\n", header(cpus))
    };
    s0.softirqs = Some(parse_softirqs(&sirq(1)).unwrap());
    s1.softirqs = Some(parse_softirqs(&sirq(5)).unwrap());
    // 5.10+ rows with the CPU index column.
    let softnet = |v: u32| {
        let mut s = String::new();
        for c in 0..cpus {
            writeln!(s, "{v:08x} 0 0 0 0 0 0 0 0 0 0 0 {c:08x}").unwrap();
        }
        s
    };
    s0.softnet = Some(parse_softnet(&softnet(1)).unwrap());
    s1.softnet = Some(parse_softnet(&softnet(8)).unwrap());
    let t = Instant::now();
    let d = s1.delta(&s0);
    let took = t.elapsed();
    assert_eq!(d.cpus.len(), cpus);
    assert!(d
        .cpus
        .iter()
        .all(|c| c.net_rx == 4 && c.softnet.map(|s| s.processed) == Some(7)));
    assert_eq!(d.irqs.len(), 40);
    assert!(d.irqs.iter().all(|i| i.per_cpu.len() == cpus));
    assert!(took < BOUND, "32768 CPUs took {took:?}");
}

#[test]
fn two_hundred_thousand_interfaces_are_linear() {
    let n = 200_000;
    let netdev = |v: u64| {
        let mut s = NETDEV_HEAD.to_string();
        for k in 0..n {
            writeln!(s, "eth{k}: {v} {v} 0 0 0 0 0 0 {v} {v} 0 0 0 0 0 0").unwrap();
        }
        s
    };
    // Every interface single-queue with its own IRQ named after it: the IRQ
    // is tied to the interface by name, and its queue to the IRQ.
    let counts: BTreeMap<String, u32> = (0..n).map(|k| (format!("eth{k}"), 1)).collect();
    let counts = Arc::new(counts);
    let mut s0 = sample(1, &stat(2, 1));
    let mut s1 = sample(2, &stat(2, 2));
    s0.netdev = Some(parse_netdev(&netdev(10)).unwrap());
    s1.netdev = Some(parse_netdev(&netdev(30)).unwrap());
    s0.interrupts = Some(parse_interrupts(&interrupts(n, 2, 1)).unwrap());
    s1.interrupts = Some(parse_interrupts(&interrupts(n, 2, 2)).unwrap());
    s0.rx_queue_counts = counts.clone();
    s1.rx_queue_counts = counts;
    let t = Instant::now();
    let d = s1.delta(&s0);
    let took = t.elapsed();
    assert_eq!(d.ifaces.len(), n);
    assert!(d.ifaces.iter().all(|i| i.rx_packets.0 == 20));
    assert_eq!(d.irqs[7].iface.as_deref(), Some("eth7"));
    assert_eq!(d.queues.len(), n);
    assert!(took < BOUND, "200k interfaces took {took:?}");
}

fn softnet_row(processed: u32, dropped: u32) -> String {
    format!("{processed:08x} {dropped:08x} 00000000 0 0 0 0 0 0 0 0 0 00000000\n")
}

#[test]
fn a_softnet_counter_going_backwards_is_a_reset_not_a_wrap() {
    let mut s0 = sample(1, &stat(1, 1));
    let mut s1 = sample(2, &stat(1, 2));
    s0.softnet = Some(parse_softnet(&softnet_row(0xffff_fff0, 0x100)).unwrap());
    s1.softnet = Some(parse_softnet(&softnet_row(0x10, 0x1)).unwrap());
    let d = s1.delta(&s0);
    let sn = d.cpus[0].softnet.unwrap();
    // processed: a plausible 32-bit wrap (0x20 packets).
    assert_eq!(sn.processed, 0x20);
    // dropped 0x100 -> 0x1: not 4294967041 drops, a reset.
    assert_eq!(sn.dropped, 0);
    assert_eq!(d.resets.len(), 1, "{:?}", d.resets);
    let r = &d.resets[0];
    assert_eq!(
        (r.counter.as_str(), r.before, r.after, r.cpu.map(|c| c.0)),
        ("softnet_stat.dropped", 0x100, 0x1, Some(0))
    );
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("softnet_stat.dropped") && n.contains("went backwards")),
        "{:?}",
        d.notes
    );
    let json = serde_json::to_string(&d).unwrap();
    assert!(json.contains("\"resets\""), "{json}");
}

#[test]
fn other_counters_going_backwards_are_resets_and_bounded() {
    let netdev = |v: u64| {
        let mut s = NETDEV_HEAD.to_string();
        for k in 0..100 {
            writeln!(s, "eth{k}: {v} {v} 0 0 0 0 0 0 {v} {v} 0 0 0 0 0 0").unwrap();
        }
        s
    };
    let mut s0 = sample(1, &stat(1, 1));
    let mut s1 = sample(2, &stat(1, 2));
    // 64-bit counters: a drop by less than 2^31 is still a reset.
    s0.netdev = Some(parse_netdev(&netdev(5_000_000_000)).unwrap());
    s1.netdev = Some(parse_netdev(&netdev(4_999_999_000)).unwrap());
    let d = s1.delta(&s0);
    assert!(d
        .ifaces
        .iter()
        .all(|i| i.rx_bytes.0 == 0 && i.rx_packets.0 == 0));
    assert_eq!(d.resets.len(), nettune_model::sample::MAX_RESETS);
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("more counters went backwards")));
    assert_eq!(nettune_model::sample::increase(10, 4, Width::Bits64), None);
}
