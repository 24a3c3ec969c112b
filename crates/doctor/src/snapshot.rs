//! `inspect`'s look: the findings a [`HostSnapshot`] shows by itself (an
//! IRQ on a remote node, every queue on one CPU, RPS on SMT siblings,
//! irqbalance running...). Pure: no I/O, deterministic order.
//!
//! These are the rules of the one [`CATALOGUE`] that have a [`Scope`]: each
//! runs its [`DoctorRule::observe`] on the part of the snapshot its scope
//! names. doctor reads the same findings through [`crate::Cx::host_findings`].

use crate::finding::Finding;
use crate::rules::{DoctorRule, CATALOGUE};
use model::findings::{irq_cpus, queue_irqs};
use model::snapshot::{HostSnapshot, Interface, Irq, NumaNode, QueueKind, RxQueue};
use model::CpuSet;

/// What a snapshot rule looks at: the host once, each NIC, each queue IRQ
/// of a NIC, or each RX queue of a NIC.
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

    /// A finding of `rule` about this NIC, of the rule's severity.
    pub fn finding(&self, rule: &dyn DoctorRule, title: String) -> Finding {
        Finding::new(rule.id(), rule.severity(), self.name(), title)
    }
}

/// Where a snapshot rule is being run.
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

/// Everything odd the snapshot shows, warnings first, then in catalogue
/// order per NIC (interfaces by name). Consecutive rules of one per-item
/// scope run item by item (for each IRQ, every IRQ rule), so findings about
/// one IRQ or queue stay together.
pub fn findings(s: &HostSnapshot) -> Vec<Finding> {
    let host = HostCx {
        s,
        multi_node: s.nodes.iter().filter(|n| !n.cpus.is_empty()).count() > 1,
    };
    let scoped: Vec<(&dyn DoctorRule, Scope)> = CATALOGUE
        .iter()
        .filter_map(|r| Some((*r, r.scope()?)))
        .collect();
    let mut out = Vec::new();
    for (r, _) in scoped.iter().filter(|(_, sc)| *sc == Scope::Host) {
        run(*r, At::Host(&host), &mut out);
    }
    let per_nic: Vec<(&dyn DoctorRule, Scope)> = scoped
        .into_iter()
        .filter(|(_, sc)| *sc != Scope::Host)
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
        for group in per_nic.chunk_by(|a, b| a.1 == b.1) {
            let rules = group.iter().map(|(r, _)| *r);
            match group[0].1 {
                Scope::Host | Scope::Interface => {
                    for r in rules {
                        run(r, At::Interface(&cx), &mut out);
                    }
                }
                Scope::QueueIrq => {
                    for irq in &cx.qirqs {
                        for r in rules.clone() {
                            run(r, At::QueueIrq(&cx, irq), &mut out);
                        }
                    }
                }
                Scope::RxQueue => {
                    for q in &i.rx_queues {
                        for r in rules.clone() {
                            run(r, At::RxQueue(&cx, q), &mut out);
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
fn run(r: &dyn DoctorRule, at: At<'_>, out: &mut Vec<Finding>) {
    let from = out.len();
    r.observe(at, out);
    for f in out.iter_mut().skip(from) {
        f.why = r.rationale().to_string();
        f.source = r.source().to_string();
    }
}

/// The single CPU an IRQ is delivered to, if it is exactly one.
pub(crate) fn irq_single_cpu(irq: &Irq) -> Option<u32> {
    irq_cpus(irq)
        .filter(|c| c.len() == 1)
        .and_then(|c| c.first())
}

/// An RX queue with RPS on, and the queue IRQ serving it on one CPU.
pub(crate) struct RpsQueue<'a> {
    /// The NIC.
    pub cx: &'a IfaceCx<'a>,
    /// The queue.
    pub q: &'a RxQueue,
    /// Its RPS CPUs (not empty).
    pub rps: &'a CpuSet,
    /// The queue IRQ serving it.
    pub irq: &'a Irq,
    /// The one CPU that IRQ is delivered to.
    pub cpu: u32,
}

/// At an RX queue: the queue, when RPS is on for it and the queue IRQ
/// serving it is delivered to exactly one CPU.
pub(crate) fn rps_queue(at: At<'_>) -> Option<RpsQueue<'_>> {
    let At::RxQueue(cx, q) = at else { return None };
    let rps = q.rps_cpus.as_ref().filter(|r| !r.is_empty())?;
    let irq = cx.qirqs.iter().copied().find(|irq| {
        irq.queue.is_some_and(|r| {
            r.index == Some(q.index) && matches!(r.kind, QueueKind::Combined | QueueKind::Rx)
        })
    })?;
    Some(RpsQueue {
        cx,
        q,
        rps,
        irq,
        cpu: irq_single_cpu(irq)?,
    })
}
