//! The per-cell table and the list of cells that were not measured, shared
//! by the page and the Markdown summary.

use model::results::{CellResult, CellStatus, ExperimentResults};
use model::stats::Verdict;

use crate::data::MAX_ROWS;
pub(crate) use model::results::table::StatRows;
use model::results::table::{stat_rows, Order};

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

/// The rows (the model's one table builder, by cell), at most [`MAX_ROWS`],
/// units cleaned and capped for the page.
pub(crate) fn rows(r: &ExperimentResults) -> StatRows<'_> {
    stat_rows(r, Order::ByCell, MAX_ROWS, &|u| crate::esc::label(u, 24))
}

/// One row of the drops table: cell, kernel, runs watched, drops, drops
/// per second, the largest reasons (or why the watcher could not run).
pub(crate) struct DropLine {
    pub cell: String,
    pub host: String,
    pub runs: usize,
    pub total: String,
    pub per_sec: String,
    pub reasons: String,
}

/// Drops by reason per cell (the model's builder), at most [`MAX_ROWS`],
/// and the rows left out; none when no run recorded drops.
pub(crate) fn drops(r: &ExperimentResults) -> (Vec<DropLine>, usize) {
    let (rows, left_out) = model::results::table::drops::drop_rows(r, MAX_ROWS);
    let lines = rows
        .iter()
        .map(|d| {
            let mut reasons = if d.runs > 0 { d.top(3) } else { String::new() };
            for (why, n) in &d.unavailable {
                if !reasons.is_empty() {
                    reasons.push_str("; ");
                }
                let why = why.trim_start_matches("drops by reason: ");
                reasons.push_str(&format!("not watched in {n} runs: {why}"));
            }
            let (total, per_sec) = if d.runs > 0 {
                (d.total.to_string(), format!("{:.1}", d.per_sec))
            } else {
                ("—".into(), "—".into())
            };
            DropLine {
                cell: cell_name(d.cell),
                host: d.host.clone(),
                runs: d.runs,
                total,
                per_sec,
                reasons,
            }
        })
        .collect();
    (lines, left_out)
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
