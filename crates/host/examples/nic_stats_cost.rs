//! CPU cost of reading the driver counters of N interfaces once (one
//! sampler interval), with the `SIOCETHTOOL` ioctl (names cached, as the
//! sampler does) and with one `ethtool -S` fork per interface (the old way,
//! now the fallback). Run it where the interfaces are (`bench/nic_stats_cost.sh`
//! runs it under `ip netns exec` with veth pairs).
//!
//!   nic_stats_cost SECONDS IF...
//!
//! Each method samples back to back for SECONDS of wall time; CPU time is
//! utime+stime of this process and of its reaped children (ethtool), from
//! `/proc/self/stat`, divided by the samples taken. At 1 Hz, µs per sample
//! / 10^4 is the % of one CPU.

use model::snapshot::Probe;
use nettune_host::ethtool::ioctl::IoctlStats;
use nettune_host::ethtool::stats::ethtool_s;
use std::time::{Duration, Instant};

/// (own, children) CPU seconds.
fn cpu() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // After the comm: state is index 0, utime 11, stime 12, cutime 13, cstime 14.
    let tick = 100.0; // CLK_TCK on Linux
    let g = |i: usize| f.get(i).copied().unwrap_or(0.0) / tick;
    (g(11) + g(12), g(13) + g(14))
}

fn measure(label: &str, ifaces: &[String], secs: f64, mut one: impl FnMut(&str) -> bool) {
    let (s0, c0) = cpu();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs_f64(secs) {
        for i in ifaces {
            assert!(one(i), "{label}: no counters for {i}");
        }
        n += 1;
    }
    let wall = start.elapsed().as_secs_f64();
    let (s1, c1) = cpu();
    let own = (s1 - s0) / n as f64 * 1e6;
    let ch = (c1 - c0) / n as f64 * 1e6;
    let total = own + ch;
    println!(
        "| {} | {label} | {n} | {:.2} s | {own:.0} µs | {ch:.0} µs | {total:.0} µs | {:.3} % |",
        ifaces.len(),
        wall,
        total / 1e4
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let ifaces: Vec<String> = args.collect();
    let mut io = IoctlStats::new();
    measure("ioctl (names cached)", &ifaces, secs, |i| {
        matches!(io.read(i), Ok(Probe::Ok { .. }))
    });
    measure("`ethtool -S` fork per NIC", &ifaces, secs, |i| {
        matches!(ethtool_s(i), Probe::Ok { .. })
    });
}
