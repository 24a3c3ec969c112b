//! `module-params`: e1000/e1000e `InterruptThrottleRate` as a modprobe.d
//! snippet to review.

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use model::plan::{Phase, Target};

/// Plans a module parameter per driver (once per module).
#[derive(Debug)]
pub struct ModuleParams;

impl Rule for ModuleParams {
    fn id(&self) -> RuleId {
        RuleId::ModuleParams
    }

    fn rationale(&self) -> &'static str {
        "InterruptThrottleRate is a module parameter: written as a modprobe.d snippet to review, effective on reload"
    }

    fn source(&self) -> &'static str {
        "seeds 001, 003 (InterruptThrottleRate 0 off, 1 dynamic, 3 conservative, 100-100000/s)"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let name = nic.name;
        let driver = nic.iface.driver.as_deref().unwrap_or("");
        match driver {
            "e1000" | "e1000e" => {
                let v = cx.profile.settings.interrupt_throttle_rate;
                if cx.changes().iter().any(
                    |c| matches!(&c.target, Target::ModuleParam { module, .. } if module == driver),
                ) {
                    return;
                }
                cx.push(
                    Phase::Modules,
                    self.id(),
                    "InterruptThrottleRate",
                    Target::ModuleParam {
                        module: driver.into(),
                        param: "InterruptThrottleRate".into(),
                    },
                    None,
                    v.to_string(),
                    format!("{name} ({driver}): InterruptThrottleRate={v} (0 off, 1 dynamic, 3 conservative); a snippet to review, effective on module reload"),
                    true,
                );
            }
            "ixgbe" | "ixgbevf" => cx.note(
                self.id(),
                format!("{name} ({driver}): the in-tree driver has no InterruptThrottleRate; coalescing goes through ethtool rx-usecs instead"),
            ),
            _ => {}
        }
    }
}
