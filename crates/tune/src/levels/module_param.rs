//! A kernel module parameter (`module_param` factors): a modprobe.d snippet
//! written through the journal, in effect only when the module is reloaded.
//! A level whose factor does not allow the reload is not applicable (the
//! cell would measure the host unchanged), and so is a module that drives
//! no interface of the host.

use model::experiment::{Knob, Level};
use model::plan::{Phase, Target};
use model::snapshot::HostSnapshot;

use super::{change, devices, na, Effect, KnobKind, NotApplicable};

/// `options MODULE PARAM=VALUE`, reloaded when the factor says `reload = true`.
#[derive(Debug, Clone, Copy)]
pub struct ModuleParamKnob;

impl KnobKind for ModuleParamKnob {
    fn handles(&self, knob: Knob) -> bool {
        knob == Knob::ModuleParam
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let Level::ModuleParam(m) = level else {
            return Err(na(knob, level, "level of the wrong type".into()));
        };
        if !m.reload {
            return Err(na(
                knob,
                level,
                format!(
                    "{} reads {} only when it loads, and the factor does not allow a reload (`reload = true`): the cell would measure the host unchanged",
                    m.module, m.param
                ),
            ));
        }
        let driven: Vec<&str> = devices(snap)
            .filter(|i| i.driver.as_deref() == Some(m.module.as_str()))
            .map(|i| i.name.as_str())
            .collect();
        if driven.is_empty() {
            let mut drivers: Vec<&str> =
                devices(snap).filter_map(|i| i.driver.as_deref()).collect();
            drivers.sort_unstable();
            drivers.dedup();
            let have = if drivers.is_empty() {
                "none".to_string()
            } else {
                drivers.join(", ")
            };
            return Err(na(
                knob,
                level,
                format!(
                    "no interface here is driven by {} (drivers here: {have})",
                    m.module
                ),
            ));
        }
        Ok(Effect::Changes(vec![change(
            Phase::Modules,
            &m.param,
            Target::ModuleParam {
                module: m.module.clone(),
                param: m.param.clone(),
            },
            None,
            m.value.clone(),
            &format!(
                "{}={level} (reloads {}: {})",
                knob.name(),
                m.module,
                driven.join(", ")
            ),
        )]))
    }
}
