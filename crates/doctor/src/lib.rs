//! `nettune doctor`'s diagnosis engine: pure rules from a host snapshot, the
//! planner's extras and an optional window of sampled counters to findings
//! with evidence and fixes. No I/O: `host` reads, this crate decides, the CLI
//! prints.
//!
//! * [`input`]: what the rules look at ([`Input`]) and what is computed from
//!   it once ([`Cx`]: the window's rates, the plan, the snapshot findings).
//! * [`finding`]: a [`Finding`] with evidence and a fix, the [`Report`] and
//!   its stable JSON shape (`docs/doctor.md`).
//! * [`rules`]: every finding rule, one file each, and the one
//!   [`rules::CATALOGUE`].
//! * [`snapshot`]: `inspect`'s findings, the rules' look at the snapshot
//!   alone.
//! * [`render`]: the human text of a report.
//! * [`collect`]: an [`Input`] from facts the caller read through `host`.
//!
//! ```
//! use nettune_doctor::{diagnose, Input};
//! /// Exit status of doctor on a snapshot alone (no samples: rate rules skip).
//! fn status(snap: model::snapshot::HostSnapshot) -> u8 {
//!     let report = diagnose(&Input::new(snap));
//!     assert!(!report.skipped.is_empty());
//!     report.exit_code()
//! }
//! ```

pub mod collect;
pub mod finding;
pub mod input;
pub mod render;
pub mod rules;
pub mod snapshot;

pub use finding::{
    BenchFix, Evidence, Finding, Fix, Report, Severity, Skipped, Workloads, REPORT_SCHEMA_VERSION,
};
pub use input::{Allowance, Cx, Input, Window};
pub use model::findings::FindingId;
pub use rules::{DoctorId, DoctorRule, Skip, CATALOGUE};

/// Run every rule of [`CATALOGUE`] on `input`: findings ordered by severity
/// (critical first), then catalogue order; rules that could not run are in
/// [`Report::skipped`] with their reason.
pub fn diagnose(input: &Input) -> Report {
    diagnose_with(input, CATALOGUE)
}

/// [`diagnose`] with only the rules in `rules` (tests, `top`).
pub fn diagnose_with(input: &Input, rules: &[&dyn DoctorRule]) -> Report {
    let cx = Cx::new(input);
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    for r in rules {
        if let Some(Skip(reason)) = rules::avoided_by_profile(*r, &cx) {
            skipped.push(Skipped { id: r.id(), reason });
            continue;
        }
        let mut out = Vec::new();
        match r.check(&cx, &mut out) {
            Ok(()) => findings.extend(out),
            Err(Skip(reason)) => skipped.push(Skipped { id: r.id(), reason }),
        }
    }
    findings.sort_by_key(|f| f.severity);
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        findings,
        skipped,
    }
}
