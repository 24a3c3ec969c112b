//! Drops by reason per cell: each cell's measured runs (warm-ups left
//! out) summed per kernel that counted them, for the report's table beside
//! the per-cell results.

use crate::drops::run::RunDropsOutcome;
use crate::results::{CellResult, ExperimentResults};
use std::collections::BTreeMap;

/// One cell's drops on one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct DropRow<'a> {
    /// The cell.
    pub cell: &'a CellResult,
    /// Whose kernel (`this machine` for a lab's namespaces).
    pub host: String,
    /// Measured runs whose watcher ran.
    pub runs: usize,
    /// Drops over those runs (exact).
    pub total: u64,
    /// `total` per second watched.
    pub per_sec: f64,
    /// Whether every run's rows were exact counts.
    pub exact: bool,
    /// By reason over the runs, largest first: (reason, count).
    pub reasons: Vec<(String, u64)>,
    /// Why the watcher could not run, once per distinct reason (runs where
    /// it could not).
    pub unavailable: Vec<(String, usize)>,
}

impl DropRow<'_> {
    /// The `top` largest reasons as `NAME count, …` (`~` before sampled
    /// shares), `—` when there were none.
    pub fn top(&self, top: usize) -> String {
        if self.reasons.is_empty() {
            return "—".into();
        }
        let mark = if self.exact { "" } else { "~" };
        let mut parts: Vec<String> = self
            .reasons
            .iter()
            .take(top)
            .map(|(n, c)| format!("{n} {mark}{c}"))
            .collect();
        if self.reasons.len() > top {
            parts.push(format!("{} more", self.reasons.len() - top));
        }
        parts.join(", ")
    }
}

#[derive(Default)]
struct Acc {
    runs: usize,
    total: u64,
    seconds: f64,
    exact: bool,
    reasons: BTreeMap<String, u64>,
    unavailable: BTreeMap<String, usize>,
}

/// The rows, cells in index order and hosts by name, at most `max`; the
/// count of rows left out. Cells whose runs recorded no drops (older
/// results) have no row.
pub fn drop_rows(r: &ExperimentResults, max: usize) -> (Vec<DropRow<'_>>, usize) {
    let mut cells: Vec<&CellResult> = r.cells.iter().collect();
    cells.sort_by_key(|c| c.index);
    let mut out = Vec::new();
    for c in cells {
        let mut per_host: BTreeMap<&str, Acc> = BTreeMap::new();
        for run in c.runs.iter().filter(|r| !r.warmup) {
            for d in &run.drops {
                let a = per_host.entry(d.host.as_str()).or_insert_with(|| Acc {
                    exact: true,
                    ..Acc::default()
                });
                match &d.outcome {
                    RunDropsOutcome::Seen(s) => {
                        a.runs += 1;
                        a.total = a.total.saturating_add(s.total);
                        a.seconds += s.seconds;
                        a.exact &= s.exact;
                        for row in &s.reasons {
                            let v = a.reasons.entry(row.name.clone()).or_insert(0);
                            *v = v.saturating_add(row.count);
                        }
                    }
                    RunDropsOutcome::Unavailable { unavailable } => {
                        *a.unavailable.entry(unavailable.clone()).or_insert(0) += 1;
                    }
                }
            }
        }
        for (host, a) in per_host {
            let mut reasons: Vec<(String, u64)> = a.reasons.into_iter().collect();
            reasons.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
            out.push(DropRow {
                cell: c,
                host: host.to_string(),
                runs: a.runs,
                total: a.total,
                per_sec: if a.seconds > 0.0 {
                    a.total as f64 / a.seconds
                } else {
                    0.0
                },
                exact: a.exact,
                reasons,
                unavailable: a.unavailable.into_iter().collect(),
            });
        }
    }
    let left_out = out.len().saturating_sub(max);
    out.truncate(max);
    (out, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drops::run::{DropsSeen, RunDrops};
    use crate::drops::Row;
    use crate::results::RunRecord;

    fn seen(total: u64, reasons: &[(&str, u64)]) -> RunDrops {
        RunDrops {
            host: "this machine".into(),
            outcome: RunDropsOutcome::Seen(DropsSeen {
                seconds: 2.0,
                total,
                exact: true,
                reasons: reasons
                    .iter()
                    .map(|(n, c)| Row {
                        name: (*n).into(),
                        count: *c,
                        per_sec: *c as f64 / 2.0,
                    })
                    .collect(),
            }),
        }
    }

    #[test]
    fn a_cells_measured_runs_are_summed_per_kernel_and_warmups_left_out() {
        let run = |warmup: bool, d: Vec<RunDrops>| RunRecord {
            warmup,
            drops: d,
            ..RunRecord::default()
        };
        let cell = |index: usize, runs: Vec<RunRecord>| CellResult {
            index,
            label: format!("c{index}"),
            levels: vec![],
            status: crate::results::CellStatus::Done,
            runs,
            stats: vec![],
        };
        let mut r = crate::results::minimal();
        r.cells.push(cell(
            1,
            vec![
                run(true, vec![seen(1000, &[("NO_SOCKET", 1000)])]),
                run(
                    false,
                    vec![seen(30, &[("NO_SOCKET", 20), ("QDISC_DROP", 10)])],
                ),
                run(false, vec![seen(12, &[("QDISC_DROP", 12)])]),
                run(
                    false,
                    vec![RunDrops::unavailable("h1", "drops by reason: x")],
                ),
            ],
        ));
        r.cells.push(cell(0, vec![run(false, vec![])]));
        let (rows, left) = drop_rows(&r, 10);
        assert_eq!(left, 0);
        assert_eq!(rows.len(), 2, "{rows:?}");
        let h1 = &rows[0];
        assert_eq!((h1.host.as_str(), h1.runs), ("h1", 0));
        assert_eq!(h1.unavailable, [("drops by reason: x".to_string(), 1)]);
        let m = &rows[1];
        assert_eq!((m.runs, m.total), (2, 42));
        assert_eq!(m.per_sec, 42.0 / 4.0);
        assert_eq!(m.top(1), "QDISC_DROP 22, 1 more");
        assert_eq!(m.top(5), "QDISC_DROP 22, NO_SOCKET 20");
        let (rows, left) = drop_rows(&r, 1);
        assert_eq!((rows.len(), left), (1, 1));
    }
}
