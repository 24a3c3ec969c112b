//! Cost of parsing and diffing hostile-sized counter files (issue 16):
//! per 10k `/proc/interrupts` lines, per 1k CPUs (`/proc/stat`,
//! `/proc/interrupts` columns, `/proc/softirqs`, softnet rows), and a
//! 200k-interface `/proc/net/dev`. Each figure is parse of two samples plus
//! their delta, the best of 3 runs. Results: `bench/RESULTS.md`.
//!
//! Run: `cargo bench -p nettune-model --bench parse_cost`
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use nettune_model::parse::interrupts::parse_interrupts;
use nettune_model::parse::netdev::parse_netdev;
use nettune_model::parse::softirqs::parse_softirqs;
use nettune_model::parse::softnet::parse_softnet;
use nettune_model::parse::stat::parse_proc_stat;
use nettune_model::sample::Sample;
use nettune_model::Nanos;
use std::fmt::Write;
use std::time::{Duration, Instant};

fn header(cpus: usize) -> String {
    let mut h = String::new();
    for c in 0..cpus {
        write!(h, " CPU{c}").unwrap();
    }
    h.push('\n');
    h
}

fn stat(cpus: usize, t: u64) -> String {
    let mut s = format!("cpu {t} 0 0 {t}\n");
    for c in 0..cpus {
        writeln!(s, "cpu{c} {t} 0 0 {t}").unwrap();
    }
    s
}

fn interrupts(lines: usize, cpus: usize, v: u64) -> String {
    let mut s = header(cpus);
    let counts = format!(" {v}").repeat(cpus);
    for n in 0..lines {
        writeln!(s, "{n}:{counts} PCI-MSI {n}-edge eth{n}-TxRx-0").unwrap();
    }
    s
}

fn softirqs(cpus: usize, v: u64) -> String {
    let counts = format!(" {v}").repeat(cpus);
    let mut s = header(cpus);
    for name in [
        "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER",
        "RCU",
    ] {
        writeln!(s, "{name}:{counts}").unwrap();
    }
    s
}

fn softnet(cpus: usize, v: u32) -> String {
    let mut s = String::new();
    for c in 0..cpus {
        writeln!(s, "{v:08x} 0 0 0 0 0 0 0 0 0 0 0 {c:08x}").unwrap();
    }
    s
}

fn netdev(n: usize, v: u64) -> String {
    let mut s = "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n".to_string();
    for k in 0..n {
        writeln!(s, "veth{k}: {v} {v} 0 0 0 0 0 0 {v} {v} 0 0 0 0 0 0").unwrap();
    }
    s
}

/// Best of 3 of `f`.
fn best(mut f: impl FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    // IRQ lines on 2 CPUs: parse two /proc/interrupts and diff them.
    for lines in [10_000, 100_000, 200_000, 1_400_000] {
        let (a, b) = (interrupts(lines, 2, 1), interrupts(lines, 2, 2));
        let st = parse_proc_stat(&stat(2, 1)).unwrap();
        let d = best(|| {
            let s0 = Sample {
                stat: st.clone(),
                interrupts: Some(parse_interrupts(&a).unwrap()),
                ..Sample::default()
            };
            let s1 = Sample {
                at: Nanos(1_000_000_000),
                stat: st.clone(),
                interrupts: Some(parse_interrupts(&b).unwrap()),
                ..Sample::default()
            };
            assert_eq!(s1.delta(&s0).irqs.len(), lines);
        });
        println!(
            "irq lines {lines:>9} ({:>5.1} MiB each): {:>9.1} ms, {:.2} ms per 10k lines",
            a.len() as f64 / 1048576.0,
            ms(d),
            ms(d) * 10_000.0 / lines as f64
        );
    }
    // CPUs: /proc/stat, softirqs, softnet and 32 IRQ lines with a column each.
    for cpus in [1_024, 8_192, 32_768] {
        let texts = [
            (
                stat(cpus, 1),
                interrupts(32, cpus, 1),
                softirqs(cpus, 1),
                softnet(cpus, 1),
            ),
            (
                stat(cpus, 2),
                interrupts(32, cpus, 2),
                softirqs(cpus, 2),
                softnet(cpus, 2),
            ),
        ];
        let d = best(|| {
            let mut s: Vec<Sample> = texts
                .iter()
                .map(|(st, irq, si, sn)| Sample {
                    stat: parse_proc_stat(st).unwrap(),
                    interrupts: Some(parse_interrupts(irq).unwrap()),
                    softirqs: Some(parse_softirqs(si).unwrap()),
                    softnet: Some(parse_softnet(sn).unwrap()),
                    ..Sample::default()
                })
                .collect();
            s[1].at = Nanos(1_000_000_000);
            assert_eq!(s[1].delta(&s[0]).cpus.len(), cpus);
        });
        println!(
            "cpus {cpus:>6}: {:>8.1} ms, {:.2} ms per 1k CPUs",
            ms(d),
            ms(d) * 1024.0 / cpus as f64
        );
    }
    // Interfaces.
    let n = 200_000;
    let (a, b) = (netdev(n, 1), netdev(n, 2));
    let st = parse_proc_stat(&stat(2, 1)).unwrap();
    let d = best(|| {
        let s0 = Sample {
            stat: st.clone(),
            netdev: Some(parse_netdev(&a).unwrap()),
            ..Sample::default()
        };
        let s1 = Sample {
            at: Nanos(1_000_000_000),
            stat: st.clone(),
            netdev: Some(parse_netdev(&b).unwrap()),
            ..Sample::default()
        };
        assert_eq!(s1.delta(&s0).ifaces.len(), n);
    });
    println!(
        "net/dev {n} interfaces ({:.1} MiB each): {:.1} ms",
        a.len() as f64 / 1048576.0,
        ms(d)
    );
}
