use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{At, Scope};

/// tuned is running, or left a profile active.
#[derive(Debug)]
pub struct Tuned;

impl DoctorRule for Tuned {
    fn id(&self) -> FindingId {
        FindingId::Tuned
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "tuned running or a tuned profile active"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Host)
    }
    fn rationale(&self) -> &'static str {
        "tuned applies sysctls, governors and coalescing from its profile and may set the same knobs as a plan"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (tuned profiles); tuned-adm(8)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Host(cx) = at else { return };
        let Some(t) = &cx.s.owners.tuned else { return };
        let msg = match (&t.process, &t.active_profile) {
            (Some(p), Some(prof)) => format!("tuned is running (pid {}) with profile {prof}: it sets sysctls, governors and coalescing", p.pid),
            (Some(p), None) => format!("tuned is running (pid {}): it sets sysctls, governors and coalescing", p.pid),
            (None, Some(prof)) => format!("tuned is not running but its active profile is {prof}: settings from it may persist"),
            (None, None) => "tuned state is present".to_string(),
        };
        out.push(Finding::new(self.id(), Severity::Info, "tuned", msg));
    }
}
