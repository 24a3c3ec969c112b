//! The per-cell table and the list of cells that were not measured, shared
//! by the page and the Markdown summary.

use model::results::{CellResult, CellStatus, ExperimentResults};
use model::stats::Verdict;

use crate::data::{workload_names, MAX_METRICS, MAX_ROWS, MAX_WORKLOADS};
use crate::num::metric_name;
use model::metric::StatText;

/// One row: a metric of a workload in a cell. Text is raw (not escaped).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub cell: String,
    pub status: &'static str,
    pub workload: String,
    pub metric: &'static str,
    pub n: String,
    pub median: String,
    pub ci: String,
    pub change: String,
    /// `None` in the baseline or without a comparison.
    pub verdict: Option<Verdict>,
    /// The verdict in words (`inconclusive (~12 more runs)`).
    pub verdict_text: Option<String>,
    pub baseline: bool,
    /// Why `--until-ci` stopped, if it ran.
    pub stop: String,
}

/// A cell's name in tables: `#3 tcp_rmem=…`.
pub(crate) fn cell_name(c: &CellResult) -> String {
    format!("#{} {}", c.index, c.label)
}

/// A status word.
pub(crate) fn status_word(s: &CellStatus) -> &'static str {
    match s {
        CellStatus::Pending => "pending",
        CellStatus::Done => "done",
        CellStatus::NotApplicable { .. } => "n/a",
        CellStatus::Interrupted => "interrupted",
        CellStatus::Failed { .. } => "failed",
    }
}

fn sorted_cells(r: &ExperimentResults) -> Vec<&CellResult> {
    let mut cells: Vec<&CellResult> = r.cells.iter().collect();
    cells.sort_by_key(|c| c.index);
    cells
}

/// The rows, and how many were left out past [`MAX_ROWS`].
pub(crate) fn rows(r: &ExperimentResults) -> (Vec<Row>, usize) {
    let workloads = workload_names(r, MAX_WORKLOADS);
    let mut out = Vec::new();
    let mut left_out = 0usize;
    for c in sorted_cells(r) {
        let mut stats: Vec<_> = c.stats.iter().collect();
        stats.sort_by_key(|s| {
            (
                workloads
                    .iter()
                    .position(|w| *w == s.workload)
                    .unwrap_or(usize::MAX),
                r.metrics
                    .iter()
                    .take(MAX_METRICS)
                    .position(|m| *m == s.metric)
                    .unwrap_or(usize::MAX),
            )
        });
        for s in stats {
            if out.len() >= MAX_ROWS {
                left_out = left_out.saturating_add(1);
                continue;
            }
            let baseline = c.index == r.baseline_cell;
            let t = StatText::in_unit(s, &crate::esc::label(&s.unit, 24));
            let change = if baseline {
                "baseline".to_string()
            } else {
                t.change.unwrap_or_else(|| "–".to_string())
            };
            out.push(Row {
                cell: cell_name(c),
                status: status_word(&c.status),
                workload: s.workload.clone(),
                metric: metric_name(s.metric),
                n: s.summary
                    .as_ref()
                    .map_or(s.values.len(), |x| x.n)
                    .to_string(),
                median: t.median.unwrap_or_else(|| "–".into()),
                ci: t.ci.unwrap_or_else(|| "–".into()),
                change,
                verdict: if baseline { None } else { t.verdict },
                verdict_text: if baseline { None } else { t.verdict_text },
                baseline,
                stop: s.stop.clone().unwrap_or_default(),
            });
        }
    }
    (out, left_out)
}

/// Cells that were not (fully) measured: (cell, status, reason).
pub(crate) fn unmeasured(r: &ExperimentResults) -> Vec<(String, &'static str, String)> {
    sorted_cells(r)
        .into_iter()
        .filter_map(|c| {
            let reason = match &c.status {
                CellStatus::Done => return None,
                CellStatus::NotApplicable { reason } => reason.clone(),
                CellStatus::Failed { error } => error.clone(),
                CellStatus::Interrupted => {
                    "interrupted part-way: its runs so far are kept, its changes rolled back".into()
                }
                CellStatus::Pending => "not run (the experiment stopped before it)".into(),
            };
            Some((cell_name(c), status_word(&c.status), reason))
        })
        .take(MAX_ROWS)
        .collect()
}

/// A row's verdict in words: `baseline`, `gain`, `no change`,
/// `inconclusive (~12 more runs)`, or `–` without a comparison.
pub(crate) fn verdict_word(row: &Row) -> String {
    if row.baseline {
        return "baseline".into();
    }
    row.verdict_text.clone().unwrap_or_else(|| "–".into())
}

/// The report's headline: what was compared with what, and the verdicts
/// counted over every cell's statistics (the table may leave rows out).
pub(crate) fn headline(r: &ExperimentResults) -> String {
    let others = r
        .cells
        .iter()
        .filter(|c| c.index != r.baseline_cell)
        .count();
    let base = r.baseline_cell;
    let mut counts = [0usize; 6];
    for c in r.cells.iter().filter(|c| c.index != r.baseline_cell) {
        for s in &c.stats {
            let k = match s.vs_baseline.as_ref().map(|v| v.verdict) {
                Some(Verdict::Gain) => 0,
                Some(Verdict::Regression) => 1,
                Some(Verdict::NoChange) => 2,
                Some(Verdict::Changed) => 3,
                Some(Verdict::Inconclusive) => 4,
                None => 5,
            };
            counts[k] = counts[k].saturating_add(1);
        }
    }
    let words = [
        ("gain", "gains"),
        ("regression", "regressions"),
        ("no change", "no change"),
        ("changed", "changed"),
        ("inconclusive", "inconclusive"),
        ("without a comparison", "without a comparison"),
    ];
    let said: Vec<String> = counts
        .iter()
        .zip(words)
        .filter(|(n, _)| **n > 0)
        .map(|(n, (one, many))| format!("{n} {}", if *n == 1 { one } else { many }))
        .collect();
    let workloads = r.workloads.len();
    let verdicts = if said.is_empty() {
        "no verdicts yet".to_string()
    } else {
        said.join(", ")
    };
    let results: usize = counts.iter().sum();
    format!(
        "{others} cell{} compared with baseline cell #{base} over {workloads} workload{}, {results} result{}: {verdicts}.",
        if others == 1 { "" } else { "s" },
        if workloads == 1 { "" } else { "s" },
        if results == 1 { "" } else { "s" },
    )
}
