//! Rate rules on synthetic counter windows (written as /proc text, read by
//! the sampler): each fires on its pathology and stays quiet without it.

#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use nettune_doctor::{DoctorId, Severity};

/// 100 ticks a second per CPU; CPU `hot` spends `pct` in softirq, the others
/// `cold` % softirq and `usr` % user; NET_RX counted where the softirq runs.
fn softirq_window(
    n: usize,
    hot: usize,
    pct: u64,
    cold: u64,
    usr: u64,
) -> Vec<host::sampler::Sample> {
    run(n, 3, |c| {
        for cpu in 0..n {
            let s = if cpu == hot { pct } else { cold };
            let u = if cpu == hot { 0 } else { usr };
            c.tick(
                cpu,
                Ticks {
                    usr: u,
                    softirq: s,
                    idle: 100 - s - u,
                    ..Ticks::default()
                },
            );
            c.net_rx[cpu] += s * 300;
            c.softnet[cpu].0 += (s * 1000) as u32;
        }
        c.netdev = vec![(
            "eth0".into(),
            c.netdev.first().map_or(0, |x| x.1) + 200_000,
            0,
        )];
    })
}

#[test]
fn softirq_concentrated_fires_on_one_hot_cpu_of_the_seed_vm() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = softirq_window(2, 1, 59, 2, 5);
    let r = report(&i);
    let f = r.of(DoctorId::SoftirqConcentrated).next().expect("fires");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.title
            .contains("receive processing on CPU 1: 97 % of the packets processed"),
        "{}",
        f.title
    );
    assert!(f
        .evidence
        .iter()
        .any(|e| e.what == "CPU 1 softirq / idle" && e.value == "59.0 % / 41.0 %"));
    assert!(f.evidence.iter().any(|e| e.source == "/proc/softirqs"));
    assert!(
        f.evidence
            .iter()
            .any(|e| e.what == "layout" && e.value.contains("eth0 RPS: rx-0 off")),
        "{:?}",
        f.evidence
    );
    // The balanced plan turns RPS on for eth0, and the fix carries it.
    assert!(f.fix.changes.iter().any(|c| c.rule == "rps"), "{:?}", f.fix);
    assert_eq!(
        f.fix.command.as_deref(),
        Some("nettune plan --profile balanced --iface eth0")
    );
}

#[test]
fn softirq_concentrated_is_critical_when_the_cpu_is_saturated() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = softirq_window(2, 0, 90, 1, 0);
    let r = report(&i);
    assert_eq!(
        r.of(DoctorId::SoftirqConcentrated).next().unwrap().severity,
        Severity::Critical
    );
    assert_eq!(r.exit_code(), 2);
}

/// The shape measured on this 2-vCPU guest with RX steered to CPU 1: the
/// softirqs run in task context and show as %sys, CPU 1 processes 98 % of
/// the packets, both CPUs are busy.
fn steered_window(hot_idle: u64) -> Vec<host::sampler::Sample> {
    run(2, 3, |c| {
        c.tick(
            0,
            Ticks {
                usr: 65,
                sys: 33,
                softirq: 2,
                ..Ticks::default()
            },
        );
        c.tick(
            1,
            Ticks {
                usr: 30 - hot_idle.min(30),
                sys: 62 - hot_idle.saturating_sub(30),
                softirq: 8,
                idle: hot_idle,
                ..Ticks::default()
            },
        );
        c.net_rx[0] += 300;
        c.net_rx[1] += 12_800;
        c.softnet[0].0 += 300;
        c.softnet[1].0 += 15_900;
    })
}

#[test]
fn softirq_concentrated_by_packets_when_softirq_time_shows_as_sys() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = steered_window(0);
    let r = report(&i);
    let f = r.of(DoctorId::SoftirqConcentrated).next().expect("fires");
    assert!(
        f.title.contains("CPU 1: 98 % of the packets processed"),
        "{}",
        f.title
    );
    // The same split on a mostly idle CPU is no bottleneck.
    i.samples = steered_window(80);
    assert!(!report(&i).has(DoctorId::SoftirqConcentrated));
}

#[test]
fn softirq_spread_evenly_or_low_does_not_fire() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = softirq_window(2, 0, 40, 38, 10);
    assert!(!report(&i).has(DoctorId::SoftirqConcentrated));
    i.samples = softirq_window(2, 0, 10, 0, 0);
    assert!(!report(&i).has(DoctorId::SoftirqConcentrated));
}

#[test]
fn rate_rules_skip_without_samples_and_with_one() {
    let mut i = input("kvm-2vcpu-6.18");
    let r = report(&i);
    assert!(r
        .skipped(DoctorId::SoftirqConcentrated)
        .unwrap()
        .contains("no samples"));
    i.samples = softirq_window(2, 1, 59, 2, 5).into_iter().take(1).collect();
    let r = report(&i);
    assert_eq!(
        r.skipped(DoctorId::SoftnetDrops),
        Some("one sample only: rates need two")
    );
}

#[test]
fn softnet_drops_fire_on_drops_and_stay_quiet_on_a_clean_window() {
    let mut i = input("c4-8xlarge");
    i.samples = run(2, 3, |c| {
        c.tick(
            0,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.tick(
            1,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.softnet[0].0 += 100_000;
    });
    assert!(!report(&i).has(DoctorId::SoftnetDrops));
    i.samples = run(2, 3, |c| {
        c.tick(
            0,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.tick(
            1,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.softnet[0].0 += 100_000;
        c.softnet[0].1 += 250;
        c.softnet[0].2 += 40;
    });
    let r = report(&i);
    let f = r.of(DoctorId::SoftnetDrops).next().expect("fires");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.title.contains("750 backlog drops, 120 squeezes"),
        "{}",
        f.title
    );
    assert!(f
        .evidence
        .iter()
        .any(|e| e.what.starts_with("CPU 0") && e.value == "750 / 120 / 0"));
}

#[test]
fn udp_rcvbuf_errors_fire_when_growing() {
    let mut i = input("kvm-2vcpu-6.18");
    let quiet = |c: &mut Counters| {
        c.tick(
            0,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.tick(
            1,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.add("Udp.InDatagrams", 500_000).add("Udp.RcvbufErrors", 0);
    };
    i.samples = run(2, 3, quiet);
    assert!(!report(&i).has(DoctorId::UdpRcvbufErrors));
    i.samples = run(2, 3, |c| {
        quiet(c);
        c.add("Udp.RcvbufErrors", 10_000);
    });
    let r = report(&i);
    let f = r.of(DoctorId::UdpRcvbufErrors).next().expect("fires");
    // 30000 of 1.53 M datagrams: 1.96 %, above the 1 % critical line.
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.fix.app.as_deref().unwrap().contains("--rcvbuf"));
    // The same fix as typed bench options, which the lab applies.
    assert_eq!(
        f.fix.bench,
        Some(nettune_doctor::BenchFix::new(
            nettune_doctor::Workloads::Udp,
            &["--rcvbuf", "4M"]
        ))
    );
    assert!(f
        .evidence
        .iter()
        .any(|e| e.what == "Udp.RcvbufErrors" && e.value.starts_with("30000")));
}

#[test]
fn listen_drops_fire_when_growing() {
    let mut i = input("kvm-2vcpu-6.18");
    let base = |c: &mut Counters| {
        c.tick(
            0,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.tick(
            1,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.add("TcpExt.ListenOverflows", 0)
            .add("TcpExt.ListenDrops", 0);
    };
    i.samples = run(2, 2, base);
    assert!(!report(&i).has(DoctorId::ListenDrops));
    i.samples = run(2, 2, |c| {
        base(c);
        c.add("TcpExt.ListenOverflows", 40)
            .add("TcpExt.ListenDrops", 40);
    });
    let r = report(&i);
    let f = r.of(DoctorId::ListenDrops).next().expect("fires");
    assert!(
        f.title.contains("80 connection attempts dropped"),
        "{}",
        f.title
    );
    assert!(f.evidence.iter().any(|e| e.what == "net.core.somaxconn"));
}

/// Retransmits with SACK reordering and OFO queueing; `drop` adds softnet drops.
fn reorder_window(drop: u32) -> Vec<host::sampler::Sample> {
    run(2, 3, |c| {
        c.tick(
            0,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.tick(
            1,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
        c.add("Tcp.RetransSegs", 9_000)
            .add("TcpExt.TCPSACKReorder", 3_000)
            .add("TcpExt.TCPOFOQueue", 20_000)
            .add("TcpExt.TCPBacklogDrop", 0)
            .add("TcpExt.TCPRcvQDrop", 0);
        c.softnet[0].1 += drop;
    })
}

#[test]
fn tcp_reordering_fires_without_drops_and_not_with_them() {
    let mut i = input("kvm-2vcpu-6.18");
    i.snapshot
        .sysctls
        .insert("net.ipv4.tcp_congestion_control".into(), "bbr".into());
    i.samples = reorder_window(0);
    let r = report(&i);
    let f = r.of(DoctorId::TcpReordering).next().expect("fires");
    assert!(
        f.title
            .contains("27000 retransmits with 9000 SACK reorderings"),
        "{}",
        f.title
    );
    assert!(f.fix.text.contains("cubic"));
    assert_eq!(
        f.fix.bench,
        Some(nettune_doctor::BenchFix::new(
            nettune_doctor::Workloads::Tcp,
            &["--congestion", "cubic"]
        ))
    );
    i.samples = reorder_window(50);
    assert!(
        !report(&i).has(DoctorId::TcpReordering),
        "drops: loss, not reordering"
    );
    i.samples = run(2, 3, |c| {
        c.add("Tcp.RetransSegs", 9_000)
            .add("TcpExt.TCPSACKReorder", 0);
    });
    assert!(
        !report(&i).has(DoctorId::TcpReordering),
        "no reordering seen"
    );
}

/// The human screen of rate findings: grouped by severity, evidence with its
/// counter, the fix's plan changes and the application's option indented.
#[test]
fn human_screen_of_rate_findings() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = run(2, 3, |c| {
        c.tick(
            0,
            Ticks {
                usr: 65,
                sys: 33,
                softirq: 2,
                ..Ticks::default()
            },
        );
        c.tick(
            1,
            Ticks {
                usr: 30,
                sys: 62,
                softirq: 8,
                ..Ticks::default()
            },
        );
        c.net_rx[0] += 300;
        c.net_rx[1] += 12_800;
        c.softnet[0].0 += 300;
        c.softnet[1].0 += 15_900;
        let p = c.netdev.first().map_or(0, |x| x.1);
        c.netdev = vec![("eth0".into(), p + 16_200, 0)];
        c.add("Udp.InDatagrams", 60_000)
            .add("Udp.RcvbufErrors", 900);
    });
    let r = report(&i);
    insta::assert_snapshot!(nettune_doctor::render::human(
        "nettune doctor: test window",
        &r
    ));
}

/// Counters a hostile capture could hold (drops near 2^63 on two NICs,
/// interrupt counts near 2^64): every rule runs, nothing overflows.
#[test]
fn hostile_counters_do_not_panic() {
    let mut i = input("kvm-2vcpu-6.18");
    let mut a = Counters::cpus(2);
    a.netdev = vec![("eth0".into(), 1, 0), ("eth1".into(), 1, 0)];
    a.interrupts = vec![(38, "virtio2-input.0".into(), vec![0, 0])];
    let mut b = a.clone();
    b.tick(
        0,
        Ticks {
            softirq: 90,
            idle: 10,
            ..Ticks::default()
        },
    );
    b.tick(
        1,
        Ticks {
            idle: 100,
            ..Ticks::default()
        },
    );
    b.net_rx[0] = u64::MAX / 2;
    b.softnet[0] = (u32::MAX, u32::MAX, u32::MAX);
    b.netdev = vec![("eth0".into(), 2, 1 << 63), ("eth1".into(), 2, 1 << 63)];
    b.interrupts = vec![(
        38,
        "virtio2-input.0".into(),
        vec![u64::MAX - 1, u64::MAX - 1],
    )];
    b.add("Tcp.RetransSegs", i64::MAX)
        .add("TcpExt.TCPSACKReorder", i64::MAX)
        .add("TcpExt.TCPBacklogDrop", i64::MAX)
        .add("TcpExt.TCPRcvQDrop", i64::MAX)
        .add("Udp.RcvbufErrors", i64::MAX)
        .add("Udp.InDatagrams", i64::MAX);
    a.add("Tcp.RetransSegs", 0)
        .add("TcpExt.TCPSACKReorder", 0)
        .add("TcpExt.TCPBacklogDrop", 0)
        .add("TcpExt.TCPRcvQDrop", 0)
        .add("Udp.RcvbufErrors", 0)
        .add("Udp.InDatagrams", 0);
    i.samples = samples(&[a, b]);
    let r = report(&i);
    assert!(r.has(DoctorId::SoftnetDrops));
    assert!(r.has(DoctorId::UdpRcvbufErrors));
    assert!(!r.has(DoctorId::TcpReordering), "drops rule it out");
}

/// softnet `dropped` going 0x100 -> 0x1 is a counter reset, not a 32-bit
/// wrap of 4294967041 drops: the finding says the counter went backwards.
#[test]
fn softnet_counter_going_backwards_is_a_reset_in_the_evidence() {
    let mut i = input("kvm-2vcpu-6.18");
    let mut a = Counters::cpus(2);
    for cpu in 0..2 {
        a.tick(
            cpu,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
    }
    a.softnet[0] = (0x1000, 0x100, 0);
    let mut b = a.clone();
    for cpu in 0..2 {
        b.tick(
            cpu,
            Ticks {
                idle: 100,
                ..Ticks::default()
            },
        );
    }
    b.softnet[0] = (0x2000, 0x1, 0);
    i.samples = samples(&[a, b]);
    let r = report(&i);
    let f = r
        .findings
        .iter()
        .find(|f| f.id == DoctorId::SoftnetDrops)
        .expect("a finding naming the reset");
    let text = serde_json::to_string(f).unwrap();
    assert!(!text.contains("4294967041"), "{text}");
    assert!(text.contains("went backwards"), "{text}");
    assert_eq!(f.severity, Severity::Info, "{text}");
}

/// The window built from samples streamed one at a time (a capture) is the
/// window of the same samples held in memory.
#[test]
fn streamed_window_matches_the_window_of_all_samples() {
    let all = softirq_window(2, 1, 59, 2, 5);
    let mut b = nettune_doctor::input::WindowBuilder::new();
    for s in all.iter().cloned() {
        b.push(s);
    }
    assert_eq!(b.count(), all.len());
    let (streamed, held) = (
        b.finish().unwrap(),
        nettune_doctor::input::Window::from_samples(&all).unwrap(),
    );
    assert_eq!(streamed.total, held.total);
    assert_eq!(streamed.intervals, held.intervals);
    assert_eq!(streamed.intervals.len(), all.len() - 1);
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = all;
    let want = ids(&report(&i));
    i.samples = Vec::new();
    i.window = Some(streamed);
    assert_eq!(ids(&report(&i)), want);
}

/// Issue 17: without samples, the rate rules report the totals since boot
/// at info, with the uptime, instead of skipping.
#[test]
fn without_samples_rate_rules_report_since_boot_totals_at_info() {
    let mut i = input("kvm-2vcpu-6.18");
    let r = report(&i);
    for id in [
        DoctorId::SoftnetDrops,
        DoctorId::ListenDrops,
        DoctorId::UdpRcvbufErrors,
    ] {
        assert!(!r.has(id));
    }
    let mut c = Counters::cpus(2);
    c.softnet[0] = (1_000_000, 25_000, 7);
    c.add("TcpExt.ListenOverflows", 12)
        .add("TcpExt.ListenDrops", 12)
        .add("Udp.RcvbufErrors", 300)
        .add("Udp.InDatagrams", 10_000);
    let sample = samples(&[c]).remove(0);
    i.since_boot = Some(nettune_doctor::input::SinceBoot {
        sample,
        uptime_s: Some(2.0 * 86_400.0),
    });
    let r = report(&i);
    for id in [
        DoctorId::SoftnetDrops,
        DoctorId::ListenDrops,
        DoctorId::UdpRcvbufErrors,
    ] {
        let f = r.of(id).next().unwrap_or_else(|| panic!("{id:?} reports"));
        assert_eq!(f.severity, Severity::Info, "{f:?}");
        assert!(f.title.contains("since boot (up 2.0 d)"), "{}", f.title);
    }
    let f = r.of(DoctorId::SoftnetDrops).next().unwrap();
    assert!(f.title.contains("25000 backlog drops"), "{}", f.title);
    assert!(f.evidence.iter().any(|e| e.what.starts_with("CPU 0")));
}
