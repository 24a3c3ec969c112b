//! `drops-by-reason` on drop windows: it names the dominant reasons with
//! the finding each confirms, warns only for a reason a setting moves, stays
//! quiet without drops, and skips with the one-line reason when there are
//! none to read.

#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use model::drops::{DropCounts, DropInterval, Unavailable};
use nettune_doctor::{DoctorId, Severity};

fn window(rows: &[(&str, u64)]) -> DropInterval {
    let a = DropCounts::new();
    let mut b = DropCounts::new();
    for (name, n) in rows {
        for _ in 0..*n {
            b.add_sample(name, "udp_queue_rcv_one_skb+0x437", Some(0x0800));
        }
        b.total += n;
    }
    DropInterval::between(&a, &b, 2.0)
}

fn report_with(drops: Result<DropInterval, Unavailable>) -> model::findings::Report {
    let mut i = input("kvm-2vcpu-6.18");
    i.drops = drops;
    nettune_doctor::diagnose(&i)
}

#[test]
fn a_tunable_reason_dominating_is_a_warning_naming_its_finding() {
    let r = report_with(Ok(window(&[
        ("SOCKET_RCVBUFF", 900),
        ("NO_SOCKET", 200),
        ("TCP_RESET", 5),
    ])));
    let f = r
        .findings
        .iter()
        .find(|f| f.id == DoctorId::DropsByReason)
        .unwrap();
    assert_eq!(f.severity, Severity::Warning);
    let text = serde_json::to_string(f).unwrap();
    assert!(text.contains("confirms udp-rcvbuf-errors"), "{text}");
    assert!(text.contains("NO_SOCKET"), "{text}");
    // under the dominant share: not named
    assert!(!text.contains("TCP_RESET"), "{text}");
    assert!(f.fix.text.contains("SO_RCVBUF"), "{}", f.fix.text);
}

#[test]
fn drops_no_setting_moves_are_info_with_not_a_tuning_matter() {
    let r = report_with(Ok(window(&[("NO_SOCKET", 400)])));
    let f = r
        .findings
        .iter()
        .find(|f| f.id == DoctorId::DropsByReason)
        .unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert!(f.fix.text.contains("not a tuning matter"), "{}", f.fix.text);
}

#[test]
fn no_drops_no_finding_and_unreadable_drops_skip_in_one_line() {
    let r = report_with(Ok(window(&[])));
    assert!(!r.findings.iter().any(|f| f.id == DoctorId::DropsByReason));
    assert!(!r.skipped.iter().any(|s| s.id == DoctorId::DropsByReason));
    let r = report_with(Err(Unavailable::NoTracefs));
    let s = r
        .skipped
        .iter()
        .find(|s| s.id == DoctorId::DropsByReason)
        .unwrap();
    assert!(
        s.reason.contains("tracefs") && !s.reason.contains('\n'),
        "{}",
        s.reason
    );
    // every other rule still ran: the same findings as with no drops at all
    let quiet = report_with(Ok(window(&[])));
    assert_eq!(r.findings, quiet.findings);
}

#[test]
fn drops_counted_by_reason_in_the_kernel_are_exact_and_one_drop_is_singular() {
    // BPF counting: every drop counted by reason while only some records
    // were sampled for their locations
    let a = DropCounts::new();
    let mut b = DropCounts::new();
    b.counting = model::drops::Counting::Bpf;
    b.by_reason.insert("SOCKET_RCVBUFF".to_string(), 1);
    b.total = 1;
    b.lost = 7;
    let w = DropInterval::between(&a, &b, 2.0);
    assert!(w.reasons_exact && !w.exact);
    let r = report_with(Ok(w));
    let f = r
        .findings
        .iter()
        .find(|f| f.id == DoctorId::DropsByReason)
        .unwrap();
    let text = serde_json::to_string(f).unwrap();
    assert!(text.contains("counted by reason in the kernel"), "{text}");
    assert!(!text.contains("sampled drops"), "{text}");
    assert!(f.title.starts_with("1 drop in "), "{}", f.title);
}
