//! The experiment file of `nettune experiment FILE.toml` (see
//! `docs/experiment.md`): parsing, validation, expansion into cells (full
//! factorial) and a randomized run order from a seed.
//!
//! Pure: the caller reads the file and prefixes errors with its path. Every
//! error names the 1-based line and the key (`factor[2].levels[1]`).
//!
//! Layout: this file holds the validated model; `raw` the TOML schema;
//! `ranges` the accepted ranges (each written once, with its error text
//! derived from it); `validate` the error positions; `parse` the entry
//! point and one module per section (`hosts`, `workloads`, `factors`,
//! `responses`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::stats::{Direction, SplitMix64};

#[macro_use]
mod ranges;
mod factors;
mod hosts;
mod parse;
mod raw;
mod responses;
mod validate;
mod workloads;

pub use factors::{
    is_module_name, is_param_name, is_param_value, Factor, Knob, Level, ModuleParamLevel,
};
pub use hosts::{FleetRoleError, FleetRoles};
pub use parse::parse;

/// Most cells (level combinations) an experiment may have.
pub const MAX_CELLS: usize = 256;
/// Most repeats per cell (fixed, or the cap of `until_ci`).
pub const MAX_REPEATS: u32 = 1000;
/// Most factors.
pub const MAX_FACTORS: usize = 8;
/// Most levels per factor.
pub const MAX_LEVELS: usize = 32;
/// Most workloads.
pub const MAX_WORKLOADS: usize = 16;
/// Most hosts (namespaces) of `[hosts.lab]`; the same as the lab's own
/// `lab::MAX_HOSTS` (a test of the CLI checks that they agree).
pub const MAX_LAB_HOSTS: u32 = 32;
/// Largest experiment file accepted, in bytes.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// An experiment file was refused: where, which key, and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}, key `{key}`: {kind}")]
pub struct ExperimentError {
    /// 1-based line.
    pub line: usize,
    /// The key, as a path (`hosts.lab.rate_mbit`, `factor[2].levels[0]`).
    pub key: String,
    /// What was wrong.
    pub kind: ErrorKind,
}

/// Classes of experiment-file errors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ErrorKind {
    /// TOML syntax or schema error (unknown key, wrong type, missing key),
    /// with the `toml` crate's message.
    #[error("{message}")]
    Toml {
        /// The parser's message (first line).
        message: String,
    },
    /// A value outside its range or of the wrong shape.
    #[error("`{value}` is not {expected}")]
    BadValue {
        /// The value as written (truncated).
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A factor that nettune does not know.
    #[error("unknown factor `{name}` (known: {known})")]
    UnknownFactor {
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: &'static str,
    },
    /// A factor without levels.
    #[error("a factor needs at least one level")]
    EmptyLevels,
    /// The same name or level twice.
    #[error("`{value}` appears twice")]
    Duplicate {
        /// The repeated value.
        value: String,
    },
    /// Too many of something.
    #[error("{count} {what}, more than the limit of {max}")]
    TooMany {
        /// What was counted.
        what: &'static str,
        /// How many.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Something required is missing or two keys conflict.
    #[error("{0}")]
    Structure(&'static str),
}

// ---------------------------------------------------------------------------
// Validated model.

/// A validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    /// Short name: 1 to 32 letters, digits, `_` or `-` (defaults to
    /// "experiment"); never a path, so it can name a directory.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Seed of the run order and of the bootstrap.
    pub seed: u64,
    /// Fixed repeats per cell (the minimum when `until_ci` is set).
    pub repeats: u32,
    /// Warm-up runs per cell, discarded.
    pub warmup: u32,
    /// Sequential stopping, if asked.
    pub until_ci: Option<UntilCi>,
    /// Where the experiment runs.
    pub hosts: Hosts,
    /// What runs in every cell.
    pub workloads: Vec<Workload>,
    /// The factors and their levels.
    pub factors: Vec<Factor>,
    /// `[[factor]] hosts`: the hosts that take a factor's levels, by index
    /// in `factors` (role names such as `server`, or inventory host names);
    /// a factor without an entry applies on every host.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub factor_hosts: BTreeMap<usize, Vec<String>>,
    /// What is measured.
    pub responses: Responses,
}

/// `until_ci`: repeat until the 95 % interval is within `target_pct` % of the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UntilCi {
    /// Target half-width, % of the median.
    pub target_pct: f64,
    /// Cap of repeats.
    pub max_repeats: u32,
}

/// Hosts of an experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hosts {
    /// A lab built on this machine.
    Lab(LabTopology),
    /// Remote `nettune serve` agents, by address.
    Agents(Vec<String>),
    /// Real hosts of a fleet inventory, by role (`[hosts.fleet]`).
    Fleet(FleetHosts),
}

/// `[hosts.fleet]`: which hosts of a fleet inventory (docs/fleet.md) serve,
/// load and probe. Names are checked here; [`FleetHosts::resolve`] finds
/// them in the inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetHosts {
    /// The inventory file as written; a relative path is relative to the
    /// experiment file's directory.
    pub inventory: String,
    /// The bench server: a host name, or a role of exactly one host.
    pub server: String,
    /// The bench clients: a host or role name.
    pub clients: String,
    /// The host that runs the latency probe: a host name, or a role of one host.
    pub probe: Option<String>,
    /// A `--limit` pattern applied to the inventory before the names.
    pub limit: Option<String>,
}

/// Which path the lab's traffic takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LabPath {
    /// Network namespaces joined by veth pairs.
    Veth,
    /// Loopback of one namespace (the lab's overhead baseline).
    Loopback,
}

/// A lab topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabTopology {
    /// Number of hosts (namespaces), 2..=[`MAX_LAB_HOSTS`].
    pub hosts: u32,
    /// Queues per veth, 1..=64.
    pub queues: u32,
    /// Link rate, Mbit/s.
    pub rate_mbit: Option<f64>,
    /// Delay added to the round trip (the lab puts half in each
    /// direction), ms.
    pub delay_ms: f64,
    /// Jitter of that round trip, ms.
    pub jitter_ms: f64,
    /// Loss, %.
    pub loss_pct: f64,
    /// Path of the traffic.
    pub path: LabPath,
}

/// Kinds of bench test: the one catalogue of the engine's tests, so every
/// kind bench runs is a workload of experiment and autotune too.
pub use crate::catalogue::TestKind;

/// One workload (bench options).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Name used in results.
    pub name: String,
    /// The test.
    pub test: TestKind,
    /// Message size, bytes.
    pub size: Option<u32>,
    /// Parallel flows (connections).
    pub flows: u32,
    /// Duration of one run, s.
    pub duration_s: f64,
    /// TCP_NODELAY (Nagle off).
    pub nodelay: bool,
    /// Application send buffer (SO_SNDBUF), bytes.
    pub sndbuf: Option<u32>,
    /// Application receive buffer (SO_RCVBUF), bytes.
    pub rcvbuf: Option<u32>,
}

/// A measured response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Goodput, bit/s.
    Throughput,
    /// Transactions (or connections) per second.
    Transactions,
    /// Median latency of the RR flow or probe.
    LatencyP50,
    /// 99th percentile latency.
    LatencyP99,
    /// Total CPU %.
    CpuPct,
    /// Softirq % per CPU.
    SoftirqPct,
    /// Receiving host's CPU-seconds per unit of the test's work (per GB,
    /// per Mpkt, per 1000 transactions or connections).
    CpuPerWork,
    /// Retransmitted segments.
    Retransmits,
    /// Lost datagrams, %.
    LossPct,
    /// Datagrams per second received (udp-stream): the packet rate.
    PacketRate,
    /// Device interrupts per second on the receiving side (the numbered
    /// rows of `/proc/interrupts`, all CPUs).
    IrqRate,
}

impl Metric {
    const NAMES: &'static [(&'static str, Metric)] = &[
        ("throughput", Metric::Throughput),
        ("transactions", Metric::Transactions),
        ("latency_p50", Metric::LatencyP50),
        ("latency_p99", Metric::LatencyP99),
        ("cpu_pct", Metric::CpuPct),
        ("softirq_pct", Metric::SoftirqPct),
        ("cpu_per_work", Metric::CpuPerWork),
        ("retransmits", Metric::Retransmits),
        ("loss_pct", Metric::LossPct),
        ("packet_rate", Metric::PacketRate),
        ("irq_rate", Metric::IrqRate),
    ];

    /// Which way the metric improves. CPU and softirq % improve neither
    /// way: a rise that comes with more work done is no regression, so
    /// their changes are only "changed"; the CPU cost is judged per work
    /// ([`Metric::CpuPerWork`], lower is better). Nor does the interrupt
    /// rate: fewer interrupts is what moderation buys and what it pays
    /// for in latency.
    pub fn direction(self) -> Direction {
        match self {
            Metric::Throughput | Metric::Transactions | Metric::PacketRate => {
                Direction::HigherIsBetter
            }
            Metric::CpuPct | Metric::SoftirqPct | Metric::IrqRate => Direction::Neither,
            _ => Direction::LowerIsBetter,
        }
    }

    /// How its change is measured: loss, itself a share, in percentage
    /// points; everything else relative to the baseline.
    pub fn change_scale(self) -> crate::stats::ChangeScale {
        match self {
            Metric::LossPct => crate::stats::ChangeScale::Points,
            _ => crate::stats::ChangeScale::Relative,
        }
    }
}

/// A latency probe running alongside the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// A TCP request/response flow.
    Rr,
    /// ICMP echo, as ping.
    Icmp,
}

/// The probe and its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Probe {
    /// Kind of probe.
    pub kind: ProbeKind,
    /// Interval between probes, ms.
    pub interval_ms: f64,
}

/// What is measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Responses {
    /// The metrics.
    pub metrics: Vec<Metric>,
    /// The latency probe, if any.
    pub probe: Option<Probe>,
}

/// One cell: a level of every factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// 0-based index in the expansion order.
    pub index: usize,
    /// `(factor, level)` pairs in factor order.
    pub levels: Vec<(Knob, Level)>,
}

impl Cell {
    /// A short label such as `gro_flush_timeout=20000 napi_defer_hard_irqs=2`.
    pub fn label(&self) -> String {
        if self.levels.is_empty() {
            return "baseline".into();
        }
        let parts: Vec<String> = self
            .levels
            .iter()
            .map(|(k, l)| format!("{}={l}", k.name()))
            .collect();
        parts.join(" ")
    }
}

impl Experiment {
    /// Number of cells (product of the level counts).
    pub fn cell_count(&self) -> usize {
        self.factors
            .iter()
            .try_fold(1usize, |acc, f| acc.checked_mul(f.levels.len()))
            .unwrap_or(usize::MAX)
    }

    /// All cells, full factorial; the last factor varies fastest. Cell 0 has
    /// every factor at its first level: the baseline.
    pub fn cells(&self) -> Vec<Cell> {
        let n = self.cell_count().min(MAX_CELLS);
        (0..n)
            .map(|index| {
                let mut rest = index;
                let mut levels = Vec::with_capacity(self.factors.len());
                for f in self.factors.iter().rev() {
                    let k = f.levels.len().max(1);
                    if let Some(l) = f.levels.get(rest % k) {
                        levels.push((f.knob, l.clone()));
                    }
                    rest /= k;
                }
                levels.reverse();
                Cell { index, levels }
            })
            .collect()
    }

    /// Whether factor `i` applies on a host known by `names` (its role and
    /// its inventory name): every host unless the factor has `hosts`.
    pub fn factor_applies(&self, i: usize, names: &[String]) -> bool {
        self.factor_hosts
            .get(&i)
            .is_none_or(|hs| hs.iter().any(|h| names.contains(h)))
    }

    /// Factor `i`'s name in labels and results: the knob's name, followed by
    /// `@` and its hosts (`coalesce_rx_usecs@server`) when another factor
    /// sets the same knob on other hosts.
    pub fn factor_label(&self, i: usize) -> String {
        let Some(f) = self.factors.get(i) else {
            return String::new();
        };
        let twice = self.factors.iter().filter(|g| g.knob == f.knob).count() > 1;
        match self.factor_hosts.get(&i) {
            Some(hs) if twice => format!("{}@{}", f.knob.name(), hs.join("+")),
            _ => f.knob.name().to_string(),
        }
    }

    /// A cell's `(factor, level)` pairs as results name them
    /// ([`Experiment::factor_label`]).
    pub fn cell_levels(&self, cell: &Cell) -> Vec<(String, String)> {
        cell.levels
            .iter()
            .enumerate()
            .map(|(i, (_, l))| (self.factor_label(i), l.to_string()))
            .collect()
    }

    /// A cell's label as [`Cell::label`], factors named by
    /// [`Experiment::factor_label`].
    pub fn cell_label(&self, cell: &Cell) -> String {
        if cell.levels.is_empty() {
            return "baseline".into();
        }
        let parts: Vec<String> = self
            .cell_levels(cell)
            .into_iter()
            .map(|(k, l)| format!("{k}={l}"))
            .collect();
        parts.join(" ")
    }

    /// One line per factor with `hosts`, for the results' notes.
    pub fn scope_notes(&self) -> Vec<String> {
        self.factor_hosts
            .iter()
            .map(|(i, hs)| {
                format!(
                    "factor[{i}] {}: its levels are applied on {} only (hosts = [{}]); the other hosts keep their own setting",
                    self.factor_label(*i),
                    hs.join(", "),
                    hs.iter().map(|h| format!("{h:?}")).collect::<Vec<_>>().join(", ")
                )
            })
            .collect()
    }

    /// A random permutation of the cell indexes, the same for the same seed.
    pub fn run_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.cell_count().min(MAX_CELLS)).collect();
        SplitMix64::new(self.seed).shuffle(&mut order);
        order
    }
}

#[cfg(test)]
mod tests;
