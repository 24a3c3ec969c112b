//! The SYNTHETIC results fixture: made-up, deterministic numbers in the
//! `results.json` shape, for testing the report. Not a measurement.
//!
//! `tests/fixtures/synthetic-results.json` is this fixture serialized; the
//! CLI's tests read that file. `fixture_file_is_current` (in `render.rs`)
//! checks it; `UPDATE_FIXTURE=1 cargo test -p nettune-report --test render`
//! rewrites it.

#![allow(dead_code)]

use std::collections::BTreeMap;

use model::experiment::Metric;
use model::results::*;
use model::stats::{compare, median_interval, summarize, BootstrapConfig, Direction};
use serde_json::json;

/// Path of the serialized fixture.
pub const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/synthetic-results.json"
);

/// Doctor's reports as results.json holds them, from their JSON.
fn reports(v: serde_json::Value) -> model::findings::HostReports {
    serde_json::from_value(v).expect("a doctor report of the fixture")
}

/// A small deterministic wobble in [-1, 1] for run `i`, interval `j`.
fn wobble(i: u32, j: u32) -> f64 {
    let x = (i.wrapping_mul(7919) ^ j.wrapping_mul(104_729)) % 200;
    f64::from(x) / 100.0 - 1.0
}

struct CellSpec {
    index: usize,
    label: &'static str,
    level: &'static str,
    status: CellStatus,
    runs: u32,
    /// Mean throughput, bit/s.
    mbit: f64,
    /// Mean transactions/s of the RR workload.
    tps: f64,
    /// Softirq % of CPU 0 and CPU 1.
    softirq: [f64; 2],
}

fn runs_of(spec: &CellSpec) -> Vec<RunRecord> {
    let mut out = Vec::new();
    for (w, test) in [("stream", "tcp-stream"), ("rr", "tcp-rr")] {
        for rep in 0..spec.runs {
            let warmup = rep == 0;
            let seed = spec.index as u32 * 100 + rep + if test == "tcp-rr" { 50 } else { 0 };
            let level = if w == "stream" { spec.mbit } else { spec.tps };
            let run_value = level * (1.0 + 0.01 * wobble(seed, 99));
            let intervals: Vec<IntervalPoint> = (1..=10)
                .map(|j| {
                    let v = run_value * (1.0 + 0.03 * wobble(seed, j));
                    IntervalPoint {
                        t_s: f64::from(j) * 0.5,
                        bits_per_sec: if w == "stream" { v } else { v * 8.0 * 64.0 },
                        per_sec: if w == "stream" { v / 8.0 / 65536.0 } else { v },
                    }
                })
                .collect();
            let cpus = (0..2u32)
                .map(|c| {
                    let s = spec.softirq[c as usize] * (1.0 + 0.05 * wobble(seed, c));
                    CpuPoint {
                        cpu: c,
                        usr: 5.0,
                        sys: 20.0,
                        irq: 0.5,
                        softirq: s,
                        idle: 100.0 - 25.5 - s,
                    }
                })
                .collect();
            let softirq_series = (1..=10)
                .flat_map(|j| {
                    (0..2u32).map(move |c| SoftirqPoint {
                        t_s: f64::from(j) * 0.5,
                        cpu: c,
                        pct: spec.softirq[c as usize] * (1.0 + 0.1 * wobble(seed + c, j)),
                    })
                })
                .collect();
            let mut values = BTreeMap::new();
            let (latency_cdf, probe) = if w == "rr" {
                let base = 1e6 / spec.tps;
                let cdf = (0..=20)
                    .map(|k| {
                        let f = f64::from(k) / 20.0;
                        [base * (0.6 + 0.8 * f + 0.6 * f.powi(8)), f]
                    })
                    .collect();
                values.insert("transactions".into(), run_value);
                values.insert(
                    "latency_p99".into(),
                    base * 1.7 * (1.0 + 0.02 * wobble(seed, 77)),
                );
                let probe = ProbeResult {
                    kind: "rr".into(),
                    count: 500,
                    lost: 0,
                    p50_us: base,
                    p99_us: base * 1.7,
                };
                (cdf, Some(probe))
            } else {
                values.insert("throughput".into(), run_value);
                (vec![], None)
            };
            out.push(RunRecord {
                workload: w.into(),
                repeat: rep,
                warmup,
                start_time: format!("2026-11-24T01:{:02}:{:02}Z", spec.index * 5, rep * 6),
                values,
                intervals,
                cpus,
                softirq_series,
                latency_cdf,
                probe,
                raw: Some(format!("runs/cell-{:03}/{w}-r{rep:02}.json", spec.index)),
                limited_by: None,
                others: None,
                drops: vec![drops_of(spec.index, rep)],
            });
        }
    }
    out
}

fn stats_of(runs: &[RunRecord], baseline: Option<&[RunRecord]>, seed: u64) -> Vec<MetricStats> {
    let cfg = BootstrapConfig {
        seed,
        ..BootstrapConfig::default()
    };
    let pick = |rs: &[RunRecord], w: &str, key: &str| -> Vec<f64> {
        rs.iter()
            .filter(|r| !r.warmup && r.workload == w)
            .filter_map(|r| r.values.get(key).copied())
            .collect()
    };
    let mut out = Vec::new();
    for (w, metric, key, unit) in [
        ("stream", Metric::Throughput, "throughput", "bit/s"),
        ("rr", Metric::Transactions, "transactions", "1/s"),
        ("rr", Metric::LatencyP99, "latency_p99", "µs"),
    ] {
        let values = pick(runs, w, key);
        let direction = match metric {
            Metric::Throughput | Metric::Transactions => Direction::HigherIsBetter,
            _ => Direction::LowerIsBetter,
        };
        out.push(MetricStats {
            workload: w.into(),
            metric,
            unit: unit.into(),
            summary: summarize(&values).ok(),
            median_ci: median_interval(&values, &cfg).ok(),
            vs_baseline: baseline
                .and_then(|b| compare(&values, &pick(b, w, key), direction, &cfg).ok()),
            stop: None,
            values,
            limits: vec![],
        });
    }
    out
}

/// The synthetic fixture: four cells (baseline, a gain, an interrupted one,
/// an n/a one), doctor before and after, a plan, overhead rows.
pub fn synthetic() -> ExperimentResults {
    let specs = [
        CellSpec {
            index: 0,
            label: "baseline",
            level: "off",
            status: CellStatus::Done,
            runs: 6,
            mbit: 41.0e6,
            tps: 9_000.0,
            softirq: [62.0, 3.0],
        },
        CellSpec {
            index: 1,
            label: "rps_cpus=0-1",
            level: "0-1",
            status: CellStatus::Done,
            runs: 6,
            mbit: 58.0e6,
            tps: 10_400.0,
            softirq: [34.0, 31.0],
        },
        CellSpec {
            index: 2,
            label: "rps_cpus=1",
            level: "1",
            status: CellStatus::Interrupted,
            runs: 3,
            mbit: 50.0e6,
            tps: 9_500.0,
            softirq: [20.0, 45.0],
        },
        CellSpec {
            index: 3,
            label: "rps_cpus=0-3",
            level: "0-3",
            status: CellStatus::NotApplicable {
                reason: "rps_cpus 0-3: CPUs 2-3 are not online (this host has 2)".into(),
            },
            runs: 0,
            mbit: 0.0,
            tps: 0.0,
            softirq: [0.0, 0.0],
        },
    ];
    let baseline_runs = runs_of(&specs[0]);
    let cells = specs
        .iter()
        .map(|s| {
            let runs = runs_of(s);
            let stats = if s.runs == 0 {
                vec![]
            } else if s.index == 0 {
                stats_of(&runs, None, 11)
            } else {
                stats_of(&runs, Some(&baseline_runs), 11 + s.index as u64)
            };
            CellResult {
                index: s.index,
                label: s.label.into(),
                levels: vec![("rps_cpus".into(), s.level.into())],
                status: s.status.clone(),
                runs,
                stats,
            }
        })
        .collect();
    let finding = |id: &str, sev: &str, subject: &str, title: &str| {
        json!({"id": id, "severity": sev, "subject": subject, "title": title,
               "evidence": [], "why": "", "fix": {"text": "", "changes": [], "command": null, "app": null},
               "source": "synthetic fixture"})
    };
    let summary = |median: f64| model::stats::Summary {
        n: 5,
        median,
        mean: median,
        std_dev: Some(median * 0.01),
        min: median * 0.98,
        max: median * 1.02,
    };
    let mut host_facts = BTreeMap::new();
    host_facts.insert(
        "nt-fixture-a".to_string(),
        json!({"hostname": "nt-fixture-a", "kernel": "6.18.0-fixture", "cpus": 2, "ifaces": ["veth0"], "note": "synthetic"}),
    );
    host_facts.insert(
        "nt-fixture-b".to_string(),
        json!({"hostname": "nt-fixture-b", "kernel": "6.18.0-fixture", "cpus": 2, "ifaces": ["veth1"], "note": "synthetic"}),
    );
    let mut plans = BTreeMap::new();
    plans.insert(
        "#1 rps_cpus=0-1".to_string(),
        json!({"schema_version": 1, "profile": "experiment", "changes": [
            {"phase": "steering", "knob": "rps_cpus",
             "target": {"kind": "file", "path": "/sys/class/net/veth1/queues/rx-0/rps_cpus", "format": "mask"},
             "before": "0", "after": "3", "rule": "experiment-factor",
             "reason": "factor rps_cpus level 0-1 (synthetic fixture)", "source": "experiment file"}
        ]}),
    );
    ExperimentResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kind: ResultsKind::Experiment,
        name: "synthetic-fixture".into(),
        description: "SYNTHETIC FIXTURE: made-up numbers that test the report's rendering; not a measurement.".into(),
        nettune_version: "0.1.0".into(),
        started: "2026-11-24T01:00:00Z".into(),
        finished: None,
        interrupted: true,
        seed: 11,
        min_effect_pct: model::stats::DEFAULT_MIN_EFFECT_PCT,
        machine: Machine {
            hostname: "fixture-host".into(),
            kernel: "6.18.0-fixture".into(),
            cpus: 2,
            cpu_model: Some("Synthetic CPU @ 2.0GHz".into()),
        },
        lab: Some(LabInfo {
            hosts: 2,
            queues: 2,
            rate_mbit: Some(100.0),
            delay_ms: 10.0,
            jitter_ms: 0.0,
            loss_pct: 0.0,
            delay_mechanism: "userspace".into(),
            path: "veth".into(),
        }),
        host_facts,
        workloads: vec![
            WorkloadInfo {
                name: "stream".into(),
                test: "tcp-stream".into(),
                args: vec!["--test".into(), "tcp-stream".into(), "--duration".into(), "5".into()],
            },
            WorkloadInfo {
                name: "rr".into(),
                test: "tcp-rr".into(),
                args: vec!["--test".into(), "tcp-rr".into(), "--duration".into(), "5".into()],
            },
        ],
        factors: vec![FactorInfo {
            knob: "rps_cpus".into(),
            levels: vec!["off".into(), "0-1".into(), "1".into(), "0-3".into()],
        }],
        metrics: vec![Metric::Throughput, Metric::Transactions, Metric::LatencyP99],
        baseline_cell: 0,
        run_order: vec![1, 0, 3, 2],
        cells,
        overhead: vec![OverheadRow {
            workload: "stream".into(),
            metric: Metric::Throughput,
            loopback: summary(9.1e9),
            lab: summary(7.4e9),
        }],
        doctor_before: Some(reports(json!({"schema_version": 1, "findings": [
            finding("softirq-concentrated", "warning", "veth1", "softirq on one CPU: CPU 0 at 62 % while CPU 1 idles"),
            finding("tuned", "info", "host", "<script>alert('fixture')</script> title | with pipe"),
        ], "skipped": []}))),
        doctor_after: Some(reports(json!({"schema_version": 1, "findings": [
            finding("tuned", "info", "host", "<script>alert('fixture')</script> title | with pipe"),
        ], "skipped": []}))),
        plans,
        notes: vec![
            "SYNTHETIC FIXTURE: every number here is made up; it tests the report, not a host.".into(),
            "delay line: the userspace TUN forwarder (this kernel has no netem)".into(),
        ],
        fixes: Vec::new(),
        warnings: Vec::new(),
    }
}

/// A run's drops by reason: a lab's one kernel, exact counts that grow with
/// the cell's index.
fn drops_of(cell: usize, rep: u32) -> model::drops::run::RunDrops {
    let qdisc = 80 * (cell as u64 + 1) + u64::from(rep);
    let rows = [("QDISC_DROP", qdisc), ("NO_SOCKET", 3)];
    model::drops::run::RunDrops {
        host: "this machine".into(),
        outcome: model::drops::run::RunDropsOutcome::Seen(model::drops::run::DropsSeen {
            seconds: 10.0,
            total: qdisc + 3,
            exact: true,
            reasons: rows
                .iter()
                .map(|(n, c)| model::drops::Row {
                    name: (*n).into(),
                    count: *c,
                    per_sec: *c as f64 / 10.0,
                })
                .collect(),
        }),
    }
}
