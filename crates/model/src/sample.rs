//! Counters at one instant ([`Sample`]) and the change between two of them
//! ([`Delta`]): per-CPU time shares and softirqs, softnet, interfaces, IRQs
//! and protocol counters. Pure arithmetic; `host::sampler` reads the files.
//!
//! A counter that goes backwards is a reset (hotplug, driver reload) and
//! counts as 0, named in [`Delta::resets`] and [`Delta::notes`]; only a
//! counter known to be 32-bit whose wrapped difference is plausible is taken
//! modulo 2^32 (see [`increase`]). Every delta is linear in its input: rows
//! are matched by hash maps keyed by CPU, IRQ number and interface name.
//! The JSON shape of [`Delta`] is documented in `docs/stat.md`.

use crate::moderation::packets_per_interrupt;
use crate::parse::ethtool_stats::{NicStats, QueueDir};
use crate::parse::interrupts::Interrupts;
use crate::parse::irqname::parse_irq_name;
use crate::parse::netdev::NetDev;
use crate::parse::softirqs::Softirqs;
use crate::parse::softnet::{Softnet, SoftnetRow};
use crate::parse::stat::{CpuPercent, CpuTimes, ProcStat};
use crate::snapshot::{QueueKind, QueueRef};
use crate::{Bytes, CpuId, IrqNumber, Nanos, Packets};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// Protocol counters the sampler keeps, as `Section.Name` of `/proc/net/snmp`
/// and `/proc/net/netstat`. Counters a kernel lacks are left out of a delta.
pub const WATCHED_COUNTERS: [&str; 23] = [
    "Udp.InDatagrams",
    "Udp.OutDatagrams",
    "Udp.InErrors",
    "Udp.RcvbufErrors",
    "Udp.SndbufErrors",
    "Udp.NoPorts",
    "Tcp.InSegs",
    "Tcp.OutSegs",
    "Tcp.RetransSegs",
    "Tcp.InErrs",
    "Tcp.OutRsts",
    "Tcp.EstabResets",
    "Tcp.AttemptFails",
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.TCPReqQFullDrop",
    "TcpExt.TCPReqQFullDoCookies",
    "TcpExt.TCPAbortOnClose",
    "TcpExt.TCPAbortOnMemory",
    "TcpExt.TCPSACKReorder",
    "TcpExt.TCPOFOQueue",
    "TcpExt.TCPBacklogDrop",
    "TcpExt.TCPRcvQDrop",
];

/// Of [`WATCHED_COUNTERS`], the ones that only count trouble (shown by
/// `nettune stat` when non-zero). The others count traffic.
pub const ERROR_COUNTERS: [&str; 17] = [
    "Udp.InErrors",
    "Udp.RcvbufErrors",
    "Udp.SndbufErrors",
    "Udp.NoPorts",
    "Tcp.RetransSegs",
    "Tcp.InErrs",
    "Tcp.OutRsts",
    "Tcp.EstabResets",
    "Tcp.AttemptFails",
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.TCPReqQFullDrop",
    "TcpExt.TCPReqQFullDoCookies",
    "TcpExt.TCPAbortOnClose",
    "TcpExt.TCPAbortOnMemory",
    "TcpExt.TCPBacklogDrop",
    "TcpExt.TCPRcvQDrop",
];

/// Version of the `nettune stat --json` line shape (a [`Delta`] with this
/// number as `schema_version`); bump on incompatible changes.
pub const STAT_SCHEMA_VERSION: u32 = 1;

/// The counters at one instant. Fields are public so tests and embedders can
/// build or adjust samples (e.g. set [`Sample::at`] for deterministic rates);
/// build one with `..Sample::default()` so fields added later do not break you.
#[derive(Debug, Clone, Default)]
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
    /// Optional files that were missing (paths), and driver counters that
    /// could not be read (messages naming the `ethtool -S` run).
    pub missing: Vec<String>,
    /// Driver counters (`ethtool -S`) by interface, when the sampler was
    /// asked to read them (`Sampler::with_nic_stats`); empty otherwise.
    pub nic: BTreeMap<String, NicStats>,
    /// Number of RX queues (`/sys/class/net/IF/queues/rx-N`) by interface,
    /// read once per sampler; used to tie a single-queue NIC's packets to
    /// its one IRQ.
    pub rx_queue_counts: Arc<BTreeMap<String, u32>>,
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

/// Change of one NIC queue over an interval, from the driver's per-queue
/// counters (`ethtool -S`, normalized by `parse::ethtool_stats::queues`),
/// with the IRQ that serves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueDelta {
    /// Interface.
    pub iface: String,
    /// Receive or transmit queue.
    pub dir: QueueDir,
    /// Queue index.
    pub index: u32,
    /// Packets in the interval; `None` when the driver reports none for
    /// this queue (a single-queue NIC without per-queue counters takes the
    /// interface's packets from `/proc/net/dev`).
    pub packets: Option<u64>,
    /// Drops in the interval; `None` when the driver reports none.
    pub drops: Option<u64>,
    /// `packets` per second.
    pub packets_per_s: Option<f64>,
    /// `drops` per second.
    pub drops_per_s: Option<f64>,
    /// The IRQ serving the queue, by its name (a receive queue takes a
    /// combined `TxRx` vector; a transmit queue only a TX-only vector), or
    /// the interface's only queue IRQ when it has one RX queue. `None` when
    /// unknown or when it did not fire in the interval.
    pub irq: Option<IrqNumber>,
    /// Interrupts of `irq` in the interval.
    pub interrupts: Option<u64>,
    /// `packets ÷ interrupts` (AP-450's packets per interrupt), to one
    /// decimal; `None` unless both are known and interrupts > 0.
    pub packets_per_interrupt: Option<f64>,
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
    /// Per-queue packets and drops of NICs whose driver counters were read
    /// in both samples (plus single-queue NICs with a known IRQ), by
    /// interface, direction, index.
    #[serde(default)]
    pub queues: Vec<QueueDelta>,
    /// Driver counters (`ethtool -S`) that moved, by interface then name:
    /// the increase over the interval. Counters that stayed still are left out.
    #[serde(default)]
    pub nic_counters: BTreeMap<String, BTreeMap<String, u64>>,
    /// Counters that went backwards in the interval (counted as 0), at most
    /// [`MAX_RESETS`]; each also has a line in `notes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resets: Vec<CounterReset>,
    /// What could not be computed, and why.
    pub notes: Vec<String>,
}

/// Most [`CounterReset`]s one [`Delta`] lists; the rest are counted in one note.
pub const MAX_RESETS: usize = 32;

/// A counter that went backwards between two samples: read as a reset
/// (hotplug, driver reload, a new namespace), so its increase counts as 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterReset {
    /// Which counter: `softnet_stat.dropped`, `net/dev.rx_packets`,
    /// `interrupts`, `softirqs.NET_RX`, or a watched counter's name.
    pub counter: String,
    /// The CPU of a per-CPU counter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuId>,
    /// The interface or IRQ of the counter, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
    /// Value in the earlier sample.
    pub before: u64,
    /// Value in the later sample (smaller).
    pub after: u64,
}

/// Collects the resets of one delta, bounded by [`MAX_RESETS`].
#[derive(Debug, Default)]
struct Resets {
    list: Vec<CounterReset>,
    more: usize,
}

impl Resets {
    fn push(
        &mut self,
        counter: &str,
        cpu: Option<CpuId>,
        of: Option<&str>,
        before: u64,
        after: u64,
    ) {
        if self.list.len() < MAX_RESETS {
            self.list.push(CounterReset {
                counter: counter.to_string(),
                cpu,
                of: of.map(str::to_string),
                before,
                after,
            });
        } else {
            self.more = self.more.saturating_add(1);
        }
    }

    /// The increase of a counter from `before` to `after` (see [`increase`]),
    /// recording a reset.
    fn step(
        &mut self,
        counter: &str,
        cpu: Option<CpuId>,
        of: Option<&str>,
        before: u64,
        after: u64,
        width: Width,
    ) -> u64 {
        increase(before, after, width).unwrap_or_else(|| {
            self.push(counter, cpu, of, before, after);
            0
        })
    }

    fn notes(&self, notes: &mut Vec<String>) {
        for r in &self.list {
            let mut what = r.counter.clone();
            if let Some(of) = &r.of {
                what.push_str(&format!(" of {of}"));
            }
            if let Some(c) = r.cpu {
                what.push_str(&format!(" on {c}"));
            }
            notes.push(format!(
                "{what} went backwards ({} -> {}): read as a counter reset, counted as 0",
                r.before, r.after
            ));
        }
        if self.more > 0 {
            notes.push(format!(
                "{} more counters went backwards (resets, counted as 0)",
                self.more
            ));
        }
    }
}

/// How wide a kernel counter is, for telling a wrap from a reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// Printed from a 32-bit kernel variable: softnet_stat's hex columns
    /// (`unsigned int`), the per-CPU counts of `/proc/interrupts` and
    /// `/proc/softirqs` (`unsigned int` per CPU).
    Bits32,
    /// Anything else (`/proc/net/dev` on 64-bit kernels, SNMP, driver
    /// counters): a decrease can only be a reset.
    Bits64,
}

/// Largest increase read as a 32-bit wrap: 2^31, half the counter's range.
pub const MAX_WRAP: u64 = 1 << 31;

/// The increase of a counter from `before` to `after`; `None` when it went
/// backwards and is read as a reset.
///
/// A decrease "fits a wrap" only when both hold: the counter is known to be
/// 32-bit ([`Width::Bits32`], both values below 2^32), and the wrapped
/// difference `after - before mod 2^32` is below [`MAX_WRAP`] (2^31). A
/// counter that wraps moves by less than half its range between two samples
/// seconds apart (2^31 drops or packets in one interval is beyond any NIC),
/// while a reset to a small value from a small value (softnet `dropped`
/// 0x100 -> 0x1) would give a wrapped difference near 2^32: that is a
/// reset, never "4294967041 drops".
pub fn increase(before: u64, after: u64, width: Width) -> Option<u64> {
    if after >= before {
        return Some(after - before);
    }
    let (Ok(a), Ok(b)) = (u32::try_from(after), u32::try_from(before)) else {
        return None;
    };
    let wrapped = u64::from(a.wrapping_sub(b));
    (width == Width::Bits32 && wrapped < MAX_WRAP).then_some(wrapped)
}

fn rate(v: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        v as f64 / secs
    } else {
        0.0
    }
}

/// The per-CPU counts of one softirq vector, with a CPU → column index
/// built once (the first column of a CPU wins, as a linear search would).
struct SoftirqCols<'a> {
    rx: Option<&'a [u64]>,
    tx: Option<&'a [u64]>,
    col: HashMap<CpuId, usize>,
}

impl<'a> SoftirqCols<'a> {
    fn new(s: Option<&'a Softirqs>) -> Self {
        let mut col = HashMap::new();
        if let Some(s) = s {
            col.reserve(s.cpus.len());
            for (i, c) in s.cpus.iter().enumerate() {
                col.entry(*c).or_insert(i);
            }
        }
        SoftirqCols {
            rx: s.and_then(|s| s.get("NET_RX")),
            tx: s.and_then(|s| s.get("NET_TX")),
            col,
        }
    }

    fn get(&self, tx: bool, cpu: CpuId) -> Option<u64> {
        let row = if tx { self.tx } else { self.rx }?;
        row.get(*self.col.get(&cpu)?).copied()
    }
}

/// Softnet rows of a sample by CPU: by the CPU index column (5.10+), else
/// by position among the online CPUs `/proc/stat` lists.
enum SoftnetIndex<'a> {
    None,
    ByCpu(HashMap<CpuId, &'a SoftnetRow>),
    ByPos(&'a [SoftnetRow]),
}

impl<'a> SoftnetIndex<'a> {
    fn new(s: &'a Sample) -> Self {
        let Some(sn) = s.softnet.as_ref() else {
            return SoftnetIndex::None;
        };
        if sn.rows.first().is_some_and(|r| r.cpu.is_some()) {
            let mut m = HashMap::with_capacity(sn.rows.len());
            for r in &sn.rows {
                if let Some(c) = r.cpu {
                    m.entry(c).or_insert(r);
                }
            }
            SoftnetIndex::ByCpu(m)
        } else {
            SoftnetIndex::ByPos(&sn.rows)
        }
    }

    fn row(&self, cpu: CpuId, pos: usize) -> Option<&'a SoftnetRow> {
        match self {
            SoftnetIndex::None => None,
            SoftnetIndex::ByCpu(m) => m.get(&cpu).copied(),
            SoftnetIndex::ByPos(rows) => rows.get(pos),
        }
    }
}

fn queue_delta(
    iface: &str,
    dir: QueueDir,
    index: u32,
    packets: Option<u64>,
    drops: Option<u64>,
    irq: Option<&IrqDelta>,
    secs: f64,
) -> QueueDelta {
    let interrupts = irq.map(|i| i.count);
    QueueDelta {
        iface: iface.to_string(),
        dir,
        index,
        packets,
        drops,
        packets_per_s: packets.map(|p| rate(p, secs)),
        drops_per_s: drops.map(|d| rate(d, secs)),
        irq: irq.map(|i| i.irq),
        interrupts,
        packets_per_interrupt: packets
            .zip(interrupts)
            .and_then(|(p, n)| packets_per_interrupt(p, n)),
    }
}

impl Sample {
    /// The change from `prev` (earlier) to `self`. Counters that went
    /// backwards are resets and count as 0 (listed in [`Delta::resets`] and
    /// `notes`), except a 32-bit counter whose wrap is plausible
    /// ([`increase`]). Linear in the size of both samples.
    pub fn delta(&self, prev: &Sample) -> Delta {
        let elapsed = self.at - prev.at;
        let secs = elapsed.as_secs_f64();
        let mut notes = Vec::new();
        for m in &self.missing {
            if m.starts_with('/') {
                notes.push(format!("{m}: not found"));
            } else {
                notes.push(m.clone());
            }
        }
        let mut resets = Resets::default();
        let cpus = self.cpu_deltas(prev, secs, &mut notes, &mut resets);
        let ifaces = self.iface_deltas(prev, secs, &mut resets);
        let irqs = self.irq_deltas(prev, secs, &mut resets);
        let counters = self.counter_deltas(prev, &mut resets);
        let nic_counters = self.nic_counter_deltas(prev);
        let queues = self.queue_deltas(prev, secs, &ifaces, &irqs);
        if elapsed.0 == 0 {
            notes.push("zero elapsed time: rates are 0".into());
        }
        resets.notes(&mut notes);
        Delta {
            at: self.at,
            elapsed,
            cpus,
            ifaces,
            irqs,
            counters,
            queues,
            nic_counters,
            resets: resets.list,
            notes,
        }
    }

    /// Driver counters that moved, per interface (read in both samples).
    fn nic_counter_deltas(&self, prev: &Sample) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut out = BTreeMap::new();
        for (iface, now) in &self.nic {
            let Some(before) = prev.nic.get(iface) else {
                continue;
            };
            let moved: BTreeMap<String, u64> = now
                .driver
                .iter()
                .filter_map(|(k, v)| {
                    let d = v.saturating_sub(*before.driver.get(k)?);
                    (d > 0).then(|| (k.clone(), d))
                })
                .collect();
            if !moved.is_empty() {
                out.insert(iface.clone(), moved);
            }
        }
        out
    }

    /// Per-queue deltas with the serving IRQ and packets per interrupt.
    fn queue_deltas(
        &self,
        prev: &Sample,
        secs: f64,
        ifaces: &[IfaceDelta],
        irqs: &[IrqDelta],
    ) -> Vec<QueueDelta> {
        let mut out = Vec::new();
        // The IRQ of each (interface, direction, queue index), the first in
        // ascending IRQ order; and each interface's queue IRQs (any name but
        // a non-queue vector's): the first and how many fired.
        let mut by_queue: HashMap<(&str, QueueDir, u32), &IrqDelta> = HashMap::new();
        let mut by_iface: HashMap<&str, (&IrqDelta, usize)> = HashMap::new();
        for i in irqs {
            let Some(iface) = i.iface.as_deref() else {
                continue;
            };
            if i.queue.is_none_or(|q| q.kind != QueueKind::Other) {
                by_iface.entry(iface).or_insert((i, 0)).1 += 1;
            }
            let Some(q) = i.queue else { continue };
            let Some(index) = q.index else { continue };
            let dir = match q.kind {
                QueueKind::Rx | QueueKind::Combined => QueueDir::Rx,
                QueueKind::Tx => QueueDir::Tx,
                QueueKind::Other => continue,
            };
            by_queue.entry((iface, dir, index)).or_insert(i);
        }
        let irq_for =
            |iface: &str, dir: QueueDir, index: u32| by_queue.get(&(iface, dir, index)).copied();
        // The one queue IRQ of a single-queue interface, when exactly one fired.
        let single_irq = |iface: &str| {
            if self.rx_queue_counts.get(iface) != Some(&1) {
                return None;
            }
            by_iface
                .get(iface)
                .and_then(|(first, n)| (*n == 1).then_some(*first))
        };
        let iface_by_name: HashMap<&str, &IfaceDelta> =
            ifaces.iter().rev().map(|i| (i.name.as_str(), i)).collect();
        let mut seen: HashSet<&str> = HashSet::new();
        for (iface, now) in &self.nic {
            let Some(before) = prev.nic.get(iface) else {
                continue;
            };
            let before: BTreeMap<(QueueDir, u32), _> = before
                .queues()
                .into_iter()
                .map(|q| ((q.dir, q.index), q))
                .collect();
            let nq = now.queues();
            let rx_queues = nq.iter().filter(|q| q.dir == QueueDir::Rx).count();
            let tx_queues = nq.len() - rx_queues;
            let single = self.rx_queue_counts.get(iface) == Some(&1);
            let nic = iface_by_name.get(iface.as_str()).copied();
            for q in nq {
                let Some(b) = before.get(&(q.dir, q.index)) else {
                    continue;
                };
                // A driver without per-queue packet counters (virtio_net on
                // 6.x counts only drops and kicks per queue): a single-queue
                // NIC's packets are the interface's.
                let whole = nic.filter(|_| single).and_then(|i| match q.dir {
                    QueueDir::Rx if rx_queues == 1 => Some(i.rx_packets.0),
                    QueueDir::Tx if tx_queues == 1 => Some(i.tx_packets.0),
                    _ => None,
                });
                let packets = q
                    .packets
                    .zip(b.packets)
                    .map(|(a, b)| a.saturating_sub(b))
                    .or(whole);
                let drops = q.drops.zip(b.drops).map(|(a, b)| a.saturating_sub(b));
                let irq = irq_for(iface, q.dir, q.index).or_else(|| {
                    (q.dir == QueueDir::Rx && rx_queues == 1)
                        .then(|| single_irq(iface))
                        .flatten()
                });
                out.push(queue_delta(
                    iface, q.dir, q.index, packets, drops, irq, secs,
                ));
            }
            seen.insert(iface);
        }
        // Single-queue NICs without per-queue driver counters: the
        // interface's received packets and drops against its one IRQ.
        for i in ifaces {
            if seen.contains(i.name.as_str())
                || self
                    .nic
                    .get(&i.name)
                    .is_some_and(|n| !n.queues().is_empty())
            {
                continue;
            }
            if let Some(irq) = single_irq(&i.name) {
                out.push(queue_delta(
                    &i.name,
                    QueueDir::Rx,
                    0,
                    Some(i.rx_packets.0),
                    Some(i.rx_drop),
                    Some(irq),
                    secs,
                ));
            }
        }
        out.sort_by(|a, b| (&a.iface, a.dir, a.index).cmp(&(&b.iface, b.dir, b.index)));
        out
    }

    /// Per-CPU changes; a CPU missing from `prev` (hotplug) gets a note.
    fn cpu_deltas(
        &self,
        prev: &Sample,
        secs: f64,
        notes: &mut Vec<String>,
        resets: &mut Resets,
    ) -> Vec<CpuDelta> {
        let mut cpus = Vec::with_capacity(self.stat.cpus.len());
        // The earlier sample's CPUs by id (the first line of a CPU wins).
        let mut before: HashMap<CpuId, (usize, &CpuTimes)> =
            HashMap::with_capacity(prev.stat.cpus.len());
        for (pos, (c, t)) in prev.stat.cpus.iter().enumerate() {
            before.entry(*c).or_insert((pos, t));
        }
        let (sirq_now, sirq_prev) = (
            SoftirqCols::new(self.softirqs.as_ref()),
            SoftirqCols::new(prev.softirqs.as_ref()),
        );
        let (sn_now, sn_prev) = (SoftnetIndex::new(self), SoftnetIndex::new(prev));
        for (pos, (cpu, t)) in self.stat.cpus.iter().enumerate() {
            let cpu = *cpu;
            let Some(&(ppos, pt)) = before.get(&cpu) else {
                notes.push(format!("{cpu}: not in the earlier sample (hotplug)"));
                continue;
            };
            let times = t.delta(pt);
            let mut sirq =
                |tx: bool, name: &str| match (sirq_now.get(tx, cpu), sirq_prev.get(tx, cpu)) {
                    (Some(a), Some(b)) => resets.step(name, Some(cpu), None, b, a, Width::Bits32),
                    _ => 0,
                };
            let (net_rx, net_tx) = (
                sirq(false, "softirqs.NET_RX"),
                sirq(true, "softirqs.NET_TX"),
            );
            let softnet = match (sn_now.row(cpu, pos), sn_prev.row(cpu, ppos)) {
                (Some(a), Some(b)) => {
                    let mut d = |name: &str, now: u32, before: u32| {
                        resets.step(
                            name,
                            Some(cpu),
                            None,
                            u64::from(before),
                            u64::from(now),
                            Width::Bits32,
                        )
                    };
                    Some(SoftnetDelta {
                        processed: d("softnet_stat.processed", a.processed, b.processed),
                        dropped: d("softnet_stat.dropped", a.dropped, b.dropped),
                        time_squeeze: d(
                            "softnet_stat.time_squeeze",
                            a.time_squeeze,
                            b.time_squeeze,
                        ),
                        received_rps: a
                            .received_rps
                            .zip(b.received_rps)
                            .map(|(a, b)| d("softnet_stat.received_rps", a, b)),
                        flow_limit: a
                            .flow_limit_count
                            .zip(b.flow_limit_count)
                            .map(|(a, b)| d("softnet_stat.flow_limit_count", a, b)),
                    })
                }
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
                cpu,
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

        cpus
    }

    /// Per-interface changes, in `/proc/net/dev` order.
    fn iface_deltas(&self, prev: &Sample, secs: f64, resets: &mut Resets) -> Vec<IfaceDelta> {
        let mut ifaces = Vec::new();
        if let (Some(now), Some(before)) = (&self.netdev, &prev.netdev) {
            // The first line of a name wins, as a linear search would.
            let mut by_name: HashMap<&str, &crate::parse::netdev::NetDevStats> =
                HashMap::with_capacity(before.ifaces.len());
            for p in &before.ifaces {
                by_name.entry(p.name.as_str()).or_insert(p);
            }
            ifaces.reserve(now.ifaces.len());
            for i in &now.ifaces {
                let Some(p) = by_name.get(i.name.as_str()) else {
                    continue;
                };
                let of = Some(i.name.as_str());
                let mut d =
                    |name: &str, b: u64, a: u64| resets.step(name, None, of, b, a, Width::Bits64);
                let rx_packets = Packets(d("net/dev.rx_packets", p.rx.packets.0, i.rx.packets.0));
                let tx_packets = Packets(d("net/dev.tx_packets", p.tx.packets.0, i.tx.packets.0));
                let rx_bytes = Bytes(d("net/dev.rx_bytes", p.rx.bytes.0, i.rx.bytes.0));
                let tx_bytes = Bytes(d("net/dev.tx_bytes", p.tx.bytes.0, i.tx.bytes.0));
                let rx_drop = d("net/dev.rx_drop", p.rx.drop, i.rx.drop);
                let tx_drop = d("net/dev.tx_drop", p.tx.drop, i.tx.drop);
                let rx_errs = d("net/dev.rx_errs", p.rx.errs, i.rx.errs);
                let tx_errs = d("net/dev.tx_errs", p.tx.errs, i.tx.errs);
                ifaces.push(IfaceDelta {
                    name: i.name.clone(),
                    rx_packets,
                    tx_packets,
                    rx_bytes,
                    tx_bytes,
                    rx_drop,
                    tx_drop,
                    rx_errs,
                    tx_errs,
                    rx_pps: rate(rx_packets.0, secs),
                    tx_pps: rate(tx_packets.0, secs),
                    rx_bps: rate(rx_bytes.to_bits().0, secs),
                    tx_bps: rate(tx_bytes.to_bits().0, secs),
                    rx_drop_per_s: rate(rx_drop, secs),
                    tx_drop_per_s: rate(tx_drop, secs),
                });
            }
        }

        ifaces
    }

    /// IRQs that fired, ascending number, named by interface where known.
    /// Linear: the earlier lines are indexed by IRQ number and the earlier
    /// columns by CPU once, not searched per line and per column.
    fn irq_deltas(&self, prev: &Sample, secs: f64, resets: &mut Resets) -> Vec<IrqDelta> {
        let mut irqs = Vec::new();
        let (Some(now), Some(before)) = (&self.interrupts, &prev.interrupts) else {
            return irqs;
        };
        // The first line of an IRQ number and the first column of a CPU win.
        let mut lines: HashMap<IrqNumber, &crate::parse::interrupts::IrqLine> =
            HashMap::with_capacity(before.irqs.len());
        for l in &before.irqs {
            lines.entry(l.number).or_insert(l);
        }
        let mut cols: HashMap<CpuId, usize> = HashMap::with_capacity(before.cpus.len());
        for (i, c) in before.cpus.iter().enumerate() {
            cols.entry(*c).or_insert(i);
        }
        // Column of `now` → column of `before`.
        let pcols: Vec<Option<usize>> = now.cpus.iter().map(|c| cols.get(c).copied()).collect();
        let mut netdev: Option<HashMap<&str, &str>> = None;
        for l in &now.irqs {
            let Some(p) = lines.get(&l.number) else {
                continue;
            };
            let mut per_cpu = Vec::new();
            let mut count = 0u64;
            for (col, cpu) in now.cpus.iter().enumerate() {
                let a = l.per_cpu.get(col).copied().unwrap_or(0);
                let b = pcols
                    .get(col)
                    .copied()
                    .flatten()
                    .and_then(|c| p.per_cpu.get(c).copied())
                    .unwrap_or(a);
                let d = if a >= b {
                    a - b
                } else {
                    let irq = l.number.0.to_string();
                    resets.step("interrupts", Some(*cpu), Some(&irq), b, a, Width::Bits32)
                };
                if d > 0 {
                    per_cpu.push(CpuCount {
                        cpu: *cpu,
                        count: d,
                    });
                    count = count.saturating_add(d);
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
                let names = netdev.get_or_insert_with(|| {
                    let mut m = HashMap::new();
                    for i in self.netdev.iter().flat_map(|n| &n.ifaces) {
                        m.entry(i.name.as_str()).or_insert(i.name.as_str());
                    }
                    m
                });
                names.get(dev.as_str()).map(|n| (*n).to_string())
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

        irqs
    }

    /// Deltas of the watched protocol counters present in both samples.
    fn counter_deltas(&self, prev: &Sample, resets: &mut Resets) -> BTreeMap<String, u64> {
        let mut counters = BTreeMap::new();
        for (i, key) in WATCHED_COUNTERS.iter().enumerate() {
            if let (Some(a), Some(b)) = (self.counters[i], prev.counters[i]) {
                // SNMP counters are never negative: a negative value read
                // from a file is garbage and the interval counts 0.
                let d = match (u64::try_from(a), u64::try_from(b)) {
                    (Ok(a), Ok(b)) => resets.step(key, None, None, b, a, Width::Bits64),
                    _ => 0,
                };
                counters.insert((*key).to_string(), d);
            }
        }

        counters
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

    #[test]
    fn softnet_wraps_at_32_bits() {
        assert_eq!(
            increase(u64::from(u32::MAX - 4), 5, Width::Bits32),
            Some(10)
        );
        assert_eq!(increase(3, 7, Width::Bits32), Some(4));
        // A 64-bit counter never wraps at 2^32: a decrease is a reset.
        assert_eq!(increase(u64::from(u32::MAX - 4), 5, Width::Bits64), None);
        // The wrapped difference must be plausible (below 2^31).
        assert_eq!(increase(0x100, 0x1, Width::Bits32), None);
        assert_eq!(increase(1 << 31, 0, Width::Bits32), None);
        assert_eq!(
            increase((1 << 31) + 1, 0, Width::Bits32),
            Some((1 << 31) - 1)
        );
        // Values beyond 32 bits cannot be a 32-bit wrap.
        assert_eq!(increase(1 << 40, 5, Width::Bits32), None);
    }

    #[test]
    fn hostile_counters_do_not_overflow() {
        let stat = crate::parse::stat::parse_proc_stat(
            "cpu  1 0 0 0 0 0 0 0 0 0\ncpu0 1 0 0 0 0 0 0 0 0 0\n",
        )
        .unwrap();
        let mk = |v: i64| Sample {
            at: Nanos(0),
            stat: stat.clone(),
            softirqs: None,
            interrupts: None,
            netdev: None,
            softnet: None,
            counters: [Some(v); WATCHED_COUNTERS.len()],
            ..Sample::default()
        };
        let d = mk(i64::MAX).delta(&mk(-5));
        assert!(d.counters.values().all(|v| *v == 0), "{:?}", d.counters);
    }
}

#[cfg(test)]
mod queue_tests {
    use super::*;
    use crate::parse::interrupts::parse_interrupts;
    use crate::parse::netdev::parse_netdev;
    use crate::parse::stat::parse_proc_stat;

    const NETDEV_HEAD: &str = "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n";

    /// A sample at `secs` with IRQ lines `irqs` (`"27: 10 0 ... name"`),
    /// `eth0` having received `rx` packets, and driver counters `nic`.
    fn sample(secs: u64, irqs: &str, rx: u64, nic: &[(&str, u64)], queues: u32) -> Sample {
        let stat = parse_proc_stat("cpu 1 0 0 0\ncpu0 1 0 0 0\ncpu1 0 0 0 0\n").unwrap();
        let mut n = NicStats::default();
        for (k, v) in nic {
            n.driver.insert((*k).to_string(), *v);
        }
        Sample {
            at: Nanos(secs * 1_000_000_000),
            stat,
            interrupts: Some(parse_interrupts(&format!("  CPU0 CPU1\n{irqs}")).unwrap()),
            netdev: Some(
                parse_netdev(&format!(
                    "{NETDEV_HEAD}  eth0: 0 {rx} 0 0 0 0 0 0 0 {rx} 0 0 0 0 0 0\n"
                ))
                .unwrap(),
            ),
            nic: if nic.is_empty() {
                BTreeMap::new()
            } else {
                [("eth0".to_string(), n)].into()
            },
            rx_queue_counts: Arc::new([("eth0".to_string(), queues)].into()),
            ..Sample::default()
        }
    }

    #[test]
    fn packets_per_interrupt_per_queue_ap450() {
        // AP-450's example: 81,000 packets/s at 1,620 interrupts/s is 50
        // packets per interrupt, on queue 1; queue 0 dropped 30 packets.
        let a = sample(
            10,
            " 27: 100 0 PCI-MSI 1-edge eth0-TxRx-0\n 28: 0 5 PCI-MSI 2-edge eth0-TxRx-1\n",
            0,
            &[
                ("rx_queue_0_packets", 1000),
                ("rx_queue_0_drops", 4),
                ("rx_queue_1_packets", 19_000),
                ("tx_queue_1_packets", 7),
                ("rx_missed_errors", 2),
            ],
            2,
        );
        let b = sample(
            12,
            " 27: 300 0 PCI-MSI 1-edge eth0-TxRx-0\n 28: 0 3245 PCI-MSI 2-edge eth0-TxRx-1\n",
            0,
            &[
                ("rx_queue_0_packets", 1600),
                ("rx_queue_0_drops", 34),
                ("rx_queue_1_packets", 181_000),
                ("tx_queue_1_packets", 7),
                ("rx_missed_errors", 2),
            ],
            2,
        );
        let d = b.delta(&a);
        let q: Vec<_> = d
            .queues
            .iter()
            .map(|q| {
                (
                    q.dir,
                    q.index,
                    q.packets,
                    q.drops,
                    q.irq.map(|i| i.0),
                    q.interrupts,
                    q.packets_per_interrupt,
                )
            })
            .collect();
        assert_eq!(
            q,
            vec![
                (
                    QueueDir::Rx,
                    0,
                    Some(600),
                    Some(30),
                    Some(27),
                    Some(200),
                    Some(3.0)
                ),
                (
                    QueueDir::Rx,
                    1,
                    Some(162_000),
                    None,
                    Some(28),
                    Some(3240),
                    Some(50.0)
                ),
                // A TX queue on a combined vector: the vector is the RX side's.
                (QueueDir::Tx, 1, Some(0), None, None, None, None),
            ]
        );
        assert_eq!(d.queues[1].packets_per_s, Some(81_000.0));
        assert_eq!(d.queues[0].drops_per_s, Some(15.0));
        // Only counters that moved.
        assert_eq!(
            d.nic_counters["eth0"],
            [
                ("rx_queue_0_drops".to_string(), 30),
                ("rx_queue_0_packets".to_string(), 600),
                ("rx_queue_1_packets".to_string(), 162_000)
            ]
            .into()
        );
    }

    #[test]
    fn single_queue_nic_uses_the_interface_packets() {
        // e1000 on a legacy line named just `eth0`, no driver counters read.
        let a = sample(1, " 11: 0 0 IO-APIC 11-fasteoi eth0\n", 0, &[], 1);
        let b = sample(2, " 11: 40 0 IO-APIC 11-fasteoi eth0\n", 1000, &[], 1);
        let d = b.delta(&a);
        assert_eq!(d.queues.len(), 1, "{:?}", d.queues);
        let q = &d.queues[0];
        assert_eq!(
            (q.packets, q.irq.map(|i| i.0), q.packets_per_interrupt),
            (Some(1000), Some(11), Some(25.0))
        );
        // Two queues: the interface's packets are not one queue's.
        let a = sample(1, " 11: 0 0 IO-APIC 11-fasteoi eth0\n", 0, &[], 2);
        let b = sample(2, " 11: 40 0 IO-APIC 11-fasteoi eth0\n", 1000, &[], 2);
        assert!(b.delta(&a).queues.is_empty());
        // virtio_net 6.x: per-queue drops but no packets; one queue pair.
        let nic = |d: u64| [("rx0_drops", d), ("rx0_kicks", 1), ("tx0_kicks", 1)];
        let virtio = |s: Sample| Sample {
            devices: Arc::new([("virtio2".to_string(), "eth0".to_string())].into()),
            ..s
        };
        let a = virtio(sample(
            1,
            " 38: 0 0 PCI-MSIX 1-edge virtio2-input.0\n",
            0,
            &nic(0),
            1,
        ));
        let b = virtio(sample(
            2,
            " 38: 0 10 PCI-MSIX 1-edge virtio2-input.0\n",
            500,
            &nic(2),
            1,
        ));
        let d = b.delta(&a);
        let rx = &d.queues[0];
        assert_eq!(
            (
                rx.packets,
                rx.drops,
                rx.irq.map(|i| i.0),
                rx.packets_per_interrupt
            ),
            (Some(500), Some(2), Some(38), Some(50.0))
        );
    }
}
