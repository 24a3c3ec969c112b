//! `irqbalance`: stop irqbalance when the plan places IRQs by hand.

use super::{Rule, RuleId};
use crate::context::Ctx;
use model::plan::{Phase, Target};

/// Stops irqbalance (a change of its own, before the affinity phase).
#[derive(Debug)]
pub struct Irqbalance;

impl Rule for Irqbalance {
    fn id(&self) -> RuleId {
        RuleId::Irqbalance
    }

    fn rationale(&self) -> &'static str {
        "irqbalance rewrites IRQ affinity every 10 s, undoing hand placement; stop it when nettune places IRQs"
    }

    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides) (irqbalance vs manual affinity); irqbalance(1)"
    }

    fn plan_placed(&self, cx: &mut Ctx<'_>) {
        let Some(p) = &cx.snap.owners.irqbalance else {
            return;
        };
        if cx.any_affinity {
            cx.push(
                Phase::Irqbalance,
                self.id(),
                "irqbalance",
                Target::Service {
                    name: "irqbalance".into(),
                },
                Some("running".into()),
                "stopped".into(),
                format!(
                    "irqbalance (pid {}) would overwrite the IRQ placement below",
                    p.pid
                ),
                true,
            );
        } else {
            cx.note(
                self.id(),
                format!(
                    "irqbalance (pid {}) is running; left alone, since this plan places no IRQ",
                    p.pid
                ),
            );
        }
    }
}
