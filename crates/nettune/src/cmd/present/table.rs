//! The results tables of the terminal: the lab's before/after table and
//! the experiment's table, one row formatter and one column layout.

use super::status_text;
use model::results::table::{stat_rows, Order, StatCells, PLACEHOLDER};
use model::results::NoteKind;
use model::results::{CellResult, CellStatus, ExperimentResults, LimitGroup, MetricStats};
use model::stats::Verdict;
use runner::loop_::BASELINE;
use std::fmt::Write as _;

/// A statistic's text outside any baseline comparison column.
fn stat_cells(s: &MetricStats) -> StatCells {
    StatCells::of(s, &s.unit, false)
}

/// Left-aligned columns, two spaces apart, trailing blanks trimmed.
fn columns(out: &mut String, rows: &[Vec<String>]) {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let w: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            line.push_str(c);
            if i + 1 < r.len() {
                let pad = w
                    .get(i)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(c.chars().count())
                    .saturating_add(2);
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

fn head(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|s| s.to_string()).collect()
}

fn status_line(out: &mut String, c: &CellResult) {
    if c.status != CellStatus::Done {
        let _ = writeln!(out, "cell {}: {}", c.label, status_text(&c.status));
    }
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() {
        "?"
    } else {
        s
    }
}

/// The before/after table of a lab's results (or, with one cell, the
/// one-column table): per workload and metric the medians, the 95 %
/// interval of the change and the verdict. Pure: the same results give the
/// same text.
pub fn lab_table(r: &ExperimentResults) -> String {
    let mut out = String::new();
    let lab = r.lab.as_ref();
    let runs = r
        .cell(r.baseline_cell)
        .and_then(|c| c.stats.first())
        .and_then(|s| s.summary.as_ref())
        .map_or(0, |s| s.n);
    let what = match lab {
        Some(l) if l.path == "veth" => format!(
            "{} namespaces on veth, {} queue(s){}",
            l.hosts,
            l.queues,
            l.rate_mbit
                .map(|m| format!(", {}", model::metric::fmt_bits(m * 1e6)))
                .unwrap_or_default()
        ),
        _ => format!(
            "{} only, measuring (nothing tuned)",
            lab.map_or("?", |l| l.path.as_str())
        ),
    };
    let _ = writeln!(
        out,
        "nettune lab on {} ({}, {} CPUs): {what}{}",
        or_unknown(&r.machine.hostname),
        or_unknown(&r.machine.kernel),
        r.machine.cpus,
        if r.interrupted { " [INTERRUPTED]" } else { "" }
    );
    let _ = writeln!(
        out,
        "{runs} run(s) per workload and cell; medians; 95 % bootstrap intervals; changes relative to the baseline in %, loss in percentage points (pp); a gain or regression is a change the interval shows of at least {} % (--min-effect; {} pp for loss), no change an interval within that, inconclusive anything else",
        model::metric::num(r.min_effect_pct),
        model::metric::num(model::stats::MIN_EFFECT_POINTS)
    );
    for n in r.notes.iter().filter(|n| n.is_header()) {
        let _ = writeln!(out, "{n}");
    }
    if let [c] = r.cells.as_slice() {
        let mut rows = vec![head(&["workload", "metric", "median", "95 % CI"])];
        for s in &c.stats {
            let x = stat_cells(s);
            rows.push(vec![
                s.workload.clone(),
                s.metric.key().into(),
                x.median,
                x.ci,
            ]);
        }
        columns(&mut out, &rows);
        status_line(&mut out, c);
        if lab.is_some_and(|l| l.path == "veth") {
            let _ = writeln!(
                out,
                "no fix the lab can apply was found (see the lines above), so only the baseline was measured"
            );
        }
        warnings(&mut out, r);
        return out;
    }
    let base = r.cell(r.baseline_cell);
    for c in r.cells.iter().filter(|c| c.index != r.baseline_cell) {
        let mut rows = vec![head(&[
            "workload",
            "metric",
            "before",
            "after",
            "change (95 % CI)",
            "verdict",
        ])];
        let mut counts = [0usize; 5];
        for s in &c.stats {
            let before = base
                .and_then(|b| {
                    b.stats
                        .iter()
                        .find(|x| x.workload == s.workload && x.metric == s.metric)
                })
                .map_or(PLACEHOLDER.into(), |b| stat_cells(b).median);
            let x = stat_cells(s);
            if let Some(v) = x.verdict {
                let i = match v {
                    Verdict::Gain => 0,
                    Verdict::Regression => 1,
                    Verdict::NoChange => 2,
                    Verdict::Changed => 3,
                    Verdict::Inconclusive => 4,
                };
                counts[i] = counts[i].saturating_add(1);
            }
            rows.push(vec![
                s.workload.clone(),
                s.metric.key().into(),
                before,
                x.median,
                x.change,
                x.verdict_text.unwrap_or_else(|| "too few runs".into()),
            ]);
        }
        let _ = writeln!(out, "\n{} against {BASELINE}:", c.label);
        if r.plans.is_empty() && !r.notes.iter().any(|n| n.kind() == NoteKind::Applied) {
            let _ = writeln!(
                out,
                "(nothing was applied: both cells ran the same lab, so any verdict here is noise)"
            );
        }
        columns(&mut out, &rows);
        let _ = writeln!(
            out,
            "{} gain(s), {} regression(s), {} no change (the interval within the threshold), {} inconclusive (the runs cannot tell)",
            counts[0], counts[1], counts[2], counts[4]
        );
        if counts[3] > 0 {
            let _ = writeln!(
                out,
                "{} changed: CPU and softirq % are neither better nor worse by themselves (judge the CPU by cpu_per_work)",
                counts[3]
            );
        }
        status_line(&mut out, c);
    }
    if let Some(base) = base {
        status_line(&mut out, base);
    }
    warnings(&mut out, r);
    let bottom = model::bottom::bottom_line(r);
    if !bottom.is_empty() {
        let _ = writeln!(
            out,
            "\nbottom line (each fix alone against the baseline, on the workloads it concerns):"
        );
        for l in &bottom {
            let _ = writeln!(out, "  {}", l.text());
        }
    }
    for n in r.notes.iter().filter(|n| !n.is_header()) {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// What weakens the measurement (`results.warnings`), one line each.
fn warnings(out: &mut String, r: &ExperimentResults) {
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
}

/// A cell whose runs were limited by different things (`MetricStats::limits`):
/// `what limited cubic (stream throughput): the server's recv thread in 9 of
/// 16 runs (median 17.4 Gbit/s), the client's send thread in 7 (median 34.1
/// Gbit/s); the median depends on how many runs fall in each`.
fn limits_line(cell: &str, s: &MetricStats) -> String {
    let groups = LimitGroup::describe(&s.limits, &|v| model::metric::format_value(&s.unit, v));
    format!(
        "what limited {cell} ({} {}): {groups}; the median depends on how many runs fall in each",
        s.workload,
        s.metric.key(),
    )
}

/// The table of an experiment: per workload and metric, each cell's median
/// with its 95 % CI and its change against the baseline with the change's
/// CI and a verdict; n/a, failed and interrupted cells listed below.
pub fn experiment_table(r: &ExperimentResults) -> String {
    let mut rows = vec![head(&[
        "workload",
        "metric",
        "cell",
        "n",
        "median",
        "95 % CI",
        "vs baseline (95 % CI)",
        "verdict",
    ])];
    for row in stat_rows(r, Order::ByMetric, usize::MAX, &|u| u.to_string()).rows {
        let c = row.cell;
        let label = if row.baseline {
            format!("{} (baseline)", c.label)
        } else {
            c.label.clone()
        };
        let verdict = row.text.verdict_word();
        rows.push(vec![
            row.stats.workload.clone(),
            row.stats.metric.key().to_string(),
            label,
            row.n.to_string(),
            row.text.median,
            row.text.ci,
            row.text.change,
            verdict,
        ]);
    }
    let mut out = format!(
        "experiment {}: {} cells, {} workload(s)\n\n",
        r.name,
        r.cells.len(),
        r.workloads.len()
    );
    columns(&mut out, &rows);
    for c in &r.cells {
        let _ = match &c.status {
            CellStatus::NotApplicable { reason } => writeln!(out, "n/a: {} ({reason})", c.label),
            CellStatus::Failed { error } => writeln!(out, "failed: {} ({error})", c.label),
            CellStatus::Interrupted => writeln!(out, "interrupted: {}", c.label),
            CellStatus::Pending => writeln!(out, "not run: {}", c.label),
            CellStatus::Done => Ok(()),
        };
    }
    for c in &r.cells {
        for s in c.stats.iter().filter(|s| s.limits.len() > 1) {
            let _ = writeln!(out, "{}", limits_line(&c.label, s));
        }
    }
    warnings(&mut out, r);
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if !r.overhead.is_empty() {
        out.push_str(
            "\nlab overhead (baseline cell; loopback inside one namespace vs the lab path):\n",
        );
        for o in &r.overhead {
            let test = r
                .workloads
                .iter()
                .find(|w| w.name == o.workload)
                .map_or("", |w| w.test.as_str());
            let unit = o.metric.unit_for(test);
            let _ = writeln!(
                out,
                "  {} {}: loopback {}, lab {}",
                o.workload,
                o.metric.key(),
                model::metric::format_value(unit, o.loopback.median),
                model::metric::format_value(unit, o.lab.median)
            );
        }
    }
    out
}
