use super::{rx_queue_irq, At, Finding, FindingId, FindingRule, Scope, Severity};

/// RPS of a queue includes the CPU that takes its IRQ.
#[derive(Debug)]
pub struct RpsIncludesIrqCpu;

impl FindingRule for RpsIncludesIrqCpu {
    fn id(&self) -> FindingId {
        FindingId::RpsIncludesIrqCpu
    }
    fn scope(&self) -> Scope {
        Scope::RxQueue
    }
    fn rationale(&self) -> &'static str {
        "at high packet rates the interrupting CPU is busy already; steering RPS work back to it adds to its load"
    }
    fn source(&self) -> &'static str {
        "Documentation/networking/scaling.rst (RPS configuration)"
    }
    fn check(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::RxQueue(cx, q) = at else { return };
        let Some(rps) = q.rps_cpus.as_ref().filter(|r| !r.is_empty()) else {
            return;
        };
        let Some((irq, c)) = rx_queue_irq(cx, q) else {
            return;
        };
        if !rps.contains(c) {
            return;
        }
        let name = cx.name();
        out.push(Finding::new(
            self.id(),
            Severity::Info,
            name,
            format!(
                "{name} rx-{}: RPS CPUs {} include CPU {c}, which already takes IRQ {}",
                q.index,
                rps.to_list(),
                irq.number.0
            ),
        ));
    }
}
