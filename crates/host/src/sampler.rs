//! The sampler: cheap periodic reads of the kernel's CPU and network counters,
//! and the per-interval [`Delta`] between two [`Sample`]s.
//!
//! Reads `/proc/stat`, `/proc/softirqs`, `/proc/interrupts`, `/proc/net/dev`,
//! `/proc/net/softnet_stat`, `/proc/net/snmp` and `/proc/net/netstat` through a
//! [`Root`]. Under `ip netns exec` the `/proc/net` files are the namespace's;
//! the others are host-wide. Only `/proc/stat` is required: a missing optional
//! file leaves its section empty and adds a note. The JSON shape of [`Delta`]
//! is documented in `docs/stat.md`.
//!
//! ```no_run
//! # fn main() -> Result<(), nettune_host::HostError> {
//! use nettune_host::{sampler::Sampler, Root};
//! let mut s = Sampler::new(Root::live());
//! let a = s.sample()?;
//! std::thread::sleep(std::time::Duration::from_secs(1));
//! let b = s.sample()?;
//! let d = b.delta(&a);
//! for c in &d.cpus {
//!     println!("{} softirq {:.1}% NET_RX {:.0}/s", c.cpu, c.pct.softirq, c.net_rx_per_s);
//! }
//! # Ok(()) }
//! ```

use crate::error::HostError;
use crate::root::Root;
use model::parse::interrupts::{parse_interrupts, Interrupts};
use model::parse::irqname::parse_irq_name;
use model::parse::netdev::{parse_netdev, NetDev};
use model::parse::snmp::for_each_counter;
use model::parse::softirqs::{parse_softirqs, Softirqs};
use model::parse::softnet::{parse_softnet, Softnet};
use model::parse::stat::{parse_proc_stat, CpuPercent, CpuTimes, ProcStat};
use model::snapshot::QueueRef;
use model::{Bytes, CpuId, IrqNumber, Nanos, Packets};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Protocol counters the sampler keeps, as `Section.Name` of `/proc/net/snmp`
/// and `/proc/net/netstat`. Counters a kernel lacks are left out of a delta.
pub const WATCHED_COUNTERS: [&str; 15] = [
    "Udp.InDatagrams",
    "Udp.InErrors",
    "Udp.RcvbufErrors",
    "Udp.SndbufErrors",
    "Udp.NoPorts",
    "Tcp.InSegs",
    "Tcp.OutSegs",
    "Tcp.RetransSegs",
    "Tcp.InErrs",
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.TCPSACKReorder",
    "TcpExt.TCPOFOQueue",
    "TcpExt.TCPBacklogDrop",
    "TcpExt.TCPRcvQDrop",
];

/// Of [`WATCHED_COUNTERS`], the ones that only count trouble (shown by
/// `nettune stat` when non-zero). The others count traffic.
pub const ERROR_COUNTERS: [&str; 10] = [
    "Udp.InErrors",
    "Udp.RcvbufErrors",
    "Udp.SndbufErrors",
    "Udp.NoPorts",
    "Tcp.RetransSegs",
    "Tcp.InErrs",
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.TCPBacklogDrop",
    "TcpExt.TCPRcvQDrop",
];

const STAT: &str = "/proc/stat";
const SOFTIRQS: &str = "/proc/softirqs";
const INTERRUPTS: &str = "/proc/interrupts";
const NETDEV: &str = "/proc/net/dev";
const SOFTNET: &str = "/proc/net/softnet_stat";
const SNMP: &str = "/proc/net/snmp";
const NETSTAT: &str = "/proc/net/netstat";

/// Reads [`Sample`]s from a root. Keeps one read buffer across samples.
#[derive(Debug)]
pub struct Sampler {
    root: Root,
    buf: String,
    devices: Option<Arc<BTreeMap<String, String>>>,
}

/// The counters at one instant. Fields are public so tests and embedders can
/// build or adjust samples (e.g. set [`Sample::at`] for deterministic rates).
#[derive(Debug, Clone)]
pub struct Sample {
    /// `CLOCK_MONOTONIC` time of the read, comparable across processes.
    pub at: Nanos,
    /// `/proc/stat`.
    pub stat: ProcStat,
    /// `/proc/softirqs`, if present.
    pub softirqs: Option<Softirqs>,
    /// `/proc/interrupts`, if present.
    pub interrupts: Option<Interrupts>,
    /// `/proc/net/dev`, if present.
    pub netdev: Option<NetDev>,
    /// `/proc/net/softnet_stat`, if present.
    pub softnet: Option<Softnet>,
    /// Values of [`WATCHED_COUNTERS`], same order; `None` when absent.
    pub counters: [Option<i64>; WATCHED_COUNTERS.len()],
    /// Device (`virtio2`, or a PCI address `0000:00:06.0`) → interface, from
    /// the `/sys/class/net/*/device` links, read once per [`Sampler`].
    pub devices: Arc<BTreeMap<String, String>>,
    /// Optional files that were missing.
    pub missing: Vec<String>,
}

/// Change of one CPU over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuDelta {
    /// The CPU.
    pub cpu: CpuId,
    /// mpstat-style shares of the interval.
    pub pct: CpuPercent,
    /// Raw tick deltas (USER_HZ).
    pub times: CpuTimes,
    /// NET_RX softirqs run on this CPU in the interval.
    pub net_rx: u64,
    /// NET_TX softirqs run on this CPU in the interval.
    pub net_tx: u64,
    /// `net_rx` per second.
    pub net_rx_per_s: f64,
    /// `net_tx` per second.
    pub net_tx_per_s: f64,
    /// softnet_stat deltas; `None` when the file or this CPU's row is missing.
    pub softnet: Option<SoftnetDelta>,
    /// `softnet` per second.
    pub softnet_per_s: Option<SoftnetRates>,
}

/// softnet_stat counter deltas of one CPU (32-bit counters, wrap-aware).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftnetDelta {
    /// Packets processed.
    pub processed: u64,
    /// Packets dropped at the backlog.
    pub dropped: u64,
    /// Budget or time exhausted with work left.
    pub time_squeeze: u64,
    /// RPS IPIs received (kernel 2.6.35+).
    pub received_rps: Option<u64>,
    /// Flow-limit drops (kernel 3.11+).
    pub flow_limit: Option<u64>,
}

/// [`SoftnetDelta`] per second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftnetRates {
    /// Packets processed per second.
    pub processed: f64,
    /// Backlog drops per second.
    pub dropped: f64,
    /// Squeezes per second.
    pub time_squeeze: f64,
    /// RPS IPIs per second.
    pub received_rps: Option<f64>,
    /// Flow-limit drops per second.
    pub flow_limit: Option<f64>,
}

/// Change of one interface's counters over an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IfaceDelta {
    /// Interface name.
    pub name: String,
    /// Packets received.
    pub rx_packets: Packets,
    /// Packets sent.
    pub tx_packets: Packets,
    /// Bytes received.
    pub rx_bytes: Bytes,
    /// Bytes sent.
    pub tx_bytes: Bytes,
    /// Receive drops.
    pub rx_drop: u64,
    /// Transmit drops.
    pub tx_drop: u64,
    /// Receive errors.
    pub rx_errs: u64,
    /// Transmit errors.
    pub tx_errs: u64,
    /// Received packets per second.
    pub rx_pps: f64,
    /// Sent packets per second.
    pub tx_pps: f64,
    /// Received bits per second.
    pub rx_bps: f64,
    /// Sent bits per second.
    pub tx_bps: f64,
    /// Receive drops per second.
    pub rx_drop_per_s: f64,
    /// Transmit drops per second.
    pub tx_drop_per_s: f64,
}

/// Interrupts of one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuCount {
    /// The CPU.
    pub cpu: CpuId,
    /// Interrupts in the interval.
    pub count: u64,
}

/// Change of one numbered IRQ over an interval (only IRQs that fired).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqDelta {
    /// IRQ number.
    pub irq: IrqNumber,
    /// Action name from `/proc/interrupts` (`virtio2-input.0`, `eth0-TxRx-3`).
    pub name: String,
    /// Interface the IRQ serves: by the name's interface or virtio device, or
    /// by the PCI address after `@pci:` (mlx5, gve), via `/sys/class/net/*/device`.
    pub iface: Option<String>,
    /// Queue served, when the name tells.
    pub queue: Option<QueueRef>,
    /// Interrupts in the interval, all CPUs.
    pub count: u64,
    /// `count` per second.
    pub per_s: f64,
    /// Non-zero per-CPU counts.
    pub per_cpu: Vec<CpuCount>,
}

/// Everything that changed between two samples; the unit `nettune stat`
/// prints and the traffic engine records. Stable shape: `docs/stat.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// Monotonic time of the later sample.
    pub at: Nanos,
    /// Time between the samples.
    pub elapsed: Nanos,
    /// Per-CPU changes, ascending CPU id.
    pub cpus: Vec<CpuDelta>,
    /// Per-interface changes, in `/proc/net/dev` order.
    pub ifaces: Vec<IfaceDelta>,
    /// IRQs that fired, ascending number.
    pub irqs: Vec<IrqDelta>,
    /// Deltas of [`WATCHED_COUNTERS`] present in both samples.
    pub counters: BTreeMap<String, u64>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
}

/// `CLOCK_MONOTONIC` now.
pub fn monotonic_now() -> Nanos {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Nanos(
        u64::try_from(t.tv_sec)
            .unwrap_or(0)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0)),
    )
}

impl Sampler {
    /// A sampler reading from `root` (`Root::live()` for this host).
    pub fn new(root: Root) -> Sampler {
        Sampler {
            root,
            buf: String::with_capacity(16 * 1024),
            devices: None,
        }
    }

    /// The root read from.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Read `path` into the shared buffer; `Ok(false)` when it does not exist.
    /// Only a regular file, at most `root::MAX_READ` bytes (see `Root::read`).
    fn load(&mut self, path: &str) -> Result<bool, HostError> {
        self.root.read_into(path, &mut self.buf)
    }

    fn parse_opt<T>(
        &mut self,
        path: &str,
        missing: &mut Vec<String>,
        f: impl FnOnce(&str) -> Result<T, model::ParseError>,
    ) -> Result<Option<T>, HostError> {
        if !self.load(path)? {
            missing.push(path.to_string());
            return Ok(None);
        }
        f(&self.buf).map(Some).map_err(|source| HostError::Parse {
            path: path.into(),
            source,
        })
    }

    fn devices(&mut self) -> Arc<BTreeMap<String, String>> {
        if let Some(d) = &self.devices {
            return d.clone();
        }
        let mut map = BTreeMap::new();
        for iface in self.root.list("/sys/class/net").unwrap_or_default() {
            let link = Path::new("/sys/class/net").join(&iface).join("device");
            if let Ok(dev) = self.root.link_name(&link) {
                if !dev.is_empty() {
                    map.insert(dev, iface);
                }
            }
        }
        let d = Arc::new(map);
        self.devices = Some(d.clone());
        d
    }

    /// Read every counter file once. Only `/proc/stat` is required; a file
    /// that exists but does not parse is an error naming it.
    pub fn sample(&mut self) -> Result<Sample, HostError> {
        let mut missing = Vec::new();
        if !self.load(STAT)? {
            return Err(HostError::NotFound { path: STAT.into() });
        }
        let at = monotonic_now();
        let stat = parse_proc_stat(&self.buf).map_err(|source| HostError::Parse {
            path: STAT.into(),
            source,
        })?;
        let softirqs = self.parse_opt(SOFTIRQS, &mut missing, parse_softirqs)?;
        let interrupts = self.parse_opt(INTERRUPTS, &mut missing, parse_interrupts)?;
        let netdev = self.parse_opt(NETDEV, &mut missing, parse_netdev)?;
        let softnet = self.parse_opt(SOFTNET, &mut missing, parse_softnet)?;
        let mut counters = [None; WATCHED_COUNTERS.len()];
        for path in [SNMP, NETSTAT] {
            let mut visit = |s: &str, n: &str, v: i64| {
                if let Some(i) = WATCHED_COUNTERS.iter().position(|k| {
                    k.len() == s.len() + 1 + n.len()
                        && k.starts_with(s)
                        && k.as_bytes()[s.len()] == b'.'
                        && k.ends_with(n)
                }) {
                    counters[i] = Some(v);
                }
            };
            if !self.load(path)? {
                missing.push(path.to_string());
                continue;
            }
            for_each_counter(&self.buf, &mut visit).map_err(|source| HostError::Parse {
                path: path.into(),
                source,
            })?;
        }
        let devices = self.devices();
        Ok(Sample {
            at,
            stat,
            softirqs,
            interrupts,
            netdev,
            softnet,
            counters,
            devices,
            missing,
        })
    }
}

fn rate(v: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        v as f64 / secs
    } else {
        0.0
    }
}

fn per_cpu_softirq(s: &Option<Softirqs>, name: &str, cpu: CpuId) -> Option<u64> {
    s.as_ref()?.count(name, cpu)
}

/// Softnet row of `cpu`: by the CPU index column (5.10+), else by position
/// among the online CPUs `/proc/stat` lists.
fn softnet_row(s: &Sample, cpu: CpuId, pos: usize) -> Option<model::parse::softnet::SoftnetRow> {
    let sn = s.softnet.as_ref()?;
    if sn.rows.first().is_some_and(|r| r.cpu.is_some()) {
        sn.rows.iter().find(|r| r.cpu == Some(cpu)).copied()
    } else {
        sn.rows.get(pos).copied()
    }
}

fn wrap32(now: u32, prev: u32) -> u64 {
    u64::from(now.wrapping_sub(prev))
}

impl Sample {
    /// The change from `prev` (earlier) to `self`. Counters that went
    /// backwards (reset, hotplug) count as 0; softnet's 32-bit counters are
    /// taken modulo 2^32.
    pub fn delta(&self, prev: &Sample) -> Delta {
        let elapsed = self.at - prev.at;
        let secs = elapsed.as_secs_f64();
        let mut notes = Vec::new();
        for m in &self.missing {
            notes.push(format!("{m}: not found"));
        }

        let mut cpus = Vec::with_capacity(self.stat.cpus.len());
        for (pos, (cpu, t)) in self.stat.cpus.iter().enumerate() {
            let Some((ppos, (_, pt))) = prev
                .stat
                .cpus
                .iter()
                .enumerate()
                .find(|(_, (c, _))| c == cpu)
            else {
                notes.push(format!("{cpu}: not in the earlier sample (hotplug)"));
                continue;
            };
            let times = t.delta(pt);
            let sirq = |name: &str| match (
                per_cpu_softirq(&self.softirqs, name, *cpu),
                per_cpu_softirq(&prev.softirqs, name, *cpu),
            ) {
                (Some(a), Some(b)) => a.saturating_sub(b),
                _ => 0,
            };
            let (net_rx, net_tx) = (sirq("NET_RX"), sirq("NET_TX"));
            let softnet = match (softnet_row(self, *cpu, pos), softnet_row(prev, *cpu, ppos)) {
                (Some(a), Some(b)) => Some(SoftnetDelta {
                    processed: wrap32(a.processed, b.processed),
                    dropped: wrap32(a.dropped, b.dropped),
                    time_squeeze: wrap32(a.time_squeeze, b.time_squeeze),
                    received_rps: a
                        .received_rps
                        .zip(b.received_rps)
                        .map(|(a, b)| wrap32(a, b)),
                    flow_limit: a
                        .flow_limit_count
                        .zip(b.flow_limit_count)
                        .map(|(a, b)| wrap32(a, b)),
                }),
                _ => None,
            };
            let softnet_per_s = softnet.map(|d| SoftnetRates {
                processed: rate(d.processed, secs),
                dropped: rate(d.dropped, secs),
                time_squeeze: rate(d.time_squeeze, secs),
                received_rps: d.received_rps.map(|v| rate(v, secs)),
                flow_limit: d.flow_limit.map(|v| rate(v, secs)),
            });
            cpus.push(CpuDelta {
                cpu: *cpu,
                pct: times.percent(),
                times,
                net_rx,
                net_tx,
                net_rx_per_s: rate(net_rx, secs),
                net_tx_per_s: rate(net_tx, secs),
                softnet,
                softnet_per_s,
            });
        }

        let mut ifaces = Vec::new();
        if let (Some(now), Some(before)) = (&self.netdev, &prev.netdev) {
            for i in &now.ifaces {
                let Some(p) = before.get(&i.name) else {
                    continue;
                };
                let rx_packets = i.rx.packets - p.rx.packets;
                let tx_packets = i.tx.packets - p.tx.packets;
                let rx_bytes = i.rx.bytes - p.rx.bytes;
                let tx_bytes = i.tx.bytes - p.tx.bytes;
                let rx_drop = i.rx.drop.saturating_sub(p.rx.drop);
                let tx_drop = i.tx.drop.saturating_sub(p.tx.drop);
                ifaces.push(IfaceDelta {
                    name: i.name.clone(),
                    rx_packets,
                    tx_packets,
                    rx_bytes,
                    tx_bytes,
                    rx_drop,
                    tx_drop,
                    rx_errs: i.rx.errs.saturating_sub(p.rx.errs),
                    tx_errs: i.tx.errs.saturating_sub(p.tx.errs),
                    rx_pps: rate(rx_packets.0, secs),
                    tx_pps: rate(tx_packets.0, secs),
                    rx_bps: rate(rx_bytes.to_bits().0, secs),
                    tx_bps: rate(tx_bytes.to_bits().0, secs),
                    rx_drop_per_s: rate(rx_drop, secs),
                    tx_drop_per_s: rate(tx_drop, secs),
                });
            }
        }

        let mut irqs = Vec::new();
        if let (Some(now), Some(before)) = (&self.interrupts, &prev.interrupts) {
            for l in &now.irqs {
                let Some(p) = before.get(l.number) else {
                    continue;
                };
                let mut per_cpu = Vec::new();
                let mut count = 0u64;
                for (col, cpu) in now.cpus.iter().enumerate() {
                    let pcol = before.cpus.iter().position(|c| c == cpu);
                    let a = l.per_cpu.get(col).copied().unwrap_or(0);
                    let b = pcol.and_then(|c| p.per_cpu.get(c).copied()).unwrap_or(a);
                    let d = a.saturating_sub(b);
                    if d > 0 {
                        per_cpu.push(CpuCount {
                            cpu: *cpu,
                            count: d,
                        });
                        count += d;
                    }
                }
                if count == 0 {
                    continue;
                }
                let parsed = parse_irq_name(&l.name);
                let by_pci = parsed.pci.as_ref().and_then(|p| self.devices.get(p));
                let iface = by_pci.cloned().or_else(|| {
                    let dev = parsed.device.as_ref()?;
                    if let Some(i) = self.devices.get(dev) {
                        return Some(i.clone());
                    }
                    self.netdev
                        .as_ref()
                        .and_then(|n| n.get(dev))
                        .map(|i| i.name.clone())
                });
                irqs.push(IrqDelta {
                    irq: l.number,
                    name: l.name.clone(),
                    iface,
                    queue: parsed.queue,
                    count,
                    per_s: rate(count, secs),
                    per_cpu,
                });
            }
            irqs.sort_by_key(|i| i.irq);
        }

        let mut counters = BTreeMap::new();
        for (i, key) in WATCHED_COUNTERS.iter().enumerate() {
            if let (Some(a), Some(b)) = (self.counters[i], prev.counters[i]) {
                counters.insert((*key).to_string(), u64::try_from(a - b).unwrap_or(0));
            }
        }

        if elapsed.0 == 0 {
            notes.push("zero elapsed time: rates are 0".into());
        }
        Delta {
            at: self.at,
            elapsed,
            cpus,
            ifaces,
            irqs,
            counters,
            notes,
        }
    }
}

impl Delta {
    /// The same as `now.delta(prev)`.
    pub fn between(prev: &Sample, now: &Sample) -> Delta {
        now.delta(prev)
    }

    /// The change of interface `name`.
    pub fn iface(&self, name: &str) -> Option<&IfaceDelta> {
        self.ifaces.iter().find(|i| i.name == name)
    }

    /// The change of `cpu`.
    pub fn cpu(&self, cpu: CpuId) -> Option<&CpuDelta> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::snapshot::QueueKind;
    use std::path::PathBuf;

    fn testdata(set: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/sampler/testdata/kvm-6.18-iperf3")
            .join(set)
    }

    fn recorded() -> (Sample, Sample) {
        let mut a = Sampler::new(Root::new(testdata("a"))).sample().unwrap();
        let mut b = Sampler::new(Root::new(testdata("b"))).sample().unwrap();
        a.at = Nanos(1_000_000_000);
        b.at = Nanos(2_000_000_000);
        (a, b)
    }

    #[test]
    fn recorded_iperf3_interval() {
        let (a, b) = recorded();
        assert!(a.missing.is_empty(), "{:?}", a.missing);
        let d = b.delta(&a);
        assert_eq!(d.elapsed, Nanos(1_000_000_000));
        assert_eq!(d.cpus.len(), 2);
        let c0 = d.cpu(CpuId(0)).unwrap();
        assert_eq!(c0.net_rx, 75461 - 37909);
        assert_eq!(c0.net_rx_per_s, (75461 - 37909) as f64);
        let sn = c0.softnet.unwrap();
        let rows_a = a.softnet.as_ref().unwrap();
        let rows_b = b.softnet.as_ref().unwrap();
        assert_eq!(
            sn.processed,
            u64::from(rows_b.rows[0].processed - rows_a.rows[0].processed)
        );
        let sum: f64 = [
            c0.pct.usr,
            c0.pct.sys,
            c0.pct.irq,
            c0.pct.softirq,
            c0.pct.steal,
            c0.pct.iowait,
            c0.pct.idle,
        ]
        .iter()
        .sum();
        assert!((sum - 100.0).abs() < 1e-6, "{sum}");
        let nt1 = d.iface("nt1").unwrap();
        let (pa, pb) = (
            a.netdev.as_ref().unwrap().get("nt1").unwrap(),
            b.netdev.as_ref().unwrap().get("nt1").unwrap(),
        );
        assert_eq!(nt1.rx_packets, pb.rx.packets - pa.rx.packets);
        assert!(nt1.rx_packets.0 > 0);
        assert_eq!(nt1.rx_bps, ((pb.rx.bytes - pa.rx.bytes).0 * 8) as f64);
        let tx = d.irqs.iter().find(|i| i.irq == IrqNumber(42)).unwrap();
        assert_eq!(tx.name, "virtio3-tx");
        assert_eq!(tx.count, 1);
        assert_eq!(
            tx.per_cpu,
            vec![CpuCount {
                cpu: CpuId(1),
                count: 1
            }]
        );
        assert!(d.irqs.iter().all(|i| i.count > 0));
        assert!(d.counters.contains_key("TcpExt.ListenDrops"));
        assert!(d.counters["Tcp.InSegs"] > 0);
        let json = serde_json::to_string(&d).unwrap();
        let back: Delta = serde_json::from_str(&json).unwrap();
        assert_eq!(back.ifaces, d.ifaces);
        assert_eq!(back.irqs, d.irqs);
        assert_eq!(back.counters, d.counters);
        assert_eq!(back.cpus[1].times, d.cpus[1].times);
    }

    #[test]
    fn counters_going_backwards_saturate() {
        let (a, b) = recorded();
        let d = a.delta(&b);
        assert_eq!(d.elapsed, Nanos(0));
        assert!(d.cpus.iter().all(|c| c.times.total() == 0 && c.net_rx == 0));
        assert!(d
            .ifaces
            .iter()
            .all(|i| i.rx_packets.0 == 0 && i.rx_pps == 0.0));
        assert!(d.counters.values().all(|v| *v == 0));
        assert!(d.irqs.is_empty());
    }

    #[test]
    fn softnet_wraps_at_32_bits() {
        assert_eq!(wrap32(5, u32::MAX - 4), 10);
        assert_eq!(wrap32(7, 3), 4);
    }

    #[test]
    fn queue_and_iface_naming() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("proc/net")).unwrap();
        std::fs::create_dir_all(r.join("sys/devices/virtio2/net/eth0")).unwrap();
        std::fs::create_dir_all(r.join("sys/class/net")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/virtio2/net/eth0",
            r.join("sys/class/net/eth0"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../../virtio2",
            r.join("sys/devices/virtio2/net/eth0/device"),
        )
        .unwrap();
        std::fs::create_dir_all(r.join("sys/devices/0000:00:06.0/net/ens6")).unwrap();
        std::os::unix::fs::symlink(
            "../../devices/0000:00:06.0/net/ens6",
            r.join("sys/class/net/ens6"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../../0000:00:06.0",
            r.join("sys/devices/0000:00:06.0/net/ens6/device"),
        )
        .unwrap();
        let write = |stat: &str, irq: &str| {
            std::fs::write(r.join("proc/stat"), stat).unwrap();
            std::fs::write(
                r.join("proc/interrupts"),
                format!(
                    "  CPU0 CPU1\n 38: 0 {irq} PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0\n \
                     50: {irq} 0 PCI-MSI-edge ens5-Tx-Rx-1\n \
                     60: {irq} {irq} PCI-MSIX 1-edge mlx5_comp2@pci:0000:00:06.0\n"
                ),
            )
            .unwrap();
            std::fs::write(
                r.join("proc/net/dev"),
                "Inter-|\n face |\n  ens5: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
            )
            .unwrap();
        };
        write("cpu 1 0 1 8\ncpu0 1 0 1 8\ncpu1 0 0 0 0\n", "10");
        let mut s = Sampler::new(Root::new(r));
        let a = s.sample().unwrap();
        assert_eq!(a.missing.len(), 4, "{:?}", a.missing);
        write("cpu 3 0 1 8\ncpu0 3 0 1 8\ncpu1 0 0 0 0\n", "25");
        let b = s.sample().unwrap();
        let d = b.delta(&a);
        assert_eq!(d.irqs.len(), 3);
        assert_eq!(d.irqs[2].iface.as_deref(), Some("ens6"));
        assert_eq!(d.irqs[2].count, 30);
        assert_eq!(d.irqs[0].iface.as_deref(), Some("eth0"));
        assert_eq!(
            d.irqs[0].queue,
            Some(QueueRef {
                kind: QueueKind::Rx,
                index: Some(0)
            })
        );
        assert_eq!(d.irqs[0].count, 15);
        assert_eq!(d.irqs[1].iface.as_deref(), Some("ens5"));
        assert_eq!(d.cpus[0].pct.usr, 100.0);
        assert!(d.cpus[0].softnet.is_none());
        assert!(d.notes.iter().any(|n| n.contains("/proc/softirqs")));
        assert!(d.counters.is_empty());
    }

    #[test]
    fn errors_name_the_file() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Sampler::new(Root::new(t.path()));
        let e = s.sample().unwrap_err();
        assert!(
            e.is_not_found() && e.to_string().contains("/proc/stat"),
            "{e}"
        );
        std::fs::create_dir_all(t.path().join("proc/net")).unwrap();
        std::fs::write(t.path().join("proc/stat"), "cpu 1 2 3 4\n").unwrap();
        std::fs::write(t.path().join("proc/net/softnet_stat"), "zz\n").unwrap();
        let e = s.sample().unwrap_err();
        assert!(e.to_string().contains("/proc/net/softnet_stat"), "{e}");
        std::fs::write(
            t.path().join("proc/net/softnet_stat"),
            "1 0 0 0 0 0 0 0 0\n",
        )
        .unwrap();
        std::fs::write(t.path().join("proc/net/snmp"), "Udp: A\n").unwrap();
        let e = s.sample().unwrap_err();
        assert!(e.to_string().contains("/proc/net/snmp"), "{e}");
    }

    #[test]
    fn live_sample_works() {
        let mut s = Sampler::new(Root::live());
        let a = s.sample().unwrap();
        let b = s.sample().unwrap();
        let d = b.delta(&a);
        assert!(b.at >= a.at);
        assert!(!d.cpus.is_empty());
        assert!(b.netdev.as_ref().unwrap().get("lo").is_some());
    }
}
