//! What a plan would change on this host as it stands now: each change's
//! current value read through its knob, before anything is written.
//! `fleet apply` shows these per host before it applies.

use super::Knobs;
use model::plan::Plan;
use serde::{Deserialize, Serialize};

/// One change of a plan against the host's current value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewLine {
    /// Knob name.
    pub knob: String,
    /// The target, as `Target::describe` spells it.
    pub target: String,
    /// The value the host has now (`None`: absent, or unreadable; see `error`).
    pub now: Option<String>,
    /// The value the plan writes.
    pub after: String,
    /// Whether the host already holds it (compared as the knob compares:
    /// masks and CPU lists by meaning).
    pub unchanged: bool,
    /// Why the current value could not be read (the knob or path named).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PreviewLine {
    /// `KNOB TARGET: NOW -> AFTER`, `(absent)` or `(unreadable: WHY)` for
    /// a missing value, `(already)` at the end when nothing would change.
    pub fn line(&self) -> String {
        let now = match (&self.now, &self.error) {
            (Some(v), _) => v.clone(),
            (None, Some(e)) => format!("(unreadable: {e})"),
            (None, None) => "(absent)".to_string(),
        };
        let same = if self.unchanged { " (already)" } else { "" };
        format!(
            "{} {}: {} -> {}{same}",
            self.knob, self.target, now, self.after
        )
    }
}

/// Each change of `plan` with the value `knobs` reads now. Reads only;
/// a target nettune does not plan is reported unreadable (refused).
pub fn preview(knobs: &Knobs, plan: &Plan) -> Vec<PreviewLine> {
    plan.changes
        .iter()
        .map(|c| {
            let read = knobs.knob(&c.target).and_then(|k| Ok((k.read()?, k)));
            let (now, unchanged, error) = match read {
                Ok((v, k)) => {
                    let same = v.as_deref().is_some_and(|v| k.same(v, &c.after));
                    (v, same, None)
                }
                Err(e) => (None, false, Some(e.to_string())),
            };
            PreviewLine {
                knob: c.knob.clone(),
                target: c.target.describe(),
                now,
                after: c.after.clone(),
                unchanged,
                error,
            }
        })
        .collect()
}
