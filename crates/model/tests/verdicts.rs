#![allow(clippy::unwrap_used)]
//! The four verdicts (issue "Proof you can trust"): gain or regression only
//! when the interval excludes zero and the change reaches the threshold, no
//! change only when the whole interval lies within ± the threshold,
//! inconclusive otherwise, with the runs that would tell.

use nettune_model::stats::{
    compare_scaled, judge, BootstrapConfig, ChangeScale, Direction, Interval, Statistic, Verdict,
    MAX_MORE_RUNS,
};

fn iv(estimate: f64, lo: f64, hi: f64) -> Interval {
    Interval {
        estimate,
        lo,
        hi,
        level: 0.95,
    }
}

fn verdict(e: f64, lo: f64, hi: f64, t: f64) -> Verdict {
    judge(
        &iv(e, lo, hi),
        &iv(e, lo, hi),
        t,
        Direction::HigherIsBetter,
        5,
    )
    .verdict
}

/// The rows the main job called "no change" on 2026-12-01.
#[test]
fn wide_intervals_that_straddle_zero_are_inconclusive() {
    // tcp-rr transactions −49.0 % [−69.8, +39.5]
    let j = judge(
        &iv(-49.0, -69.8, 39.5),
        &iv(-1.0, -2.0, 1.0),
        2.0,
        Direction::HigherIsBetter,
        5,
    );
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert!(j.more_runs.is_some_and(|m| m > 0), "{j:?}");
    // tcp-stream +47.2 % [−6.9, +97.7]
    assert_eq!(verdict(47.2, -6.9, 97.7, 2.0), Verdict::Inconclusive);
}

#[test]
fn each_verdict_by_its_rule() {
    assert_eq!(verdict(5.0, 3.0, 7.0, 2.0), Verdict::Gain);
    assert_eq!(verdict(-5.0, -7.0, -3.0, 2.0), Verdict::Regression);
    // Within ±2: no change, whether or not it excludes zero.
    assert_eq!(verdict(0.3, -1.5, 1.9, 2.0), Verdict::NoChange);
    assert_eq!(verdict(1.0, 0.5, 1.5, 2.0), Verdict::NoChange);
    // Excludes zero, under the threshold, reaching past it: inconclusive.
    assert_eq!(verdict(1.5, 0.2, 5.0, 2.0), Verdict::Inconclusive);
    // Reaches the threshold, straddles zero: inconclusive.
    assert_eq!(verdict(3.0, -1.0, 7.0, 2.0), Verdict::Inconclusive);
    // Lower is better flips gain and regression.
    let down = judge(
        &iv(-5.0, -7.0, -3.0),
        &iv(-5.0, -7.0, -3.0),
        2.0,
        Direction::LowerIsBetter,
        5,
    );
    assert_eq!(down.verdict, Verdict::Gain);
    let flat = judge(
        &iv(0.0, -8.0, 8.0),
        &iv(0.0, -8.0, 8.0),
        2.0,
        Direction::Neither,
        5,
    );
    assert_eq!(flat.verdict, Verdict::Inconclusive);
}

/// The runs that would tell follow the width: a 1/√n interval four times
/// too wide needs about 16 times the runs.
#[test]
fn more_runs_follow_the_measured_spread() {
    // Estimate +10 %, lower side 40 points wide: it must shrink 4×.
    let j = judge(
        &iv(10.0, -30.0, 50.0),
        &iv(10.0, -30.0, 50.0),
        2.0,
        Direction::HigherIsBetter,
        5,
    );
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert_eq!(j.more_runs, Some(5 * 16 - 5));
    // Estimate exactly at zero with a zero threshold: no number of runs tells.
    let j = judge(
        &iv(0.0, -1.0, 1.0),
        &iv(0.0, -1.0, 1.0),
        0.0,
        Direction::HigherIsBetter,
        5,
    );
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert_eq!(j.more_runs, None);
    // An estimate at the threshold: more than the cap.
    let j = judge(
        &iv(2.0, 1.0, 6.0),
        &iv(2.0, 1.0, 6.0),
        2.0,
        Direction::HigherIsBetter,
        5,
    );
    assert_eq!(j.verdict, Verdict::Gain);
    let j = judge(
        &iv(1.999, 0.5, 6.0),
        &iv(1.999, 0.5, 6.0),
        2.0,
        Direction::HigherIsBetter,
        5,
    );
    assert_eq!(j.more_runs, Some(MAX_MORE_RUNS));
}

/// Loss is judged in percentage points: 0 of 5 runs lost anything before,
/// 4 of 5 lost 0.9–1.6 % after. That is not "no change"; the row says pp.
#[test]
fn loss_in_percentage_points_is_never_no_change_past_a_tenth_of_a_point() {
    let before = [0.0; 5];
    let after = [0.0, 0.9, 1.1, 1.6, 1.2];
    let c = compare_scaled(
        &after,
        &before,
        Direction::LowerIsBetter,
        &BootstrapConfig::default(),
        Statistic::Median,
        ChangeScale::Points,
    )
    .unwrap();
    assert_eq!(c.scale, ChangeScale::Points);
    assert!(c.change_pct.is_none());
    assert_ne!(c.verdict, Verdict::NoChange, "{c:?}");
    assert_ne!(c.verdict, Verdict::Gain, "{c:?}");
    // Both zero: no change.
    let c = compare_scaled(
        &before,
        &before,
        Direction::LowerIsBetter,
        &BootstrapConfig::default(),
        Statistic::Median,
        ChangeScale::Points,
    )
    .unwrap();
    assert_eq!(c.verdict, Verdict::NoChange);
}

/// Results written before the fourth verdict read as they were.
#[test]
fn older_comparisons_read_with_their_verdict() {
    let old = r#"{"cell":{"n":3,"median":1.0,"mean":1.0,"std_dev":0.0,"min":1.0,"max":1.0},
      "baseline":{"n":3,"median":1.0,"mean":1.0,"std_dev":0.0,"min":1.0,"max":1.0},
      "cell_median":{"estimate":1.0,"lo":1.0,"hi":1.0,"level":0.95},
      "baseline_median":{"estimate":1.0,"lo":1.0,"hi":1.0,"level":0.95},
      "difference":{"estimate":0.0,"lo":-1.0,"hi":1.0,"level":0.95},
      "change_pct":{"estimate":0.0,"lo":-40.0,"hi":40.0,"level":0.95},
      "direction":"higher_is_better","verdict":"no_change"}"#;
    let c: nettune_model::stats::Comparison = serde_json::from_str(old).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange);
    assert_eq!(c.scale, ChangeScale::Relative);
    assert_eq!(c.more_runs, None);
    let back = serde_json::to_string(&c).unwrap();
    assert!(
        !back.contains("scale") && !back.contains("more_runs"),
        "{back}"
    );
}
