//! `nettune stat` inside a network namespace while iperf3 sends to it over a
//! veth pair: NET_RX softirqs and nt1's packets/s move, and the per-interval
//! packet counts add up to the kernel's own `/proc/net/dev` delta over the
//! reports read (the load runs between the first and the last of them).
//! Needs root (namespaces) and iperf3; skips with a reason otherwise.

#![allow(clippy::unwrap_used)]

use lab::{have, require_root, TwoHosts};
use model::parse::netdev::parse_netdev;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn nt1_rx_packets(lab: &TwoHosts) -> u64 {
    let text = lab.b.sh("cat /proc/net/dev").unwrap();
    parse_netdev(&text)
        .unwrap()
        .get("nt1")
        .unwrap()
        .rx
        .packets
        .0
}

#[test]
fn stat_sees_iperf3_load_in_a_namespace() {
    if !require_root("stat_sees_iperf3_load_in_a_namespace") {
        return;
    }
    if !have("iperf3") {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "iperf3 missing under CI (.ci/run installs it)"
        );
        eprintln!("skipping stat_sees_iperf3_load_in_a_namespace: iperf3 not installed");
        return;
    }
    let lab = TwoHosts::create("ntstat", 2).unwrap();
    let server_addr = lab.b_end.addr.to_string();
    let _server = lab
        .b
        .spawn("iperf3", &["-s", "-1", "-B", &server_addr])
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !lab
        .b
        .sh("ss -Hltn 'sport = :5201'")
        .unwrap()
        .contains("5201")
    {
        assert!(Instant::now() < deadline, "iperf3 server did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }

    let before = nt1_rx_packets(&lab);
    // Reports every 0.5 s (at most 60: a hang guard); the load starts after
    // the first report and the reports are read until two have come after
    // it ended, so their window covers all of it however slowly the busy
    // machine starts either process.
    let mut stat = lab::ChildGuard::new(
        lab.b
            .command(env!("CARGO_BIN_EXE_nettune"))
            .args([
                "stat",
                "--json",
                "--interval",
                "0.5",
                "--count",
                "60",
                "--iface",
                "nt1",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = stat.child().unwrap().stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let next = || {
        rx.recv_timeout(Duration::from_secs(20))
            .expect("stat printed no report in 20 s")
    };
    let mut text = vec![next()];
    let client = lab
        .a
        .command("iperf3")
        .args(["-c", &server_addr, "-t", "1"])
        .output()
        .unwrap();
    assert!(
        client.status.success(),
        "iperf3 client: {}",
        String::from_utf8_lossy(&client.stderr)
    );
    // Every report received so far, then two more: the one that was under
    // way when the load ended and a whole one after it.
    text.extend(rx.try_iter());
    text.push(next());
    text.push(next());
    let after = nt1_rx_packets(&lab);
    drop(stat);
    let kernel = after - before;

    let text = text.join("\n");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 3, "{text}");
    let mut rx_sum = 0u64;
    let mut net_rx = 0u64;
    let mut max_pps = 0f64;
    for d in &lines {
        let ifaces = d["ifaces"].as_array().unwrap();
        assert_eq!(ifaces.len(), 1, "--iface nt1 keeps only nt1: {d}");
        let nt1 = &ifaces[0];
        assert_eq!(nt1["name"], "nt1");
        rx_sum += nt1["rx_packets"].as_u64().unwrap();
        max_pps = max_pps.max(nt1["rx_pps"].as_f64().unwrap());
        for c in d["cpus"].as_array().unwrap() {
            net_rx += c["net_rx"].as_u64().unwrap();
        }
        assert_eq!(d["schema_version"], 1);
        // veth's driver counters (ethtool -S in the namespace): per-queue
        // drops of both RX queues; no per-queue packet counter (its
        // xdp_packets count only the NAPI path), and two queues, so the
        // interface's packets are not given to one.
        if have("ethtool") {
            let rx: Vec<&serde_json::Value> = d["queues"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|q| q["iface"] == "nt1" && q["dir"] == "rx")
                .collect();
            assert_eq!(rx.len(), 2, "{d}");
            for (i, q) in rx.iter().enumerate() {
                assert_eq!(q["index"], i);
                assert!(q["drops"].is_u64() && q["packets"].is_null(), "{q}");
            }
        }
    }
    eprintln!("stat: {rx_sum} nt1 rx packets, kernel: {kernel}, NET_RX softirqs: {net_rx}");
    assert!(net_rx > 0, "no NET_RX softirqs during the load: {text}");
    assert!(max_pps > 0.0, "nt1 rx packets/s never moved: {text}");
    assert!(kernel > 1000, "the load barely ran: {kernel} packets");
    assert!(
        rx_sum <= kernel,
        "stat counted {rx_sum} packets, more than the kernel's {kernel}"
    );
    assert!(
        rx_sum as f64 >= 0.9 * kernel as f64,
        "stat counted {rx_sum} of the kernel's {kernel} packets: its window missed the load"
    );
}
