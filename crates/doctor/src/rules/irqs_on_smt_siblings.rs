use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{irq_single_cpu, At, Scope};
use model::findings::siblings_of;
use model::snapshot::Irq;

/// Queue IRQs of one NIC on SMT siblings of each other.
#[derive(Debug)]
pub struct IrqsOnSmtSiblings;

impl DoctorRule for IrqsOnSmtSiblings {
    fn id(&self) -> FindingId {
        FindingId::IrqsOnSmtSiblings
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "queue IRQs on SMT siblings of each other"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Interface)
    }
    fn rationale(&self) -> &'static str {
        "SMT siblings share one core's execution units, so two queues there get one core's worth of interrupt work"
    }
    fn source(&self) -> &'static str {
        "Documentation/core-api/irq/irq-affinity.rst; seastar scripts/perftune.py (IRQs on physical cores, https://github.com/scylladb/seastar/blob/master/scripts/perftune.py)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Interface(cx) = at else { return };
        if cx.qirqs.len() < 2 {
            return;
        }
        let mut seen: Vec<(u32, &Irq)> = Vec::new();
        let mut pairs = Vec::new();
        for q in &cx.qirqs {
            let Some(c) = irq_single_cpu(q) else { continue };
            let sib = siblings_of(cx.host.s, c);
            if let Some((oc, oq)) = seen.iter().find(|(oc, _)| sib.contains(*oc)) {
                pairs.push(format!(
                    "IRQ {} (CPU {c}) / IRQ {} (CPU {oc})",
                    q.number.0, oq.number.0
                ));
            }
            seen.push((c, q));
        }
        if pairs.is_empty() {
            return;
        }
        let name = cx.name();
        out.push(cx.finding(
            self,
            format!(
            "{name}: {} queue IRQ pairs sit on SMT siblings of one core, which share its execution units: {}",
            pairs.len(),
            pairs.join(", ")
            ),
        ));
    }
}
