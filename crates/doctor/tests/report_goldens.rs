//! `nettune doctor --json` reports written before findings moved to
//! `model::findings` (one `Finding`, `Severity` and id for inspect and
//! doctor), read as a typed [`Report`] and written again byte for byte.
//! Made with `nettune doctor --json --profile latency --root
//! tests/fixtures/<fixture>`.

#![allow(clippy::unwrap_used)]

use nettune_doctor::Report;

fn round_trip(name: &str) -> Report {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let text = std::fs::read_to_string(&p).unwrap();
    let r: Report = serde_json::from_str(&text).unwrap();
    let again = serde_json::to_string_pretty(&r).unwrap();
    assert_eq!(format!("{again}\n"), text, "{name}");
    r
}

#[test]
fn reports_are_byte_identical_through_the_shared_finding_type() {
    let busy = round_trip("report-c4-8xlarge-busy-latency.json");
    assert!(!busy.findings.is_empty());
    let two = round_trip("report-two-socket-16q-latency.json");
    assert!(two.findings.iter().any(|f| !f.fix.changes.is_empty()));
}
