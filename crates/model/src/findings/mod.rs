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

/// CPUs an IRQ's next interrupt goes to: [`irq_cpus`], unless the effective
/// CPUs lie outside the requested `smp_affinity`, which the kernel allows
/// only while a move is not done yet: when the vector is busy (its previous
/// move not completed, x86's `assign_vector_locked` answers -EBUSY) the core
/// keeps the request as pending (`irq_set_affinity_pending`; `smp_affinity`
/// shows it) and moves the IRQ when it next fires. An idle queue's IRQ can
/// stay so for good (virtio_net's queue 0 at boot in a QEMU guest): it is
/// placed where it asked to be, as the planner (which reads `smp_affinity`)
/// sees it, and a new write would be refused the same way.
pub fn irq_next_cpus(irq: &Irq) -> Option<&CpuSet> {
    let asked = irq.smp_affinity.as_ref().filter(|a| !a.is_empty());
    match (irq_cpus(irq), asked) {
        (Some(e), Some(a)) if !e.is_subset(a) => Some(a),
        (cur, _) => cur,
    }
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

    fn irq(smp: &str, eff: Option<&str>) -> Irq {
        Irq {
            number: crate::IrqNumber(27),
            name: "virtio0-input.0".into(),
            chip: "PCI-MSIX".into(),
            per_cpu: vec![0, 0],
            smp_affinity: Some(CpuSet::parse_list(smp).unwrap()),
            effective_affinity: eff.map(|e| CpuSet::parse_list(e).unwrap()),
            node: None,
            interface: Some("eth0".into()),
            queue: None,
            queue_source: None,
        }
    }

    #[test]
    fn an_irq_goes_where_it_is_delivered_unless_a_move_is_pending() {
        let cpus = |smp, eff| irq_next_cpus(&irq(smp, eff)).map(|c| c.to_list());
        assert_eq!(cpus("0-1", Some("1")).as_deref(), Some("1"));
        assert_eq!(cpus("0", None).as_deref(), Some("0"));
        // An empty effective mask says nothing.
        assert_eq!(cpus("0-1", Some("")).as_deref(), Some("0-1"));
        // Asked for CPU 0, still on CPU 1 until it fires: its next
        // interrupt goes to CPU 0 (the real virtio_net capture's queue 0).
        assert_eq!(cpus("0", Some("1")).as_deref(), Some("0"));
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
