//! Findings: the one [`Finding`] type of the workspace, its [`Severity`],
//! [`FindingId`], doctor's [`Report`] and several hosts' reports as one
//! ([`HostReports`], results.json's), with the snapshot helpers the
//! rules and `inspect` share (which CPUs an IRQ reaches, a NIC's queue IRQs,
//! SMT siblings). Pure: no I/O.
//!
//! The rules are `doctor`'s, one catalogue (`doctor::rules::CATALOGUE`):
//! those that look at the snapshot alone are `inspect`'s findings too
//! (`doctor::snapshot::findings`). Here, with no rules, so that whoever
//! carries a report (the engine's `bench --doctor`, the lab, the report)
//! needs none.

mod hosts;
mod report;

use crate::cpuset::CpuSet;
use crate::snapshot::{HostSnapshot, Interface, Irq, QueueKind};

mod finding;

pub use crate::finding_id::FindingId;
pub use finding::{BenchFix, Evidence, Finding, Fix, Severity, Workloads};
pub use hosts::{HostReports, OnHost};
pub use report::{Report, Skipped, REPORT_SCHEMA_VERSION};

/// CPUs an IRQ is delivered to: `effective_affinity` when the kernel shows
/// it, else `smp_affinity`.
pub fn irq_cpus(irq: &Irq) -> Option<&CpuSet> {
    irq.effective_affinity
        .as_ref()
        .filter(|s| !s.is_empty())
        .or(irq.smp_affinity.as_ref())
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
