//! Issue 9 item 2, seed 004 ("get RTT from ping"): `plan --bdp RATE,HOST`
//! measures the RTT to HOST (a short tcp-rr against `nettune serve`, else
//! ICMP echo) and says where it came from; an unreachable host fails within
//! its deadline. Each test runs in its own network namespace (root).

#![allow(clippy::unwrap_used)]

use lab::Netns;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/c4-8xlarge")
        .display()
        .to_string()
}

fn plan_in(ns: &Netns, bdp: &str) -> std::process::Output {
    ns.command(BIN)
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(fixture())
        .args(["--bdp", bdp])
        .output()
        .unwrap()
}

fn measured(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let m = p["options"]["rtt_measured"].clone();
    let median = m["median_us"].as_u64().unwrap();
    assert!(median >= 1);
    assert_eq!(p["options"]["bdp"]["rtt_us"].as_u64(), Some(median));
    assert_eq!(
        p["options"]["bdp"]["rate_bps"].as_u64(),
        Some(2_000_000_000_000)
    );
    let note = p["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["rule"] == "bdp")
        .unwrap_or_else(|| panic!("no bdp note: {p}"));
    let msg = note["message"].as_str().unwrap();
    assert!(msg.contains(&format!("{median} µs")), "{msg}");
    // The socket-buffer sizes follow the measured RTT.
    let reason = p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["knob"] == "net.core.rmem_max")
        .map(|c| c["reason"].as_str().unwrap().to_string())
        .unwrap_or_default();
    assert!(reason.contains(&format!("x {median} µs")), "{reason}");
    m
}

#[test]
fn bdp_host_without_a_server_is_measured_by_icmp_echo() {
    if !lab::require_root("bdp_rtt::bdp_host_without_a_server_is_measured_by_icmp_echo") {
        return;
    }
    let ns = Netns::create("ntbdp").unwrap();
    let t = Instant::now();
    let m = measured(&plan_in(&ns, "2tbit,127.0.0.1"));
    assert_eq!(m["method"], "icmp", "{m}");
    assert_eq!(m["address"], "127.0.0.1");
    let n = m["samples"].as_u64().unwrap();
    assert!((1..=5).contains(&n), "{m}");
    assert!(t.elapsed() < Duration::from_secs(10));
    // The human plan says it too.
    let o = ns
        .command(BIN)
        .args(["plan", "--profile", "throughput", "--root"])
        .arg(fixture())
        .args(["--bdp", "10gbit,127.0.0.1"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(
        s.contains("RTT to 127.0.0.1 (127.0.0.1) measured") && s.contains("ICMP echo"),
        "{s}"
    );
}

#[test]
fn bdp_host_with_nettune_serve_is_measured_by_request_response() {
    if !lab::require_root("bdp_rtt::bdp_host_with_nettune_serve_is_measured_by_request_response") {
        return;
    }
    let ns = Netns::create("ntbdp").unwrap();
    let _server = ns
        .spawn(
            BIN,
            &["serve", "--listen", "127.0.0.1", "--max-duration", "10"],
        )
        .unwrap();
    ns.sh(
        "for i in $(seq 100); do ss -Hltn 'sport = :5290' | grep -q . && exit 0; sleep 0.05; done; exit 1",
    )
    .unwrap();
    let m = measured(&plan_in(&ns, "2tbit,127.0.0.1"));
    assert_eq!(m["method"], "nettune", "{m}");
    assert!(m["samples"].as_u64().unwrap() >= 1, "{m}");
}

#[test]
fn bdp_unreachable_host_fails_within_its_deadline() {
    if !lab::require_root("bdp_rtt::bdp_unreachable_host_fails_within_its_deadline") {
        return;
    }
    let ns = Netns::create("ntbdp").unwrap();
    // A veth whose peer is down: 10.203.0.2 is routed but nobody answers.
    ns.ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"])
        .unwrap();
    ns.ip(&["addr", "add", "10.203.0.1/24", "dev", "v0"])
        .unwrap();
    ns.ip(&["link", "set", "v0", "up"]).unwrap();
    let t = Instant::now();
    let o = plan_in(&ns, "1gbit,10.203.0.2");
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("cannot measure the RTT to 10.203.0.2")
            && e.contains("no nettune server on port 5290")
            && e.contains("no ICMP echo reply"),
        "{e}"
    );
    // 1 s to connect to a server, then 5 echoes within 2 s.
    assert!(took < Duration::from_secs(6), "took {took:?}");
}

#[test]
fn bdp_with_an_rtt_measures_nothing() {
    let o = std::process::Command::new(BIN)
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(fixture())
        .args(["--bdp", "10gbit,20ms"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        p["options"].get("rtt_measured").is_none(),
        "{}",
        p["options"]
    );
    assert_eq!(p["options"]["bdp"]["rtt_us"], 20_000);
    // A mistyped duration is still an RTT error, not a host.
    let o = std::process::Command::new(BIN)
        .args(["plan", "--profile", "throughput", "--root"])
        .arg(fixture())
        .args(["--bdp", "10gbit,20 parsecs"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("RTT"));
}
