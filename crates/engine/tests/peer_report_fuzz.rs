//! Property tests ("fuzzing" with proptest) of the decoder of a server's
//! `bench --doctor` report ([`PeerReport`]): arbitrary and mutated bytes,
//! and structurally valid but huge reports, never panic, never fail the
//! `report` message they arrive in, and what is kept stays within the
//! `MAX_PEER_*` limits. Case counts are small so the file runs in seconds.

#![allow(clippy::unwrap_used)]

use nettune_engine as engine;

use engine::diagnosis::{
    PeerReport, MAX_PEER_ENTRIES, MAX_PEER_EVIDENCE, MAX_PEER_KEPT_BYTES, MAX_PEER_TEXT,
};
use engine::proto::{self, Msg};
use proptest::prelude::*;
use serde_json::{json, Value};

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn finding(id: &str, text: &str, evidence: usize) -> Value {
    let ev: Vec<Value> = (0..evidence)
        .map(|_| json!({"what": "e", "value": "1", "source": "s"}))
        .collect();
    json!({"id": id, "severity": "warning", "title": text, "subject": "host",
           "evidence": ev, "why": "w",
           "fix": {"text": "x", "changes": [], "command": null, "app": null},
           "source": "s"})
}

fn valid() -> Value {
    json!({"schema_version": 1,
        "findings": [finding("udp-rcvbuf-errors", "t", 1), finding("rps-off", "u", 2)],
        "skipped": [{"id": "rps-off", "reason": "r"}]})
}

/// What the decoder promises about anything it keeps.
fn within_limits(p: &PeerReport) {
    if let Some(r) = &p.report {
        assert!(r.findings.len() <= MAX_PEER_ENTRIES);
        assert!(r.skipped.len() <= MAX_PEER_ENTRIES);
        let kept = serde_json::to_vec(r).unwrap().len();
        assert!(kept <= MAX_PEER_KEPT_BYTES + 4096, "{kept}");
        for f in &r.findings {
            assert!(f.title.chars().count() <= MAX_PEER_TEXT);
            assert!(f.evidence.len() <= MAX_PEER_EVIDENCE);
        }
        assert!(p.problem.is_none());
    } else {
        let why = p.problem.as_deref().unwrap();
        assert!(!why.contains('\n') && why.chars().count() < 400, "{why}");
    }
}

/// The report as the client receives it: inside a `report` message.
fn through_a_report_message(doctor: &[u8]) -> Result<Msg, proto::ProtoError> {
    let mut body = br#"{"type":"report","report":{"facts":{"ncpus":0,"interfaces":[]},"workers":[],"cpu":{"seconds":0,"cpus":[],"host_busy_us":0,"process_user_us":0,"process_sys_us":0,"note":null},"rejected_connections":0,"doctor":"#.to_vec();
    body.extend_from_slice(doctor);
    body.extend_from_slice(b"}}");
    proto::decode(&body)
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn arbitrary_text_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        within_limits(&PeerReport::from_json(&text));
    }

    #[test]
    fn mutated_reports_never_panic(at in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<bool>()) {
        let mut b = serde_json::to_vec(&valid()).unwrap();
        let i = at.index(b.len());
        if cut { b.truncate(i) } else { b[i] = byte }
        within_limits(&PeerReport::from_json(&String::from_utf8_lossy(&b)));
        // Valid JSON that is not a report does not fail the message it
        // comes in; broken JSON fails it as malformed, never a panic.
        if let Ok(Msg::Report { report }) = through_a_report_message(&b) {
            if let Some(p) = &report.doctor { within_limits(p) }
        }
    }
}

proptest! {
    #![proptest_config(cases(6))]

    #[test]
    fn huge_reports_are_cut_to_the_limits(
        n in (MAX_PEER_ENTRIES - 2)..(MAX_PEER_ENTRIES + 40),
        text_len in prop::sample::select(vec![1, MAX_PEER_TEXT + 1, 17_000]),
        evidence in prop::sample::select(vec![0, MAX_PEER_EVIDENCE, MAX_PEER_EVIDENCE + 1]),
    ) {
        let text = "x".repeat(text_len);
        let f = finding("udp-rcvbuf-errors", &text, evidence);
        let v = json!({"schema_version": 1,
            "findings": vec![f; n],
            "skipped": vec![json!({"id": "rps-off", "reason": text}); n]});
        let p = PeerReport::from_json(&v.to_string());
        within_limits(&p);
        let r = p.report.as_ref().unwrap();
        prop_assert_eq!(r.findings.len() + r.skipped.len() + p.dropped, 2 * n);
    }
}

#[test]
fn a_report_that_is_not_one_is_left_out_with_the_message_kept() {
    for doctor in [
        &b"7"[..],
        b"\"report\"",
        b"[]",
        b"{\"schema_version\":2,\"findings\":[],\"skipped\":[]}",
        b"{\"findings\":{}}",
    ] {
        match through_a_report_message(doctor) {
            Ok(Msg::Report { report }) => {
                let p = report.doctor.unwrap();
                assert!(p.report.is_none() && p.problem.is_some(), "{p:?}");
            }
            m => panic!("{}: {m:?}", String::from_utf8_lossy(doctor)),
        }
    }
}

#[test]
fn a_valid_report_round_trips_through_the_message() {
    let want = PeerReport::from_json(&valid().to_string());
    assert_eq!(want.report.as_ref().unwrap().findings.len(), 2);
    let body = serde_json::to_vec(&want).unwrap();
    match through_a_report_message(&body) {
        Ok(Msg::Report { report }) => assert_eq!(report.doctor, Some(want)),
        m => panic!("{m:?}"),
    }
}
