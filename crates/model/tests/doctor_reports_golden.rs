//! results.json's `doctor_before`/`doctor_after`, typed ([`HostReports`]),
//! written byte for byte as before they were typed.
//!
//! `data/doctor-reports-two-hosts.json` is what the lab wrote before this
//! change (`lab::loop_::diagnose::merge_reports`, which tagged each
//! finding's JSON with its host in a `serde_json::Value`, then pretty
//! JSON) for doctor's two golden reports of `crates/doctor/tests/data` on
//! hosts `lab-h0` and `lab-h1`.

#![allow(clippy::unwrap_used)]

use nettune_model::findings::{FindingId, HostReports, Report};
use nettune_model::results::ExperimentResults;

fn read(path: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn hosts() -> Vec<(String, Report)> {
    let report = |name: &str| -> Report {
        serde_json::from_str(&read(&format!("../doctor/tests/data/{name}"))).unwrap()
    };
    vec![
        (
            "lab-h0".into(),
            report("report-two-socket-16q-latency.json"),
        ),
        (
            "lab-h1".into(),
            report("report-c4-8xlarge-busy-latency.json"),
        ),
    ]
}

fn golden() -> String {
    read("tests/data/doctor-reports-two-hosts.json")
}

#[test]
fn merged_reports_write_as_the_untyped_merge_did() {
    let merged = HostReports::merge(&hosts());
    let text = serde_json::to_string_pretty(&merged).unwrap();
    assert_eq!(format!("{text}\n"), golden());
}

#[test]
fn the_golden_reads_into_each_hosts_own_report_and_writes_again_byte_for_byte() {
    let typed: HostReports = serde_json::from_str(&golden()).unwrap();
    for (host, report) in hosts() {
        assert_eq!(typed.host(&host), report, "{host}");
    }
    assert!(typed
        .findings
        .iter()
        .all(|f| !f.item.subject.contains(": ")));
    assert!(typed.has(FindingId::IrqRemoteNode));
    let again = serde_json::to_string_pretty(&typed).unwrap();
    assert_eq!(format!("{again}\n"), golden());
}

/// A results file (the report's real tiny one) with the golden as its
/// doctor reports: the field writes as the untyped `Value` did, and the
/// whole file writes again as it was read.
#[test]
fn a_results_file_keeps_its_doctor_reports_through_the_types() {
    let mut v: serde_json::Value =
        serde_json::from_str(&read("../report/tests/fixtures/real-tiny-results.json")).unwrap();
    let doctor: serde_json::Value = serde_json::from_str(&golden()).unwrap();
    v["doctor_before"] = doctor.clone();
    v["doctor_after"] = doctor.clone();
    let r: ExperimentResults = serde_json::from_value(v).unwrap();
    assert_eq!(r.doctor_before.as_ref().unwrap().findings.len(), 7);
    assert_eq!(
        serde_json::to_string(&r.doctor_after).unwrap(),
        serde_json::to_string(&doctor).unwrap()
    );
    let text = serde_json::to_string_pretty(&r).unwrap();
    let again: ExperimentResults = serde_json::from_str(&text).unwrap();
    assert_eq!(again, r);
    assert_eq!(serde_json::to_string_pretty(&again).unwrap(), text);
}

#[test]
fn a_report_per_end_is_read_with_each_end_as_its_host() {
    let (_, a) = hosts().remove(0);
    let per_end = serde_json::json!({"client": a, "server": {"schema_version": 1, "findings": [], "skipped": []}});
    let typed: HostReports = serde_json::from_value(per_end).unwrap();
    assert_eq!(typed.host("client"), a);
    assert!(typed
        .findings
        .iter()
        .all(|f| f.host.as_deref() == Some("client")));
}
