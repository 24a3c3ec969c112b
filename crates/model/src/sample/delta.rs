//! [`Sample::delta`]: the change between two samples, section by section
//! (CPUs, interfaces, IRQs, protocol and driver counters, queues).

use super::{
    CpuCount, CpuDelta, Delta, IfaceDelta, IrqDelta, QueueDelta, Resets, Sample, SoftnetDelta,
    SoftnetRates, Width, WATCHED_COUNTERS,
};
use crate::moderation::packets_per_interrupt;
use crate::parse::ethtool_stats::QueueDir;
use crate::parse::irqname::parse_irq_name;
use crate::parse::softirqs::Softirqs;
use crate::parse::softnet::SoftnetRow;
use crate::parse::stat::CpuTimes;
use crate::snapshot::QueueKind;
use crate::{Bytes, CpuId, IrqNumber, Packets};
use std::collections::{BTreeMap, HashMap, HashSet};

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
    /// ([`increase`](super::increase)). Linear in the size of both samples.
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
