//! The conventions iperf3 users expect of `nettune bench`: Ctrl-C prints
//! what was measured and exits 130, `--csv`, a wall-clock start time,
//! `--cport`, and per-socket `--congestion`/`--tos`/`--mss` on both ends.

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine_common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Start `nettune bench ARGS`, send it SIGINT once it has printed its
/// first interval line, and return its exit code and whole stdout.
fn interrupted(args: &[&str]) -> (Option<i32>, String) {
    use std::io::{BufRead, Read};
    let mut child = Command::new(BIN)
        .arg("bench")
        .args(args)
        .env_remove("NETTUNE_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut r = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    // The first interval ends 0.1 s warm-up + 0.2 s after the start.
    r.read_line(&mut text).unwrap();
    assert!(!text.is_empty(), "bench printed nothing");
    // The shell's builtin kill, so no kill binary is needed.
    let st = Command::new("sh")
        .args(["-c", "kill -INT \"$0\"", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    r.read_to_string(&mut text).unwrap();
    (child.wait().unwrap().code(), text)
}

#[test]
fn ctrl_c_prints_what_was_measured_and_exits_130() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let base = [
        "127.0.0.1",
        "-p",
        &port,
        "--test",
        "tcp-rr",
        "--duration",
        "20",
        "--warmup",
        "0.1",
        "--interval",
        "0.2",
    ];
    let t0 = Instant::now();
    let mut args = base.to_vec();
    args.push("--json-stream");
    let (code, text) = interrupted(&args);
    assert!(t0.elapsed() < Duration::from_secs(10), "did not stop early");
    assert_eq!(code, Some(130), "{text}");
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "result", "{text}");
    let r = &last["result"];
    assert_eq!(r["interrupted"], true);
    let d = &r["results"][0];
    let secs = f(&d["seconds"]);
    assert!(secs > 0.0 && secs < 20.0, "{secs}");
    assert!(u(&d["msgs"]) > 0, "{d}");
    // Rates are over the part of the window that ran.
    let rate = f(&d["per_sec"]);
    assert!((rate - u(&d["msgs"]) as f64 / secs).abs() < 1e-6 * rate.max(1.0));
    // No interval past the interruption, in the document or the stream.
    for i in r["intervals"].as_array().unwrap() {
        assert!(f(&i["start_s"]) < secs, "{i}");
    }
    let streamed = text.lines().count() - 1;
    assert_eq!(streamed, r["intervals"].as_array().unwrap().len(), "{text}");
    assert!(r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("interrupted after")));
    // The human summary says so too.
    let (code, text) = interrupted(&base);
    assert_eq!(code, Some(130), "{text}");
    assert!(text.contains("tps"), "{text}");
    assert!(text.contains("note: interrupted after"), "{text}");
    // The server is fine and runs the next test.
    let mut args = vec!["127.0.0.1", "-p", &port, "--test", "tcp-rr", "--json"];
    args.extend_from_slice(QUICK);
    sane(&json(&bench(&args, &[])), "tcp-rr");
}

#[test]
fn csv_has_a_header_a_row_per_interval_and_per_result() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut args = vec![
        "127.0.0.1",
        "-p",
        &port,
        "--test",
        "udp-stream",
        "--bidir",
        "--size",
        "512",
        "--rate",
        "50M",
        "--csv",
    ];
    args.extend_from_slice(QUICK);
    let out = bench(&args, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], engine::render::CSV_HEADER);
    let cols = lines[0].split(',').count();
    assert_eq!(cols, 14);
    // 0.6 s in 0.3 s intervals, both directions: 4 intervals, 2 results.
    assert_eq!(lines.len(), 1 + 4 + 2, "{text}");
    for l in &lines[1..] {
        assert_eq!(l.split(',').count(), cols, "{l}");
    }
    let kinds: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["interval", "interval", "interval", "interval", "result", "result"]
    );
    let results: Vec<Vec<&str>> = lines[5..].iter().map(|l| l.split(',').collect()).collect();
    assert_eq!(results[0][1], "forward");
    assert_eq!(results[1][1], "reverse");
    for r in &results {
        // bytes and datagrams were counted; end_s is the window.
        assert!(r[5].parse::<u64>().unwrap() > 0, "{r:?}");
        assert!(r[7].parse::<u64>().unwrap() > 0, "{r:?}");
        assert_eq!(r[4], "0.600");
    }
    // --csv excludes --json.
    let out = bench(&["127.0.0.1", "--csv", "--json"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn json_has_a_wall_clock_start_time() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let before = model::time::rfc3339_utc(std::time::SystemTime::now());
    let mut args = vec!["127.0.0.1", "-p", &port, "--test", "tcp-rr", "--json"];
    args.extend_from_slice(QUICK);
    let r = json(&bench(&args, &[]));
    let after = model::time::rfc3339_utc(std::time::SystemTime::now());
    let t = r["start_time"].as_str().unwrap();
    // RFC 3339 UTC to the second sorts as text.
    assert!(
        before.as_str() <= t && t <= after.as_str(),
        "{before} {t} {after}"
    );
    assert_eq!(t.len(), "2026-11-23T21:40:00Z".len());
}

/// A port with `n` free ports after it, found by binding ephemeral ports.
fn free_ports(n: u16) -> u16 {
    // Below the ephemeral range: TIME_WAIT sockets of earlier connection
    // tests (tcp-crr) hold ephemeral ports, and a listener cannot bind them.
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let base = 10_000u16.min(low.saturating_sub(n));
    let span = low.saturating_sub(n).saturating_sub(base).max(1);
    let start = (std::process::id() % u32::from(span)) as u16;
    for k in 0..200u16 {
        let p = base + (start.wrapping_add(k.wrapping_mul(97)) % span);
        // Free on both loopback addresses the tests use (this host may hold
        // many TIME_WAIT sockets of other tests).
        let free = |port: u16| {
            ["127.0.0.1", "127.0.0.2"]
                .iter()
                .all(|a| std::net::TcpListener::bind((*a, port)).is_ok())
        };
        if p.checked_add(n).is_some() && (0..n).all(|i| free(p + i)) {
            return p;
        }
    }
    panic!("no {n} free ports in a row");
}

#[test]
fn cport_gives_flows_consecutive_source_ports() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let p = free_ports(2);
    let cport = p.to_string();
    // A TIME_WAIT socket on PORT of another local address (127.0.0.2,
    // its client closed first) must not block the bind: binding the
    // wildcard address did.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let src: std::net::SocketAddr = format!("127.0.0.2:{p}").parse().unwrap();
    c.bind(&src.into()).unwrap();
    c.connect(&l.local_addr().unwrap().into()).unwrap();
    let (peer, _) = l.accept().unwrap();
    drop(c);
    std::thread::sleep(Duration::from_millis(50));
    drop(peer);
    let child = Command::new(BIN)
        .args([
            "bench",
            "127.0.0.1",
            "-p",
            &port,
            "--flows",
            "2",
            "--cport",
            &cport,
            "--rate",
            "10M",
            "--duration",
            "1.5",
            "--warmup",
            "0.2",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While it runs, the kernel shows connections from PORT and PORT+1.
    let want = [p, p + 1];
    let mut seen = [false; 2];
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end && !seen.iter().all(|s| *s) {
        let out = Command::new("ss")
            .args(["-tnH", "state", "established"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for (i, w) in want.iter().enumerate() {
            if text.contains(&format!("127.0.0.1:{w} ")) {
                seen[i] = true;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen, [true, true], "flows from ports {want:?}");
    // Run again at once: the first run's TIME_WAIT sockets on those ports
    // do not block the bind.
    let mut args = vec!["127.0.0.1", "-p", &port, "--flows", "2", "--cport", &cport];
    args.extend_from_slice(QUICK);
    let out = bench(&args, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cport_collisions_and_overflow_are_one_line_errors() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let p = free_ports(2);
    // Flow 1's port is taken.
    let _taken = std::net::TcpListener::bind(("127.0.0.1", p + 1)).unwrap();
    let cport = p.to_string();
    let mut args = vec!["127.0.0.1", "-p", &port, "--flows", "2", "--cport", &cport];
    args.extend_from_slice(QUICK);
    let out = bench(&args, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(":{} is already in use", p + 1)) && err.contains("flow 1"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // PORT + flows past 65535.
    let out = bench(
        &["127.0.0.1", "-p", &port, "--flows", "2", "--cport", "65535"],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("runs past port 65535"), "{err}");
    // Not for request/response tests.
    let out = bench(
        &[
            "127.0.0.1",
            "-p",
            &port,
            "--test",
            "tcp-rr",
            "--cport",
            "5001",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--cport applies to stream tests"), "{err}");
}

#[test]
fn congestion_tos_and_mss_apply_on_both_ends() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    // The sender's connections report what they used: the client's
    // forward, the server's in reverse.
    for dir in [None, Some("--reverse")] {
        let mut args = vec![
            "127.0.0.1",
            "-p",
            &port,
            "--congestion",
            "reno",
            "--mss",
            "1000",
            "--tos",
            "0x10",
            "--json",
        ];
        args.extend_from_slice(QUICK);
        args.extend(dir);
        let r = json(&bench(&args, &[]));
        assert_eq!(r["config"]["congestion"], "reno");
        assert_eq!(r["config"]["tos"], 16);
        assert_eq!(r["config"]["mss"], 1000);
        let ti = &r["results"][0]["tcp_info"][0];
        assert_eq!(ti["congestion"], "reno", "{dir:?}: {ti}");
        // Loopback's MSS is about 65 KB; TCP_MAXSEG 1000 caps it (less options).
        assert!(u(&ti["mss"]) <= 1000, "{dir:?}: {ti}");
    }
    // An unknown algorithm: one line naming it and what is available.
    let out = bench(&["127.0.0.1", "-p", &port, "--congestion", "nosuchcc"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let avail =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    assert!(err.contains("`nosuchcc`"), "{err}");
    assert!(err.contains(avail.trim()), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Out of range, and UDP has no TCP options.
    let out = bench(&["127.0.0.1", "-p", &port, "--mss", "20"], &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mss 20 is outside"));
    let out = bench(
        &[
            "127.0.0.1",
            "-p",
            &port,
            "--test",
            "udp-rr",
            "--congestion",
            "reno",
        ],
        &[],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("TCP tests only"));
    let out = bench(&["127.0.0.1", "--tos", "256"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn server_refuses_an_algorithm_it_does_not_have() {
    // Speak the protocol by hand: the client would refuse it first.
    let s = serve(&[], &["-q"]);
    let cfg = engine::TestConfig {
        congestion: Some("nosuchcc".into()),
        ..engine::TestConfig::default()
    };
    let (_c, answer) = raw_setup(s.port, None, &cfg);
    match answer {
        engine::proto::Msg::Error { code, message } => {
            assert_eq!(code, "config");
            assert!(
                message.contains("`nosuchcc`") && message.contains("available"),
                "{message}"
            );
        }
        m => panic!("expected error, got {m:?}"),
    }
}

#[test]
fn bind_sets_the_source_of_control_and_data() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    // The server takes UDP only from the control connection's address, so
    // udp tests pass only if data leaves from --bind as the control did.
    for (test, extra) in [
        ("udp-stream", &["--size", "256", "--rate", "20M"][..]),
        ("udp-rr", &[][..]),
        ("tcp-crr", &[][..]),
    ] {
        let mut args = vec![
            "127.0.0.1",
            "-p",
            &port,
            "--bind",
            "127.0.0.2",
            "--test",
            test,
            "--json",
        ];
        args.extend_from_slice(QUICK);
        args.extend_from_slice(extra);
        sane(&json(&bench(&args, &[])), test);
    }
    // A family mismatch and an address we do not have are one line each.
    let out = bench(&["-6", "::1", "-p", &port, "--bind", "127.0.0.2"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not an IPv6 address"), "{err}");
    let out = bench(&["127.0.0.1", "-p", &port, "--bind", "192.0.2.1"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("192.0.2.1") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn bind_dev_picks_the_interface() {
    if !lab::require_root("engine_conventions::bind_dev_picks_the_interface") {
        return;
    }
    let lab = lab::TwoHosts::create("ntbdev", 1).unwrap();
    let _server = lab
        .b
        .spawn(BIN, &["serve", "--port", "5290", "-q"])
        .unwrap();
    let addr = lab.b_end.addr.to_string();
    wait_listening(&lab.b, 5290);
    let run = |dev: &str, test: &str| {
        let mut args = vec![
            "bench",
            addr.as_str(),
            "--bind-dev",
            dev,
            "--test",
            test,
            "--connect-timeout",
            "1",
            "--json",
        ];
        args.extend_from_slice(QUICK);
        lab.a.command(BIN).args(&args).output().unwrap()
    };
    for test in ["tcp-stream", "udp-rr", "tcp-crr"] {
        sane(&json(&run("nt0", test)), test);
    }
    // Bound to lo, the server's address is out of reach.
    let out = run("lo", "tcp-stream");
    assert_eq!(out.status.code(), Some(1));
    let out = run("nosuchif0", "tcp-stream");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--bind-dev nosuchif0"), "{err}");
}
