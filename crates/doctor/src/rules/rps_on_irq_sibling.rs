use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{rps_queue, At, Scope};
use model::findings::siblings_of;

/// RPS of a queue includes the SMT sibling of the CPU taking its IRQ.
#[derive(Debug)]
pub struct RpsOnIrqSibling;

impl DoctorRule for RpsOnIrqSibling {
    fn id(&self) -> FindingId {
        FindingId::RpsOnIrqSibling
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "RPS on the SMT sibling of the queue's IRQ CPU"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::RxQueue)
    }
    fn rationale(&self) -> &'static str {
        "RPS work on the IRQ CPU's SMT sibling competes with the interrupt for the same core"
    }
    fn source(&self) -> &'static str {
        "Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/networking/scaling.rst (RPS)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let Some(r) = rps_queue(at) else { return };
        let sib = siblings_of(r.cx.host.s, r.cpu).intersection(r.rps);
        if sib.is_empty() {
            return;
        }
        let name = r.cx.name();
        out.push(r.cx.finding(
            self,
            format!(
                "{name} rx-{}: RPS CPUs {} include CPU {}, the SMT sibling of IRQ {}'s CPU {}",
                r.q.index,
                r.rps.to_list(),
                sib.to_list(),
                r.irq.number.0,
                r.cpu
            ),
        ));
    }
}
