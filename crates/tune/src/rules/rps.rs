//! `rps`: with fewer RX queues than cores, spread receive work in software.

use super::{Rule, RuleId};
use crate::context::{no_irq_reason, Ctx, Nic};
use crate::placement::node_cores;
use model::knobpath;
use model::plan::{Phase, Target, ValueFormat};
use model::CpuSet;

/// Writes `rps_cpus` of each RX queue.
#[derive(Debug)]
pub struct Rps;

impl Rule for Rps {
    fn id(&self) -> RuleId {
        RuleId::Rps
    }

    fn rationale(&self) -> &'static str {
        "with fewer RX queues than cores, RPS spreads protocol processing over the other physical cores of the IRQ's node"
    }

    fn source(&self) -> &'static str {
        "Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/) (rps_cpus on the queue's NUMA node); Documentation/networking/scaling.rst (RPS)"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let name = nic.name;
        let nrx = nic.iface.rx_queues.len();
        if nrx == 0 {
            return;
        }
        let ncores = nic.scope_cores.len();
        let has_irqs = !nic.qirqs.is_empty();
        let want_rps = !has_irqs || nrx < ncores;
        let groups = cx.bits.div_ceil(32);
        for rxq in &nic.iface.rx_queues {
            let Some(cur) = rxq.rps_cpus.clone() else {
                continue;
            };
            let (mask, why) = if !want_rps {
                (
                    CpuSet::new(),
                    format!(
                        "{name}: {nrx} RX queues for {ncores} usable physical cores: RSS already spreads, RPS off"
                    ),
                )
            } else if let Some(p) = nic.placement.get(&rxq.index) {
                let (irq_cpu, nd) = (p.cpu, p.node);
                let mut m: CpuSet = node_cores(&cx.cores, nd).into_iter().collect();
                let mut excl = "";
                if cx.profile.settings.rps_exclude_irq_cpu && m.len() > 1 {
                    m.remove(irq_cpu);
                    excl = ", without the IRQ CPU";
                }
                let why = format!(
                    "{name} rx-{}: {nrx} RX queues < {ncores} cores; physical cores of node {nd} (IRQ on CPU {irq_cpu}){excl}: {}",
                    rxq.index,
                    m.to_list()
                );
                (m, why)
            } else {
                let m: CpuSet = nic.scope_cores.iter().copied().collect();
                let why = if has_irqs {
                    format!(
                        "{name} rx-{}: no IRQ for this queue; all usable physical cores",
                        rxq.index
                    )
                } else if nic.iface.driver.is_some() {
                    format!(
                        "{name} rx-{}: no queue IRQs nettune can see ({}): RPS spreads receive work over the usable physical cores",
                        rxq.index,
                        no_irq_reason(nic.iface)
                    )
                } else {
                    format!(
                        "{name} rx-{}: no queue IRQs (virtual device): receive work runs on the sending CPU; RPS spreads it over the usable physical cores",
                        rxq.index
                    )
                };
                (m, why)
            };
            if mask.is_empty() && cur.is_empty() {
                continue;
            }
            if !mask.is_empty() {
                nic.rps_on = true;
            }
            if mask == cur {
                continue;
            }
            cx.push(
                Phase::Steering,
                self.id(),
                "rps_cpus",
                Target::File {
                    path: knobpath::rps_cpus_path(name, rxq.index),
                    format: ValueFormat::Mask,
                },
                Some(cur.to_mask_groups(groups)),
                mask.to_mask_groups(groups),
                why,
                false,
            );
        }
    }
}
