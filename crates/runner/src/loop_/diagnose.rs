//! The Diagnose stage's data: `nettune doctor --json` of a host read into
//! doctor's typed [`Report`], one host's windows merged into one report, and
//! both hosts' reports merged into the `doctor_before`/`doctor_after` of
//! results.json.

use model::findings::{Finding, Report, Skipped, REPORT_SCHEMA_VERSION};

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

/// Both hosts' reports as one of doctor's `--json` shape (results.json's
/// `doctor_before`/`doctor_after`, read by the report page): each finding's
/// subject and each skipped reason prefixed with its host, and a `host`
/// field added.
pub fn merge_reports(reports: &[(String, Report)]) -> serde_json::Value {
    let tagged = |v: serde_json::Result<serde_json::Value>, key: &str, host: &str| {
        let mut v = v.unwrap_or(serde_json::Value::Null);
        if let Some(o) = v.as_object_mut() {
            let old = o
                .get(key)
                .and_then(|s| s.as_str())
                .unwrap_or("")
                .to_string();
            o.insert(key.into(), format!("{host}: {old}").into());
            o.insert("host".into(), host.into());
        }
        v
    };
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    for (host, r) in reports {
        for f in &r.findings {
            findings.push(tagged(serde_json::to_value(f), "subject", host));
        }
        for sk in &r.skipped {
            skipped.push(tagged(serde_json::to_value(sk), "reason", host));
        }
    }
    serde_json::json!({
        "schema_version": REPORT_SCHEMA_VERSION,
        "findings": findings,
        "skipped": skipped,
    })
}
