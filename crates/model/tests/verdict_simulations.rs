//! The verdicts on recorded lab runs (crates/model/tests/data/lab-runs-*.json,
//! written by bench/lab_runs.py from real `nettune lab` results; its
//! `source` says where and when):
//!
//! - 200 seeded simulations of a change with no effect, each drawing a
//!   cell and a baseline of 5 runs from one recorded metric's baseline runs:
//!   gain or regression at most at the intervals' nominal error rate (5 %);
//!   no change only when the interval lies within ± the threshold;
//! - every comparison of the recorded labs' own cells obeys the rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use nettune_model::experiment::Metric;
use nettune_model::stats::{
    compare_scaled, BootstrapConfig, ChangeScale, Comparison, Direction, SplitMix64, Statistic,
    Verdict, MIN_EFFECT_POINTS,
};
use serde_json::Value;
use std::collections::BTreeMap;

const RUNS: usize = 5;
const SIMULATIONS: u64 = 200;

fn data() -> Value {
    let text = include_str!("data/lab-runs-2026-12-01.json");
    serde_json::from_str(text).unwrap()
}

/// "workload metric" → its metric.
fn metric_of(key: &str) -> Metric {
    let m = key.rsplit(' ').next().unwrap();
    serde_json::from_value(Value::String(m.into())).unwrap_or_else(|e| panic!("metric {m}: {e}"))
}

/// Every lab's cells: label → (key → values).
fn labs() -> Vec<BTreeMap<String, BTreeMap<String, Vec<f64>>>> {
    data()["labs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_value(l["cells"].clone()).unwrap())
        .collect()
}

fn threshold(c: &Comparison, cfg: &BootstrapConfig) -> f64 {
    match (c.scale, &c.change_pct) {
        (ChangeScale::Points, _) => MIN_EFFECT_POINTS,
        (ChangeScale::Relative, Some(_)) => cfg.min_effect_pct,
        (ChangeScale::Relative, None) => 0.0,
    }
}

/// What the rule guarantees of any comparison.
fn obeys_the_rule(c: &Comparison, cfg: &BootstrapConfig, what: &str) {
    let t = threshold(c, cfg);
    let s = c.shown();
    match c.verdict {
        Verdict::NoChange => assert!(s.lo >= -t && s.hi <= t, "{what}: {c:?}"),
        Verdict::Gain | Verdict::Regression | Verdict::Changed => {
            assert!(s.lo > 0.0 || s.hi < 0.0, "{what}: {c:?}");
            assert!(s.estimate.abs() >= t, "{what}: {c:?}");
        }
        Verdict::Inconclusive => {
            assert!(!(s.lo >= -t && s.hi <= t), "{what}: {c:?}");
        }
    }
}

#[test]
fn a_change_with_no_effect_is_named_at_most_at_the_nominal_rate() {
    // The pool of each metric: the baseline runs of every recorded lab.
    let mut pools: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for lab in labs() {
        for (k, v) in &lab["baseline"] {
            pools.entry(k.clone()).or_default().extend(v);
        }
    }
    let pools: Vec<(String, Vec<f64>)> = pools
        .into_iter()
        .filter(|(k, v)| v.len() >= 2 * RUNS && metric_of(k).direction() != Direction::Neither)
        .collect();
    assert!(pools.len() >= 6, "recorded metrics: {}", pools.len());
    let mut named = 0u32;
    let mut verdicts: BTreeMap<String, u32> = BTreeMap::new();
    for i in 0..SIMULATIONS {
        let (key, pool) = &pools[(i as usize) % pools.len()];
        let m = metric_of(key);
        let mut rng = SplitMix64::new(0x5EED_0000 + i);
        let mut draw = || {
            (0..RUNS)
                .map(|_| pool[rng.below(pool.len())])
                .collect::<Vec<f64>>()
        };
        let (cell, base) = (draw(), draw());
        let cfg = BootstrapConfig {
            seed: i,
            ..BootstrapConfig::default()
        };
        let c = compare_scaled(
            &cell,
            &base,
            m.direction(),
            &cfg,
            Statistic::Median,
            m.change_scale(),
        )
        .unwrap();
        obeys_the_rule(&c, &cfg, key);
        *verdicts.entry(c.verdict.to_string()).or_default() += 1;
        if matches!(c.verdict, Verdict::Gain | Verdict::Regression) {
            named += 1;
        }
    }
    eprintln!("{verdicts:?}");
    // 5 % of 200.
    assert!(named <= 10, "named {named} of {SIMULATIONS}: {verdicts:?}");
}

#[test]
fn the_recorded_labs_comparisons_obey_the_rule() {
    let cfg = BootstrapConfig::default();
    let mut seen = 0;
    for lab in labs() {
        let Some(base) = lab.get("baseline") else {
            continue;
        };
        for (label, cell) in lab.iter().filter(|(l, _)| *l != "baseline") {
            for (key, values) in cell {
                let Some(b) = base.get(key) else { continue };
                if values.len() < 3 || b.len() < 3 {
                    continue;
                }
                let m = metric_of(key);
                let c = compare_scaled(
                    values,
                    b,
                    m.direction(),
                    &cfg,
                    Statistic::Median,
                    m.change_scale(),
                )
                .unwrap();
                obeys_the_rule(&c, &cfg, &format!("{label} {key}"));
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no recorded comparison");
}
