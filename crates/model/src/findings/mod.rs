//! Findings: odd things a [`HostSnapshot`] shows by itself (an IRQ on a
//! remote node, every queue on one CPU, RPS on SMT siblings, irqbalance
//! running...). Pure: no I/O, deterministic order.
//!
//! These are observations with evidence, not a plan; `tune` decides what to do.
//!
//! Each rule is one file in this directory: a unit type implementing
//! [`FindingRule`], listed once in [`CATALOGUE`]. Adding a rule is one new
//! file, one [`FindingId`] variant (`id.rs`) and one line in the catalogue.
//!
//! [`Finding`], [`Severity`] and [`FindingId`] are the one finding concept of
//! the workspace: `doctor`'s diagnosis rules report the same type.

mod irq_affinity_spans_nodes;
mod irq_on_isolated_cpu;
mod irq_remote_node;
mod irqbalance_running;
mod irqs_on_one_cpu;
mod irqs_on_smt_siblings;
mod nic_rx_drops;
mod numa_node_unknown;
mod report;
mod rfs_half_configured;
mod rps_includes_irq_cpu;
mod rps_off;
mod rps_on_irq_sibling;
mod tuned;

use crate::cpuset::CpuSet;
use crate::snapshot::{HostSnapshot, Interface, Irq, NumaNode, QueueKind, RxQueue};

mod finding;

pub use crate::finding_id::FindingId;
pub use finding::{BenchFix, Evidence, Finding, Fix, Severity, Workloads};
pub use report::{Report, Skipped, REPORT_SCHEMA_VERSION};

/// What a rule looks at: the host once, each NIC, each queue IRQ of a NIC,
/// or each RX queue of a NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Once per snapshot.
    Host,
    /// Once per NIC that has a PCI address or IRQs.
    Interface,
    /// Once per queue IRQ of such a NIC.
    QueueIrq,
    /// Once per RX queue of such a NIC.
    RxQueue,
}

/// The snapshot with what every rule needs computed once.
#[derive(Debug)]
pub struct HostCx<'a> {
    /// The snapshot.
    pub s: &'a HostSnapshot,
    /// More than one NUMA node has CPUs.
    pub multi_node: bool,
}

/// One NIC under examination.
#[derive(Debug)]
pub struct IfaceCx<'a> {
    /// The host.
    pub host: &'a HostCx<'a>,
    /// The NIC.
    pub iface: &'a Interface,
    /// Its queue IRQs, ascending.
    pub qirqs: Vec<&'a Irq>,
    /// Its NUMA node, when known.
    pub node: Option<&'a NumaNode>,
}

impl IfaceCx<'_> {
    /// The NIC's name.
    pub fn name(&self) -> &str {
        &self.iface.name
    }
}

/// Where a rule is being run.
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    /// The host, for [`Scope::Host`] rules.
    Host(&'a HostCx<'a>),
    /// A NIC, for [`Scope::Interface`] rules.
    Interface(&'a IfaceCx<'a>),
    /// A queue IRQ of a NIC, for [`Scope::QueueIrq`] rules.
    QueueIrq(&'a IfaceCx<'a>, &'a Irq),
    /// An RX queue of a NIC, for [`Scope::RxQueue`] rules.
    RxQueue(&'a IfaceCx<'a>, &'a RxQueue),
}

/// One finding rule: a unit type with a typed id, its rationale and source.
pub trait FindingRule: Sync {
    /// Its stable id.
    fn id(&self) -> FindingId;
    /// What it looks at.
    fn scope(&self) -> Scope;
    /// Why it matters, in one or two sentences.
    fn rationale(&self) -> &'static str;
    /// Where the knowledge comes from (a kernel document, a driver README or a published article).
    fn source(&self) -> &'static str;
    /// Push findings for `at`, which is always of this rule's scope.
    fn check(&self, at: At<'_>, out: &mut Vec<Finding>);
}

/// Every rule, in the order its findings are reported within a severity.
/// Consecutive rules of one per-item scope run item by item (for each IRQ,
/// every IRQ rule), so findings about one IRQ or queue stay together.
pub static CATALOGUE: &[&dyn FindingRule] = &[
    &irqbalance_running::IrqbalanceRunning,
    &tuned::Tuned,
    &numa_node_unknown::NumaNodeUnknown,
    &irq_remote_node::IrqRemoteNode,
    &irq_affinity_spans_nodes::IrqAffinitySpansNodes,
    &irq_on_isolated_cpu::IrqOnIsolatedCpu,
    &irqs_on_one_cpu::IrqsOnOneCpu,
    &irqs_on_smt_siblings::IrqsOnSmtSiblings,
    &rps_on_irq_sibling::RpsOnIrqSibling,
    &rps_includes_irq_cpu::RpsIncludesIrqCpu,
    &rps_off::RpsOff,
    &rfs_half_configured::RfsHalfConfigured,
    &nic_rx_drops::NicRxDrops,
];

/// The catalogue's rule for `id`.
pub fn rule(id: FindingId) -> Option<&'static dyn FindingRule> {
    CATALOGUE.iter().copied().find(|r| r.id() == id)
}

/// Everything odd the snapshot shows, warnings first, then in catalogue
/// order per NIC (interfaces by name).
pub fn findings(s: &HostSnapshot) -> Vec<Finding> {
    let host = HostCx {
        s,
        multi_node: s.nodes.iter().filter(|n| !n.cpus.is_empty()).count() > 1,
    };
    let mut out = Vec::new();
    for r in CATALOGUE.iter().filter(|r| r.scope() == Scope::Host) {
        run(*r, At::Host(&host), &mut out);
    }
    let per_nic: Vec<&dyn FindingRule> = CATALOGUE
        .iter()
        .copied()
        .filter(|r| r.scope() != Scope::Host)
        .collect();
    for i in &s.interfaces {
        if i.pci_address.is_none() && i.irqs.is_empty() {
            continue;
        }
        let node = i
            .numa_node
            .and_then(|n| u32::try_from(n).ok())
            .and_then(|n| s.nodes.iter().find(|x| x.id.0 == n));
        let cx = IfaceCx {
            host: &host,
            iface: i,
            qirqs: queue_irqs(s, i),
            node,
        };
        for group in per_nic.chunk_by(|a, b| a.scope() == b.scope()) {
            match group[0].scope() {
                Scope::Host | Scope::Interface => {
                    for r in group {
                        run(*r, At::Interface(&cx), &mut out);
                    }
                }
                Scope::QueueIrq => {
                    for irq in &cx.qirqs {
                        for r in group {
                            run(*r, At::QueueIrq(&cx, irq), &mut out);
                        }
                    }
                }
                Scope::RxQueue => {
                    for q in &i.rx_queues {
                        for r in group {
                            run(*r, At::RxQueue(&cx, q), &mut out);
                        }
                    }
                }
            }
        }
    }
    out.sort_by_key(|f| f.severity);
    out
}

/// Run rule `r` at `at`; its findings get the rule's rationale and source.
fn run(r: &dyn FindingRule, at: At<'_>, out: &mut Vec<Finding>) {
    let from = out.len();
    r.check(at, out);
    for f in out.iter_mut().skip(from) {
        f.why = r.rationale().to_string();
        f.source = r.source().to_string();
    }
}

/// CPUs an IRQ is delivered to: `effective_affinity` when the kernel shows
/// it, else `smp_affinity`.
pub fn irq_cpus(irq: &Irq) -> Option<&CpuSet> {
    irq.effective_affinity
        .as_ref()
        .filter(|s| !s.is_empty())
        .or(irq.smp_affinity.as_ref())
}

/// The single CPU an IRQ is delivered to, if it is exactly one.
pub(crate) fn irq_single_cpu(irq: &Irq) -> Option<u32> {
    irq_cpus(irq)
        .filter(|c| c.len() == 1)
        .and_then(|c| c.first())
}

/// The queue IRQ serving RX queue `q` and the one CPU it is delivered to,
/// when it is exactly one CPU.
pub(crate) fn rx_queue_irq<'a>(cx: &IfaceCx<'a>, q: &RxQueue) -> Option<(&'a Irq, u32)> {
    let irq = cx.qirqs.iter().copied().find(|irq| {
        irq.queue.is_some_and(|r| {
            r.index == Some(q.index) && matches!(r.kind, QueueKind::Combined | QueueKind::Rx)
        })
    })?;
    Some((irq, irq_single_cpu(irq)?))
}

/// Nodes holding any CPU of `cpus`.
pub fn nodes_of(s: &HostSnapshot, cpus: &CpuSet) -> CpuSet {
    let mut out = CpuSet::new();
    for n in &s.nodes {
        if !n.cpus.intersection(cpus).is_empty() {
            out.insert(n.id.0);
        }
    }
    out
}

/// Queue IRQs of an interface (IRQs whose name names a data queue), ascending.
pub fn queue_irqs<'a>(s: &'a HostSnapshot, i: &Interface) -> Vec<&'a Irq> {
    i.irqs
        .iter()
        .filter_map(|n| s.irq(*n))
        .filter(|q| q.queue.is_some_and(|r| r.kind != QueueKind::Other))
        .collect()
}

/// SMT siblings of `cpu`, without `cpu` itself.
pub fn siblings_of(s: &HostSnapshot, cpu: u32) -> CpuSet {
    s.cpu(cpu)
        .map(|c| {
            let mut x = c.siblings.clone();
            x.remove(cpu);
            x
        })
        .unwrap_or_default()
}

/// `queue 3`, `rx queue 1`, or the IRQ's name.
pub fn queue_label(irq: &Irq) -> String {
    match irq.queue {
        Some(q) => match (q.kind, q.index) {
            (QueueKind::Combined, Some(i)) => format!("queue {i}"),
            (QueueKind::Rx, Some(i)) => format!("rx queue {i}"),
            (QueueKind::Tx, Some(i)) => format!("tx queue {i}"),
            _ => irq.name.clone(),
        },
        None => irq.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_has_each_id_once() {
        for r in CATALOGUE {
            let id = r.id();
            let n = CATALOGUE.iter().filter(|r| r.id() == id).count();
            assert_eq!(n, 1, "{id} appears {n} times in CATALOGUE");
            assert!(
                !r.rationale().is_empty() && !r.source().is_empty(),
                "{id}: empty rationale or source"
            );
            assert!(rule(id).is_some());
        }
    }

    #[test]
    fn id_text_round_trips_through_serde() {
        for id in FindingId::ALL {
            let j = serde_json::to_string(id).unwrap();
            assert_eq!(j, format!("\"{}\"", id.as_str()));
            let back: FindingId = serde_json::from_str(&j).unwrap();
            assert_eq!(back, *id);
            assert_eq!(FindingId::parse(id.as_str()), Some(*id));
        }
        assert!(serde_json::from_str::<FindingId>("\"rps-offf\"").is_err());
    }
}
