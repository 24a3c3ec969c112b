//! iperf3's letters on `nettune bench`, end to end against a loopback
//! `nettune serve`: `-P 2 -J -t tcp-stream`, `-u -b`, `-R -O`, `--rate 1gbit`, and the
//! usage errors of `-l` and `-u -t tcp-rr` (issue 21).

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine_common::*;

const SHORT: &[&str] = &["-d", "0.6", "-i", "0.3"];

#[test]
fn iperf3_letters_run_a_test() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut args = vec![
        "127.0.0.1",
        "-p",
        &port,
        "-P",
        "2",
        "-J",
        "-t",
        "tcp-stream",
    ];
    args.extend_from_slice(SHORT);
    args.extend_from_slice(&["-O", "0.2"]);
    let r = json(&bench(&args, &[]));
    sane(&r, "tcp-stream");
    assert_eq!(r["config"]["test"], "tcp-stream", "{r}");
    assert_eq!(u(&r["config"]["flows"]), 2, "{r}");
    assert_eq!(u(&r["config"]["warmup_ms"]), 200, "{r}");

    // -u is udp-stream; -b is per flow; -R reverses.
    let mut args = vec![
        "127.0.0.1",
        "-p",
        &port,
        "-u",
        "-P",
        "2",
        "-b",
        "20M",
        "-R",
        "-J",
    ];
    args.extend_from_slice(SHORT);
    args.extend_from_slice(&["-O", "0.2", "--size", "512"]);
    let r = json(&bench(&args, &[]));
    sane(&r, "udp-stream");
    assert_eq!(r["config"]["test"], "udp-stream", "{r}");
    assert_eq!(f(&r["config"]["rate"]), 4e7, "{r}");
    assert_eq!(r["config"]["direction"], "reverse", "{r}");

    // `bench --rate 1gbit`, as `lab --rate 1gbit` takes it (one rate parser).
    let mut args = vec!["127.0.0.1", "-p", &port, "--rate", "1gbit", "-J"];
    args.extend_from_slice(SHORT);
    let r = json(&bench(&args, &[]));
    sane(&r, "tcp-stream");
    assert_eq!(f(&r["config"]["rate"]), 1e9, "{r}");
}

#[test]
fn clashing_letters_are_refused_with_a_hint() {
    let out = bench(&["127.0.0.1", "-l", "64"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--size") && e.contains("--duration"), "{e}");
    let out = bench(&["127.0.0.1", "-u", "-t", "tcp-rr"], &[]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("-u") && e.contains("tcp-rr is a TCP test"),
        "{e}"
    );
    let out = bench(&["127.0.0.1", "-b", "1G", "--rate", "1G"], &[]);
    assert_eq!(out.status.code(), Some(2));
}
