use super::{rx_queue_irq, siblings_of, At, Finding, FindingId, FindingRule, Scope, Severity};

/// RPS of a queue includes the SMT sibling of the CPU taking its IRQ.
#[derive(Debug)]
pub struct RpsOnIrqSibling;

impl FindingRule for RpsOnIrqSibling {
    fn id(&self) -> FindingId {
        FindingId::RpsOnIrqSibling
    }
    fn scope(&self) -> Scope {
        Scope::RxQueue
    }
    fn rationale(&self) -> &'static str {
        "RPS work on the IRQ CPU's SMT sibling competes with the interrupt for the same core"
    }
    fn source(&self) -> &'static str {
        "Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/networking/scaling.rst (RPS)"
    }
    fn check(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::RxQueue(cx, q) = at else { return };
        let Some(rps) = q.rps_cpus.as_ref().filter(|r| !r.is_empty()) else {
            return;
        };
        let Some((irq, c)) = rx_queue_irq(cx, q) else {
            return;
        };
        let sib = siblings_of(cx.host.s, c).intersection(rps);
        if sib.is_empty() {
            return;
        }
        let name = cx.name();
        out.push(Finding::new(
            self.id(),
            Severity::Warning,
            name,
            format!(
                "{name} rx-{}: RPS CPUs {} include CPU {}, the SMT sibling of IRQ {}'s CPU {c}",
                q.index,
                rps.to_list(),
                sib.to_list(),
                irq.number.0
            ),
        ));
    }
}
