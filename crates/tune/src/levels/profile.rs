//! A whole tuning profile as a level: the planner's changes for this host
//! (`untuned` changes nothing).

use model::experiment::{Knob, Level};
use model::plan::{HostExtras, NetnsScope, PlanOptions};
use model::snapshot::HostSnapshot;

use super::{na, Effect, KnobKind, NotApplicable};

/// `profile = "latency"`: the changes `nettune plan --profile latency` makes.
#[derive(Debug, Clone, Copy)]
pub struct ProfileKnob;

impl KnobKind for ProfileKnob {
    fn handles(&self, knob: Knob) -> bool {
        knob == Knob::Profile
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let Level::Name(name) = level else {
            return Err(na(knob, level, "level of the wrong type".into()));
        };
        if name == "untuned" {
            return Ok(Effect::Nothing);
        }
        let profile = crate::profile::builtin(name)
            .map_err(|e| na(knob, level, format!("no such profile: {e}")))?;
        // Lab hosts are namespaces: only per-namespace and per-device knobs.
        let extras = HostExtras {
            scope: NetnsScope::Child,
            ..HostExtras::default()
        };
        let plan = crate::plan(snap, &extras, &profile, &PlanOptions::default())
            .map_err(|e| na(knob, level, e.to_string()))?;
        if plan.changes.is_empty() {
            return Ok(Effect::Nothing);
        }
        Ok(Effect::Changes(plan.changes))
    }
}
