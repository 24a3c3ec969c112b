use super::{At, Finding, FindingId, FindingRule, Scope, Severity};
use crate::snapshot::QueueKind;

/// `rps-off` as the snapshot sees it: fewer RX queue IRQs than online CPUs,
/// and RPS off on every queue. doctor's `rps-off` builds on it (usable
/// physical cores, the window's packet rate): one name for one condition.
#[derive(Debug)]
pub struct RpsOff;

impl FindingRule for RpsOff {
    fn id(&self) -> FindingId {
        FindingId::RpsOff
    }
    fn scope(&self) -> Scope {
        Scope::Interface
    }
    fn rationale(&self) -> &'static str {
        "with fewer RX queues than CPUs and no RPS, receive processing is limited to the CPUs taking the queue IRQs"
    }
    fn source(&self) -> &'static str {
        "Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/networking/scaling.rst (RPS)"
    }
    fn check(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Interface(cx) = at else { return };
        let rxq = cx
            .qirqs
            .iter()
            .filter(|q| q.queue.is_some_and(|r| r.kind != QueueKind::Tx))
            .count();
        let rps_any = cx
            .iface
            .rx_queues
            .iter()
            .any(|q| q.rps_cpus.as_ref().is_some_and(|r| !r.is_empty()));
        let online = cx.host.s.cpu.online.len();
        if rxq == 0 || rxq >= online || rps_any {
            return;
        }
        let name = cx.name();
        out.push(Finding::new(
            self.id(),
            Severity::Info,
            name,
            format!(
                "{name}: {rxq} RX queue IRQ(s) for {online} online CPUs and RPS is off on every queue: at most {rxq} CPU(s) do receive processing"
            ),
        ));
    }
}
