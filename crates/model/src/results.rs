//! The results of `nettune experiment` and `nettune lab`: what the runner
//! writes to `DIR/results.json` and what `nettune report` reads.
//!
//! Layout of a results directory:
//!
//! ```text
//! DIR/results.json                 ExperimentResults (rewritten atomically after each run)
//! DIR/experiment.toml              the experiment file as given (for --resume)
//! DIR/runs/cell-NNN/WORKLOAD-rMM.json   each run's raw bench JSON (every interval)
//! DIR/report.html, DIR/report.md   written by `nettune report`
//! ```
//!
//! The shape is versioned by [`RESULTS_SCHEMA_VERSION`]; readers refuse a
//! newer major shape with a message rather than guessing. Every field that
//! may be missing in an interrupted run is optional or defaults to empty.

use crate::experiment::Metric;
use crate::findings::HostReports;
pub use crate::note::{Note, NoteKind};
use crate::stats::{Comparison, Interval, Summary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod autotune;
pub mod table;

/// Version of the `results.json` shape.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;

/// Name of the results file inside a results directory.
pub const RESULTS_FILE: &str = "results.json";

/// Which command wrote the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultsKind {
    /// `nettune lab`: a baseline cell and a cell with doctor's plan applied.
    Lab,
    /// `nettune experiment FILE.toml`.
    Experiment,
}

/// The whole results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResults {
    /// [`RESULTS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Which command wrote it.
    pub kind: ResultsKind,
    /// Experiment name.
    pub name: String,
    /// Free text from the experiment file.
    #[serde(default)]
    pub description: String,
    /// nettune version that ran it.
    pub nettune_version: String,
    /// Start, RFC 3339 UTC.
    pub started: String,
    /// End, RFC 3339 UTC; `None` while running or after an interruption.
    #[serde(default)]
    pub finished: Option<String>,
    /// Whether the run was interrupted (Ctrl-C, crash) before every cell ran.
    #[serde(default)]
    pub interrupted: bool,
    /// Seed of the run order and of the bootstrap.
    pub seed: u64,
    /// The practical threshold of the verdicts, % of the baseline
    /// (`--min-effect`; absent in results written before it: 2).
    #[serde(default = "default_min_effect_pct")]
    pub min_effect_pct: f64,
    /// The machine the lab ran on.
    pub machine: Machine,
    /// The lab topology, when the hosts were a lab.
    #[serde(default)]
    pub lab: Option<LabInfo>,
    /// Facts of each host (the bench's host facts JSON, keyed by host name).
    #[serde(default)]
    pub host_facts: BTreeMap<String, serde_json::Value>,
    /// The workloads, in file order.
    pub workloads: Vec<WorkloadInfo>,
    /// The factors, in file order.
    #[serde(default)]
    pub factors: Vec<FactorInfo>,
    /// The metrics measured (the responses).
    pub metrics: Vec<Metric>,
    /// Index of the baseline cell (every factor at its first level).
    pub baseline_cell: usize,
    /// The run order of the cell indexes.
    pub run_order: Vec<usize>,
    /// Every cell, by index.
    pub cells: Vec<CellResult>,
    /// The same workloads over loopback and over the lab path, so the lab's
    /// own cost can be told from the host's.
    #[serde(default)]
    pub overhead: Vec<OverheadRow>,
    /// Doctor's reports of the hosts before any change (its `--json` shape,
    /// each subject prefixed with its host: [`HostReports`]).
    #[serde(default)]
    pub doctor_before: Option<HostReports>,
    /// Doctor's reports after the plan was applied (lab) or at the end.
    #[serde(default)]
    pub doctor_after: Option<HostReports>,
    /// The plans applied, by cell label (the `nettune plan --json` shape).
    #[serde(default)]
    pub plans: BTreeMap<String, serde_json::Value>,
    /// Notes for the reader: the loop's account of the baseline, of what
    /// doctor found and of what was applied, and free remarks (delay
    /// mechanism used, skipped parts).
    #[serde(default)]
    pub notes: Vec<Note>,
    /// `nettune lab`: each fix measured on its own, one cell each (absent
    /// elsewhere and from older results).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<LabFix>,
    /// What weakens the measurement, recomputed with the statistics: runs
    /// on a busy machine, a cell whose runs fell into two states
    /// ([`crate::busy`]). Absent when nothing does, and from older results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The machine that ran the experiment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Hostname.
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    /// Online CPUs.
    pub cpus: u32,
    /// CPU model name, when known.
    #[serde(default)]
    pub cpu_model: Option<String>,
}

/// The lab the experiment ran in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabInfo {
    /// Namespaces.
    pub hosts: u32,
    /// Queues per veth.
    pub queues: u32,
    /// Link rate, Mbit/s.
    #[serde(default)]
    pub rate_mbit: Option<f64>,
    /// Delay added to the round trip (half in each direction), ms.
    #[serde(default)]
    pub delay_ms: f64,
    /// Jitter of that round trip, ms.
    #[serde(default)]
    pub jitter_ms: f64,
    /// Loss, %.
    #[serde(default)]
    pub loss_pct: f64,
    /// `none`, `netem` or `userspace` (the TUN delay line).
    pub delay_mechanism: String,
    /// `veth` or `loopback`.
    pub path: String,
}

/// A workload as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// Name from the file.
    pub name: String,
    /// `tcp-stream`, `udp-stream`, `tcp-rr`, `tcp-crr`.
    pub test: String,
    /// The bench arguments it ran with, for the reader.
    pub args: Vec<String>,
}

/// A factor and its levels, as labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactorInfo {
    /// Knob name (`rps_cpus`).
    pub knob: String,
    /// Level labels in file order.
    pub levels: Vec<String>,
}

/// Where a cell stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CellStatus {
    /// Not run yet.
    Pending,
    /// Every workload ran its repeats (or `--until-ci` stopped it).
    Done,
    /// The host cannot take a level; nothing was measured.
    NotApplicable {
        /// Why, naming the knob and level.
        reason: String,
    },
    /// Interrupted part-way; its runs so far are kept, its changes rolled back.
    Interrupted,
    /// A run failed; the message names what failed.
    Failed {
        /// The error.
        error: String,
    },
}

/// One cell's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// Index in the factorial expansion.
    pub index: usize,
    /// Short label (`rps_cpus=0-1 rps_flow_cnt=4096`, or `baseline`).
    pub label: String,
    /// `(knob, level)` pairs.
    pub levels: Vec<(String, String)>,
    /// State.
    pub status: CellStatus,
    /// Every run, warm-ups included (marked).
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    /// Statistics per workload and metric (warm-ups excluded).
    #[serde(default)]
    pub stats: Vec<MetricStats>,
}

/// One run of one workload in one cell (`Default`: an empty run, for
/// building one field by field).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Workload name.
    pub workload: String,
    /// 0-based repeat number, warm-ups first.
    pub repeat: u32,
    /// A warm-up run, left out of the statistics.
    #[serde(default)]
    pub warmup: bool,
    /// Start, RFC 3339 UTC.
    pub start_time: String,
    /// The run's value of each metric (absent: not measured by this workload).
    pub values: BTreeMap<String, f64>,
    /// Throughput (or transactions) per interval.
    #[serde(default)]
    pub intervals: Vec<IntervalPoint>,
    /// Per-CPU use over the run, receiving side.
    #[serde(default)]
    pub cpus: Vec<CpuPoint>,
    /// Per-CPU softirq % per interval (time series), receiving side.
    #[serde(default)]
    pub softirq_series: Vec<SoftirqPoint>,
    /// Latency CDF points `[latency_us, cumulative fraction]` (RR workloads or
    /// the probe).
    #[serde(default)]
    pub latency_cdf: Vec<[f64; 2]>,
    /// The latency probe's result, when one ran alongside.
    #[serde(default)]
    pub probe: Option<ProbeResult>,
    /// Path of the raw bench JSON, relative to the results directory.
    #[serde(default)]
    pub raw: Option<String>,
    /// What limited the run, from the bench's busiest threads (its first
    /// direction): `the server's recv thread`, `CPU 0, shared by both
    /// threads` or `no single thread`; absent when the bench did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
    /// What else used the machine while the run measured (absent from
    /// older results and from engines that do not report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others: Option<OthersLoad>,
    /// Drops by reason over the run on each kernel the run used (a lab's
    /// namespaces share one), or the one line saying why none; empty in
    /// older results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drops: Vec<crate::drops::run::RunDrops>,
}

/// What else used the machine while a run measured, on the busier of its
/// two ends (judged by [`crate::busy`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OthersLoad {
    /// CPU-seconds per second that processes other than nettune's took
    /// (kernel threads left out; a lower bound: processes that exited in
    /// the window are not seen).
    pub cpus: f64,
    /// Mean steal % over the host's CPUs.
    pub steal_pct: f64,
    /// The busiest other process: `command N.NN CPU-s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top: Option<String>,
}

/// One interval of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntervalPoint {
    /// Seconds since the run's start (end of the interval).
    pub t_s: f64,
    /// bit/s in the interval.
    pub bits_per_sec: f64,
    /// Messages (transactions) per second in the interval.
    pub per_sec: f64,
}

/// One CPU's use over a run, in % of that CPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuPoint {
    /// CPU number.
    pub cpu: u32,
    /// user %.
    pub usr: f64,
    /// system %.
    pub sys: f64,
    /// hard IRQ %.
    pub irq: f64,
    /// softirq %.
    pub softirq: f64,
    /// idle %.
    pub idle: f64,
}

/// Softirq % of one CPU in one interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SoftirqPoint {
    /// Seconds since the run's start.
    pub t_s: f64,
    /// CPU number.
    pub cpu: u32,
    /// softirq % of that CPU (or, where softirq time shows as system time, the
    /// NET_RX share the sampler attributes to it).
    pub pct: f64,
}

/// The latency probe that ran alongside a load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// `rr` or `icmp`.
    pub kind: String,
    /// Probes answered.
    pub count: u64,
    /// Probes lost.
    #[serde(default)]
    pub lost: u64,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
}

/// One fix of `nettune lab`, measured in its own cell against the same
/// baseline: what it applied, where, and which workloads it targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabFix {
    /// Its cell ([`CellResult::index`]).
    pub cell: usize,
    /// The finding it answers (`tcp-reordering`).
    pub finding: String,
    /// The hosts whose doctor found it.
    pub hosts: Vec<String>,
    /// Host changes, one line each: `lab-h1: net.ipv4.tcp_tw_reuse=1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// The same, one line per setting: `rps_cpus=00000003 on 4 devices of
    /// h0, h1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// Application options (socket options of the bench, not host
    /// settings): `--congestion cubic`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app_options: Vec<String>,
    /// The workloads it is measured on.
    pub workloads: Vec<String>,
    /// The command that plans it for a real interface, or that isolates it
    /// further.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// Statistics of one metric of one workload in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricStats {
    /// Workload name.
    pub workload: String,
    /// The metric.
    pub metric: Metric,
    /// Unit for display (`bit/s`, `1/s`, `µs`, `%`, `segments`).
    pub unit: String,
    /// The values the statistics were computed from (warm-ups excluded).
    pub values: Vec<f64>,
    /// Summary (median, mean, sd, n); `None` with no values.
    #[serde(default)]
    pub summary: Option<Summary>,
    /// 95 % bootstrap interval of the median; `None` below three values.
    #[serde(default)]
    pub median_ci: Option<Interval>,
    /// Against the baseline cell (`None` in the baseline cell itself, or with
    /// too few values).
    #[serde(default)]
    pub vs_baseline: Option<Comparison>,
    /// Why `--until-ci` stopped (`target reached`, `cap`), when it was used.
    #[serde(default)]
    pub stop: Option<String>,
    /// The values grouped by what limited their runs
    /// ([`RunRecord::limited_by`]), most runs first; empty when no run says.
    /// More than one group: the median depends on how many runs fell in each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<LimitGroup>,
}

/// The runs of one cell that one thing limited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitGroup {
    /// What limited them ([`RunRecord::limited_by`]).
    pub limited_by: String,
    /// How many runs.
    pub runs: usize,
    /// Their median.
    pub median: f64,
}

impl LimitGroup {
    /// Group `runs` (each a value and what limited its run) by what limited
    /// them, most runs first (then by name); runs that do not say are left out.
    pub fn group<'a>(runs: impl IntoIterator<Item = (f64, Option<&'a str>)>) -> Vec<LimitGroup> {
        let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for (v, l) in runs {
            if let Some(l) = l.filter(|_| v.is_finite()) {
                by.entry(l).or_default().push(v);
            }
        }
        let mut out: Vec<LimitGroup> = by
            .into_iter()
            .filter_map(|(l, vs)| {
                Some(LimitGroup {
                    limited_by: l.to_string(),
                    runs: vs.len(),
                    median: crate::stats::summarize(&vs).ok()?.median,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            b.runs
                .cmp(&a.runs)
                .then_with(|| a.limited_by.cmp(&b.limited_by))
        });
        out
    }

    /// The groups as words, the first with the total: `the server's recv
    /// thread in 9 of 16 runs (median 17.4 Gbit/s), the client's send thread
    /// in 7 (median 34.1 Gbit/s)`; `fmt` writes a median.
    pub fn describe(groups: &[LimitGroup], fmt: &dyn Fn(f64) -> String) -> String {
        let n: usize = groups.iter().map(|g| g.runs).sum();
        let parts: Vec<String> = groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let of = if i == 0 {
                    format!(" of {n} runs")
                } else {
                    String::new()
                };
                format!(
                    "{} in {}{of} (median {})",
                    g.limited_by,
                    g.runs,
                    fmt(g.median)
                )
            })
            .collect();
        parts.join(", ")
    }
}

/// A workload's metric over loopback and over the lab path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverheadRow {
    /// Workload name.
    pub workload: String,
    /// Metric.
    pub metric: Metric,
    /// Over loopback in one namespace.
    pub loopback: Summary,
    /// Over the lab's path between two namespaces.
    pub lab: Summary,
}

/// Refused results files.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// Not JSON of this shape.
    #[error("results file is not valid: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a newer nettune.
    #[error("results schema version {found} is newer than this nettune understands ({RESULTS_SCHEMA_VERSION})")]
    TooNew {
        /// The version found.
        found: u32,
    },
}

impl ExperimentResults {
    /// Parse `results.json` text, refusing newer shapes.
    pub fn from_json(text: &str) -> Result<ExperimentResults, ResultsError> {
        #[derive(Deserialize)]
        struct Head {
            schema_version: u32,
        }
        let head: Head = serde_json::from_str(text)?;
        if head.schema_version > RESULTS_SCHEMA_VERSION {
            return Err(ResultsError::TooNew {
                found: head.schema_version,
            });
        }
        Ok(serde_json::from_str(text)?)
    }

    /// The cell with this index.
    pub fn cell(&self, index: usize) -> Option<&CellResult> {
        self.cells.iter().find(|c| c.index == index)
    }
}

fn default_min_effect_pct() -> f64 {
    crate::stats::DEFAULT_MIN_EFFECT_PCT
}

/// A results file with one n/a cell and nothing measured, for tests.
#[cfg(test)]
pub(crate) fn minimal() -> ExperimentResults {
    ExperimentResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kind: ResultsKind::Experiment,
        name: "x".into(),
        description: String::new(),
        nettune_version: "0.1.0".into(),
        started: "2026-11-24T00:00:00Z".into(),
        finished: None,
        interrupted: false,
        seed: 1,
        min_effect_pct: crate::stats::DEFAULT_MIN_EFFECT_PCT,
        machine: Machine::default(),
        lab: None,
        host_facts: BTreeMap::new(),
        workloads: vec![],
        factors: vec![],
        metrics: vec![Metric::Throughput],
        baseline_cell: 0,
        run_order: vec![0],
        cells: vec![CellResult {
            index: 0,
            label: "baseline".into(),
            levels: vec![],
            status: CellStatus::NotApplicable {
                reason: "no rps_cpus on lo".into(),
            },
            runs: vec![],
            stats: vec![],
        }],
        overhead: vec![],
        doctor_before: None,
        doctor_after: None,
        plans: BTreeMap::new(),
        notes: vec![],
        fixes: Vec::new(),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let r = minimal();
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""state":"not_applicable""#), "{text}");
        assert_eq!(ExperimentResults::from_json(&text).unwrap(), r);
    }

    #[test]
    fn refuses_newer_schema() {
        let mut v = serde_json::to_value(minimal()).unwrap();
        v["schema_version"] = serde_json::json!(RESULTS_SCHEMA_VERSION + 1);
        let e = ExperimentResults::from_json(&v.to_string()).unwrap_err();
        assert!(matches!(e, ResultsError::TooNew { .. }), "{e}");
    }

    #[test]
    fn refuses_garbage_without_panic() {
        assert!(ExperimentResults::from_json("{").is_err());
        assert!(ExperimentResults::from_json(r#"{"schema_version":1}"#).is_err());
    }
}
