//! Every test type over IPv6: on `::1` against the default (dual-stack)
//! server, and between two network namespaces joined by a veth pair with
//! IPv6 addresses; IPv4 clients of the dual-stack listener; the family's
//! UDP size limit; `serve -6` refusing IPv4.

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine_common::*;

/// Every test type, and --reverse/--bidir where they exist.
const CASES: &[(&str, &[&str])] = &[
    ("tcp-stream", &["--flows", "2"]),
    ("tcp-stream", &["--reverse"]),
    ("tcp-stream", &["--bidir"]),
    ("udp-stream", &["--size", "1200", "--rate", "200M"]),
    (
        "udp-stream",
        &["--size", "1200", "--rate", "200M", "--reverse"],
    ),
    (
        "udp-stream",
        &["--size", "1200", "--rate", "100M", "--bidir"],
    ),
    ("tcp-rr", &[]),
    ("udp-rr", &["--size", "32", "--outstanding", "2"]),
    ("tcp-crr", &[]),
];

fn start_time_ok(r: &serde_json::Value) {
    let t = r["start_time"].as_str().unwrap();
    // 2026-11-23T21:40:00Z
    assert_eq!(t.len(), 20, "{t}");
    assert!(t.ends_with('Z') && &t[10..11] == "T", "{t}");
}

#[test]
fn every_test_type_over_ipv6_loopback() {
    if !ipv6_loopback("engine_ipv6::every_test_type_over_ipv6_loopback") {
        return;
    }
    let s = serve_with(&[]);
    let port = s.port.to_string();
    for (test, extra) in CASES {
        let mut args = vec!["-6", "::1", "-p", &port, "--test", test, "--json"];
        args.extend_from_slice(QUICK);
        args.extend_from_slice(extra);
        let r = json(&bench(&args, &[]));
        sane(&r, test);
        assert_eq!(r["family"], "ipv6", "{test} {extra:?}");
        start_time_ok(&r);
    }
}

#[test]
fn dual_stack_server_takes_ipv4_clients() {
    let s = serve_with(&[]);
    let port = s.port.to_string();
    for (test, extra) in [
        ("tcp-stream", &[][..]),
        ("udp-stream", &["--size", "1000", "--rate", "100M"][..]),
        ("udp-rr", &[][..]),
    ] {
        let mut args = vec!["127.0.0.1", "-p", &port, "--test", test, "--json"];
        args.extend_from_slice(QUICK);
        args.extend_from_slice(extra);
        let r = json(&bench(&args, &[]));
        sane(&r, test);
        assert_eq!(r["family"], "ipv4", "{test}");
    }
}

#[test]
fn serve_6_is_ipv6_only_and_serve_4_ipv4_only() {
    if !ipv6_loopback("engine_ipv6::serve_6_is_ipv6_only_and_serve_4_ipv4_only") {
        return;
    }
    let s6 = serve_with(&["-6"]);
    assert!(std::net::TcpStream::connect(("127.0.0.1", s6.port)).is_err());
    assert!(std::net::TcpStream::connect(("::1", s6.port)).is_ok());
    let s4 = serve_with(&["-4"]);
    assert!(std::net::TcpStream::connect(("::1", s4.port)).is_err());
    assert!(std::net::TcpStream::connect(("127.0.0.1", s4.port)).is_ok());
    // --listen of the other family is a one-line error.
    let out = std::process::Command::new(BIN)
        .args(["serve", "-4", "--listen", "::1", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--listen ::1 is an IPv6 address"), "{err}");
    // bench -4 against an IPv6 literal has no address to use.
    let port = s4.port.to_string();
    let out = bench(&["-4", "::1", "-p", &port], &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no IPv4 address"), "{err}");
}

#[test]
fn udp_size_limit_follows_the_family() {
    let s = serve_with(&[]);
    let port = s.port.to_string();
    // 65508..=65527 fits IPv6 only.
    let mut args = vec![
        "127.0.0.1",
        "-p",
        &port,
        "--test",
        "udp-rr",
        "--size",
        "65520",
    ];
    args.extend_from_slice(QUICK);
    let out = bench(&args, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("65507") && err.contains("IPv4") && err.lines().count() == 1,
        "{err}"
    );
    let mut args = vec!["::1", "-p", &port, "--test", "udp-rr", "--size", "65528"];
    args.extend_from_slice(QUICK);
    let err = String::from_utf8_lossy(&bench(&args, &[]).stderr).into_owned();
    assert!(err.contains("65527"), "{err}");
    if !ipv6_loopback("engine_ipv6::udp_size_limit_follows_the_family (IPv6 half)") {
        return;
    }
    let mut args = vec![
        "::1", "-p", &port, "--test", "udp-rr", "--size", "65527", "--json",
    ];
    args.extend_from_slice(QUICK);
    let r = json(&bench(&args, &[]));
    sane(&r, "udp-rr");
    assert_eq!(r["config"]["size"], 65527);
}

#[test]
fn every_test_type_over_ipv6_veth() {
    if !lab::require_root("engine_ipv6::every_test_type_over_ipv6_veth") {
        return;
    }
    let lab = lab::TwoHosts::create("nt6eng", 2).unwrap();
    if !lab.ipv6_enabled() {
        eprintln!("skipping engine_ipv6::every_test_type_over_ipv6_veth: IPv6 is disabled in the namespaces");
        return;
    }
    let v6 = lab.add_ipv6().unwrap();
    let _server = lab
        .b
        .spawn(BIN, &["serve", "--port", "5290", "-q"])
        .unwrap();
    wait_listening(&lab.b, 5290);
    let addr = v6.b.to_string();
    for (test, extra) in CASES {
        let (rx_ns, rx_if) = if extra.contains(&"--reverse") {
            (&lab.a, "nt0")
        } else {
            (&lab.b, "nt1")
        };
        let dev0 = rx_ns.sh("cat /proc/net/dev").unwrap();
        let mut args = vec!["bench", "-6", addr.as_str(), "--test", test, "--json"];
        args.extend_from_slice(QUICK);
        args.extend(extra.iter().copied());
        let out = lab.a.command(BIN).args(&args).output().unwrap();
        let r = json(&out);
        sane(&r, test);
        assert_eq!(r["family"], "ipv6", "{test} {extra:?}");
        // Both ends' facts name their link end with its MTU, offloads and
        // interrupt moderation (veth has none: an empty object).
        for (side, name) in [("client", "nt0"), ("server_side", "nt1")] {
            let ifs = r[side]["facts"]["interfaces"].as_array().unwrap();
            let i = ifs.iter().find(|i| i["name"] == name).unwrap();
            assert_eq!(i["mtu"], 1500, "{side}: {i}");
            assert!(
                i["coalesce"].is_object() && i["offloads_on"].is_array(),
                "{side}: {i}"
            );
        }
        let dev1 = rx_ns.sh("cat /proc/net/dev").unwrap();
        let rx = dev_rx_bytes(&dev1, rx_if) - dev_rx_bytes(&dev0, rx_if);
        let d = &r["results"][0];
        let payload = u(&d["bytes"]);
        assert!(
            payload <= rx,
            "{test}: payload {payload} > {rx_if} rx bytes {rx}"
        );
        if *test == "udp-stream" && !extra.contains(&"--bidir") {
            // Udp6 counters of the receiving namespace back the count.
            let k = &d["kernel_check"];
            assert_eq!(k["agrees"], true, "{test} {extra:?}: {k}");
        }
    }
}
