//! The human summary and the JSON shape of a fixed result.

#![allow(clippy::unwrap_used)]

use nettune_engine as engine;

use engine::config::{End, FlowDir, TestConfig, TestKind};
use engine::facts::{HostFacts, IfaceFacts, IrqAffinity};
use engine::report::*;

fn facts(name: &str) -> HostFacts {
    HostFacts {
        hostname: Some(name.into()),
        kernel: Some("6.18.44".into()),
        cpus_online: Some("0-1".into()),
        ncpus: 2,
        congestion_control: Some("bbr".into()),
        interfaces: vec![IfaceFacts {
            name: "eth0".into(),
            driver: Some("virtio_net".into()),
            mtu: Some(1500),
            operstate: Some("up".into()),
            rx_queues: 2,
            tx_queues: 2,
            offloads_on: vec!["rx-gro".into(), "tx-tcp-segmentation".into()],
            coalesce: [("adaptive-rx".to_string(), 0), ("rx-usecs".to_string(), 50)]
                .into_iter()
                .collect(),
            irqs: vec![IrqAffinity {
                irq: 25,
                cpus: "0".into(),
            }],
        }],
        path_interface: None,
    }
}

fn cpu() -> CpuReport {
    CpuReport {
        seconds: 2.0,
        cpus: vec![
            CpuUse {
                cpu: 0,
                usr: 10.0,
                sys: 40.0,
                irq: 0.0,
                softirq: 20.0,
                steal: 0.0,
                idle: 30.0,
            },
            CpuUse {
                cpu: 1,
                usr: 5.0,
                sys: 25.0,
                irq: 0.5,
                softirq: 9.5,
                steal: 0.0,
                idle: 60.0,
            },
        ],
        host_busy_us: 2_200_000.0,
        process_user_us: 150_000,
        process_sys_us: 900_000,
        note: None,
        others_cpu_s: None,
        others_top: None,
        interrupts: None,
    }
}

fn side(name: &str) -> SideReport {
    SideReport {
        facts: facts(name),
        workers: vec![],
        cpu: cpu(),
        udp_snmp: None,
        rejected_connections: 0,
        doctor: None,
        cpu_intervals: vec![],
        notes: vec![],
        buffers: None,
    }
}

fn rr_result() -> BenchResult {
    let mut h = new_histogram();
    for (v, n) in [
        (20_000u64, 500u64),
        (30_000, 400),
        (90_000, 99),
        (2_000_000, 1),
    ] {
        h.record_n(v, n).unwrap();
    }
    let cfg = TestConfig {
        test: TestKind::TcpRr,
        size: 1,
        duration_ms: 2000,
        warmup_ms: 500,
        interval_ms: 1000,
        ..TestConfig::default()
    };
    let mut r = engine::client::summarize(
        &cfg,
        "hostb:5290".into(),
        42,
        side("a"),
        side("b"),
        vec![],
        false,
    );
    r.results[0].msgs = 1000;
    r.results[0].per_sec = 500.0;
    r.results[0].bytes = model::Bytes(1000);
    r.results[0].bits_per_sec = 4000.0;
    r.results[0].latency = Some(Latency::from_hist(&h));
    r.results[0].tcp_info = vec![TcpInfo {
        flow: 0,
        retransmits: 0,
        rtt_us: 45,
        rttvar_us: 10,
        cwnd: 10,
        mss: 1448,
        congestion: Some("cubic".into()),
    }];
    r.client_service_demand = engine::client::service_demand(cfg.test, 2_200_000.0, 1000, 1000);
    r.server_service_demand = r.client_service_demand;
    r
}

fn udp_result() -> BenchResult {
    let cfg = TestConfig {
        test: TestKind::UdpStream,
        size: 64,
        flows: 2,
        threads: 2,
        duration_ms: 2000,
        warmup_ms: 500,
        interval_ms: 1000,
        rcvbuf: Some(4 << 20),
        ..TestConfig::default()
    };
    let mut server = side("b");
    server.udp_snmp = Some(UdpSnmp {
        in_datagrams: 1_000_500,
        rcvbuf_errors: 0,
        in_errors: 0,
        no_ports: 0,
        out_datagrams: 0,
    });
    let recv = WorkerReport {
        worker: 0,
        role: Some(Role::Recv),
        dir: Some(FlowDir::Forward),
        window: Counters {
            bytes: 60_000_000,
            msgs: 937_500,
            expected: 937_500,
            ..Counters::default()
        },
        total: Counters {
            bytes: 64_000_000,
            msgs: 1_000_000,
            expected: 1_000_100,
            out_of_order: 3,
            reads: 1_000_000,
            ..Counters::default()
        },
        ..WorkerReport::default()
    };
    server.workers = vec![recv];
    let mut client = side("a");
    client.workers = vec![WorkerReport {
        worker: 0,
        role: Some(Role::Send),
        dir: Some(FlowDir::Forward),
        total: Counters {
            msgs: 1_000_100,
            bytes: 64_006_400,
            ..Counters::default()
        },
        ..WorkerReport::default()
    }];
    engine::client::summarize(&cfg, "hostb:5290".into(), 43, client, server, vec![], false)
}

#[test]
fn human_summary_rr() {
    insta::assert_snapshot!(engine::render::human(&rr_result()));
}

#[test]
fn human_summary_udp() {
    insta::assert_snapshot!(engine::render::human(&udp_result()));
}

/// Each side's device interrupts are one line (busiest interfaces first,
/// a peer's names escaped); a side without them prints none.
#[test]
fn device_interrupts_are_one_line_per_side() {
    use engine::report::{IrqCpuRate, IrqIfaceRate, IrqRates};
    let mut r = rr_result();
    assert!(!engine::render::human(&r).contains("device interrupts"));
    r.server_side.cpu.interrupts = Some(IrqRates {
        count: 48_200,
        per_s: 24_100.0,
        per_cpu: vec![
            IrqCpuRate {
                cpu: 0,
                count: 47_800,
                per_s: 23_900.0,
            },
            IrqCpuRate {
                cpu: 1,
                count: 400,
                per_s: 200.0,
            },
        ],
        ifaces: vec![IrqIfaceRate {
            iface: "eth1\x1b[2J".into(),
            irqs: vec![24, 25],
            count: 48_000,
            per_s: 24_000.0,
        }],
    });
    let text = engine::render::human(&r);
    assert!(
        text.contains(
            "  server device interrupts 24.1k/s (cpu0 23.9k/s, cpu1 200/s; eth1\\x1b[2J 24.0k/s)\n"
        ),
        "{text}"
    );
    assert!(!text.contains("client device interrupts"), "{text}");
}

/// A run beside a busy loop says so, naming the busiest other process;
/// a quiet one says nothing.
#[test]
fn a_busy_machine_is_said() {
    let mut r = udp_result();
    assert!(!engine::render::human(&r).contains("busy machine"));
    r.server_side.cpu.others_cpu_s = Some(1.4);
    r.server_side.cpu.others_top = Some("bash 1.38 CPU-s".into());
    let text = engine::render::human(&r);
    assert!(
        text.contains("busy machine: on the server's host other processes took 0.700 CPU (busiest: bash 1.38 CPU-s)"),
        "{text}"
    );
    // A tenth of a CPU is below the threshold.
    r.server_side.cpu.others_cpu_s = Some(0.2);
    assert!(!engine::render::human(&r).contains("busy machine"));
}

/// `bench` over 127.0.0.1 printed every interface but lo (eth0's MTU and
/// driver) as if the test had used it: with the path interface known, its
/// line alone is shown, lo included; the others stay in --json.
#[test]
fn nic_line_is_the_path_interface_even_lo() {
    let mut r = udp_result();
    let lo = IfaceFacts {
        name: "lo".into(),
        mtu: Some(65536),
        operstate: Some("unknown".into()),
        offloads_on: vec!["tx-tcp-segmentation".into()],
        ..Default::default()
    };
    r.client.facts.interfaces.insert(0, lo.clone());
    r.client.facts.path_interface = Some("lo".into());
    r.server_side.facts.path_interface = Some("eth0".into());
    let text = engine::render::human(&r);
    assert!(
        text.contains("NIC client path lo: mtu 65536 · loopback · offloads tso\n"),
        "{text}"
    );
    assert!(
        text.contains("NIC server path eth0 (virtio_net): mtu 1500 · coalesce adaptive-rx 0, rx-usecs 50 · offloads gro tso\n"),
        "{text}"
    );
    assert!(!text.contains("NIC client eth0"), "{text}");
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["client"]["facts"]["path_interface"], "lo");
    assert_eq!(j["client"]["facts"]["interfaces"][1]["name"], "eth0");
    // A path whose facts were not read says so.
    r.server_side.facts.path_interface = Some("eth9".into());
    let text = engine::render::human(&r);
    assert!(
        text.contains("NIC server path eth9: no facts read"),
        "{text}"
    );
}

#[test]
fn json_shape() {
    let r = udp_result();
    let v = serde_json::to_value(&r).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    insta::assert_json_snapshot!(keys);
    insta::assert_json_snapshot!("udp_result", v);
    let d = &v["results"][0];
    assert_eq!(d["udp"]["sent"], 1_000_100);
    assert_eq!(d["udp"]["lost"], 100);
    assert_eq!(d["kernel_check"]["agrees"], true);
    assert_eq!(v["config"]["test"], "udp-stream");
    let back: BenchResult = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

/// A doctor report with one finding; `title` may hold what a hostile
/// server would send.
fn report(id: &str, title: &str, command: Option<&str>) -> model::findings::Report {
    serde_json::from_value(serde_json::json!({
        "schema_version": 1,
        "findings": [{"id": id, "severity": "critical", "title": title, "subject": "host",
            "evidence": [{"what": "Udp.RcvbufErrors", "value": "1200/s", "source": "/proc/net/snmp"}],
            "why": "w", "fix": {"text": "raise the buffer", "changes": [], "command": command,
            "app": "--rcvbuf 4M"}, "source": "s"}],
        "skipped": [{"id": "rps-off", "reason": "/sys/class/net: not found"}]
    }))
    .unwrap()
}

#[test]
fn human_summary_with_doctor_findings() {
    let mut r = udp_result();
    r.doctor = Some(engine::diagnosis::BenchDoctor {
        client: Some(report(
            "softirq-concentrated",
            "receive processing on CPU 1",
            Some("nettune plan --profile balanced"),
        )),
        server: Some(report(
            "udp-rcvbuf-errors",
            "UDP: 1200 datagrams dropped\x1b[2J",
            None,
        )),
        drops: Some(model::drops::run::RunDrops::unavailable(
            "client",
            model::drops::Unavailable::NoTracefs,
        )),
    });
    let text = engine::render::human(&r);
    // A server's control characters are shown escaped, never sent to the terminal.
    assert!(!text.contains('\x1b'), "{text}");
    insta::assert_snapshot!(text);
    // And the document round-trips with both reports.
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(
        v["doctor"]["server"]["findings"][0]["id"],
        "udp-rcvbuf-errors"
    );
    let back: BenchResult = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
    r.doctor = Some(engine::diagnosis::BenchDoctor::default());
    let text = engine::render::human(&r);
    assert!(
        text.ends_with("Findings (client): none received\n\nFindings (server): none received\n"),
        "{text}"
    );
}

#[test]
fn probe_line_and_json_with_interval_cpu() {
    let mut r = udp_result();
    let spec: engine::ProbeSpec = "icmp:200".parse().unwrap();
    let mut p = engine::ProbeReport::failed(&spec, "last error: \x1b[2Jno route".into());
    p.sent = 10;
    p.answered = 9;
    p.lost = 1;
    (p.min_us, p.p50_us, p.p90_us, p.p99_us, p.max_us) =
        (Some(21), Some(35), Some(80), Some(1200), Some(1200));
    p.histogram = vec![[21, 1], [35, 4], [80, 3], [1200, 1]];
    r.probe = Some(p);
    let cpus = vec![engine::report::CpuUse {
        cpu: 1,
        usr: 2.0,
        sys: 3.0,
        irq: 0.0,
        softirq: 45.0,
        steal: 0.0,
        idle: 50.0,
    }];
    r.intervals = vec![engine::report::IntervalReport {
        index: 0,
        end_s: 1.0,
        cpu: Some(engine::report::IntervalCpuUse {
            client: Some(cpus),
            server: None,
        }),
        ..Default::default()
    }];
    let text = engine::render::human(&r);
    assert!(!text.contains('\x1b'), "{text}");
    assert!(
        text.contains("probe icmp every 200 ms: p50 35.0 µs p99 1.20 ms (9/10 answered)"),
        "{text}"
    );
    insta::assert_snapshot!(text);
    let v = serde_json::to_value(&r).unwrap();
    insta::assert_json_snapshot!("probe_and_interval_cpu", (&v["probe"], &v["intervals"]));
    let back: BenchResult = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}

/// A stream result of 3 s whose two workers used `send_us` and `recv_us` of
/// CPU over the window, pinned to `cpu` when given.
fn stream_with_threads(send_us: u64, recv_us: u64, cpu: Option<u32>) -> BenchResult {
    let cfg = TestConfig {
        test: TestKind::TcpStream,
        duration_ms: 3000,
        ..TestConfig::default()
    };
    let worker = |role, sys_us| WorkerReport {
        role: Some(role),
        dir: Some(FlowDir::Forward),
        cpu,
        sys_us,
        ..WorkerReport::default()
    };
    let mut client = side("a");
    client.workers = vec![worker(Role::Send, send_us)];
    let mut server = side("b");
    server.workers = vec![worker(Role::Recv, recv_us)];
    engine::client::summarize(&cfg, "b:5290".into(), 1, client, server, vec![], false)
}

/// The worker CPU times of three runs of `nettune experiment` (tcp-stream,
/// 1 flow, 3 s, cubic) in the lab on this project's 2-vCPU VM, kernel
/// 6.18.44, 2026-11-29: 17.6 Gbit/s with the receiver's thread busy the
/// whole window, 34.1 Gbit/s with the sender's, and 23.6 Gbit/s with both
/// pinned to CPU 0 (`--cpus 0`); then two runs of 21:36 UTC.
#[test]
fn threads_name_the_thread_that_limits_the_run() {
    let slow = stream_with_threads(12_654 + 1_115_475, 11_996 + 2_944_306, None);
    let t = slow.results[0].threads.clone().unwrap();
    assert_eq!(t.bound, Some(End::Server));
    assert!((t.server.unwrap().busy_pct - 98.5).abs() < 0.1, "{t:?}");
    let line = engine::render::threads_line(Some(FlowDir::Forward), &t);
    assert_eq!(
        line,
        "threads forward: client send 38 %, server recv 99 % busy: the server's recv thread limits it"
    );
    assert!(engine::render::human(&slow).contains(&line));

    let fast = stream_with_threads(19_978 + 2_917_250, 59_634 + 1_692_146, None);
    let t = fast.results[0].threads.clone().unwrap();
    assert_eq!(t.bound, Some(End::Client));
    assert_eq!(t.verdict().to_string(), "the client's send thread");

    let pinned = stream_with_threads(8_367 + 706_736, 23_570 + 2_259_800, Some(0));
    let t = pinned.results[0].threads.clone().unwrap();
    assert_eq!(t.bound, None);
    assert_eq!(t.verdict(), ThreadVerdict::SharedCpu(0));
    assert_eq!(t.verdict().to_string(), "CPU 0, shared by both threads");
    assert_eq!(
        engine::render::threads_line(Some(FlowDir::Forward), &t),
        "threads forward: client send 24 %, server recv 76 % busy: both share CPU 0, which limits it"
    );

    // Receiver-bound with the softirq on the receiver's CPU outside the
    // thread's time (21:36 UTC, 14.5 Gbit/s), and a run whose ends were
    // both at 70 % (21.4 Gbit/s: no thread alone).
    let soft = stream_with_threads(12_627 + 1_261_466, 19_774 + 2_599_461, None);
    let t = soft.results[0].threads.clone().unwrap();
    assert_eq!(
        t.verdict(),
        ThreadVerdict::Thread {
            end: End::Server,
            role: Role::Recv
        }
    );
    let even = stream_with_threads(27_751 + 2_058_127, 24_767 + 2_069_353, None);
    let t = even.results[0].threads.clone().unwrap();
    assert_eq!(t.bound, None);
    assert_eq!(t.verdict().to_string(), "no single thread");

    // Workers that report no CPU (an older peer): no line.
    let none = stream_with_threads(0, 0, None);
    assert_eq!(none.results[0].threads, None);
    assert!(!engine::render::human(&none).contains("threads"));
    let v = serde_json::to_value(&slow).unwrap();
    assert_eq!(v["results"][0]["threads"]["server"]["role"], "recv");
    assert_eq!(v["results"][0]["threads"]["bound"], "server");
}

/// A tcp-rr interval of 1-byte transactions led with `377 kbit/s`: a
/// request/response line leads with transactions/s (tcp-crr: connections/s),
/// a stream's with bits/s.
#[test]
fn interval_lines_lead_with_the_tests_own_rate() {
    let lines: Vec<String> = TestKind::ALL
        .iter()
        .map(|&t| {
            let i = IntervalReport {
                dir: Some(FlowDir::Forward),
                index: 2,
                start_s: 2.0,
                end_s: 3.0,
                bits_per_sec: 377_000.0,
                per_sec: 23_560.0,
                p50_ns: (!t.is_stream()).then_some(model::Nanos(41_200)),
                p99_ns: (!t.is_stream()).then_some(model::Nanos(88_000)),
                ..IntervalReport::default()
            };
            engine::render::interval_line(t, &i)
        })
        .collect();
    for (t, line) in TestKind::ALL.iter().zip(&lines) {
        let after_dir = line.split("forward").nth(1).unwrap().trim_start();
        let lead = match t {
            TestKind::TcpStream | TestKind::UdpStream => "377 kbit/s",
            TestKind::TcpRr | TestKind::UdpRr => "23.6 ktps",
            TestKind::TcpCrr => "23.6 kcps",
        };
        assert!(after_dir.starts_with(lead), "{t}: {line}");
        assert!(line.contains("377 kbit/s"), "{t}: {line}");
    }
    insta::assert_snapshot!(lines.join("\n"));
}
