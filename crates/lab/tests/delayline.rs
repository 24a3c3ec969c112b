//! The userspace delay line between two namespaces (root only; skips with a
//! reason otherwise). Bounds are wide: the machine is shared and loaded.

use nettune_lab::{require_root, run_text, DelayLine, DelaySpec, ADDR_B};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// `ping -c COUNT -i INTERVAL -W WAIT` from A to B (no `-w`: with a
/// deadline ping keeps sending until COUNT replies); returns (received,
/// RTTs in ms).
fn ping(dl: &DelayLine, count: u32, interval: &str, wait_s: u32) -> (u32, Vec<f64>) {
    let out = dl
        .a()
        .command("ping")
        .args([
            "-n",
            "-c",
            &count.to_string(),
            "-i",
            interval,
            "-W",
            &wait_s.to_string(),
            ADDR_B,
        ])
        .output()
        .expect("run ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let rtts: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    (rtts.len() as u32, rtts)
}

fn ntdl_links() -> String {
    run_text(Command::new("ip").args(["-o", "link", "show"])).unwrap_or_default()
}

#[test]
fn zero_delay_ping_crosses() {
    if !require_root("zero_delay_ping_crosses") {
        return;
    }
    let dl = DelayLine::create("ntdl", DelaySpec::default()).expect("delay line");
    let (got, _) = ping(&dl, 5, "0.2", 2);
    assert_eq!(got, 5, "all pings cross a 0-delay line");
    assert!(dl.stats().a_to_b.forwarded.load(Ordering::Relaxed) >= 5);
    assert!(dl.stats().b_to_a.forwarded.load(Ordering::Relaxed) >= 5);
}

#[test]
fn twenty_ms_each_way_gives_forty_ms_rtt() {
    if !require_root("twenty_ms_each_way_gives_forty_ms_rtt") {
        return;
    }
    let spec = DelaySpec {
        delay: Duration::from_millis(20),
        ..DelaySpec::default()
    };
    let dl = DelayLine::create("ntdl", spec).expect("delay line");
    // The line never releases a packet early: every round. A busy machine
    // may add scheduling delay to one round of 10 pings, not to three; a
    // line that delays twice as asked fails every round.
    let mut seen = Vec::new();
    let near = (0..3).any(|_| {
        let (got, mut rtts) = ping(&dl, 10, "0.1", 2);
        assert!(got >= 8, "most pings cross: {got}/10");
        rtts.sort_by(f64::total_cmp);
        assert!(rtts[0] >= 40.0, "no RTT under 2 × 20 ms: {rtts:?}");
        let median = rtts[rtts.len() / 2];
        seen.push(rtts);
        median < 60.0
    });
    assert!(
        near,
        "median RTT near 40 ms in one of three rounds: {seen:?}"
    );
}

#[test]
fn full_loss_drops_everything() {
    if !require_root("full_loss_drops_everything") {
        return;
    }
    let spec = DelaySpec {
        loss: 1.0,
        ..DelaySpec::default()
    };
    let dl = DelayLine::create("ntdl", spec).expect("delay line");
    let (got, _) = ping(&dl, 5, "0.1", 1);
    assert_eq!(got, 0, "loss 100 % lets nothing through");
    assert!(dl.stats().a_to_b.lost.load(Ordering::Relaxed) >= 5);
    assert_eq!(dl.stats().a_to_b.forwarded.load(Ordering::Relaxed), 0);
}

#[test]
fn queue_limit_drops_the_excess() {
    if !require_root("queue_limit_drops_the_excess") {
        return;
    }
    // 300 ms of delay with room for 2 packets: 20 pings 10 ms apart keep
    // far more than 2 in flight, so the line must tail-drop some.
    let spec = DelaySpec {
        delay: Duration::from_millis(300),
        limit_packets: 2,
        ..DelaySpec::default()
    };
    let dl = DelayLine::create("ntdl", spec).expect("delay line");
    let (got, _) = ping(&dl, 20, "0.01", 2);
    let overflow = dl.stats().a_to_b.overflow.load(Ordering::Relaxed);
    assert!(overflow > 0, "queue overflow counted");
    assert!(got < 20, "some pings dropped by the limit: {got}/20");
    assert!(got > 0, "the 2 queued packets still cross: {got}/20");
}

#[test]
fn out_of_range_loss_is_refused() {
    let spec = DelaySpec {
        loss: 1.5,
        ..DelaySpec::default()
    };
    let e = DelayLine::create("ntdl", spec).expect_err("loss 1.5 refused");
    assert!(e.to_string().contains("loss"), "{e}");
}

#[test]
fn teardown_leaves_no_namespace_or_device() {
    if !require_root("teardown_leaves_no_namespace_or_device") {
        return;
    }
    let dl = DelayLine::create("ntdl", DelaySpec::default()).expect("delay line");
    let names = [dl.a().name().to_string(), dl.b().name().to_string()];
    let devs = dl.devices().clone();
    // The devices live in the lab namespaces, never in the root one.
    let root = ntdl_links();
    for d in &devs {
        assert!(!root.contains(d.as_str()), "{d} not in the root namespace");
    }
    assert!(dl.a().ip(&["link", "show", &devs[0]]).is_ok());
    drop(dl);
    let netns = run_text(Command::new("ip").args(["netns", "list"])).unwrap_or_default();
    for n in &names {
        assert!(!netns.contains(n.as_str()), "{n} removed");
    }
    let root = ntdl_links();
    for d in &devs {
        assert!(!root.contains(d.as_str()), "{d} removed");
    }
}

#[test]
fn jitter_spreads_the_rtt_within_its_band() {
    if !require_root("jitter_spreads_the_rtt_within_its_band") {
        return;
    }
    let spec = DelaySpec {
        delay: Duration::from_millis(20),
        jitter: Duration::from_millis(10),
        ..DelaySpec::default()
    };
    let dl = DelayLine::create("ntdl", spec).expect("delay line");
    // The band's floor holds in every round; the median inside the band and
    // a spread wider than 5 ms in one of three (scheduling delay on a busy
    // machine only adds to a round; a line without jitter never spreads).
    let mut seen = Vec::new();
    let ok = (0..3).any(|_| {
        let (got, mut rtts) = ping(&dl, 20, "0.05", 2);
        assert!(got >= 16, "most pings cross: {got}/20");
        rtts.sort_by(f64::total_cmp);
        let (lo, hi) = (rtts[0], rtts[rtts.len() - 1]);
        assert!(lo >= 20.0, "no RTT under 2 × (20 - 10) ms: {rtts:?}");
        let median = rtts[rtts.len() / 2];
        seen.push(rtts);
        median < 70.0 && hi - lo > 5.0
    });
    assert!(
        ok,
        "median within the band and ±10 ms of spread in one of three rounds: {seen:?}"
    );
}
