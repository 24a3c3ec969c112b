//! The lab's overhead: the suite over loopback beside the baseline cell.

use super::*;

pub(super) fn run_overhead(
    results: &mut ExperimentResults,
    schedule: &Schedule,
    exec: &mut dyn Executor,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    let dir = opts.out_dir.join("runs").join("overhead-loopback");
    out_dir(&dir)?;
    let baseline = results.cell(results.baseline_cell).cloned();
    let metrics = results.metrics.clone();
    let mut rows = Vec::new();
    for w in &schedule.workloads {
        let mut recs: Vec<RunRecord> = Vec::new();
        for repeat in 0..schedule.overhead_repeats {
            if opts.cancel.load(Ordering::SeqCst) {
                return Ok(Outcome::Cancelled);
            }
            progress.event(&ProgressEvent::Overhead {
                workload: w.name.clone(),
                repeat,
            });
            let bench = match exec.bench(schedule.server, schedule.server, &w.args, w.deadline) {
                Ok(b) => b,
                Err(ExecError::Cancelled) => return Ok(Outcome::Cancelled),
                Err(_) if opts.cancel.load(Ordering::SeqCst) => return Ok(Outcome::Cancelled),
                Err(e) => {
                    results.notes.push(
                        format!("overhead run of {} over loopback failed: {e}", w.name).into(),
                    );
                    break;
                }
            };
            if opts.cancel.load(Ordering::SeqCst) {
                return Ok(Outcome::Cancelled);
            }
            let raw = dir.join(format!("{}-r{repeat:02}.json", file_safe(&w.name)));
            write_atomic(&raw, crate::exec::bench_text(&bench).as_bytes())?;
            recs.push(metrics::record(&bench, &metrics));
        }
        for &m in &metrics {
            let lo: Vec<f64> = recs
                .iter()
                .filter_map(|r| r.values.get(m.key()).copied())
                .collect();
            let lab = baseline
                .as_ref()
                .map(|b| values_of(b, &w.name, m.key()))
                .unwrap_or_default();
            if let (Ok(loopback), Ok(lab)) = (stats::summarize(&lo), stats::summarize(&lab)) {
                rows.push(OverheadRow {
                    workload: w.name.clone(),
                    metric: m,
                    loopback,
                    lab,
                });
            }
        }
    }
    if rows.is_empty() {
        results.notes.push(
            "no lab overhead rows: the loopback runs or the baseline cell measured nothing".into(),
        );
    }
    results.overhead = rows;
    save(results, &opts.out_dir)?;
    Ok(Outcome::Completed)
}
