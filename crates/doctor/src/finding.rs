//! Findings and the report: the stable JSON shape of `nettune doctor --json`
//! (documented in `docs/doctor.md`, checked by tests).

use crate::rules::{DoctorId, DoctorRule};
use model::plan::Change;
use serde::{Deserialize, Serialize};

/// Version of the report's JSON shape; bumped only on an incompatible change.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// How much a finding matters; orders critical first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Losing packets or capacity now.
    Critical,
    /// Likely costs performance, or will undo tuning.
    Warning,
    /// Worth knowing; may be intended.
    Info,
}

impl Severity {
    /// `critical`, `warning`, `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One number behind a finding and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// What was measured (`CPU 1 softirq`).
    pub what: String,
    /// Its value with unit (`62.3 %`, `1200/s`).
    pub value: String,
    /// The file or counter it came from (`/proc/stat`, `Udp.RcvbufErrors`).
    pub source: String,
}

/// What removes a finding. Every field is always present in JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fix {
    /// What to change, in a sentence or two.
    pub text: String,
    /// The plan changes that make it (from the planner, for this host).
    pub changes: Vec<Change>,
    /// The `nettune plan ...` command that makes those changes.
    pub command: Option<String>,
    /// The bench flag or socket option, when the fix belongs to the application.
    pub app: Option<String>,
}

/// One diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id of the rule (`softirq-concentrated`).
    pub id: DoctorId,
    /// How much it matters.
    pub severity: Severity,
    /// One line, specific to this host.
    pub title: String,
    /// What it is about (`eth0`, `cpu1`, `host`).
    pub subject: String,
    /// The numbers, each with its file or counter.
    pub evidence: Vec<Evidence>,
    /// Why it matters (the rule's rationale).
    pub why: String,
    /// What removes it.
    pub fix: Fix,
    /// Where the knowledge comes from (a kernel document, a driver README or a published article).
    pub source: String,
}

impl Finding {
    /// A finding of `rule` about `subject` with the rule's severity, rationale
    /// and source; add evidence and a fix with the builder methods.
    pub fn new(rule: &dyn DoctorRule, subject: &str, title: String) -> Finding {
        Finding {
            id: rule.id(),
            severity: rule.severity(),
            title,
            subject: subject.to_string(),
            evidence: Vec::new(),
            why: rule.rationale().to_string(),
            fix: Fix::default(),
            source: rule.source().to_string(),
        }
    }

    /// Override the severity.
    pub fn severity(mut self, s: Severity) -> Finding {
        self.severity = s;
        self
    }

    /// Add one piece of evidence.
    pub fn evidence(
        mut self,
        what: impl Into<String>,
        value: impl Into<String>,
        source: impl Into<String>,
    ) -> Finding {
        self.evidence.push(Evidence {
            what: what.into(),
            value: value.into(),
            source: source.into(),
        });
        self
    }

    /// Set the fix.
    pub fn fix(mut self, fix: Fix) -> Finding {
        self.fix = fix;
        self
    }
}

/// A rule that could not run, and why (a file missing, no samples).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The rule.
    pub id: DoctorId,
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
    pub fn of(&self, id: DoctorId) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.id == id)
    }

    /// Whether rule `id` found anything.
    pub fn has(&self, id: DoctorId) -> bool {
        self.of(id).next().is_some()
    }

    /// Whether rule `id` was skipped.
    pub fn skipped(&self, id: DoctorId) -> Option<&str> {
        self.skipped
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.reason.as_str())
    }
}
