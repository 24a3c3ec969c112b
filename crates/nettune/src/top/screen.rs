//! The model of one `nettune top` screen: a pure struct built from a host
//! snapshot, the last [`Delta`], per-queue packet rates and the findings
//! board, in the order the [`View`] asks for. Drawing is in `draw`.

use super::findings::BoardRow;
use super::keys::{SortKey, View};
use host::sampler::Delta;
use model::parse::ethtool_stats::QueueDir;
use model::parse::stat::CpuPercent;
use model::snapshot::{HostSnapshot, QueueKind, QueueRef};
use model::{CpuId, CpuSet};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Packets per second of one queue: (interface, direction, queue index) →
/// rate, from the NIC driver's per-queue counters where they are known.
pub type QueueRates = BTreeMap<(String, QueueDir, u32), f64>;

/// The per-queue packet rates of `d` (its [`QueueDelta`](host::sampler::QueueDelta)s
/// that have one).
pub fn queue_rates(d: &Delta) -> QueueRates {
    d.queues
        .iter()
        .filter_map(|q| {
            q.packets_per_s
                .map(|r| ((q.iface.clone(), q.dir, q.index), r))
        })
        .collect()
}

/// Everything a screen is built from.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The host's layout (NICs, queue IRQs, affinities).
    pub snapshot: &'a HostSnapshot,
    /// The last interval; `None` before the first one.
    pub delta: Option<&'a Delta>,
    /// Per-queue received packets/s, where known.
    pub queue_pps: &'a QueueRates,
    /// The findings panel.
    pub findings: &'a [BoardRow],
    /// Only these NICs (all when empty).
    pub ifaces: &'a [String],
}

/// One CPU row: time shares, NET_RX softirqs and softnet trouble.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuRow {
    /// The CPU.
    pub cpu: CpuId,
    /// Shares of the interval.
    pub pct: CpuPercent,
    /// NET_RX softirqs per second.
    pub net_rx_per_s: f64,
    /// softnet packets processed per second (`None`: no softnet row).
    pub processed_per_s: Option<f64>,
    /// softnet backlog drops per second.
    pub dropped_per_s: Option<f64>,
    /// softnet time_squeeze per second.
    pub squeeze_per_s: Option<f64>,
    /// It took interrupts of the shown NIC's queues.
    pub serves_nic: bool,
}

impl CpuRow {
    /// 100 − idle − iowait.
    pub fn busy(&self) -> f64 {
        (100.0 - self.pct.idle - self.pct.iowait).max(0.0)
    }
}

/// One queue IRQ of the shown NIC.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueRow {
    /// `rx-3`, `txrx-0`, or `-` for an IRQ that serves no queue.
    pub queue: String,
    /// Queue index, when the IRQ name tells it.
    pub index: Option<u32>,
    /// IRQ number.
    pub irq: u32,
    /// CPUs that took its interrupts in the interval, busiest first; when it
    /// did not fire, its effective (else configured) affinity.
    pub cpus: Vec<u32>,
    /// `cpus` came from the affinity, not from interrupts seen.
    pub cpus_from_affinity: bool,
    /// Interrupts per second.
    pub irq_per_s: f64,
    /// Packets per second where the driver counts per queue: received for
    /// an RX or combined queue, sent for a TX queue.
    pub pps: Option<f64>,
    /// 0..=1: this queue's share of the busiest queue (by packets/s where
    /// known, else interrupts/s); the heat-map shade.
    pub heat: f64,
}

/// The NIC shown.
#[derive(Debug, Clone, PartialEq)]
pub struct NicView {
    /// Interface name.
    pub name: String,
    /// Kernel driver.
    pub driver: Option<String>,
    /// Link speed.
    pub speed_mbps: Option<u64>,
    /// NUMA node of the device.
    pub numa_node: Option<i32>,
    /// Totals from `/proc/net/dev` (`None` before the first interval).
    pub rx_pps: Option<f64>,
    /// Sent packets/s.
    pub tx_pps: Option<f64>,
    /// Received bit/s.
    pub rx_bps: Option<f64>,
    /// Sent bit/s.
    pub tx_bps: Option<f64>,
    /// Receive drops/s.
    pub rx_drop_per_s: Option<f64>,
    /// Queue IRQs, in the view's order.
    pub queues: Vec<QueueRow>,
    /// Some queue has a packet rate (else the heat is by interrupts/s).
    pub heat_by_pps: bool,
}

/// One screen of `nettune top`.
#[derive(Debug, Clone, PartialEq)]
pub struct Screen {
    /// Host name, or the capture's label.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// Length of the interval shown (`None`: still waiting for it).
    pub elapsed_s: Option<f64>,
    /// The view state it was built for.
    pub view: View,
    /// CPU rows in the view's order.
    pub cpus: Vec<CpuRow>,
    /// NIC names for the tab bar.
    pub nics: Vec<String>,
    /// The selected NIC (index into `nics`, clamped).
    pub nic: Option<NicView>,
    /// Index of `nic` in `nics`.
    pub selected: usize,
    /// Findings panel rows.
    pub findings: Vec<BoardRow>,
    /// Replaying a capture: intervals shown so far and in all.
    pub replay: Option<(usize, usize)>,
    /// The drops pane.
    pub drops: super::drops::DropsPane,
}

/// The NICs top can show, in tab order: those with IRQs first (the physical
/// and virtual NICs with queues), then the rest (`lo`, veth, bridges), each
/// group in snapshot order, then interfaces seen only in `/proc/net/dev`.
/// `only`, when not empty, keeps just those names.
pub fn nic_names(snapshot: &HostSnapshot, delta: Option<&Delta>, only: &[String]) -> Vec<String> {
    let mut names: Vec<String> = snapshot
        .interfaces
        .iter()
        .filter(|i| !i.irqs.is_empty())
        .chain(snapshot.interfaces.iter().filter(|i| i.irqs.is_empty()))
        .map(|i| i.name.clone())
        .collect();
    if let Some(d) = delta {
        // A set, not `names.contains`: 200k interfaces must not cost 200k².
        let mut seen: HashSet<String> = names.iter().cloned().collect();
        for i in &d.ifaces {
            if seen.insert(i.name.clone()) {
                names.push(i.name.clone());
            }
        }
    }
    if !only.is_empty() {
        let only: HashSet<&str> = only.iter().map(String::as_str).collect();
        names.retain(|n| only.contains(n.as_str()));
    }
    names
}

/// `rx-3`, `txrx-0`, `-` ([`QueueRef::label`]).
pub fn queue_label(q: Option<QueueRef>) -> String {
    QueueRef::label(q)
}

/// Descending by `f`, ties by ascending `id`.
fn desc<T>(a: &T, b: &T, f: impl Fn(&T) -> f64, id: impl Fn(&T) -> u32) -> Ordering {
    f(b).total_cmp(&f(a)).then(id(a).cmp(&id(b)))
}

/// Sort CPU rows for `key`.
pub fn sort_cpus(rows: &mut [CpuRow], key: SortKey) {
    match key {
        SortKey::Id => rows.sort_by_key(|r| r.cpu),
        SortKey::Softirq => rows.sort_by(|a, b| desc(a, b, |r| r.pct.softirq, |r| r.cpu.0)),
        SortKey::Busy => rows.sort_by(|a, b| desc(a, b, CpuRow::busy, |r| r.cpu.0)),
    }
}

/// Sort queue rows for `key`.
pub fn sort_queues(rows: &mut [QueueRow], key: SortKey) {
    match key {
        SortKey::Id => rows.sort_by_key(|r| r.irq),
        SortKey::Softirq => rows.sort_by(|a, b| desc(a, b, |r| r.irq_per_s, |r| r.irq)),
        SortKey::Busy => {
            rows.sort_by(|a, b| desc(a, b, |r| r.pps.unwrap_or(r.irq_per_s), |r| r.irq))
        }
    }
}

fn cpu_rows(d: &Delta) -> Vec<CpuRow> {
    d.cpus
        .iter()
        .map(|c| CpuRow {
            cpu: c.cpu,
            pct: c.pct,
            net_rx_per_s: c.net_rx_per_s,
            processed_per_s: c.softnet_per_s.map(|s| s.processed),
            dropped_per_s: c.softnet_per_s.map(|s| s.dropped),
            squeeze_per_s: c.softnet_per_s.map(|s| s.time_squeeze),
            serves_nic: false,
        })
        .collect()
}

fn nic_view(inp: &Inputs<'_>, name: &str, sort: SortKey) -> NicView {
    let iface = inp.snapshot.interface(name);
    let totals = inp.delta.and_then(|d| d.iface(name));
    let mut queues = Vec::new();
    let nic_irqs = iface.map(|i| i.irqs.as_slice()).unwrap_or_default();
    // The snapshot's and the delta's lines of this NIC's IRQs, indexed once
    // (the first of a number wins, as a search would): per frame the work is
    // linear in the IRQs, not IRQs of the NIC × IRQs of the host.
    let wanted: HashSet<u32> = nic_irqs.iter().map(|n| n.0).collect();
    let mut snap_irqs = HashMap::with_capacity(wanted.len());
    for i in inp
        .snapshot
        .irqs
        .iter()
        .filter(|i| wanted.contains(&i.number.0))
    {
        snap_irqs.entry(i.number.0).or_insert(i);
    }
    let mut seen_irqs = HashMap::with_capacity(wanted.len());
    for i in inp.delta.iter().flat_map(|d| &d.irqs) {
        if wanted.contains(&i.irq.0) {
            seen_irqs.entry(i.irq.0).or_insert(i);
        }
    }
    for n in nic_irqs {
        let snap_irq = snap_irqs.get(&n.0).copied();
        let seen = seen_irqs.get(&n.0).copied();
        let queue = snap_irq
            .and_then(|i| i.queue)
            .or_else(|| seen.and_then(|i| i.queue));
        let mut per_cpu: Vec<(u64, u32)> = seen
            .map(|i| i.per_cpu.iter().map(|c| (c.count, c.cpu.0)).collect())
            .unwrap_or_default();
        per_cpu.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let (cpus, from_affinity) = if per_cpu.is_empty() {
            let aff: Option<&CpuSet> =
                snap_irq.and_then(|i| i.effective_affinity.as_ref().or(i.smp_affinity.as_ref()));
            (aff.map(|s| s.iter().collect()).unwrap_or_default(), true)
        } else {
            (per_cpu.iter().map(|(_, c)| *c).collect(), false)
        };
        let index = queue.and_then(|q| q.index);
        let dir = match queue.map(|q| q.kind) {
            Some(QueueKind::Tx) => QueueDir::Tx,
            _ => QueueDir::Rx,
        };
        let pps = index.and_then(|i| inp.queue_pps.get(&(name.to_string(), dir, i)).copied());
        queues.push(QueueRow {
            queue: queue_label(queue),
            index,
            irq: n.0,
            cpus,
            cpus_from_affinity: from_affinity,
            irq_per_s: seen.map_or(0.0, |i| i.per_s),
            pps,
            heat: 0.0,
        });
    }
    let heat_by_pps = queues.iter().any(|q| q.pps.is_some());
    let metric = |q: &QueueRow| {
        if heat_by_pps {
            q.pps.unwrap_or(0.0)
        } else {
            q.irq_per_s
        }
    };
    let max = queues.iter().map(metric).fold(0.0_f64, f64::max);
    for q in &mut queues {
        q.heat = if max > 0.0 {
            (metric(q) / max).clamp(0.0, 1.0)
        } else {
            0.0
        };
    }
    sort_queues(&mut queues, sort);
    NicView {
        name: name.to_string(),
        driver: iface.and_then(|i| i.driver.clone()),
        speed_mbps: iface.and_then(|i| i.speed_mbps),
        numa_node: iface.and_then(|i| i.numa_node),
        rx_pps: totals.map(|t| t.rx_pps),
        tx_pps: totals.map(|t| t.tx_pps),
        rx_bps: totals.map(|t| t.rx_bps),
        tx_bps: totals.map(|t| t.tx_bps),
        rx_drop_per_s: totals.map(|t| t.rx_drop_per_s),
        queues,
        heat_by_pps,
    }
}

impl Screen {
    /// Build the screen for `view` from `inp`. Pure.
    pub fn build(inp: &Inputs<'_>, view: View) -> Screen {
        let nics = nic_names(inp.snapshot, inp.delta, inp.ifaces);
        let selected = view.nic.min(nics.len().saturating_sub(1));
        let nic = nics.get(selected).map(|n| nic_view(inp, n, view.sort));
        let mut cpus = inp.delta.map(cpu_rows).unwrap_or_default();
        if let Some(n) = &nic {
            // One set of the CPUs that took the NIC's interrupts, then one
            // pass over the rows (not queues × CPUs × CPUs per frame).
            let serving: HashSet<u32> = n
                .queues
                .iter()
                .filter(|q| !q.cpus_from_affinity)
                .flat_map(|q| q.cpus.iter().copied())
                .collect();
            for r in cpus.iter_mut().filter(|r| serving.contains(&r.cpu.0)) {
                r.serves_nic = true;
            }
        }
        sort_cpus(&mut cpus, view.sort);
        let src = &inp.snapshot.source;
        Screen {
            host: src
                .hostname
                .clone()
                .or_else(|| src.label.clone())
                .unwrap_or_else(|| "?".into()),
            kernel: src.kernel.clone().unwrap_or_else(|| "?".into()),
            elapsed_s: inp.delta.map(|d| d.elapsed.as_secs_f64()),
            view: View {
                nic: selected,
                ..view
            },
            cpus,
            nics,
            nic,
            selected,
            findings: inp.findings.to_vec(),
            replay: None,
            drops: super::drops::DropsPane::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(id: u32, softirq: f64, idle: f64) -> CpuRow {
        CpuRow {
            cpu: CpuId(id),
            pct: CpuPercent {
                softirq,
                idle,
                usr: 100.0 - softirq - idle,
                ..CpuPercent::default()
            },
            net_rx_per_s: 0.0,
            processed_per_s: None,
            dropped_per_s: None,
            squeeze_per_s: None,
            serves_nic: false,
        }
    }

    fn queue(irq: u32, irq_per_s: f64, pps: Option<f64>) -> QueueRow {
        QueueRow {
            queue: format!("rx-{irq}"),
            index: Some(irq),
            irq,
            cpus: vec![],
            cpus_from_affinity: true,
            irq_per_s,
            pps,
            heat: 0.0,
        }
    }

    fn ids<T>(rows: &[T], f: impl Fn(&T) -> u32) -> Vec<u32> {
        rows.iter().map(f).collect()
    }

    #[test]
    fn cpu_sort_orders() {
        let mut rows = vec![cpu(0, 5.0, 90.0), cpu(1, 60.0, 30.0), cpu(2, 5.0, 10.0)];
        sort_cpus(&mut rows, SortKey::Softirq);
        // Equal softirq (cpu0, cpu2): by id.
        assert_eq!(ids(&rows, |r| r.cpu.0), [1, 0, 2]);
        sort_cpus(&mut rows, SortKey::Busy);
        assert_eq!(ids(&rows, |r| r.cpu.0), [2, 1, 0]);
        sort_cpus(&mut rows, SortKey::Id);
        assert_eq!(ids(&rows, |r| r.cpu.0), [0, 1, 2]);
    }

    #[test]
    fn queue_sort_orders() {
        let mut rows = vec![
            queue(30, 100.0, Some(10.0)),
            queue(31, 500.0, None),
            queue(32, 50.0, Some(9000.0)),
        ];
        sort_queues(&mut rows, SortKey::Softirq);
        assert_eq!(ids(&rows, |r| r.irq), [31, 30, 32]);
        // By packets/s, interrupts/s standing in where packets are unknown.
        sort_queues(&mut rows, SortKey::Busy);
        assert_eq!(ids(&rows, |r| r.irq), [32, 31, 30]);
        sort_queues(&mut rows, SortKey::Id);
        assert_eq!(ids(&rows, |r| r.irq), [30, 31, 32]);
    }

    #[test]
    fn sort_is_total_with_nan() {
        let mut rows = vec![cpu(0, f64::NAN, 0.0), cpu(1, 1.0, 0.0)];
        sort_cpus(&mut rows, SortKey::Softirq);
        assert_eq!(rows.len(), 2);
    }

    #[test]
    fn labels() {
        assert_eq!(queue_label(None), "-");
        assert_eq!(
            queue_label(Some(QueueRef {
                kind: QueueKind::Combined,
                index: Some(2)
            })),
            "txrx-2"
        );
    }
}
