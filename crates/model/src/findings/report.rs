//! What doctor found on a host: the stable JSON shape of `nettune doctor
//! --json` (documented in `docs/doctor.md`). Here, beside [`Finding`], so
//! that whoever carries a report (the engine's `bench --doctor`, the lab)
//! needs no rules.

use super::{Finding, FindingId, Severity};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Version of the report's JSON shape; bumped only on an incompatible change.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

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

impl Report {
    /// The one-line summary (`2 warnings, 1 info; 3 rules skipped`).
    pub fn summary(&self) -> String {
        let r = self;
        let n = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
        let (c, w, i) = (
            n(Severity::Critical),
            n(Severity::Warning),
            n(Severity::Info),
        );
        let mut parts = Vec::new();
        if c > 0 {
            parts.push(format!("{c} critical"));
        }
        if w > 0 {
            parts.push(format!("{w} warning{}", if w == 1 { "" } else { "s" }));
        }
        if i > 0 {
            parts.push(format!("{i} info"));
        }
        let mut s = if parts.is_empty() {
            "no findings".to_string()
        } else {
            parts.join(", ")
        };
        if !r.skipped.is_empty() {
            let k = r.skipped.len();
            let _ = write!(s, "; {k} rule{} skipped", if k == 1 { "" } else { "s" });
        }
        s
    }
}
