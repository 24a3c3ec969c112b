use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{At, Scope};

/// irqbalance is running and will rewrite IRQ affinity.
#[derive(Debug)]
pub struct IrqbalanceRunning;

impl DoctorRule for IrqbalanceRunning {
    fn id(&self) -> FindingId {
        FindingId::IrqbalanceRunning
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "irqbalance running, rewriting IRQ affinity"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Host)
    }
    fn rationale(&self) -> &'static str {
        "irqbalance periodically rewrites smp_affinity, undoing placement done by hand or by a plan"
    }
    fn source(&self) -> &'static str {
        "irqbalance(1); Documentation/core-api/irq/irq-affinity.rst"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Host(cx) = at else { return };
        if let Some(p) = &cx.s.owners.irqbalance {
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                "irqbalance",
                format!(
                    "irqbalance is running (pid {}): it rewrites IRQ affinity and will undo manual placement",
                    p.pid
                ),
            ));
        }
    }
}
