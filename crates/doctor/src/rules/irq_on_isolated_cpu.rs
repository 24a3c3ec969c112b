use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{At, Scope};
use model::findings::{irq_cpus, queue_label};

/// A queue IRQ allowed on an isolated or nohz_full CPU.
#[derive(Debug)]
pub struct IrqOnIsolatedCpu;

impl DoctorRule for IrqOnIsolatedCpu {
    fn id(&self) -> FindingId {
        FindingId::IrqOnIsolatedCpu
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "queue IRQ on an isolated or nohz_full CPU"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::QueueIrq)
    }
    fn rationale(&self) -> &'static str {
        "isolated and nohz_full CPUs are kept for latency-critical work; interrupts there defeat the isolation"
    }
    fn source(&self) -> &'static str {
        "Documentation/admin-guide/kernel-parameters.txt (isolcpus, nohz_full)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::QueueIrq(cx, irq) = at else { return };
        let Some(cpus) = irq_cpus(irq) else { return };
        let cpu = &cx.host.s.cpu;
        let bad = cpus.intersection(&cpu.isolated.union(&cpu.nohz_full));
        if bad.is_empty() {
            return;
        }
        let name = cx.name();
        out.push(cx.finding(
            self,
            format!(
                "{name} {}: IRQ {} may run on isolated/nohz_full CPU {}",
                queue_label(irq),
                irq.number.0,
                bad.to_list()
            ),
        ));
    }
}
