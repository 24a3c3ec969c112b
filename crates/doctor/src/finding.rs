//! The report: the stable JSON shape of `nettune doctor --json`
//! (documented in `docs/doctor.md`, checked by tests). Its [`Finding`],
//! [`Severity`] and ids are `model::findings`', shared with `inspect`.

use crate::rules::DoctorRule;
use model::findings::FindingId;
pub use model::findings::{BenchFix, Evidence, Finding, Fix, Severity, Workloads};
use serde::{Deserialize, Serialize};

/// Version of the report's JSON shape; bumped only on an incompatible change.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// A finding of `rule` about `subject` with the rule's severity, rationale
/// and source; add evidence and a fix with the builder methods of [`Finding`].
pub fn from_rule(rule: &dyn DoctorRule, subject: &str, title: String) -> Finding {
    Finding::new(rule.id(), rule.severity(), subject, title).about(rule.rationale(), rule.source())
}

/// A rule that could not run, and why (a file missing, no samples).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The rule.
    pub id: FindingId,
    /// Why it could not run.
    pub reason: String,
}

/// Everything doctor found: `{"schema_version":1,"findings":[...],"skipped":[...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Findings, critical first, then catalogue order.
    pub findings: Vec<Finding>,
    /// Rules that could not run.
    pub skipped: Vec<Skipped>,
}

impl Report {
    /// The most severe finding's severity, if any.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).min()
    }

    /// Exit status for scripts and monitoring: 0 when nothing is above info,
    /// 1 on warnings, 2 on critical findings.
    pub fn exit_code(&self) -> u8 {
        match self.worst() {
            Some(Severity::Critical) => 2,
            Some(Severity::Warning) => 1,
            _ => 0,
        }
    }

    /// Findings of rule `id`.
    pub fn of(&self, id: FindingId) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.id == id)
    }

    /// Whether rule `id` found anything.
    pub fn has(&self, id: FindingId) -> bool {
        self.of(id).next().is_some()
    }

    /// Whether rule `id` was skipped.
    pub fn skipped(&self, id: FindingId) -> Option<&str> {
        self.skipped
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.reason.as_str())
    }
}
