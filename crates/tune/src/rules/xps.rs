//! `xps`: a CPU transmits on the queue whose IRQ it takes.

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use model::knobpath;
use model::plan::{Phase, Target, ValueFormat};
use model::CpuSet;

/// Writes `xps_cpus` of each TX queue.
#[derive(Debug)]
pub struct Xps;

impl Rule for Xps {
    fn id(&self) -> RuleId {
        RuleId::Xps
    }

    fn rationale(&self) -> &'static str {
        "XPS mirrors the IRQ placement so a CPU transmits on the queue whose completions it handles"
    }

    fn source(&self) -> &'static str {
        "Documentation/networking/scaling.rst (XPS)"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let name = nic.name;
        let ntx = nic.iface.tx_queues.len();
        if ntx <= 1 {
            return;
        }
        let virt = nic.qirqs.is_empty();
        let virt_spread = if virt {
            spread(&nic.scope_cores, ntx)
        } else {
            Vec::new()
        };
        let groups = cx.bits.div_ceil(32);
        for (i, txq) in nic.iface.tx_queues.iter().enumerate() {
            let Some(cur) = txq.xps_cpus.clone() else {
                continue;
            };
            let (want, why) = if virt {
                let w = virt_spread.get(i).cloned().unwrap_or_default();
                let why = format!(
                    "{name} tx-{}: no queue IRQs: each usable physical core transmits on one queue ({})",
                    txq.index,
                    w.to_list()
                );
                (w, why)
            } else if let Some(p) = nic.placement.get(&txq.index) {
                let cpu = p.cpu;
                (
                    CpuSet::single(cpu),
                    format!(
                        "{name} tx-{}: mirrors the queue's IRQ on CPU {cpu}",
                        txq.index
                    ),
                )
            } else {
                continue;
            };
            if want.is_empty() || want == cur {
                continue;
            }
            cx.push(
                Phase::Steering,
                self.id(),
                "xps_cpus",
                Target::File {
                    path: knobpath::xps_cpus_path(name, txq.index),
                    format: ValueFormat::Mask,
                },
                Some(cur.to_mask_groups(groups)),
                want.to_mask_groups(groups),
                why,
                false,
            );
        }
    }
}

/// Without queue IRQs: `ntx` CPU sets over `cores`, each core in one set
/// (round robin) when there are enough cores, else one core per set.
fn spread(cores: &[u32], ntx: usize) -> Vec<CpuSet> {
    let mut v = vec![CpuSet::new(); ntx];
    if cores.len() >= ntx {
        for (i, c) in cores.iter().enumerate() {
            v[i % ntx].insert(*c);
        }
    } else if !cores.is_empty() {
        for (i, s) in v.iter_mut().enumerate() {
            s.insert(cores[i % cores.len()]);
        }
    }
    v
}
