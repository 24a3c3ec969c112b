//! Every test type over loopback against a real `nettune serve`, with sanity
//! checks and bounds from the kernel's own counters.

mod engine_common;
use engine_common::*;

fn run(test: &str, extra: &[&str]) -> serde_json::Value {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut args = vec!["127.0.0.1", "-p", &port, "--test", test, "--json"];
    args.extend_from_slice(QUICK);
    args.extend_from_slice(extra);
    let r = json(&bench(&args, &[]));
    sane(&r, test);
    r
}

#[test]
fn tcp_stream_bounded_by_lo_counters() {
    let before = std::fs::read_to_string("/proc/net/dev").unwrap();
    let r = run("tcp-stream", &["--flows", "2"]);
    let after = std::fs::read_to_string("/proc/net/dev").unwrap();
    let lo = dev_rx_bytes(&after, "lo") - dev_rx_bytes(&before, "lo");
    let bytes = u(&r["results"][0]["bytes"]);
    assert!(bytes > 0 && bytes <= lo, "payload {bytes} vs lo rx {lo}");
    assert_eq!(r["results"][0]["measured_by"], "server");
    assert_eq!(r["results"][0]["tcp_info"].as_array().unwrap().len(), 2);
}

/// `bench` over 127.0.0.1 printed eth0's MTU and driver as the path's:
/// both sides now name lo, with its facts, and the summary shows its line.
#[test]
fn loopback_bench_reports_lo_as_the_path() {
    let r = run("tcp-rr", &[]);
    for side in ["client", "server_side"] {
        let f = &r[side]["facts"];
        assert_eq!(f["path_interface"], "lo", "{side}: {f}");
        let lo = f["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "lo")
            .unwrap_or_else(|| panic!("{side}: no lo in {f}"));
        assert!(u(&lo["mtu"]) > 0, "{lo}");
    }
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut args = vec![
        "127.0.0.1",
        "-p",
        &port,
        "--test",
        "udp-stream",
        "--size",
        "64",
    ];
    args.extend_from_slice(QUICK);
    let out = bench(&args, &[]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    assert!(text.contains("NIC client path lo: mtu "), "{text}");
    assert!(text.contains("NIC server path lo: mtu "), "{text}");
    assert!(!text.contains("NIC client eth"), "{text}");
    // udp-stream's rate is in packets per second.
    assert!(text.contains("pps"), "{text}");
}

#[test]
fn tcp_stream_reverse_and_bidir() {
    let r = run("tcp-stream", &["--reverse"]);
    assert_eq!(r["results"][0]["measured_by"], "client");
    assert_eq!(r["results"][0]["dir"], "reverse");
    let r = run("tcp-stream", &["--bidir"]);
    assert_eq!(r["results"].as_array().unwrap().len(), 2);
}

#[test]
fn udp_stream_counts_match_kernel() {
    // Paced at 200 Mbit/s: about 0.6 s × 200e6 / (256 × 8) datagrams in the window.
    let expect = 0.6 * 200e6 / (256.0 * 8.0);
    // The pacer never sends faster than asked (every run); a busy machine
    // may starve one run's sender below half the rate, not three (a pacer
    // that sends a tenth of the rate fails all three).
    let mut seen = Vec::new();
    let near = (0..3).any(|_| {
        let r = run("udp-stream", &["--size", "256", "--rate", "200M"]);
        let d = &r["results"][0];
        let k = &d["kernel_check"];
        // Loopback: every datagram the receiver read passed InDatagrams.
        assert!(u(&k["app_received"]) <= u(&k["kernel_in_datagrams"]), "{k}");
        assert!(u(&k["app_received"]) >= u(&d["udp"]["received"]), "{k}");
        let got = u(&d["msgs"]) as f64;
        assert!(got < expect * 1.2, "{got} vs {expect}");
        seen.push(got);
        got > expect * 0.5
    });
    assert!(near, "{seen:?} datagrams vs {expect}, never half");
}

#[test]
fn udp_stream_reverse_gso_gro() {
    let r = run(
        "udp-stream",
        &["--reverse", "--size", "1000", "--udp-gso", "--udp-gro"],
    );
    assert_eq!(r["results"][0]["measured_by"], "client");
}

#[test]
fn tcp_rr_outstanding_and_threads() {
    let r = run(
        "tcp-rr",
        &["--flows", "2", "--threads", "1", "--outstanding", "4"],
    );
    assert_eq!(r["results"][0]["unit"], "transactions");
    assert!(
        r["client_service_demand"]["us_per_transaction"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[test]
fn udp_rr_closed_and_open_loop() {
    run("udp-rr", &[]);
    // Open loop never runs faster than asked (every run); near the rate in
    // one of three runs (a busy machine may stall one run's replies beyond
    // the 4 outstanding; a loop that ignores --rate fails every run).
    let mut seen = Vec::new();
    let near = (0..3).any(|_| {
        let r = run(
            "udp-rr",
            &["--size", "32", "--rate", "2000", "--outstanding", "4"],
        );
        let rate = f(&r["results"][0]["per_sec"]);
        assert!(rate < 2300.0, "open loop at 2000/s gave {rate}");
        seen.push(rate);
        rate > 1500.0
    });
    assert!(near, "open loop at 2000/s gave {seen:?}");
}

#[test]
fn tcp_crr_connections() {
    let r = run("tcp-crr", &["--flows", "2"]);
    assert_eq!(r["results"][0]["unit"], "connections");
}

#[test]
fn json_stream_is_ndjson() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut args = vec![
        "127.0.0.1",
        "-p",
        &port,
        "--test",
        "tcp-rr",
        "--json-stream",
    ];
    args.extend_from_slice(QUICK);
    let out = bench(&args, &[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0]["type"], "interval");
    assert_eq!(lines[1]["index"], 1);
    assert_eq!(lines[2]["type"], "result");
    sane(&lines[2]["result"], "tcp-rr");
}

#[test]
fn human_output_has_table() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut args = vec!["127.0.0.1", "-p", &port, "--test", "udp-rr"];
    args.extend_from_slice(QUICK);
    let out = bench(&args, &[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("measured by"), "{text}");
    assert!(text.contains("p99.99"), "{text}");
    // One rate style (docs/engine.md, "Units"): udp-rr shows its
    // transactions and the packets each way.
    assert!(text.contains("tps, "), "{text}");
    assert!(text.contains("pps each way"), "{text}");
}

#[test]
fn tcp_stream_paced_zerocopy_and_buffers() {
    let r = run(
        "tcp-stream",
        &[
            "--rate",
            "200M",
            "--zerocopy",
            "--nodelay",
            "--sndbuf",
            "1M",
            "--rcvbuf",
            "1M",
        ],
    );
    let bps = f(&r["results"][0]["bits_per_sec"]);
    assert!(
        bps > 0.6 * 200e6 && bps < 1.1 * 200e6,
        "paced at 200 Mbit/s: {bps}"
    );
    assert_eq!(r["config"]["zerocopy"], true);
    assert_eq!(r["config"]["sndbuf"], 1 << 20);
}

#[test]
fn tcp_rr_busy_poll_pinned() {
    let r = run("tcp-rr", &["--busy-poll", "20", "--cpus", "0"]);
    assert_eq!(r["config"]["busy_poll_us"], 20);
    assert_eq!(r["config"]["cpus"], serde_json::json!([0]));
    for side in ["client", "server_side"] {
        for w in r[side]["workers"].as_array().unwrap() {
            assert_eq!(w["cpu"], 0, "{side} worker pinned: {w}");
            assert!(w["error"].is_null(), "{side}: {w}");
        }
    }
}

/// `--server-cpus` pins the server's workers apart from the client's
/// (`--cpus`), as netperf's `-T lcpu,rcpu` (CPU 0 on a 1-CPU host).
#[test]
fn the_server_pinned_apart_from_the_client() {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last = model::CpuSet::parse_list(online.trim())
        .unwrap()
        .iter()
        .last()
        .unwrap();
    let r = run(
        "udp-stream",
        &["--cpus", "0", "--server-cpus", &last.to_string()],
    );
    assert_eq!(r["config"]["server_cpus"], serde_json::json!([last]));
    for (side, cpu) in [("client", 0), ("server_side", last)] {
        for w in r[side]["workers"].as_array().unwrap() {
            assert_eq!(w["cpu"], cpu, "{side} worker pinned: {w}");
            assert!(w["error"].is_null(), "{side}: {w}");
        }
    }
}

/// bench sets --rcvbuf/--sndbuf as an application would (SO_RCVBUF, capped
/// at rmem_max and doubled) unless --force-buffers, and reports the size
/// the kernel gave, read back with getsockopt on both ends.
#[test]
fn buffers_are_plain_socket_options_unless_forced() {
    let max = |k: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/sys/net/core/{k}"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (rmem, wmem) = (max("rmem_max"), max("wmem_max"));
    let ask: u64 = 64 << 20;
    let mut args = vec![
        "--test",
        "udp-stream",
        "--rate",
        "10M",
        "--rcvbuf",
        "64M",
        "--sndbuf",
        "64M",
    ];
    let r = run(args[1], &args[2..]);
    for side in ["client", "server_side"] {
        let b = &r[side]["buffers"];
        assert_eq!(b["forced"], false, "{side}: {b}");
        // What getsockopt gives for SO_RCVBUF(64M) without privilege.
        assert_eq!(u(&b["rcvbuf"]), 2 * ask.min(rmem), "{side}: {b}");
        assert_eq!(u(&b["sndbuf"]), 2 * ask.min(wmem), "{side}: {b}");
    }
    // Forced: the client (root here) gets what it asked for, doubled; the
    // server has no token, so it stays under rmem_max.
    args.push("--force-buffers");
    let r = run(args[1], &args[2..]);
    let b = &r["client"]["buffers"];
    assert_eq!(b["forced"], true, "{b}");
    if rmem < ask {
        assert_eq!(u(&b["rcvbuf"]), 2 * ask, "{b}");
    }
    let b = &r["server_side"]["buffers"];
    assert_eq!(
        (b["forced"].clone(), u(&b["rcvbuf"])),
        (serde_json::json!(false), 2 * ask.min(rmem))
    );
}
