//! A cell against its baseline: difference of medians with its own bootstrap
//! interval, and a verdict per metric.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::bootstrap::{interval_sample, median_interval, resample_median};
use super::summary::{median_sorted, summarize};
use super::{BootstrapConfig, Interval, SplitMix64, StatsError, Summary};

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughput, transactions/s: more is better.
    HigherIsBetter,
    /// Latency, CPU per work, loss: less is better.
    LowerIsBetter,
    /// CPU and softirq %: neither way is better by itself (a rise may
    /// come with more work done), so a change is only "changed".
    Neither,
}

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The difference's interval excludes zero, on the better side.
    Gain,
    /// The difference's interval excludes zero, on the worse side.
    Regression,
    /// The difference's interval contains zero, or the change is under the
    /// practical threshold: no change shown.
    NoChange,
    /// A change the interval shows, of a metric that is neither better nor
    /// worse by itself ([`Direction::Neither`]).
    Changed,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Gain => "gain",
            Verdict::Regression => "regression",
            Verdict::NoChange => "no change",
            Verdict::Changed => "changed",
        })
    }
}

/// A cell compared with its baseline, for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The cell's summary.
    pub cell: Summary,
    /// The baseline's summary.
    pub baseline: Summary,
    /// Interval of the cell's median.
    pub cell_median: Interval,
    /// Interval of the baseline's median.
    pub baseline_median: Interval,
    /// median(cell) − median(baseline), with its bootstrap interval.
    pub difference: Interval,
    /// (median(cell) / median(baseline) − 1) × 100, with its interval; `None`
    /// when a baseline resample had a zero median.
    pub change_pct: Option<Interval>,
    /// The metric's direction.
    pub direction: Direction,
    /// The verdict.
    pub verdict: Verdict,
}

/// Seed offset so the cell's and baseline's own intervals use other streams
/// than the difference's.
const STREAM: u64 = 0xA076_1D64_78BD_642F;

/// Compare a cell's values with its baseline's for a metric of `direction`.
///
/// The difference's interval is a percentile bootstrap: each replicate
/// resamples both samples independently and takes the difference (and the
/// ratio) of their medians. The verdict is gain or regression (changed for
/// [`Direction::Neither`]) when that interval excludes zero and the change is at least `cfg.min_effect_pct`
/// % of the baseline (the practical threshold; with a zero baseline, where
/// no % exists, the interval alone decides), and no change otherwise.
pub fn compare(
    cell: &[f64],
    baseline: &[f64],
    direction: Direction,
    cfg: &BootstrapConfig,
) -> Result<Comparison, StatsError> {
    cfg.validate()?;
    let c = interval_sample("cell", cell)?;
    let b = interval_sample("baseline", baseline)?;
    let (mc, mb) = (median_sorted(&c), median_sorted(&b));
    let mut rng = SplitMix64::new(cfg.seed);
    let mut ic = vec![0usize; c.len()];
    let mut ib = vec![0usize; b.len()];
    let mut diffs = Vec::with_capacity(cfg.resamples);
    let mut ratios = Vec::with_capacity(cfg.resamples);
    let mut ratio_defined = mb != 0.0;
    for _ in 0..cfg.resamples {
        let rc = resample_median(&c, &mut ic, &mut rng);
        let rb = resample_median(&b, &mut ib, &mut rng);
        diffs.push(rc - rb);
        if rb == 0.0 {
            ratio_defined = false;
        } else if ratio_defined {
            ratios.push((rc / rb - 1.0) * 100.0);
        }
    }
    diffs.sort_by(f64::total_cmp);
    let difference = Interval::from_replicates(mc - mb, &diffs, cfg.level);
    let change_pct = if ratio_defined && ratios.iter().all(|r| r.is_finite()) {
        ratios.sort_by(f64::total_cmp);
        Some(Interval::from_replicates(
            (mc / mb - 1.0) * 100.0,
            &ratios,
            cfg.level,
        ))
    } else {
        None
    };
    let verdict = if difference.lo > 0.0 {
        match direction {
            Direction::HigherIsBetter => Verdict::Gain,
            Direction::LowerIsBetter => Verdict::Regression,
            Direction::Neither => Verdict::Changed,
        }
    } else if difference.hi < 0.0 {
        match direction {
            Direction::HigherIsBetter => Verdict::Regression,
            Direction::LowerIsBetter => Verdict::Gain,
            Direction::Neither => Verdict::Changed,
        }
    } else {
        Verdict::NoChange
    };
    // Shown but smaller than the practical threshold: no change worth a name.
    let below = change_pct
        .as_ref()
        .is_some_and(|p| p.estimate.abs() < cfg.min_effect_pct);
    let verdict = if below { Verdict::NoChange } else { verdict };
    let own = |seed: u64| BootstrapConfig {
        seed: cfg.seed ^ seed,
        ..*cfg
    };
    Ok(Comparison {
        cell: summarize(cell)?,
        baseline: summarize(baseline)?,
        cell_median: median_interval(cell, &own(STREAM))?,
        baseline_median: median_interval(baseline, &own(STREAM.rotate_left(17)))?,
        difference,
        change_pct,
        direction,
        verdict,
    })
}
