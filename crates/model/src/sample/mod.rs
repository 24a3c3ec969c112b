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

use crate::parse::ethtool_stats::{NicStats, QueueDir};
use crate::parse::interrupts::Interrupts;
use crate::parse::netdev::NetDev;
use crate::parse::softirqs::Softirqs;
use crate::parse::softnet::Softnet;
use crate::parse::stat::{CpuPercent, CpuTimes, ProcStat};
use crate::snapshot::QueueRef;
use crate::{Bytes, CpuId, IrqNumber, Nanos, Packets};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

mod delta;
#[cfg(test)]
mod queue_tests;
#[cfg(test)]
mod tests;

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
    /// the `/sys/class/net/*/device` links, read once per `host::Sampler`.
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
