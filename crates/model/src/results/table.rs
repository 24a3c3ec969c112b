//! The one builder of the results tables: which statistics of an
//! [`ExperimentResults`] become rows, in which order, and their text. The
//! terminal (lab and experiment), the report's page and its Markdown all
//! print these rows; only the layout and the escaping are theirs.

use super::{CellResult, ExperimentResults, MetricStats};
use crate::stats::Verdict;

/// The text of a missing value (no median yet, no interval, no comparison).
pub const PLACEHOLDER: &str = "-";
/// The change and the verdict of the baseline cell's own rows.
pub const BASELINE_WORD: &str = "baseline";

/// The text of one statistic, as every results table shows it (the
/// terminal's, the Markdown summary's and the page's): the median and its
/// 95 % CI in the median's scale, and the change against the baseline with
/// its interval (`+16.6 % [+14.3, +18.9]`, or the difference in the metric's
/// unit when the baseline median is zero). `None` where there is nothing to
/// show; each table prints its own placeholder.
#[derive(Debug, Clone, PartialEq)]
pub struct StatText {
    /// The median.
    pub median: Option<String>,
    /// Its 95 % interval.
    pub ci: Option<String>,
    /// The change against the baseline with its interval.
    pub change: Option<String>,
    /// The verdict on that change.
    pub verdict: Option<crate::stats::Verdict>,
    /// The verdict in words ([`verdict_text`]).
    pub verdict_text: Option<String>,
}

impl StatText {
    /// The text of `s`.
    pub fn of(s: &MetricStats) -> StatText {
        StatText::in_unit(s, &s.unit)
    }

    /// The text of `s` with its unit spelled `unit` (a page passes the
    /// unit from results.json cleaned and capped).
    pub fn in_unit(s: &MetricStats, unit: &str) -> StatText {
        let median = s.summary.as_ref().map(|x| x.median);
        let scale = crate::metric::Scale::for_unit(unit, median.unwrap_or(0.0));
        let change = s
            .vs_baseline
            .as_ref()
            .map(|v| match (&v.change_pct, v.scale) {
                (Some(p), crate::stats::ChangeScale::Relative) => {
                    format!("{:+.1} % [{:+.1}, {:+.1}]", p.estimate, p.lo, p.hi)
                }
                (_, crate::stats::ChangeScale::Points) => {
                    let d = v.difference;
                    format!("{:+.2} pp [{:+.2}, {:+.2}]", d.estimate, d.lo, d.hi)
                }
                (None, _) => {
                    let d = v.difference;
                    let sign = if d.estimate > 0.0 { "+" } else { "" };
                    format!(
                        "{sign}{} {}",
                        scale.fmt(d.estimate),
                        scale.fmt_range(d.lo, d.hi)
                    )
                }
            });
        StatText {
            median: median.map(|m| scale.fmt(m)),
            ci: s.median_ci.map(|i| scale.fmt_range(i.lo, i.hi)),
            change,
            verdict: s.vs_baseline.as_ref().map(|v| v.verdict),
            verdict_text: s.vs_baseline.as_ref().map(verdict_text),
        }
    }
}

/// A verdict as every table writes it: `gain`, `no change`, or
/// `inconclusive (~12 more runs)` with the runs that would tell.
pub fn verdict_text(c: &crate::stats::Comparison) -> String {
    match c.more_runs {
        Some(m) if m >= crate::stats::MAX_MORE_RUNS => {
            format!("{} (>{m} more runs)", c.verdict)
        }
        Some(m) => format!("{} (~{m} more runs)", c.verdict),
        None => c.verdict.to_string(),
    }
}

/// The order of the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Workload, then metric, then cell: a metric's cells one under the
    /// other (the terminal's experiment table).
    ByMetric,
    /// Cell, then workload, then metric (the report's "Results per cell").
    ByCell,
}

/// The text of one statistic, with [`PLACEHOLDER`] for what is missing.
#[derive(Debug, Clone, PartialEq)]
pub struct StatCells {
    /// The median.
    pub median: String,
    /// Its 95 % interval.
    pub ci: String,
    /// The change against the baseline with its interval ([`BASELINE_WORD`]
    /// in the baseline cell).
    pub change: String,
    /// The verdict on that change; `None` in the baseline or without a comparison.
    pub verdict: Option<Verdict>,
    /// The verdict in words (`inconclusive (~12 more runs)`); `None` as `verdict`.
    pub verdict_text: Option<String>,
    /// The baseline cell's.
    pub baseline: bool,
}

impl StatCells {
    /// The text of `s`, its unit spelled `unit` (a page passes the unit from
    /// results.json cleaned and capped); `baseline` says it is the baseline
    /// cell's.
    pub fn of(s: &MetricStats, unit: &str, baseline: bool) -> StatCells {
        let t = StatText::in_unit(s, unit);
        let dash = || PLACEHOLDER.to_string();
        StatCells {
            median: t.median.unwrap_or_else(dash),
            ci: t.ci.unwrap_or_else(dash),
            change: if baseline {
                BASELINE_WORD.to_string()
            } else {
                t.change.unwrap_or_else(dash)
            },
            verdict: if baseline { None } else { t.verdict },
            verdict_text: if baseline { None } else { t.verdict_text },
            baseline,
        }
    }

    /// The verdict column: [`BASELINE_WORD`], the verdict in words, or
    /// [`PLACEHOLDER`] without a comparison.
    pub fn verdict_word(&self) -> String {
        if self.baseline {
            return BASELINE_WORD.to_string();
        }
        self.verdict_text
            .clone()
            .unwrap_or_else(|| PLACEHOLDER.to_string())
    }
}

/// One row: a metric of a workload in a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct StatRow<'a> {
    /// The cell.
    pub cell: &'a CellResult,
    /// The statistic.
    pub stats: &'a MetricStats,
    /// Whether the cell is the baseline.
    pub baseline: bool,
    /// Runs behind the summary; the values kept when there is no summary.
    pub n: usize,
    /// Its text.
    pub text: StatCells,
}

/// The rows of a table, and how many were left out past the cap.
#[derive(Debug, Clone, PartialEq)]
pub struct StatRows<'a> {
    /// At most the cap given to [`stat_rows`].
    pub rows: Vec<StatRow<'a>>,
    /// Rows past the cap.
    pub left_out: usize,
}

/// Workloads in the results' order, then those only the statistics name.
fn workload_order(r: &ExperimentResults) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let named = r.workloads.iter().map(|w| w.name.as_str());
    let in_stats = r
        .cells
        .iter()
        .flat_map(|c| c.stats.iter().map(|s| s.workload.as_str()));
    for name in named.chain(in_stats) {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Every statistic of every cell as a row, in `order`, at most `max` rows;
/// `unit` spells a statistic's unit (the identity, or a page's cleaned one).
pub fn stat_rows<'a>(
    r: &'a ExperimentResults,
    order: Order,
    max: usize,
    unit: &dyn Fn(&str) -> String,
) -> StatRows<'a> {
    let workloads = workload_order(r);
    let rank = |s: &MetricStats| {
        (
            workloads
                .iter()
                .position(|w| *w == s.workload)
                .unwrap_or(usize::MAX),
            r.metrics
                .iter()
                .position(|m| *m == s.metric)
                .unwrap_or(usize::MAX),
        )
    };
    let mut all: Vec<(&CellResult, &MetricStats)> = r
        .cells
        .iter()
        .flat_map(|c| c.stats.iter().map(move |s| (c, s)))
        .collect();
    match order {
        Order::ByMetric => all.sort_by_key(|(c, s)| (rank(s), c.index)),
        Order::ByCell => all.sort_by_key(|(c, s)| (c.index, rank(s))),
    }
    let left_out = all.len().saturating_sub(max);
    let rows = all
        .into_iter()
        .take(max)
        .map(|(c, s)| {
            let baseline = c.index == r.baseline_cell;
            StatRow {
                cell: c,
                stats: s,
                baseline,
                n: s.summary.as_ref().map_or(s.values.len(), |x| x.n),
                text: StatCells::of(s, &unit(&s.unit), baseline),
            }
        })
        .collect();
    StatRows { rows, left_out }
}

pub mod drops;

#[cfg(test)]
mod tests;
