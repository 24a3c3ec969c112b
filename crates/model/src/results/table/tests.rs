use super::*;
use crate::experiment::Metric;
use crate::results::CellStatus;
use crate::stats::summarize;

fn stat(workload: &str, metric: Metric, values: &[f64], summary: bool) -> MetricStats {
    MetricStats {
        workload: workload.into(),
        metric,
        unit: "bit/s".into(),
        values: values.to_vec(),
        summary: summary.then(|| summarize(values).unwrap()),
        median_ci: None,
        vs_baseline: None,
        stop: None,
        limits: vec![],
    }
}

fn cell(index: usize, stats: Vec<MetricStats>) -> CellResult {
    CellResult {
        index,
        label: format!("c{index}"),
        levels: vec![],
        status: CellStatus::Done,
        runs: vec![],
        stats,
    }
}

/// Cells out of index order in the file, a workload the results do not
/// name, and one statistic without a summary.
fn results() -> ExperimentResults {
    let both = |i| {
        vec![
            stat("rr", Metric::Transactions, &[1.0, 2.0, 3.0], true),
            stat("stream", Metric::Throughput, &[5.0, 6.0], true),
            stat("stream", Metric::Transactions, &[7.0], i == 0),
            stat("extra", Metric::Throughput, &[1.0, 1.0], true),
        ]
    };
    let mut r = crate::results::minimal();
    r.workloads = ["stream", "rr"]
        .iter()
        .map(|n| crate::results::WorkloadInfo {
            name: (*n).into(),
            test: "tcp-stream".into(),
            args: vec![],
        })
        .collect();
    r.metrics = vec![Metric::Throughput, Metric::Transactions];
    r.run_order = vec![0, 1];
    r.cells = vec![cell(1, both(1)), cell(0, both(0))];
    r
}

fn keys(rows: &StatRows<'_>) -> Vec<(usize, String, &'static str)> {
    rows.rows
        .iter()
        .map(|r| (r.cell.index, r.stats.workload.clone(), r.stats.metric.key()))
        .collect()
}

fn same(s: &str) -> String {
    s.to_string()
}

#[test]
fn by_metric_puts_a_metrics_cells_together_in_the_results_order() {
    let r = results();
    let rows = stat_rows(&r, Order::ByMetric, 100, &same);
    let k: Vec<_> = keys(&rows)
        .into_iter()
        .map(|(c, w, m)| format!("{w} {m} {c}"))
        .collect();
    assert_eq!(
        k,
        [
            "stream throughput 0",
            "stream throughput 1",
            "stream transactions 0",
            "stream transactions 1",
            "rr transactions 0",
            "rr transactions 1",
            "extra throughput 0",
            "extra throughput 1",
        ]
    );
}

#[test]
fn by_cell_puts_a_cells_statistics_together() {
    let r = results();
    let rows = stat_rows(&r, Order::ByCell, 100, &same);
    let cells: Vec<usize> = keys(&rows).iter().map(|k| k.0).collect();
    assert_eq!(cells, [0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(keys(&rows)[0].1, "stream");
    assert_eq!(keys(&rows)[3].1, "extra");
}

#[test]
fn n_falls_back_to_the_values_kept_without_a_summary() {
    let r = results();
    let rows = stat_rows(&r, Order::ByMetric, 100, &same);
    let no_summary = rows
        .rows
        .iter()
        .find(|x| x.stats.summary.is_none())
        .unwrap();
    assert_eq!(no_summary.n, 1);
    assert_eq!(no_summary.text.median, PLACEHOLDER);
    assert_eq!(no_summary.text.ci, PLACEHOLDER);
}

#[test]
fn the_baseline_says_so_and_others_without_a_comparison_get_the_placeholder() {
    let r = results();
    let rows = stat_rows(&r, Order::ByMetric, 100, &same);
    for row in &rows.rows {
        if row.baseline {
            assert_eq!(row.text.change, BASELINE_WORD);
            assert_eq!(row.text.verdict_word(), BASELINE_WORD);
        } else {
            assert_eq!(row.text.change, PLACEHOLDER);
            assert_eq!(row.text.verdict_word(), PLACEHOLDER);
        }
    }
}

#[test]
fn rows_past_the_cap_are_counted_not_kept() {
    let r = results();
    let rows = stat_rows(&r, Order::ByCell, 3, &same);
    assert_eq!(rows.rows.len(), 3);
    assert_eq!(rows.left_out, 5);
}

#[test]
fn the_unit_is_spelled_by_the_caller() {
    let r = results();
    let rows = stat_rows(&r, Order::ByCell, 1, &|_| "Mbit/s".to_string());
    let plain = stat_rows(&r, Order::ByCell, 1, &same);
    assert_ne!(rows.rows[0].text.median, plain.rows[0].text.median);
}
