//! The Diagnose stage's data: `nettune doctor --json` of a host read into
//! doctor's typed [`Report`], one host's windows merged into one report, and
//! both hosts' reports merged into the `doctor_before`/`doctor_after` of
//! results.json.

use model::findings::{Finding, HostReports, Report, Skipped, REPORT_SCHEMA_VERSION};

pub use crate::exec::parse_report;

/// One host's reports from several doctor windows as one: each rule's
/// first finding per subject (the windows in order), and a rule skipped
/// only when it was skipped in every window and never fired.
pub fn merge_windows(reports: &[Report]) -> Report {
    let mut findings: Vec<Finding> = Vec::new();
    for f in reports.iter().flat_map(|r| &r.findings) {
        if !findings
            .iter()
            .any(|g| g.id == f.id && g.subject == f.subject)
        {
            findings.push(f.clone());
        }
    }
    let mut skipped: Vec<Skipped> = Vec::new();
    for sk in reports.iter().flat_map(|r| &r.skipped) {
        let everywhere = reports
            .iter()
            .all(|o| o.skipped.iter().any(|x| x.id == sk.id));
        let ran = findings.iter().any(|f| f.id == sk.id);
        if everywhere && !ran && !skipped.iter().any(|x| x.id == sk.id) {
            skipped.push(sk.clone());
        }
    }
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        findings,
        skipped,
    }
}

/// Both hosts' reports as one (results.json's `doctor_before`/`doctor_after`,
/// read by the report page): each finding and skipped rule with its host.
pub fn merge_reports(reports: &[(String, Report)]) -> HostReports {
    HostReports::merge(reports)
}
