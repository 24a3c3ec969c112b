//! `irqbalance`: keep irqbalance off the IRQs the plan places by hand: ban
//! exactly those IRQs in its environment file (the default), or stop it
//! (`irqbalance = "stop"`, or when there is no environment file nettune can
//! rewrite).

use super::{Rule, RuleId};
use crate::context::Ctx;
use crate::profile::IrqbalanceMode;
use model::irqbalance_env;
use model::plan::{Phase, Target, ValueFormat};
use std::collections::BTreeSet;

/// Bans the placed IRQs from irqbalance, or stops it (a change of its own,
/// before the affinity phase).
#[derive(Debug)]
pub struct Irqbalance;

impl Rule for Irqbalance {
    fn id(&self) -> RuleId {
        RuleId::Irqbalance
    }

    fn rationale(&self) -> &'static str {
        "irqbalance rewrites IRQ affinity every 10 s, undoing hand placement; when nettune places IRQs, ban exactly those (--banirq) and keep it balancing the rest, or stop it"
    }

    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (irqbalance vs manual affinity); irqbalance(1) (--banirq); irqbalance misc/irqbalance.env (IRQBALANCE_ARGS)"
    }

    fn plan_placed(&self, cx: &mut Ctx<'_>) {
        let Some(p) = &cx.snap.owners.irqbalance else {
            return;
        };
        if cx.any_affinity && cx.profile.settings.irqbalance == IrqbalanceMode::Ban {
            let irqs: BTreeSet<u32> = cx.placed_irqs();
            match &cx.snap.owners.irqbalance_env {
                Some(env) => match irqbalance_env::with_bans(&env.content, &irqs) {
                    Ok(after) => {
                        if after != env.content {
                            cx.push(
                                Phase::Irqbalance,
                                self.id(),
                                "irqbalance",
                                Target::File {
                                    path: env.path.clone(),
                                    format: ValueFormat::Text,
                                },
                                Some(env.content.clone()),
                                after,
                                format!(
                                    "irqbalance (pid {}) keeps balancing the other IRQs; the {} placed below are banned in {} and it is restarted",
                                    p.pid,
                                    irqs.len(),
                                    env.path
                                ),
                                true,
                            );
                        }
                        return;
                    }
                    Err(why) => cx.note(
                        self.id(),
                        format!("{} not rewritten ({why}): stopping irqbalance instead", env.path),
                    ),
                },
                None => cx.note(
                    self.id(),
                    format!(
                        "no irqbalance environment file ({}): stopping irqbalance instead of banning IRQs",
                        irqbalance_env::ENV_PATHS.join(" or ")
                    ),
                ),
            }
        }
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
