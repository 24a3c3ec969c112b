use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{At, Scope};
use model::findings::{irq_cpus, nodes_of, queue_label};

/// A queue IRQ of a NIC with no known node, allowed on CPUs of several nodes.
#[derive(Debug)]
pub struct IrqAffinitySpansNodes;

impl DoctorRule for IrqAffinitySpansNodes {
    fn id(&self) -> FindingId {
        FindingId::IrqAffinitySpansNodes
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "queue IRQ allowed on CPUs of several nodes"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::QueueIrq)
    }
    fn rationale(&self) -> &'static str {
        "an affinity mask across nodes lets the interrupt land on either node; without effective_affinity nobody can tell which"
    }
    fn source(&self) -> &'static str {
        "Documentation/core-api/irq/irq-affinity.rst (smp_affinity, effective_affinity)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::QueueIrq(cx, irq) = at else { return };
        if cx.node.is_some() || !cx.host.multi_node || irq.effective_affinity.is_some() {
            return;
        }
        let Some(cpus) = irq_cpus(irq) else { return };
        let nodes = nodes_of(cx.host.s, cpus);
        if nodes.len() <= 1 {
            return;
        }
        let name = cx.name();
        out.push(cx.finding(
            self,
            format!(
            "{name} {}: IRQ {} may run on CPUs {} across nodes {}; the kernel shows no effective_affinity to tell which",
            queue_label(irq),
            irq.number.0,
            cpus.to_list(),
            nodes.to_list()
            ),
        ));
    }
}
