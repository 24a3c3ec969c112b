//! The Measure stage's data: the lab's suite of bench workloads, the
//! metrics its table shows, and the results skeleton and schedule the
//! experiment runner measures them with.

use crate::exec::{Executor, HostId};
use crate::{self as runner, Schedule};
use model::experiment::Metric;
use model::results::Note;
use model::results::{
    CellResult, CellStatus, ExperimentResults, LabInfo, Machine, ResultsKind, WorkloadInfo,
    RESULTS_SCHEMA_VERSION,
};
use model::stats::BootstrapConfig;
use std::collections::BTreeMap;
use std::time::Duration;

/// Warm-up inside each bench run (bench `--warmup`), seconds.
pub const BENCH_WARMUP_S: f64 = 0.5;

/// The suite: (name, bench arguments without duration).
pub const SUITE: &[(&str, &[&str])] = &[
    ("tcp-stream", &["--test", "tcp-stream"]),
    // bench's own default for udp-stream, spelled out so the table can
    // tell when a finding asks for what the suite already does; forced, as
    // before bench stopped forcing by default: inside the lab's namespaces
    // rmem_max is the machine's own and is never raised (its servers have
    // a token, so they force too).
    (
        "udp-stream-64",
        &[
            "--test",
            "udp-stream",
            "--size",
            "64",
            "--rcvbuf",
            "4M",
            "--force-buffers",
        ],
    ),
    ("tcp-rr", &["--test", "tcp-rr"]),
    ("tcp-crr", &["--test", "tcp-crr"]),
];

/// Metrics the table shows, in this order. Not `cpu_pct`: client and
/// server share the machine's CPUs, so busy % is saturated by design (the
/// per-CPU split of every run is kept in `runs[].cpus`); the CPU cost is
/// `cpu_per_work`, CPU-seconds per unit of work done, which a rise of the
/// work alone does not make worse.
pub const METRICS: &[Metric] = &[
    Metric::Throughput,
    Metric::PacketRate,
    Metric::Transactions,
    Metric::LatencyP50,
    Metric::LatencyP99,
    Metric::SoftirqPct,
    Metric::CpuPerWork,
    Metric::LossPct,
];

/// Seconds as bench and doctor take them (`2`, `0.5`).
pub fn fmt_secs(s: f64) -> String {
    let t = format!("{s:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The suite's workloads for runs of `duration` seconds: what results.json
/// records and what the runner runs.
pub fn workloads(duration: f64) -> (Vec<WorkloadInfo>, Vec<runner::WorkloadRun>) {
    let mut info = Vec::new();
    let mut runs = Vec::new();
    for (name, base) in SUITE {
        let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        args.extend([
            "--duration".into(),
            fmt_secs(duration),
            "--warmup".into(),
            fmt_secs(BENCH_WARMUP_S),
        ]);
        let expected = Duration::from_secs_f64(duration + BENCH_WARMUP_S + 0.5);
        info.push(WorkloadInfo {
            name: name.to_string(),
            test: base.get(1).copied().unwrap_or_default().to_string(),
            args: args.clone(),
        });
        runs.push(runner::WorkloadRun {
            name: name.to_string(),
            args,
            expected,
            deadline: expected * 3 + Duration::from_secs(20),
        });
    }
    (info, runs)
}

/// A pending cell.
pub fn cell(index: usize, label: &str) -> CellResult {
    CellResult {
        index,
        label: label.into(),
        levels: Vec::new(),
        status: CellStatus::Pending,
        runs: Vec::new(),
        stats: Vec::new(),
    }
}

/// The results of a lab run before anything is measured.
pub fn skeleton(
    name: &str,
    machine: Machine,
    lab: LabInfo,
    workloads: Vec<WorkloadInfo>,
    cells: Vec<CellResult>,
) -> ExperimentResults {
    let order = cells.iter().map(|c| c.index).collect();
    ExperimentResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kind: ResultsKind::Lab,
        name: name.into(),
        description: String::new(),
        nettune_version: env!("CARGO_PKG_VERSION").into(),
        started: model::time::rfc3339_utc(std::time::SystemTime::now()),
        finished: None,
        interrupted: false,
        seed: BootstrapConfig::default().seed,
        min_effect_pct: model::stats::DEFAULT_MIN_EFFECT_PCT,
        machine,
        lab: Some(lab),
        host_facts: BTreeMap::new(),
        workloads,
        factors: Vec::new(),
        metrics: METRICS.to_vec(),
        baseline_cell: 0,
        run_order: order,
        cells,
        overhead: Vec::new(),
        doctor_before: None,
        doctor_after: None,
        plans: BTreeMap::new(),
        notes: Vec::new(),
        fixes: Vec::new(),
        warnings: Vec::new(),
    }
}

/// The machine of host 0 (its `nettune inspect`), or unknown.
pub fn machine(exec: &mut dyn Executor) -> Machine {
    exec.inspect(HostId(0))
        .ok()
        .map(|s| runner::experiment::machine_of(&s))
        .unwrap_or_default()
}

/// The runner's schedule of the suite: `repeats` runs per workload and
/// cell, no warm-up runs, no overhead runs.
pub fn schedule(
    client: HostId,
    server: HostId,
    runs: Vec<runner::WorkloadRun>,
    repeats: u32,
) -> Schedule {
    Schedule {
        client,
        server,
        workloads: runs,
        warmup: 0,
        repeats,
        until_ci: None,
        bootstrap: BootstrapConfig::default(),
        overhead_repeats: 0,
    }
}

/// What results.json records of the loopback benchmark.
pub fn loopback_info() -> LabInfo {
    LabInfo {
        hosts: 1,
        queues: 0,
        rate_mbit: None,
        delay_ms: 0.0,
        jitter_ms: 0.0,
        loss_pct: 0.0,
        delay_mechanism: "none".into(),
        path: "loopback".into(),
    }
}

/// The note saying what the baseline is and which way the suite runs.
pub fn baseline_note(client: &str, receiver: &str) -> Note {
    Note::baseline(&format!(
        "the kernel's defaults in fresh namespaces (nothing set; udp-stream-64 runs with bench's default SO_RCVBUF of 4 MiB); the suite runs from {client} (client, connecting) to {receiver} (server, receiving); doctor looks at both under load, then each fix is applied in its own cell (host changes on the host that found them, bench flags for application options) and measured against this baseline"
    ))
}
