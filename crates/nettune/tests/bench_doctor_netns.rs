//! `nettune bench --doctor` between two namespaces: a 64-byte UDP stream
//! into the default receive buffer. Whether the receiver's socket overflows
//! depends on load, so the check follows the kernel's own counter in the
//! receiving (server's) namespace: when `Udp RcvbufErrors` grew inside the
//! measured window, the server's report has `udp-rcvbuf-errors`; when it did
//! not grow over the whole run, the report does not.

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine_common::*;
use std::time::{Duration, Instant};

#[test]
fn udp_rcvbuf_errors_in_the_receivers_report_follows_the_kernel() {
    if !lab::require_root("bench_doctor_netns::udp_rcvbuf_errors_in_the_receivers_report") {
        return;
    }
    let lab = lab::TwoHosts::create("ntbd", 1).unwrap();
    let _server = lab
        .b
        .spawn(BIN, &["serve", "--port", "5290", "-q"])
        .unwrap();
    wait_listening(&lab.b, 5290);
    // The default buffer: a socket that never sets SO_RCVBUF gets
    // rmem_default; SO_RCVBUF doubles what it is given, so ask for half.
    let rmem: u64 = lab
        .b
        .sh("cat /proc/sys/net/core/rmem_default")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let rcvbuf = (rmem / 2).to_string();
    check(&lab, &["--rcvbuf", &rcvbuf]);
    // Paced far below what the receiver reads, into a 4 MiB buffer: the
    // counter usually stays still, and then the finding must be absent.
    check(&lab, &["--rcvbuf", "4M", "--rate", "20M"]);
}

/// One `bench --doctor` udp-stream of 64-byte datagrams with `extra` flags
/// from a to b; checks the server's report against b's counter.
fn check(lab: &lab::TwoHosts, extra: &[&str]) {
    let addr = lab.b_end.addr.to_string();
    let t0 = Instant::now();
    let child = lab
        .a
        .command(BIN)
        .args(["bench", &addr, "--test", "udp-stream", "--size", "64"])
        .args(["--duration", "3", "--warmup", "1", "--interval", "1"])
        .args(["--json", "--doctor"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Two reads of the receiver's counter well inside the window (it runs
    // from about 1 s to 4 s after the start).
    let at = |s: f64| {
        let due = t0 + Duration::from_secs_f64(s);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        snmp_udp(&lab.b.sh("cat /proc/net/snmp").unwrap()).1
    };
    let (e1, e2) = (at(1.6), at(3.4));
    let out = child.wait_with_output().unwrap();
    let r = json(&out);
    sane(&r, "udp-stream");
    let in_window = e2.saturating_sub(e1);
    let whole_run = u(&r["server_side"]["udp_snmp"]["rcvbuf_errors"]);
    let server = &r["doctor"]["server"];
    assert_eq!(server["schema_version"], 1, "{server}");
    let ids: Vec<&str> = server["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    let skipped: Vec<&str> = server["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert!(!skipped.contains(&"udp-rcvbuf-errors"), "{server}");
    eprintln!(
        "{extra:?}: RcvbufErrors {in_window} inside the window (1.6-3.4 s), {whole_run} over the run; server findings {ids:?}"
    );
    if in_window > 0 {
        assert!(ids.contains(&"udp-rcvbuf-errors"), "{server}");
    }
    if whole_run == 0 {
        assert!(!ids.contains(&"udp-rcvbuf-errors"), "{server}");
    }
    assert_eq!(r["doctor"]["client"]["schema_version"], 1);
}
