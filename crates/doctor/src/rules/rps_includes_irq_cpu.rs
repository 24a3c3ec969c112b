use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{rps_queue, At, Scope};

/// RPS of a queue includes the CPU that takes its IRQ.
#[derive(Debug)]
pub struct RpsIncludesIrqCpu;

impl DoctorRule for RpsIncludesIrqCpu {
    fn id(&self) -> FindingId {
        FindingId::RpsIncludesIrqCpu
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "RPS includes the CPU taking the queue's IRQ"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::RxQueue)
    }
    fn rationale(&self) -> &'static str {
        "at high packet rates the interrupting CPU is busy already; steering RPS work back to it adds to its load"
    }
    fn source(&self) -> &'static str {
        "Documentation/networking/scaling.rst (RPS configuration)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let Some(r) = rps_queue(at) else { return };
        if !r.rps.contains(r.cpu) {
            return;
        }
        let title = format!(
            "{} rx-{}: RPS CPUs {} include CPU {}, which already takes IRQ {}",
            r.cx.name(),
            r.q.index,
            r.rps.to_list(),
            r.cpu,
            r.irq.number.0
        );
        out.push(r.cx.finding(self, title));
    }
}
