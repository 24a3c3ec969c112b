//! Test support: fixture snapshots and synthetic counter samples written as
//! `/proc` text into a temp root and read back by `host::sampler`, so the
//! rate rules see exactly what a live host gives them.

#![allow(dead_code, clippy::unwrap_used)]

use host::sampler::{Sample, Sampler};
use host::Root;
use model::snapshot::HostSnapshot;
use model::Nanos;
use nettune_doctor::{diagnose, DoctorId, Input, Report};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// The snapshot of fixture `name` and its extras.
pub fn input(name: &str) -> Input {
    let root = Root::new(fixture(name));
    let snap = host::read_snapshot(&root);
    let mut i = Input::new(snap);
    i.extras = host::extras::read_extras(&root, &i.snapshot);
    i.sockstat = host::sockstat::read_sockstat(&root).unwrap();
    i
}

/// A snapshot read from a directory.
pub fn snapshot_of(dir: &std::path::Path) -> HostSnapshot {
    host::read_snapshot(&Root::new(dir))
}

/// Per-CPU tick counts of `/proc/stat` (USER_HZ).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ticks {
    pub usr: u64,
    pub sys: u64,
    pub irq: u64,
    pub softirq: u64,
    pub idle: u64,
}

/// The counters of one instant; cumulative like the kernel's.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Per CPU, in CPU order 0..n.
    pub cpus: Vec<Ticks>,
    /// NET_RX softirqs per CPU.
    pub net_rx: Vec<u64>,
    /// softnet (processed, dropped, time_squeeze) per CPU.
    pub softnet: Vec<(u32, u32, u32)>,
    /// `Section.Name` → value, written to snmp (Udp, Tcp) or netstat (TcpExt).
    pub counters: BTreeMap<String, i64>,
    /// (iface, rx_packets, rx_drop).
    pub netdev: Vec<(String, u64, u64)>,
    /// (irq, name, per-CPU counts).
    pub interrupts: Vec<(u32, String, Vec<u64>)>,
}

impl Counters {
    /// `n` CPUs, all idle, nothing counted yet.
    pub fn cpus(n: usize) -> Counters {
        Counters {
            cpus: vec![Ticks::default(); n],
            net_rx: vec![0; n],
            softnet: vec![(0, 0, 0); n],
            ..Counters::default()
        }
    }

    /// Add `t` ticks to CPU `cpu`.
    pub fn tick(&mut self, cpu: usize, t: Ticks) -> &mut Self {
        let c = &mut self.cpus[cpu];
        c.usr += t.usr;
        c.sys += t.sys;
        c.irq += t.irq;
        c.softirq += t.softirq;
        c.idle += t.idle;
        self
    }

    /// Add to a counter.
    pub fn add(&mut self, key: &str, v: i64) -> &mut Self {
        *self.counters.entry(key.to_string()).or_default() += v;
        self
    }

    fn write(&self, dir: &std::path::Path) {
        let net = dir.join("proc/net");
        std::fs::create_dir_all(&net).unwrap();
        let mut stat = String::new();
        let sum = |f: fn(&Ticks) -> u64| self.cpus.iter().map(f).sum::<u64>();
        writeln!(
            stat,
            "cpu  {} 0 {} {} 0 {} {} 0 0 0",
            sum(|t| t.usr),
            sum(|t| t.sys),
            sum(|t| t.idle),
            sum(|t| t.irq),
            sum(|t| t.softirq)
        )
        .unwrap();
        for (i, t) in self.cpus.iter().enumerate() {
            writeln!(
                stat,
                "cpu{i} {} 0 {} {} 0 {} {} 0 0 0",
                t.usr, t.sys, t.idle, t.irq, t.softirq
            )
            .unwrap();
        }
        std::fs::write(dir.join("proc/stat"), stat).unwrap();
        let hdr: String = (0..self.cpus.len()).map(|i| format!(" CPU{i}")).collect();
        let row = |v: &[u64]| v.iter().map(|x| format!(" {x}")).collect::<String>();
        let zeros = vec![0u64; self.cpus.len()];
        std::fs::write(
            dir.join("proc/softirqs"),
            format!(
                "        {hdr}\n          HI:{}\n      NET_TX:{}\n      NET_RX:{}\n",
                row(&zeros),
                row(&zeros),
                row(&self.net_rx)
            ),
        )
        .unwrap();
        let mut sn = String::new();
        for (i, (p, d, s)) in self.softnet.iter().enumerate() {
            writeln!(
                sn,
                "{p:08x} {d:08x} {s:08x} 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 {i:08x}"
            )
            .unwrap();
        }
        std::fs::write(net.join("softnet_stat"), sn).unwrap();
        let section = |sec: &str| {
            let kv: Vec<(&str, i64)> = self
                .counters
                .iter()
                .filter_map(|(k, v)| {
                    let (s, n) = k.split_once('.')?;
                    (s == sec).then_some((n, *v))
                })
                .collect();
            if kv.is_empty() {
                return String::new();
            }
            let names: String = kv.iter().map(|(n, _)| format!(" {n}")).collect();
            let vals: String = kv.iter().map(|(_, v)| format!(" {v}")).collect();
            format!("{sec}:{names}\n{sec}:{vals}\n")
        };
        let snmp = format!("{}{}", section("Tcp"), section("Udp"));
        std::fs::write(
            net.join("snmp"),
            if snmp.is_empty() {
                "Udp: InDatagrams\nUdp: 0\n".to_string()
            } else {
                snmp
            },
        )
        .unwrap();
        let ns = section("TcpExt");
        std::fs::write(
            net.join("netstat"),
            if ns.is_empty() {
                "TcpExt: ListenDrops\nTcpExt: 0\n".to_string()
            } else {
                ns
            },
        )
        .unwrap();
        let mut dev = String::from("Inter-|   Receive\n face |bytes packets\n");
        for (n, p, d) in &self.netdev {
            writeln!(dev, "  {n}: {} {p} 0 {d} 0 0 0 0 0 0 0 0 0 0 0 0", p * 100).unwrap();
        }
        std::fs::write(net.join("dev"), dev).unwrap();
        let mut ints = format!(" {hdr}\n");
        for (n, name, per) in &self.interrupts {
            writeln!(ints, "{n}:{} PCI-MSI 1-edge {name}", row(per)).unwrap();
        }
        std::fs::write(dir.join("proc/interrupts"), ints).unwrap();
    }
}

/// Samples of `states`, one second apart, read by the sampler.
pub fn samples(states: &[Counters]) -> Vec<Sample> {
    let t = tempfile::tempdir().unwrap();
    let mut s = Sampler::new(Root::new(t.path()));
    states
        .iter()
        .enumerate()
        .map(|(i, c)| {
            c.write(t.path());
            let mut x = s.sample().unwrap();
            x.at = Nanos(1_000_000_000 * (i as u64 + 1));
            x
        })
        .collect()
}

/// Traffic over `secs` seconds: each step applies `f` to the running
/// counters and records a sample; the first step makes the starting values
/// (so every counter exists in the first sample).
pub fn run(n_cpus: usize, secs: usize, mut f: impl FnMut(&mut Counters)) -> Vec<Sample> {
    let mut c = Counters::cpus(n_cpus);
    f(&mut c);
    let mut states = vec![c.clone()];
    for _ in 0..secs {
        f(&mut c);
        states.push(c.clone());
    }
    samples(&states)
}

/// Diagnose and return the report.
pub fn report(i: &Input) -> Report {
    diagnose(i)
}

/// The ids found, in report order.
pub fn ids(r: &Report) -> Vec<DoctorId> {
    r.findings.iter().map(|f| f.id).collect()
}
