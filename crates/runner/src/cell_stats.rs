//! A cell's statistics: per workload and metric the summary, the median's
//! interval, the change against the baseline and why the runs stopped.

use model::results::{CellResult, ExperimentResults, LimitGroup, MetricStats, WorkloadInfo};
use model::stats::{self, BootstrapConfig, Decision, StopReason, StopRule};

use super::quality;

/// The measured values of one workload's metric in a cell (warm-ups left out).
pub(super) fn values_of(cell: &CellResult, workload: &str, key: &str) -> Vec<f64> {
    cell.runs
        .iter()
        .filter(|r| !r.warmup && r.workload == workload)
        .filter_map(|r| r.values.get(key).copied())
        .filter(|v| v.is_finite())
        .collect()
}

pub(super) fn workloads_of(cell: &CellResult) -> Vec<String> {
    let mut w: Vec<String> = Vec::new();
    for r in &cell.runs {
        if !w.contains(&r.workload) {
            w.push(r.workload.clone());
        }
    }
    w
}

pub(super) fn cell_stats(
    cell: &CellResult,
    workloads: &[WorkloadInfo],
    metrics: &[model::experiment::Metric],
    cfg: &BootstrapConfig,
    baseline: Option<&CellResult>,
    rule: Option<&StopRule>,
) -> Vec<MetricStats> {
    let mut out = Vec::new();
    for w in workloads_of(cell) {
        let test = workloads
            .iter()
            .find(|x| x.name == w)
            .map_or("", |x| x.test.as_str());
        for &m in metrics {
            let values = values_of(cell, &w, m.key());
            if values.is_empty() {
                continue;
            }
            let summary = stats::summarize(&values).ok();
            let median_ci = stats::median_interval(&values, cfg).ok();
            let vs_baseline = baseline.filter(|b| b.index != cell.index).and_then(|b| {
                let bv = values_of(b, &w, m.key());
                stats::compare_scaled(
                    &values,
                    &bv,
                    m.direction(),
                    cfg,
                    stats::Statistic::Median,
                    m.change_scale(),
                )
                .ok()
            });
            let stop = rule.and_then(|r| match r.decide(&values) {
                Ok(Decision::Stop(StopReason::Converged { half_width_pct })) => Some(format!(
                    "target reached ({half_width_pct:.1} % <= {} %)",
                    r.target_pct
                )),
                Ok(Decision::Stop(StopReason::CapReached { half_width_pct })) => Some(format!(
                    "cap of {} runs ({})",
                    r.max_repeats,
                    half_width_pct.map_or_else(|| "median 0".into(), |h| format!("{h:.1} %"))
                )),
                _ => None,
            });
            let limits = LimitGroup::group(
                cell.runs
                    .iter()
                    .filter(|r| r.workload == w && !r.warmup)
                    .filter_map(|r| Some((*r.values.get(m.key())?, r.limited_by.as_deref()))),
            );
            out.push(MetricStats {
                workload: w.clone(),
                metric: m,
                unit: m.unit_for(test).into(),
                values,
                summary,
                median_ci,
                vs_baseline,
                stop,
                limits,
            });
        }
    }
    out
}

/// Recompute every cell's statistics, with comparisons against the
/// baseline cell (which may have finished after the others).
pub fn recompute_all(
    results: &mut ExperimentResults,
    cfg: &BootstrapConfig,
    rule: Option<&StopRule>,
) {
    let baseline = results.cell(results.baseline_cell).cloned();
    let metrics = results.metrics.clone();
    let workloads = results.workloads.clone();
    for c in &mut results.cells {
        c.stats = cell_stats(c, &workloads, &metrics, cfg, baseline.as_ref(), rule);
    }
    results.warnings = quality::warnings(results);
}
