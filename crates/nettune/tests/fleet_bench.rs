//! `nettune fleet bench`: 8 clients → 1 server in a 9-host lab (the hub
//! serves, the spokes are clients, each reached with `ip netns exec`),
//! tcp-rr and udp-stream; every client ok, its start scheduled, the skew
//! reported, and the aggregate the sum of the clients over the common
//! window. Root only (lab namespaces); the measured skew and lateness are
//! printed.

#![allow(clippy::unwrap_used)]

use lab::{Lab, LabSpec};
use serde_json::Value;
use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn run(inv: &str, extra: &[&str]) -> Value {
    let t = Instant::now();
    let mut args = vec![
        "fleet",
        "bench",
        "--inventory",
        inv,
        "--server",
        "hub",
        "--clients",
        "spokes",
        "--json",
        "--timeout",
        "60",
    ];
    args.extend_from_slice(extra);
    let o = Command::new(BIN).args(&args).output().unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    eprintln!(
        "{:?}: {:.1} s, skew {} ns, max lateness {} ns, window {} s, aggregate {}",
        extra,
        t.elapsed().as_secs_f64(),
        v["skew_ns"],
        v["max_late_ns"],
        v["window"]["seconds"],
        v["aggregate"]
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}\n{v:#}",
        String::from_utf8_lossy(&o.stderr)
    );
    v
}

/// What the start mechanism guarantees: every client waits for its own
/// scheduled instant (never early) and then starts within the schedule's
/// margin (the controller picks T at least 2 s ahead, so a start later than
/// that would mean a client ignored its schedule). Everything is said before
/// T (`connected_at`, `go`) and each worker wakes by itself at T under
/// SCHED_FIFO (the agents run as root), ahead of every normal thread of a
/// busy machine, until its first batch: the spread left is the workers'
/// first batches on 2 CPUs. For udp-stream that is a fraction of a
/// millisecond (a send batch), so the 5 ms is asserted; a tcp-rr
/// worker's first batch is a whole transaction through the server's worker,
/// 16 of them in turn (1.1-1.5 ms release, 2-3 ms debug here), so its skew
/// is reported (bench/RESULTS.md) and held only to the mechanism.
const WITHIN_SCHEDULE_NS: i64 = 2_000_000_000;

/// The udp-stream skew the real-time wake keeps to (the goal).
const UDP_SKEW_NS: u64 = 5_000_000;

fn check(v: &Value, unit: &str) {
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 8);
    let mut sum = 0.0;
    let mut earliest = i64::MAX;
    let mut latest = i64::MIN;
    for h in hosts {
        assert_eq!(h["outcome"], "ok", "{h:#}");
        let c = &h["clock"];
        // One machine: every namespace has the same clock.
        assert!(
            c["offset_ns"].as_i64().unwrap().unsigned_abs()
                <= c["uncertainty_ns"].as_u64().unwrap() + 1_000_000,
            "{c}"
        );
        // The mechanism: no client starts before its schedule, and each
        // starts within the schedule's margin.
        let late = h["late_ns"].as_i64().unwrap();
        assert!(
            (0..WITHIN_SCHEDULE_NS).contains(&late),
            "{}: late {late} ns",
            h["host"]
        );
        earliest = earliest.min(late);
        latest = latest.max(late);
        assert!(h["result"]["started_at_unix_ns"].as_u64().is_some());
        sum += h["window_rate"]["per_sec"].as_f64().unwrap();
    }
    // The reported skew is the spread of the starts (one machine: one clock).
    let skew = v["skew_ns"].as_u64().unwrap();
    let spread = u64::try_from(latest - earliest).unwrap();
    assert!(
        skew.abs_diff(spread) <= 2_000_000,
        "skew {skew} ns against the clients' lateness spread {spread} ns"
    );
    if unit == "datagrams" {
        assert!(skew < UDP_SKEW_NS, "udp-stream skew {skew} ns");
    }
    let mut lates: Vec<f64> = hosts
        .iter()
        .map(|h| h["late_ns"].as_i64().unwrap() as f64 / 1e6)
        .collect();
    lates.sort_by(f64::total_cmp);
    eprintln!(
        "{unit}: skew {:.2} ms over 8 clients; each client's lateness, ms: {lates:.2?}",
        skew as f64 / 1e6
    );
    let a = &v["aggregate"];
    assert_eq!(a["hosts"], 8);
    assert_eq!(a["unit"], unit);
    let total = a["per_sec"].as_f64().unwrap();
    assert!(total > 0.0);
    assert!(
        (total - sum).abs() <= 1e-6 * total.max(1.0),
        "{total} vs {sum}"
    );
    let w = v["window"]["seconds"].as_f64().unwrap();
    assert!(w > 1.9 && w <= 2.0, "{w}");
    // Per-CPU use of all 8 clients and the server.
    let cpu = v["cpu"].as_array().unwrap();
    assert_eq!(cpu.len(), 9);
    assert_eq!(cpu[8]["role"], "server");
    assert!(cpu.iter().all(|c| c["cpu"]["cpus"].as_array().is_some()));
}

#[test]
fn eight_clients_to_one_server_start_together() {
    if !lab::require_root("fleet_bench::eight_clients_to_one_server_start_together") {
        return;
    }
    let lab = Lab::build(LabSpec {
        prefix: "ntfb".into(),
        ..LabSpec::new(9, 1)
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!(
        "[[host]]\nname = \"hub\"\ntransport = \"netns\"\nnetns = \"{}\"\nroles = [\"server\"]\n",
        lab.hosts()[0].name()
    );
    for l in lab.links() {
        text.push_str(&format!(
            "[[host]]\nname = \"s{}\"\ntransport = \"netns\"\nnetns = \"{}\"\nroles = [\"spokes\"]\nlabels = {{ server_address = \"{}\" }}\n",
            l.host,
            lab.hosts()[l.host].name(),
            l.hub.addr
        ));
    }
    let inv = dir.path().join("lab.toml");
    std::fs::write(&inv, text).unwrap();
    let inv = inv.to_str().unwrap();

    let rr = run(
        inv,
        &["--test", "tcp-rr", "--duration", "2", "--warmup", "0"],
    );
    check(&rr, "transactions");
    let l = &rr["aggregate"]["latency"];
    assert_eq!(l["source"], "merged histograms");
    let per_host: u64 = rr["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            h["result"]["results"][0]["latency"]["count"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(l["count"].as_u64().unwrap(), per_host);
    assert!(l["p50_ns"].as_u64().unwrap() <= l["p99_ns"].as_u64().unwrap());

    let udp = run(
        inv,
        &[
            "--test",
            "udp-stream",
            "--size",
            "64",
            "--duration",
            "2",
            "--warmup",
            "0",
        ],
    );
    check(&udp, "datagrams");
    assert!(udp["aggregate"]["latency"].is_null());
}
