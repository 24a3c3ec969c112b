//! `irq-affinity`: each queue IRQ on the physical core [`allocate`] chose.
//!
//! [`allocate`]: crate::placement::allocate

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use model::plan::{Phase, Target};
use model::{CpuSet, IrqNumber};

/// Writes `smp_affinity_list` of each queue IRQ.
#[derive(Debug)]
pub struct IrqAffinity;

impl Rule for IrqAffinity {
    fn id(&self) -> RuleId {
        RuleId::IrqAffinity
    }

    fn rationale(&self) -> &'static str {
        "one queue IRQ per physical core of the NIC's NUMA node; SMT siblings share a core and gain nothing for interrupts"
    }

    fn source(&self) -> &'static str {
        "Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/core-api/irq/irq-affinity.rst"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let snap = cx.snap;
        for (q, irqs) in &nic.qirqs {
            let Some(placed) = nic.placement.get(q) else {
                continue;
            };
            let (cpu, nd) = (placed.cpu, placed.node);
            for &irq in irqs {
                let cur = snap
                    .irq(IrqNumber(irq))
                    .and_then(|i| i.smp_affinity.clone());
                let want = CpuSet::single(cpu);
                if cur.as_ref() == Some(&want) {
                    continue;
                }
                let irq_name = snap
                    .irq(IrqNumber(irq))
                    .map(|i| i.name.clone())
                    .unwrap_or_default();
                // A queue the name did not tell is marked as inferred.
                let inferred = snap
                    .irq(IrqNumber(irq))
                    .and_then(|i| i.queue_source)
                    .filter(|s| s.inferred())
                    .map_or(String::new(), |s| format!(" [queue {}]", s.describe()));
                let why = match nic.node {
                    Some(h) if h == nd => format!("physical core of node {nd}, the NIC's node"),
                    Some(h) => format!("node {h} has no usable physical core; nearest node {nd}"),
                    None if nic.multi_node => format!("node unknown: spread, node {nd}"),
                    None => "one node".to_string(),
                };
                let smt = if cx.cores.iter().any(|c| c.cpu == cpu) {
                    "SMT siblings left out"
                } else {
                    "the other SMT thread of a core (more queues than the node's cores)"
                };
                cx.push(
                    Phase::IrqAffinity,
                    self.id(),
                    "smp_affinity_list",
                    Target::IrqAffinity {
                        irq,
                        iface: nic.name.into(),
                    },
                    cur.map(|c| c.to_list()),
                    cpu.to_string(),
                    format!("{irq_name} (queue {q}) -> CPU {cpu}: {why}, {smt}{inferred}"),
                    false,
                );
                cx.any_affinity = true;
            }
        }
    }
}
