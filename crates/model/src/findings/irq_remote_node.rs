use super::{
    irq_cpus, nodes_of, queue_label, At, Finding, FindingId, FindingRule, Scope, Severity,
};

/// A queue IRQ delivered to CPUs outside the NIC's node.
#[derive(Debug)]
pub struct IrqRemoteNode;

impl FindingRule for IrqRemoteNode {
    fn id(&self) -> FindingId {
        FindingId::IrqRemoteNode
    }
    fn scope(&self) -> Scope {
        Scope::QueueIrq
    }
    fn rationale(&self) -> &'static str {
        "an interrupt served on a remote node touches the NIC's descriptors and buffers across the interconnect"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (NIC locality, local_cpulist); Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/)"
    }
    fn check(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::QueueIrq(cx, irq) = at else { return };
        let (Some(cpus), Some(node)) = (irq_cpus(irq), cx.node) else {
            return;
        };
        let remote = cpus.difference(&node.cpus);
        if remote.is_empty() || !cx.host.multi_node {
            return;
        }
        let name = cx.name();
        out.push(Finding::new(
            self.id(),
            Severity::Warning,
            name,
            format!(
                "{name} {}: IRQ {} runs on CPU {} (node {}), but {name} is on node {}",
                queue_label(irq),
                irq.number.0,
                remote.to_list(),
                nodes_of(cx.host.s, &remote).to_list(),
                node.id.0
            ),
        ));
    }
}
