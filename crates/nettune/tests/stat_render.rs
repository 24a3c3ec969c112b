//! `nettune stat` output from two recorded text sets of this project's machine
//! (KVM 2 vCPU, kernel 6.18, one second apart under an iperf3 TCP stream on
//! veth `nt1`): the human screen (insta snapshot) and the JSON shape.

#![allow(clippy::unwrap_used)]

use host::sampler::{Delta, Sampler};
use host::Root;
use model::Nanos;
use nettune::cmd::stat::{filter, json_line, render};
use std::path::{Path, PathBuf};
use std::process::Command;

fn set(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../host/src/sampler/testdata/kvm-6.18-iperf3")
        .join(name)
}

fn recorded_delta() -> Delta {
    let mut a = Sampler::new(Root::new(set("a"))).sample().unwrap();
    let mut b = Sampler::new(Root::new(set("b"))).sample().unwrap();
    a.at = Nanos(5_000_000_000);
    b.at = Nanos(6_000_000_000);
    b.delta(&a)
}

#[test]
fn human_screen() {
    let d = recorded_delta();
    insta::assert_snapshot!("stat_kvm_6_18_iperf3", render(&d, 1));
}

#[test]
fn human_screen_filtered() {
    let mut d = recorded_delta();
    filter(
        &mut d,
        &["nt1".to_string()],
        Some(&model::CpuSet::single(1)),
    );
    let s = render(&d, 2);
    insta::assert_snapshot!("stat_kvm_6_18_iperf3_nt1_cpu1", s);
}

#[test]
fn human_screen_shows_errors_and_hides_quiet_irqs() {
    let mut d = recorded_delta();
    d.counters.insert("Udp.RcvbufErrors".into(), 1234);
    d.counters.insert("Tcp.RetransSegs".into(), 56);
    let s = render(&d, 3);
    assert!(s.contains("Udp.RcvbufErrors +1234"), "{s}");
    assert!(s.contains("Tcp.RetransSegs +56"), "{s}");
    assert!(
        !s.contains("Tcp.InSegs"),
        "traffic counters are not errors: {s}"
    );
    assert!(!s.contains("virtio2-input.0"), "quiet IRQ shown: {s}");
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// The documented shape (docs/stat.md): these keys, these types.
#[test]
fn json_shape() {
    let d = recorded_delta();
    let v = serde_json::to_value(&d).unwrap();
    let mut top = keys(&v);
    top.sort();
    assert_eq!(
        top,
        [
            "at",
            "counters",
            "cpus",
            "elapsed",
            "ifaces",
            "irqs",
            "nic_counters",
            "notes",
            "queues"
        ]
    );
    // The recorded set has no driver counters: no queues, nothing moved.
    assert_eq!(v["queues"], serde_json::json!([]));
    assert_eq!(v["nic_counters"], serde_json::json!({}));
    assert_eq!(v["elapsed"], 1_000_000_000u64);
    let cpu = &v["cpus"][0];
    let mut ck = keys(cpu);
    ck.sort();
    assert_eq!(
        ck,
        [
            "cpu",
            "net_rx",
            "net_rx_per_s",
            "net_tx",
            "net_tx_per_s",
            "pct",
            "softnet",
            "softnet_per_s",
            "times"
        ]
    );
    assert_eq!(cpu["cpu"], 0);
    for k in ["usr", "sys", "irq", "softirq", "steal", "iowait", "idle"] {
        assert!(cpu["pct"][k].is_f64(), "pct.{k}");
    }
    for k in ["user", "system", "idle", "softirq", "steal"] {
        assert!(cpu["times"][k].is_u64(), "times.{k}");
    }
    for k in [
        "processed",
        "dropped",
        "time_squeeze",
        "received_rps",
        "flow_limit",
    ] {
        assert!(cpu["softnet"][k].is_u64(), "softnet.{k}");
        assert!(cpu["softnet_per_s"][k].is_number(), "softnet_per_s.{k}");
    }
    let nt1 = v["ifaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "nt1")
        .unwrap();
    for k in [
        "rx_packets",
        "tx_packets",
        "rx_bytes",
        "tx_bytes",
        "rx_drop",
        "tx_drop",
        "rx_errs",
        "tx_errs",
    ] {
        assert!(nt1[k].is_u64(), "ifaces[].{k}");
    }
    for k in [
        "rx_pps",
        "tx_pps",
        "rx_bps",
        "tx_bps",
        "rx_drop_per_s",
        "tx_drop_per_s",
    ] {
        assert!(nt1[k].is_number(), "ifaces[].{k}");
    }
    let irq = &v["irqs"][0];
    let mut ik = keys(irq);
    ik.sort();
    assert_eq!(
        ik,
        ["count", "iface", "irq", "name", "per_cpu", "per_s", "queue"]
    );
    assert_eq!(irq["queue"]["kind"], "other");
    assert!(irq["per_cpu"][0]["cpu"].is_u64() && irq["per_cpu"][0]["count"].is_u64());
    assert!(v["counters"]["Udp.RcvbufErrors"].is_u64());
    assert!(v["counters"]["TcpExt.ListenDrops"].is_u64());
    assert!(v["notes"].as_array().unwrap().is_empty());
}

fn nettune(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cli_ndjson_on_the_live_host() {
    // A recorded tree without samples is refused (it never moves), so the
    // live loop is read on this host's loopback.
    let out = nettune(&[
        "stat",
        "--json",
        "--count",
        "2",
        "--interval",
        "0.05",
        "--iface",
        "lo",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let mut elapsed = 0;
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["schema_version"], 1, "{l}");
        assert_eq!(v["ifaces"].as_array().unwrap().len(), 1);
        assert_eq!(v["ifaces"][0]["name"], "lo");
        elapsed += v["elapsed"].as_u64().unwrap();
    }
    // Reports are due at start + k x interval: one late report makes the
    // next interval shorter, but two intervals together span about 100 ms.
    assert!(
        elapsed >= 80_000_000,
        "{elapsed} ns over two 50 ms intervals"
    );
}

#[test]
fn interval_and_count_as_mpstat_takes_them() {
    let root = set("b");
    let out = nettune(&["stat", "0.05", "3", "--json", "--iface", "lo"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);
    let both = nettune(&[
        "stat",
        "1",
        "--interval",
        "2",
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(!both.status.success());
    assert!(
        String::from_utf8_lossy(&both.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&both.stderr)
    );
}

#[test]
fn cli_rejects_bad_flags() {
    for (args, want) in [
        (vec!["stat", "--interval", "0"], "more than 0"),
        (vec!["stat", "--interval", "abc"], "not a number"),
        (vec!["stat", "--count", "0"], "at least 1"),
        (vec!["stat", "--cpus", "x-"], "cpulist"),
        (
            vec!["stat", "--count", "1", "--iface", "nope0"],
            "no interface `nope0`",
        ),
        (
            vec!["stat", "--count", "1", "--root", "/nonexistent-ntstat"],
            "/proc/stat",
        ),
    ] {
        let out = nettune(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn json_lines_carry_schema_version_first() {
    let d = recorded_delta();
    let line = json_line(&d).unwrap();
    assert!(line.starts_with("{\"schema_version\":1,\"at\":"), "{line}");
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    // Everything else is the Delta, unchanged.
    let mut without = v.as_object().unwrap().clone();
    without.remove("schema_version");
    let plain: serde_json::Value =
        serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
    assert_eq!(serde_json::Value::Object(without), plain);
    assert_eq!(model::sample::STAT_SCHEMA_VERSION, 1);
}

#[test]
fn human_screen_per_queue_section() {
    use model::parse::ethtool_stats::QueueDir;
    use model::sample::QueueDelta;
    let mut d = recorded_delta();
    d.queues = vec![
        QueueDelta {
            iface: "eth0".into(),
            dir: QueueDir::Rx,
            index: 1,
            packets: Some(81_000),
            drops: Some(30),
            packets_per_s: Some(81_000.0),
            drops_per_s: Some(30.0),
            irq: Some(model::IrqNumber(28)),
            interrupts: Some(1620),
            packets_per_interrupt: Some(50.0),
        },
        QueueDelta {
            iface: "eth0".into(),
            dir: QueueDir::Tx,
            index: 1,
            packets: None,
            drops: None,
            packets_per_s: None,
            drops_per_s: None,
            irq: None,
            interrupts: None,
            packets_per_interrupt: None,
        },
    ];
    d.nic_counters.insert(
        "eth0".into(),
        [
            ("rx_queue_1_drops".to_string(), 30),
            ("rx_queue_1_packets".to_string(), 81_000),
            ("pps_allowance_exceeded".to_string(), 12),
        ]
        .into(),
    );
    let s = render(&d, 4);
    let rows: Vec<Vec<&str>> = s
        .lines()
        .skip_while(|l| !l.starts_with("NIC queue"))
        .take(3)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["NIC", "queue", "queue", "pps", "drops/s", "IRQ", "irq/s", "pkt/irq"],
            // Every count in its unit: drops are packets, interrupts events.
            vec!["eth0", "rx-1", "81.0", "kpps", "30.0", "pps", "28", "1.62k/s", "50.0"],
            vec!["eth0", "tx-1", "-", "-", "-", "-", "-"],
        ],
        "{s}"
    );
    // Trouble counters that moved are listed; traffic counters are not.
    assert!(
        s.contains(
            "NIC driver drops/errors: eth0 pps_allowance_exceeded +12  eth0 rx_queue_1_drops +30"
        ),
        "{s}"
    );
    filter(&mut d, &["nt1".to_string()], None);
    assert!(d.queues.is_empty() && d.nic_counters.is_empty());
}

#[test]
fn many_quiet_queues_are_folded() {
    use model::parse::ethtool_stats::QueueDir;
    use model::sample::QueueDelta;
    let mut d = recorded_delta();
    d.queues = (0..40)
        .map(|i| QueueDelta {
            iface: "eth0".into(),
            dir: QueueDir::Rx,
            index: i,
            packets: Some(if i == 7 { 500 } else { 0 }),
            drops: Some(0),
            packets_per_s: Some(if i == 7 { 500.0 } else { 0.0 }),
            drops_per_s: Some(0.0),
            irq: None,
            interrupts: None,
            packets_per_interrupt: None,
        })
        .collect();
    let s = render(&d, 1);
    assert!(s.contains("eth0         rx-7"), "{s}");
    assert!(!s.contains("rx-8 "), "{s}");
    assert!(s.contains("(+39 quiet queues)"), "{s}");
}

/// Issue 17: a recorded tree (it has a LABEL) without samples never
/// changes; stat says so and exits 1 instead of printing zero rows.
#[test]
fn a_capture_without_samples_is_an_error_naming_capture_samples() {
    let t = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(set("b"))
        .arg(t.path().join("cap"))
        .status()
        .unwrap();
    assert!(st.success());
    let cap = t.path().join("cap");
    std::fs::write(cap.join("LABEL"), "Captured live by `nettune capture`.\n").unwrap();
    let out = nettune(&["stat", "-c", "2", "--root", cap.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.contains("capture without samples"), "{err}");
    assert!(err.contains("capture --out DIR --samples N"), "{err}");
}

/// Issue 21: stat rows carry wall-clock time (RFC 3339 UTC), in the human
/// header and as `time` in each NDJSON line (`at` is monotonic); a replayed
/// capture has no wall clock and prints none.
#[test]
fn live_rows_carry_wall_clock_time() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["stat", "0.2", "2", "--json", "--no-nic-stats"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let t = v["time"].as_str().unwrap_or_else(|| panic!("no time: {l}"));
        // 2026-11-25T23:20:01Z: the same day as now, UTC.
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z') && &t[10..11] == "T", "{t}");
        let today = model::time::rfc3339_utc(std::time::SystemTime::now());
        assert_eq!(&t[..10], &today[..10], "{t} vs {today}");
    }
    let d = recorded_delta();
    let s = nettune::cmd::stat::render_at(&d, 7, Some("2026-11-25T23:20:01Z"));
    assert!(s.starts_with("--- interval 7, "), "{s}");
    assert!(
        s.lines()
            .next()
            .unwrap()
            .ends_with(", 2026-11-25T23:20:01Z ---"),
        "{s}"
    );
    assert!(!render(&d, 7).lines().next().unwrap().contains('T'));
}
