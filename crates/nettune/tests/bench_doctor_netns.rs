//! `nettune bench --doctor` between two namespaces: a 64-byte UDP stream
//! into the default receive buffer. Whether the receiver's socket overflows
//! depends on load, so the check follows the kernel's own counter in the
//! receiving (server's) namespace: when `Udp RcvbufErrors` grew between two
//! reads that provably fall inside the measured window (timed from the first
//! interval line, not from the start), the server's report has
//! `udp-rcvbuf-errors`; when it did not grow over the whole run, the report
//! does not.

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
    // Up to three runs until the in-window reads happened (a busy machine
    // may start the bench too late for them).
    assert!(
        (0..3).any(|_| check(&lab, &["--rcvbuf", &rcvbuf])),
        "the first interval never came before t0 + 3.9 s"
    );
    // Paced far below what the receiver reads, into a 4 MiB buffer: the
    // counter usually stays still, and then the finding must be absent.
    check(&lab, &["--rcvbuf", "4M", "--rate", "20M"]);
}

/// One `bench --doctor` udp-stream of 64-byte datagrams with `extra` flags
/// from a to b; checks the server's report against b's counter. Returns
/// whether the in-window reads happened (see below).
fn check(lab: &lab::TwoHosts, extra: &[&str]) -> bool {
    let addr = lab.b_end.addr.to_string();
    let t0 = Instant::now();
    let mut child = lab
        .a
        .command(BIN)
        .args(["bench", &addr, "--test", "udp-stream", "--size", "64"])
        .args(["--duration", "3", "--warmup", "1", "--interval", "1"])
        .args(["--json-stream", "--doctor"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    // Two reads of the receiver's counter inside the measured window, which
    // the server's doctor samples: it starts after the 1 s warm-up (so at
    // t0 + 1 s or later) and the first interval line comes a second into it,
    // so a read when that line arrives is inside it; it lasts 3 s, so a read
    // before t0 + 3.9 s is too. When the busy machine delays the first line
    // past that, the reads prove nothing and the caller tries again.
    let last_read = t0 + Duration::from_secs_f64(3.9);
    let mut lines = Vec::new();
    let first = rx
        .recv_timeout(last_read.saturating_duration_since(Instant::now()))
        .ok();
    let counter = || snmp_udp(&lab.b.sh("cat /proc/net/snmp").unwrap()).1;
    let reads = first.and_then(|l| {
        lines.push(l);
        let e1 = counter();
        std::thread::sleep(Duration::from_millis(500));
        let e2 = counter();
        (Instant::now() < last_read).then_some((e1, e2))
    });
    lines.extend(rx.iter());
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        status.success(),
        "bench failed: {err}\n{}",
        lines.join("\n")
    );
    let last: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["type"], "result", "{last}");
    let r = &last["result"];
    sane(r, "udp-stream");
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
    let in_window = reads.map(|(e1, e2)| e2.saturating_sub(e1));
    eprintln!(
        "{extra:?}: RcvbufErrors {in_window:?} inside the window (None: not read in time), {whole_run} over the run; server findings {ids:?}"
    );
    if in_window.is_some_and(|n| n > 0) {
        assert!(ids.contains(&"udp-rcvbuf-errors"), "{server}");
    }
    // The run's count spans the doctor's window: nothing dropped, no finding.
    if whole_run == 0 {
        assert!(!ids.contains(&"udp-rcvbuf-errors"), "{server}");
    }
    assert_eq!(r["doctor"]["client"]["schema_version"], 1);
    in_window.is_some()
}
