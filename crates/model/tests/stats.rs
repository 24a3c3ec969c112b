//! Statistics: summaries, bootstrap intervals against known distributions,
//! comparisons with a verdict, sequential stopping, and bad input.
#![allow(clippy::unwrap_used)]

use nettune_model::stats::{
    compare, compare_by, median_interval, summarize, BootstrapConfig, Decision, Direction,
    SplitMix64, Statistic, StatsError, StopReason, StopRule, Verdict, WaitReason, MAX_VALUES,
};
use proptest::prelude::*;

/// A bootstrap whose verdict is the interval's alone (no practical threshold).
fn cfg(resamples: usize, seed: u64) -> BootstrapConfig {
    BootstrapConfig {
        resamples,
        level: 0.95,
        seed,
        min_effect_pct: 0.0,
    }
}

fn normal_sample(rng: &mut SplitMix64, n: usize, mean: f64, sd: f64) -> Vec<f64> {
    (0..n).map(|_| rng.normal(mean, sd)).collect()
}

#[test]
fn splitmix64_matches_the_reference_implementation() {
    // Values of the published C reference (Vigna, splitmix64.c) for seed 1234567,
    // cross-checked with an independent Python transcription.
    let mut r = SplitMix64::new(1_234_567);
    let got: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
    assert_eq!(
        got,
        [
            6457827717110365317,
            3203168211198807973,
            9817491932198370423,
            4593380528125082431,
            16408922859458223821
        ]
    );
}

#[test]
fn summary_of_known_values() {
    let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!(s.n, 4);
    assert_eq!(s.median, 2.5);
    assert_eq!(s.mean, 2.5);
    assert!((s.std_dev.unwrap() - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
    assert_eq!((s.min, s.max), (1.0, 4.0));
    let odd = summarize(&[5.0, 1.0, 9.0]).unwrap();
    assert_eq!(odd.median, 5.0);
}

#[test]
fn one_value_has_a_summary_but_no_interval() {
    let s = summarize(&[7.0]).unwrap();
    assert_eq!((s.median, s.mean, s.std_dev), (7.0, 7.0, None));
    let e = median_interval(&[7.0], &BootstrapConfig::default()).unwrap_err();
    assert_eq!(
        e,
        StatsError::TooFew {
            what: "values",
            n: 1,
            min: 3
        }
    );
}

#[test]
fn huge_values_do_not_overflow_the_median() {
    let s = summarize(&[f64::MAX, f64::MAX]).unwrap();
    assert_eq!(s.median, f64::MAX);
}

#[test]
fn bad_input_is_refused_with_a_typed_error() {
    let d = BootstrapConfig::default();
    assert_eq!(
        summarize(&[]).unwrap_err(),
        StatsError::Empty { what: "values" }
    );
    let e = summarize(&[1.0, f64::NAN]).unwrap_err();
    assert!(matches!(
        e,
        StatsError::NotFinite {
            what: "values",
            index: 1,
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "values: value #1 is NaN, not a finite number"
    );
    let e = median_interval(&[1.0, 2.0, f64::INFINITY], &d).unwrap_err();
    assert!(matches!(e, StatsError::NotFinite { index: 2, .. }));
    let big = vec![1.0; MAX_VALUES + 1];
    assert!(matches!(
        summarize(&big).unwrap_err(),
        StatsError::TooMany { n: 10_001, .. }
    ));
    let e = compare(
        &[1.0, 2.0, 3.0],
        &[1.0, f64::NEG_INFINITY, 2.0],
        Direction::HigherIsBetter,
        &d,
    )
    .unwrap_err();
    assert!(matches!(
        e,
        StatsError::NotFinite {
            what: "baseline",
            index: 1,
            ..
        }
    ));
    for bad in [
        cfg(10, 1),
        cfg(1_000_000, 1),
        BootstrapConfig { level: 1.0, ..d },
        BootstrapConfig {
            level: f64::NAN,
            ..d
        },
    ] {
        assert!(matches!(
            median_interval(&[1.0, 2.0, 3.0], &bad).unwrap_err(),
            StatsError::BadParameter { .. }
        ));
    }
}

#[test]
fn all_equal_values_give_a_point_interval() {
    let i = median_interval(&[5.0; 10], &BootstrapConfig::default()).unwrap();
    assert_eq!((i.lo, i.estimate, i.hi), (5.0, 5.0, 5.0));
    assert_eq!(i.half_width_pct(), Some(0.0));
    let same = compare(
        &[5.0; 5],
        &[5.0; 5],
        Direction::HigherIsBetter,
        &BootstrapConfig::default(),
    )
    .unwrap();
    assert_eq!(same.verdict, Verdict::NoChange);
    let more = compare(
        &[6.0; 5],
        &[5.0; 5],
        Direction::HigherIsBetter,
        &BootstrapConfig::default(),
    )
    .unwrap();
    assert_eq!(more.verdict, Verdict::Gain);
    let c = more.change_pct.unwrap();
    assert!((c.estimate - 20.0).abs() < 1e-9);
}

#[test]
fn zero_baseline_median_has_no_percent_change() {
    let c = compare(
        &[1.0, 2.0, 3.0],
        &[0.0, 0.0, 0.0],
        Direction::LowerIsBetter,
        &BootstrapConfig::default(),
    )
    .unwrap();
    assert_eq!(c.change_pct, None);
    assert_eq!(c.verdict, Verdict::Regression);
}

#[test]
fn same_seed_same_interval_other_seed_may_differ() {
    let mut rng = SplitMix64::new(9);
    let v = normal_sample(&mut rng, 25, 50.0, 5.0);
    let a = median_interval(&v, &cfg(1000, 1)).unwrap();
    let b = median_interval(&v, &cfg(1000, 1)).unwrap();
    assert_eq!(a, b);
}

/// 95 % intervals of the median of normal(100, 10) samples cover the true
/// median (100) in about 95 % of 200 trials. With p = 0.95 and 200 trials the
/// standard error is 1.5 points; 88..=99 % is about ±4.5 standard errors
/// around the nominal value allowing for the percentile bootstrap's known
/// slight undercoverage at small n.
#[test]
fn interval_covers_the_true_median_about_95_percent_of_the_time() {
    let mut rng = SplitMix64::new(2026);
    let trials = 200;
    let mut covered = 0;
    for t in 0..trials {
        let v = normal_sample(&mut rng, 31, 100.0, 10.0);
        let i = median_interval(&v, &cfg(1000, t)).unwrap();
        assert!(i.lo <= i.estimate && i.estimate <= i.hi);
        if i.contains(100.0) {
            covered += 1;
        }
    }
    let pct = covered * 100 / trials as usize;
    eprintln!("95 % interval covered the true median in {covered}/{trials} trials");
    assert!((88..=99).contains(&pct), "coverage {pct} %");
}

/// A coverage check that must fail with a broken interval: a 50 % interval
/// covers far less often than a 95 % one.
#[test]
fn a_narrower_level_covers_less() {
    let mut rng = SplitMix64::new(7);
    let mut covered = 0;
    for t in 0..200 {
        let v = normal_sample(&mut rng, 31, 100.0, 10.0);
        let i = median_interval(
            &v,
            &BootstrapConfig {
                level: 0.5,
                ..cfg(1000, t)
            },
        )
        .unwrap();
        if i.contains(100.0) {
            covered += 1;
        }
    }
    assert!(
        (70..=130).contains(&covered),
        "50 % interval covered {covered}/200"
    );
}

/// A shift of two standard deviations is a gain (higher is better) or a
/// regression (lower is better) in the large majority of trials; the same
/// distribution is neither in the large majority (with a zero threshold it
/// can never be "no change": no interval lies within ±0).
#[test]
fn verdicts_on_shifted_and_identical_distributions() {
    let mut rng = SplitMix64::new(11);
    let trials = 100u64;
    let (mut gain, mut regression, mut same) = (0, 0, 0);
    for t in 0..trials {
        let base = normal_sample(&mut rng, 20, 100.0, 5.0);
        let up = normal_sample(&mut rng, 20, 110.0, 5.0);
        let flat = normal_sample(&mut rng, 20, 100.0, 5.0);
        let c = cfg(1000, t);
        if compare(&up, &base, Direction::HigherIsBetter, &c)
            .unwrap()
            .verdict
            == Verdict::Gain
        {
            gain += 1;
        }
        if compare(&up, &base, Direction::LowerIsBetter, &c)
            .unwrap()
            .verdict
            == Verdict::Regression
        {
            regression += 1;
        }
        let cmp = compare(&flat, &base, Direction::HigherIsBetter, &c).unwrap();
        assert!(
            cmp.difference.lo <= cmp.difference.estimate
                && cmp.difference.estimate <= cmp.difference.hi
        );
        assert_ne!(cmp.verdict, Verdict::NoChange, "{cmp:?}");
        if !matches!(cmp.verdict, Verdict::Gain | Verdict::Regression) {
            same += 1;
        }
    }
    eprintln!("gain {gain}/100, regression {regression}/100, neither {same}/100");
    assert!(gain >= 90, "gain in {gain}/100");
    assert!(regression >= 90, "regression in {regression}/100");
    assert!(same >= 85, "neither in {same}/100");
    let down = compare(
        &normal_sample(&mut rng, 20, 90.0, 5.0),
        &normal_sample(&mut rng, 20, 100.0, 5.0),
        Direction::LowerIsBetter,
        &cfg(1000, 3),
    )
    .unwrap();
    assert_eq!(down.verdict, Verdict::Gain);
    assert!(down.change_pct.unwrap().hi < 0.0);
}

#[test]
fn sequential_stopping_decisions() {
    let rule = StopRule::new(5.0, 5, 30);
    assert_eq!(
        rule.decide(&[1.0, 2.0]).unwrap(),
        Decision::Continue(WaitReason::BelowMinimum { have: 2, min: 5 })
    );
    assert!(matches!(
        rule.decide(&[1.0, f64::NAN]).unwrap_err(),
        StatsError::NotFinite { index: 1, .. }
    ));
    // A quiet metric stops at the minimum.
    assert!(matches!(
        rule.decide(&[100.0, 100.5, 99.5, 100.2, 99.8]).unwrap(),
        Decision::Stop(StopReason::Converged { half_width_pct }) if half_width_pct < 1.0
    ));
    // A noisy one continues, then stops at the cap.
    let noisy = [50.0, 150.0, 80.0, 120.0, 60.0, 140.0];
    assert!(matches!(
        rule.decide(&noisy).unwrap(),
        Decision::Continue(WaitReason::TooWide { half_width_pct }) if half_width_pct > 5.0
    ));
    let capped = StopRule::new(5.0, 5, 6);
    assert!(matches!(
        capped.decide(&noisy).unwrap(),
        Decision::Stop(StopReason::CapReached { half_width_pct: Some(h) }) if h > 5.0
    ));
    assert_eq!(
        rule.decide(&[-1.0, 0.0, 1.0, 0.0, 0.0, 2.0, -2.0]).unwrap(),
        Decision::Continue(WaitReason::ZeroMedian)
    );
    for bad in [
        StopRule::new(0.0, 5, 30),
        StopRule::new(f64::NAN, 5, 30),
        StopRule::new(5.0, 2, 30),
        StopRule::new(5.0, 10, 9),
        StopRule::new(5.0, 5, 1_000_000),
    ] {
        assert!(matches!(
            bad.decide(&[1.0; 5]).unwrap_err(),
            StatsError::BadParameter { .. }
        ));
    }
}

/// Simulated `--until-ci`: a quiet metric stops early, a noisy one runs longer.
#[test]
fn sequential_stopping_spends_runs_on_noise() {
    let rule = StopRule::new(2.0, 5, 60);
    let mut rng = SplitMix64::new(5);
    let mut runs = |sd: f64| {
        let mut v = Vec::new();
        loop {
            if let Decision::Stop(_) = rule.decide(&v).unwrap() {
                return v.len();
            }
            v.push(rng.normal(100.0, sd));
        }
    };
    let quiet = runs(0.5);
    let noisy = runs(8.0);
    assert_eq!(quiet, 5);
    assert!(noisy > 20, "noisy metric stopped after {noisy}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn interval_contains_median_and_ignores_order(
        mut v in prop::collection::vec(-1e6f64..1e6, 3..40),
        seed in any::<u64>(),
    ) {
        let c = cfg(200, seed);
        let i = median_interval(&v, &c).unwrap();
        let s = summarize(&v).unwrap();
        prop_assert!(i.lo <= i.hi);
        prop_assert!(i.contains(s.median));
        prop_assert_eq!(i.estimate, s.median);
        prop_assert!(i.lo >= s.min && i.hi <= s.max);
        v.reverse();
        let r = median_interval(&v, &c).unwrap();
        prop_assert_eq!(i, r);
        let mut shuffled = v.clone();
        SplitMix64::new(seed).shuffle(&mut shuffled);
        prop_assert_eq!(i, median_interval(&shuffled, &c).unwrap());
    }

    #[test]
    fn difference_interval_is_ordered_and_order_free(
        a in prop::collection::vec(0f64..1e4, 3..25),
        b in prop::collection::vec(0f64..1e4, 3..25),
        seed in any::<u64>(),
    ) {
        let c = cfg(200, seed);
        let x = compare(&a, &b, Direction::HigherIsBetter, &c).unwrap();
        prop_assert!(x.difference.lo <= x.difference.estimate);
        prop_assert!(x.difference.estimate <= x.difference.hi);
        let mut ra = a.clone();
        ra.reverse();
        let y = compare(&ra, &b, Direction::HigherIsBetter, &c).unwrap();
        prop_assert_eq!(x.difference, y.difference);
        // Flipping the direction swaps gain and regression.
        let z = compare(&a, &b, Direction::LowerIsBetter, &c).unwrap();
        let flipped = match x.verdict {
            Verdict::Gain => Verdict::Regression,
            Verdict::Regression => Verdict::Gain,
            Verdict::NoChange => Verdict::NoChange,
            Verdict::Changed => Verdict::Changed,
            Verdict::Inconclusive => Verdict::Inconclusive,
        };
        prop_assert_eq!(z.verdict, flipped);
        // Neither direction: a change is only "changed".
        let n = compare(&a, &b, Direction::Neither, &c).unwrap();
        let neutral = match x.verdict {
            Verdict::NoChange => Verdict::NoChange,
            Verdict::Inconclusive => Verdict::Inconclusive,
            _ => Verdict::Changed,
        };
        prop_assert_eq!(n.verdict, neutral);
    }
}

/// The JSON shape of a comparison (what results and reports will store),
/// pinned: a renamed field or verdict spelling shows here.
#[test]
fn comparison_json_shape() {
    let base = [100.0, 102.0, 98.0, 101.0, 99.0];
    let cell = [110.0, 112.0, 108.0, 111.0, 109.0];
    let c = compare(&cell, &base, Direction::HigherIsBetter, &cfg(500, 1)).unwrap();
    assert_eq!(c.verdict, Verdict::Gain);
    insta::assert_json_snapshot!(c);
}

/// Issue 21: a change the interval shows but smaller than the practical
/// threshold (default 2 % of the baseline) is no change; at 0 % it is named.
#[test]
fn a_shown_change_under_the_practical_threshold_is_no_change() {
    // About -0.7 %, tight enough for the interval to exclude zero.
    let base: Vec<f64> = (0..30).map(|i| 1000.0 + f64::from(i % 3)).collect();
    let cell: Vec<f64> = (0..30).map(|i| 993.0 + f64::from(i % 3)).collect();
    let strict = compare(&cell, &base, Direction::HigherIsBetter, &cfg(2000, 7)).unwrap();
    assert!(strict.difference.hi < 0.0, "{:?}", strict.difference);
    assert_eq!(strict.verdict, Verdict::Regression);
    let practical = BootstrapConfig {
        seed: 7,
        ..BootstrapConfig::default()
    };
    assert_eq!(practical.min_effect_pct, 2.0);
    let c = compare(&cell, &base, Direction::HigherIsBetter, &practical).unwrap();
    assert_eq!(c.verdict, Verdict::NoChange);
    // A 5 % drop is still a regression under the default threshold.
    let big: Vec<f64> = (0..30).map(|i| 950.0 + f64::from(i % 3)).collect();
    let c = compare(&big, &base, Direction::HigherIsBetter, &practical).unwrap();
    assert_eq!(c.verdict, Verdict::Regression);
    // Out of range: refused.
    let bad = BootstrapConfig {
        min_effect_pct: -1.0,
        ..practical
    };
    assert!(compare(&cell, &base, Direction::HigherIsBetter, &bad).is_err());
}

/// Gbit/s of one re-check in the lab (`nettune autotune --lab --seed 5`,
/// vm, kernel 6.18.44-fc-v657, 2 vCPUs, 2026-11-29): cubic unpinned, runs in
/// two modes (about 17 and 33 Gbit/s), against cubic with both ends of the
/// bench on CPU 0.
const UNPINNED: [f64; 18] = [
    15.03, 28.77, 39.24, 37.93, 19.84, 16.29, 33.54, 33.42, 29.55, 17.79, 30.83, 32.48, 38.86,
    16.1, 19.18, 36.42, 18.66, 28.11,
];
const PINNED: [f64; 18] = [
    27.58, 35.38, 37.51, 33.43, 36.07, 35.31, 30.39, 31.62, 35.25, 28.92, 34.13, 37.75, 31.06,
    32.52, 36.04, 37.0, 30.14, 30.0,
];

#[test]
fn the_mean_decides_where_a_sample_in_two_modes_leaves_the_median_open() {
    // The median's interval straddles zero and reaches past the threshold:
    // inconclusive (it read "no change" before the fourth verdict).
    let boot = BootstrapConfig {
        level: 0.975,
        min_effect_pct: 2.0,
        ..BootstrapConfig::default()
    };
    let up = Direction::HigherIsBetter;
    let by_median = compare(&PINNED, &UNPINNED, up, &boot).unwrap();
    assert_eq!(
        by_median,
        compare_by(&PINNED, &UNPINNED, up, &boot, Statistic::Median).unwrap()
    );
    let by_mean = compare_by(&PINNED, &UNPINNED, up, &boot, Statistic::Mean).unwrap();
    assert_eq!(by_median.verdict, Verdict::Inconclusive, "{by_median:?}");
    assert_eq!(by_mean.verdict, Verdict::Gain, "{by_mean:?}");
    let (m, b) = (summarize(&PINNED).unwrap(), summarize(&UNPINNED).unwrap());
    let pct = by_mean.change_pct.unwrap();
    assert!((pct.estimate - (m.mean / b.mean - 1.0) * 100.0).abs() < 1e-9);
    let med = by_median.change_pct.unwrap();
    assert!(
        pct.lo > 0.0 && pct.hi - pct.lo < med.hi - med.lo,
        "{pct:?} {med:?}"
    );
    assert_eq!(Statistic::parse("mean"), Some(Statistic::Mean));
    assert_eq!(Statistic::parse("average"), None);
}

/// Two samples of 6 runs from one normal distribution, 1000 times: a 95 %
/// interval of the difference of means excludes zero about 5 % of the
/// time. The plain percentile bootstrap divides the variance by n and takes
/// normal quantiles, and excludes it about twice as often on 6 runs.
#[test]
fn the_mean_interval_on_few_runs_holds_its_level() {
    let boot = BootstrapConfig {
        resamples: 1000,
        min_effect_pct: 0.0,
        ..BootstrapConfig::default()
    };
    let mut rng = SplitMix64::new(29);
    let mut draw = || (0..6).map(|_| rng.normal(30.0, 5.0)).collect::<Vec<_>>();
    let trials = 1000;
    let mut shown = 0;
    for _ in 0..trials {
        let (a, b) = (draw(), draw());
        let c = compare_by(&a, &b, Direction::HigherIsBetter, &boot, Statistic::Mean).unwrap();
        if c.difference.lo > 0.0 || c.difference.hi < 0.0 {
            shown += 1;
        }
    }
    assert!(
        (25..=70).contains(&shown),
        "{shown} of {trials} intervals exclude zero"
    );
}

/// A verdict is what its shown intervals say: a gain's % change excludes
/// zero as its difference does, also where a baseline in two modes skews
/// the ratio's replicates away from the difference's.
#[test]
fn a_verdict_agrees_with_the_change_shown() {
    let boot = BootstrapConfig {
        resamples: 500,
        ..BootstrapConfig::default()
    };
    let mut rng = SplitMix64::new(11);
    for trial in 0..300 {
        let base: Vec<f64> = (0..6)
            .map(|_| {
                let mode = if rng.chance(0.5) { 17.0 } else { 33.0 };
                rng.normal(mode, 1.5)
            })
            .collect();
        let cell: Vec<f64> = (0..6).map(|_| rng.normal(29.0, 3.0)).collect();
        for stat in [Statistic::Mean, Statistic::Median] {
            let c = compare_by(&cell, &base, Direction::HigherIsBetter, &boot, stat).unwrap();
            let pct = c.change_pct.unwrap();
            match c.verdict {
                Verdict::Gain => assert!(pct.lo > 0.0, "{trial} {stat}: {c:?}"),
                Verdict::Regression => assert!(pct.hi < 0.0, "{trial} {stat}: {c:?}"),
                _ => {}
            }
        }
    }
}
