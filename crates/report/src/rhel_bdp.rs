//! The BDP table of Jeremy Eder's "Performance Tuning: Red Hat Enterprise
//! Linux 6" slides set beside this run's measurements, for the `rhel6-bdp`
//! example (`examples/rhel6-bdp.toml`).
//!
//! The slides (a Linux 2.6-era host, 100 Mbit/s pipe with 100 ms RTT, 5 GB
//! transfers) measured 21 Mbit/s untuned, 58 with the system receive buffer at
//! 1 × BDP, 67 at 1.33 × BDP, and 95 with the application's buffers at
//! 1.33 × BDP too.

use model::experiment::Metric;
use model::results::{CellStatus, ExperimentResults};

use crate::charts::stats_of;
use crate::num::num;

/// The experiment name this table belongs to.
pub(crate) const NAME: &str = "rhel6-bdp";

/// One row of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The slides' setting.
    pub setting: &'static str,
    /// The slides' throughput, Mbit/s.
    pub seed_mbit: f64,
    /// This run's throughput, when measured.
    pub measured: Option<Measured>,
    /// The cell and workload it comes from.
    pub source: String,
}

/// This run's throughput at one setting.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    /// Median, Mbit/s.
    pub median: f64,
    /// Its 95 % interval, Mbit/s.
    pub ci: Option<(f64, f64)>,
    /// Runs.
    pub n: usize,
}

impl Row {
    /// (median, interval, n) as table text.
    pub fn cells(&self) -> (String, String, String) {
        match &self.measured {
            Some(m) => (
                num(m.median),
                m.ci.map_or(model::results::table::PLACEHOLDER.into(), |(lo, hi)| {
                    format!("[{}, {}]", num(lo), num(hi))
                }),
                m.n.to_string(),
            ),
            None => (
                "not measured".into(),
                model::results::table::PLACEHOLDER.into(),
                "0".into(),
            ),
        }
    }
}

/// (setting, tcp_rmem maximum, workload, the slides' Mbit/s), as in the example file.
const SEED: [(&str, u64, &str, f64); 4] = [
    // Untuned then was RHEL 6's 2.6.32, whose tcp_init set tcp_rmem's
    // maximum from memory (1/128 of tcp_mem's pressure value, at least
    // 87380, at most 4 MB); untuned now is today's default, the example's
    // first level.
    (
        "untuned (RHEL 6's 2.6.32: tcp_rmem max from memory, up to 4194304; here today's default 6291456)",
        6_291_456,
        "stream",
        21.0,
    ),
    (
        "system buffer = 1 × BDP (1250000)",
        1_250_000,
        "stream",
        58.0,
    ),
    (
        "system buffer = 1.33 × BDP (1662500)",
        1_662_500,
        "stream",
        67.0,
    ),
    (
        "system and application buffers = 1.33 × BDP",
        1_662_500,
        "stream-appbuf",
        95.0,
    ),
];

/// The rows, when `r` is the `rhel6-bdp` study; `None` otherwise.
pub(crate) fn rows(r: &ExperimentResults) -> Option<Vec<Row>> {
    if r.name != NAME {
        return None;
    }
    let rows = SEED
        .iter()
        .map(|&(setting, rmem_max, workload, seed_mbit)| {
            let cell = r.cells.iter().find(|c| {
                matches!(c.status, CellStatus::Done | CellStatus::Interrupted)
                    && c.levels.iter().any(|(k, v)| {
                        k == "tcp_rmem"
                            && v.split_whitespace()
                                .last()
                                .and_then(|x| x.parse::<u64>().ok())
                                == Some(rmem_max)
                    })
            });
            let stats = cell.and_then(|c| stats_of(c, workload, Metric::Throughput));
            let measured = stats.and_then(|s| {
                let sum = s.summary.as_ref()?;
                let ci = s.median_ci.map(|i| (i.lo / 1e6, i.hi / 1e6));
                Some(Measured {
                    median: sum.median / 1e6,
                    ci,
                    n: sum.n,
                })
            });
            let source = match cell {
                Some(c) => format!("cell #{} {}, workload {workload}", c.index, c.label),
                None => format!("no cell with tcp_rmem max {rmem_max}"),
            };
            Row {
                setting,
                seed_mbit,
                measured,
                source,
            }
        })
        .collect();
    Some(rows)
}
