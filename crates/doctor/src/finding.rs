//! The report: the stable JSON shape of `nettune doctor --json`
//! (documented in `docs/doctor.md`, checked by tests). Its [`Finding`],
//! [`Severity`] and ids are `model::findings`', shared with `inspect`.

use crate::rules::DoctorRule;
pub use model::findings::{
    BenchFix, Evidence, Finding, Fix, Report, Severity, Skipped, Workloads, REPORT_SCHEMA_VERSION,
};

/// A finding of `rule` about `subject` with the rule's severity, rationale
/// and source; add evidence and a fix with the builder methods of [`Finding`].
pub fn from_rule(rule: &dyn DoctorRule, subject: &str, title: String) -> Finding {
    Finding::new(rule.id(), rule.severity(), subject, title).about(rule.rationale(), rule.source())
}
