//! The one [`Finding`] type of `inspect` and `doctor` (the rules of
//! doctor's one catalogue), its [`Severity`], [`Evidence`] and [`Fix`]. Its JSON
//! shape is `nettune doctor --json`'s (`docs/doctor.md`).

use super::FindingId;
use crate::plan::Change;
use serde::{Deserialize, Serialize};

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

/// What removes a finding. Every field but `bench` is always present in JSON.
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
    /// The same fix as `nettune bench` options, for the tests it concerns;
    /// the lab applies it to its after suite. Absent from JSON when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<BenchFix>,
}

/// A fix that `nettune bench` options make, and the tests they are for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchFix {
    /// The tests the options are for.
    pub workloads: Workloads,
    /// The options, as `nettune bench` takes them (`--rcvbuf`, `4M`).
    pub flags: Vec<String>,
}

/// The `nettune bench` tests a [`BenchFix`] is for, by transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workloads {
    /// The `udp-*` tests.
    Udp,
    /// The `tcp-*` tests.
    Tcp,
    /// Every test.
    All,
}

impl Workloads {
    /// Whether bench `--test TEST` is one of these.
    pub fn covers(self, test: &str) -> bool {
        match self {
            Workloads::Udp => test.starts_with("udp"),
            Workloads::Tcp => test.starts_with("tcp"),
            Workloads::All => true,
        }
    }
}

impl BenchFix {
    /// Options for the tests of `workloads`.
    pub fn new(workloads: Workloads, flags: &[&str]) -> Self {
        BenchFix {
            workloads,
            flags: flags.iter().map(|f| (*f).to_string()).collect(),
        }
    }
}

/// One finding of a rule, snapshot or diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id of the rule (`softirq-concentrated`, `irq-remote-node`).
    pub id: FindingId,
    /// How much it matters.
    pub severity: Severity,
    /// One line, specific to this host, with the evidence.
    pub title: String,
    /// What it is about (`eth0`, `cpu1`, `host`, `irqbalance`).
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
    /// A finding of rule `id` about `subject`, without evidence, fix,
    /// rationale or source (add them with the builder methods; the snapshot
    /// catalogue fills rationale and source from its rule).
    pub fn new(id: FindingId, severity: Severity, subject: &str, title: String) -> Finding {
        Finding {
            id,
            severity,
            title,
            subject: subject.to_string(),
            evidence: Vec::new(),
            why: String::new(),
            fix: Fix::default(),
            source: String::new(),
        }
    }

    /// Set the rationale and the source.
    pub fn about(mut self, why: &str, source: &str) -> Finding {
        self.why = why.to_string();
        self.source = source.to_string();
        self
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
