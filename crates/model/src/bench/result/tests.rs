#![allow(clippy::unwrap_used)]
use super::*;

fn use_(cpu: u32, softirq: f64) -> CpuUse {
    CpuUse {
        cpu,
        usr: 10.0,
        sys: 10.0,
        irq: 0.0,
        softirq,
        steal: 0.0,
        idle: 80.0 - softirq,
    }
}

#[test]
fn a_hostile_servers_interval_cpu_is_bounded_and_checked() {
    let cfg = TestConfig {
        duration_ms: 2000,
        interval_ms: 1000,
        ..TestConfig::default()
    };
    let many: Vec<CpuUse> = (0..10_000).map(|c| use_(c, 5.0)).collect();
    let sent = vec![
        IntervalCpu {
            index: 1,
            cpus: many,
        },
        // Again: only the first of an index counts.
        IntervalCpu {
            index: 1,
            cpus: vec![use_(0, 1.0)],
        },
        // An interval this test does not have.
        IntervalCpu {
            index: 2,
            cpus: vec![use_(0, 1.0)],
        },
        IntervalCpu {
            index: u64::MAX,
            cpus: vec![],
        },
        IntervalCpu {
            index: 0,
            cpus: vec![
                use_(0, f64::NAN),
                use_(1, -1.0),
                use_(2, 1e300),
                use_(3, 7.0),
            ],
        },
    ];
    let got = sanitize_interval_cpu(&cfg, sent);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].index, 1);
    assert_eq!(got[0].cpus.len(), MAX_INTERVAL_CPUS);
    assert_eq!(got[1].index, 0);
    assert_eq!(got[1].cpus, vec![use_(3, 7.0)]);
}

#[test]
fn interval_cpu_lands_in_both_directions_and_an_older_server_is_null() {
    let cfg = TestConfig {
        direction: Direction::Bidir,
        duration_ms: 2000,
        interval_ms: 1000,
        ..TestConfig::default()
    };
    let mut r = BenchResult {
        config: cfg,
        ..BenchResult::default()
    };
    for (index, dir) in [
        (0, FlowDir::Forward),
        (0, FlowDir::Reverse),
        (1, FlowDir::Forward),
    ] {
        r.intervals.push(IntervalReport {
            index,
            dir: Some(dir),
            ..IntervalReport::default()
        });
    }
    let client = vec![
        IntervalCpu {
            index: 0,
            cpus: vec![use_(0, 30.0)],
        },
        IntervalCpu {
            index: 1,
            cpus: vec![use_(0, 40.0)],
        },
    ];
    // An older server sends no `cpu_intervals`: the field defaults to empty.
    let old: SideReport = serde_json::from_value(serde_json::json!({
        "facts": HostFacts::default(), "workers": [], "cpu": CpuReport::default(),
        "udp_snmp": null, "rejected_connections": 0
    }))
    .unwrap();
    assert!(old.cpu_intervals.is_empty());
    attach_interval_cpu(&mut r, client, old.cpu_intervals);
    let c: Vec<_> = r.intervals.iter().map(|i| i.cpu.clone().unwrap()).collect();
    assert_eq!(c[0], c[1], "both directions of index 0");
    assert_eq!(c[0].client.as_ref().unwrap()[0].softirq, 30.0);
    assert_eq!(c[2].client.as_ref().unwrap()[0].softirq, 40.0);
    assert!(c.iter().all(|x| x.server.is_none()));
    let v = serde_json::to_value(&r.intervals[0]).unwrap();
    assert!(
        v["cpu"]["server"].is_null() && v["cpu"]["client"].is_array(),
        "{v}"
    );
}

#[test]
fn cut_short_rates_over_the_measured_part() {
    let cfg = TestConfig {
        test: TestKind::UdpRr,
        duration_ms: 10_000,
        interval_ms: 1_000,
        ..TestConfig::default()
    };
    let mut r = BenchResult {
        config: cfg,
        results: vec![DirSummary {
            bytes: Bytes(1000),
            msgs: 500,
            seconds: 10.0,
            ..DirSummary::default()
        }],
        intervals: (0..10)
            .map(|i| IntervalReport {
                index: i,
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                ..IntervalReport::default()
            })
            .collect(),
        ..BenchResult::default()
    };
    cut_short(&mut r, 2.5);
    assert!(r.interrupted);
    assert_eq!(r.results[0].seconds, 2.5);
    assert_eq!(r.results[0].per_sec, 200.0);
    assert_eq!(r.results[0].bits_per_sec, 3200.0);
    assert_eq!(r.intervals.len(), 3);
    assert!(
        r.notes[0].contains("interrupted after 2.50 s"),
        "{:?}",
        r.notes
    );
    let mut w = r.clone();
    cut_short(&mut w, -1.0);
    assert_eq!(w.results[0].per_sec, 0.0);
    assert!(w.intervals.is_empty());
}
