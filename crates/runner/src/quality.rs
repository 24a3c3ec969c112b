//! What weakens a results file's measurement (`results.warnings`): cells
//! whose runs ran on a busy machine, and metrics whose runs in one cell fell
//! into two states far apart (the rule autotune shares, `model::busy`).

use model::busy::{busy_note, two_states, two_states_note};
use model::results::ExperimentResults;

/// The warnings of `r` as its cells stand: per cell its busy note, then per
/// workload the first of its metrics (in `r.metrics` order) whose runs split
/// into two states.
pub fn warnings(r: &ExperimentResults) -> Vec<String> {
    let mut out = Vec::new();
    for c in &r.cells {
        if let Some(n) = busy_note(&c.label, &c.runs) {
            out.push(n);
        }
    }
    for c in &r.cells {
        let mut seen: Vec<&str> = Vec::new();
        for s in &c.stats {
            if seen.contains(&s.workload.as_str()) {
                continue;
            }
            let runs = c
                .runs
                .iter()
                .filter(|x| x.workload == s.workload && !x.warmup)
                .filter_map(|x| Some((*x.values.get(s.metric.key())?, x.limited_by.as_deref())));
            if let Some((groups, ratio)) = two_states(runs) {
                seen.push(&s.workload);
                let what = format!("{} {} in {}", s.workload, s.metric.key(), c.label);
                let unit = s.unit.clone();
                out.push(two_states_note(&what, &groups, ratio, &|v| {
                    model::metric::format_value(&unit, v)
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use model::busy::OthersLoad;
    use model::experiment::Metric;
    use model::results::{CellResult, CellStatus, RunRecord};
    use model::stats::BootstrapConfig;

    fn run(tps: f64, others: f64) -> RunRecord {
        RunRecord {
            workload: "tcp-rr".into(),
            values: [("transactions".to_string(), tps)].into_iter().collect(),
            others: Some(OthersLoad {
                cpus: others,
                steal_pct: 0.0,
                top: Some("bash 1.40 CPU-s".into()),
            }),
            ..RunRecord::default()
        }
    }

    /// The baseline: tcp-rr runs at about 58k and 20k tps while a
    /// busy loop took 0.7 CPU in three of them.
    #[test]
    fn a_busy_two_state_baseline_is_said() {
        let mut r = crate::loop_::suite::skeleton(
            "lab",
            Default::default(),
            crate::loop_::suite::loopback_info(),
            vec![model::results::WorkloadInfo {
                name: "tcp-rr".into(),
                test: "tcp-rr".into(),
                args: Vec::new(),
            }],
            vec![CellResult {
                index: 0,
                label: "baseline".into(),
                levels: Vec::new(),
                status: CellStatus::Done,
                runs: vec![
                    run(58_000.0, 0.0),
                    run(20_100.0, 0.7),
                    run(57_400.0, 0.0),
                    run(19_900.0, 0.71),
                    run(20_500.0, 0.69),
                ],
                stats: Vec::new(),
            }],
        );
        r.metrics = vec![Metric::Transactions];
        crate::recompute_all(&mut r, &BootstrapConfig::default(), None);
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
        assert!(
            r.warnings[0].contains("busy in 3 of 5 runs of baseline"),
            "{:?}",
            r.warnings
        );
        assert!(r.warnings[0].contains("bash"), "{:?}", r.warnings);
        assert!(
            r.warnings[1].contains("tcp-rr transactions in baseline fell into two states"),
            "{:?}",
            r.warnings
        );
        // Quiet and in one state: nothing to say.
        for (i, x) in r.cells[0].runs.iter_mut().enumerate() {
            x.values
                .insert("transactions".into(), 50_000.0 + i as f64 * 300.0);
            x.others = None;
        }
        crate::recompute_all(&mut r, &BootstrapConfig::default(), None);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
}
