//! Percentile bootstrap confidence interval of the median.

use serde::{Deserialize, Serialize};

use super::summary::{checked_sorted, median_sorted, quantile_sorted};
use super::{SplitMix64, StatsError, MAX_RESAMPLES, MIN_VALUES_FOR_INTERVAL};

/// Parameters of a bootstrap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Number of resamples (100..=[`MAX_RESAMPLES`]).
    pub resamples: usize,
    /// Confidence level, e.g. 0.95 (in 0.5..1).
    pub level: f64,
    /// Seed of the resampling generator.
    pub seed: u64,
    /// Practical threshold, % of the baseline: a change whose interval
    /// excludes zero is a gain or a regression only when its size is at
    /// least this ([`DEFAULT_MIN_EFFECT_PCT`]; 0 to call every shown change).
    #[serde(default = "default_min_effect_pct")]
    pub min_effect_pct: f64,
}

/// The default practical threshold, % of the baseline.
pub const DEFAULT_MIN_EFFECT_PCT: f64 = 2.0;

fn default_min_effect_pct() -> f64 {
    DEFAULT_MIN_EFFECT_PCT
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            resamples: 2_000,
            level: 0.95,
            seed: 0x006e_6574_7475_6e65, // "nettune" in ASCII
            min_effect_pct: DEFAULT_MIN_EFFECT_PCT,
        }
    }
}

impl BootstrapConfig {
    /// Check the parameters' ranges.
    pub fn validate(&self) -> Result<(), StatsError> {
        if !(100..=MAX_RESAMPLES).contains(&self.resamples) {
            return Err(StatsError::BadParameter {
                name: "resamples",
                value: self.resamples as f64,
                range: "100 to 10000",
            });
        }
        if !(self.level >= 0.5 && self.level < 1.0) {
            return Err(StatsError::BadParameter {
                name: "confidence level",
                value: self.level,
                range: "0.5 to below 1",
            });
        }
        if !(0.0..=100.0).contains(&self.min_effect_pct) {
            return Err(StatsError::BadParameter {
                name: "practical threshold",
                value: self.min_effect_pct,
                range: "0 to 100 %",
            });
        }
        Ok(())
    }
}

/// A confidence interval around a point estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The point estimate (e.g. the sample median).
    pub estimate: f64,
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

impl Interval {
    /// Half the interval's width.
    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }

    /// Half-width as a percentage of `|estimate|`; `None` when the estimate is
    /// zero and the interval is not a single point.
    pub fn half_width_pct(&self) -> Option<f64> {
        let hw = self.half_width();
        if hw == 0.0 {
            Some(0.0)
        } else if self.estimate == 0.0 {
            None
        } else {
            Some(hw / self.estimate.abs() * 100.0)
        }
    }

    /// Whether `x` lies inside the interval (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// Build from sorted bootstrap replicates. The bounds are widened to the
    /// estimate if Monte Carlo noise left it outside (rare, tiny samples only).
    /// The interval with both ends moved `k` times as far from the
    /// estimate.
    pub(crate) fn widened(self, k: f64) -> Interval {
        Interval {
            lo: self.estimate - k * (self.estimate - self.lo),
            hi: self.estimate + k * (self.hi - self.estimate),
            ..self
        }
    }

    pub(crate) fn from_replicates(estimate: f64, sorted_reps: &[f64], level: f64) -> Interval {
        let alpha = 1.0 - level;
        let lo = quantile_sorted(sorted_reps, alpha / 2.0).min(estimate);
        let hi = quantile_sorted(sorted_reps, 1.0 - alpha / 2.0).max(estimate);
        Interval {
            estimate,
            lo,
            hi,
            level,
        }
    }
}

/// Median of a resample of `sorted` drawn with replacement. `idx` is scratch
/// space of `sorted.len()` entries. Indexes are drawn, not values: since the
/// input is sorted, index order is value order.
pub(crate) fn resample_median(sorted: &[f64], idx: &mut [usize], rng: &mut SplitMix64) -> f64 {
    let n = sorted.len();
    for slot in idx.iter_mut() {
        *slot = rng.below(n);
    }
    let mid = n / 2;
    let (left, &mut upper, _) = idx.select_nth_unstable(mid);
    if n % 2 == 1 {
        sorted[upper]
    } else {
        let lower = left.iter().copied().max().unwrap_or(upper);
        sorted[lower] / 2.0 + sorted[upper] / 2.0
    }
}

/// Check a sample for interval use and return it sorted.
pub(crate) fn interval_sample(what: &'static str, values: &[f64]) -> Result<Vec<f64>, StatsError> {
    let sorted = checked_sorted(what, values)?;
    if sorted.len() < MIN_VALUES_FOR_INTERVAL {
        return Err(StatsError::TooFew {
            what,
            n: sorted.len(),
            min: MIN_VALUES_FOR_INTERVAL,
        });
    }
    Ok(sorted)
}

/// Percentile bootstrap confidence interval of the median of `values`.
///
/// Needs at least [`MIN_VALUES_FOR_INTERVAL`] finite values. The result
/// depends only on the multiset of values and `cfg` (not on their order).
pub fn median_interval(values: &[f64], cfg: &BootstrapConfig) -> Result<Interval, StatsError> {
    cfg.validate()?;
    let sorted = interval_sample("values", values)?;
    let estimate = median_sorted(&sorted);
    let mut rng = SplitMix64::new(cfg.seed);
    let mut idx = vec![0usize; sorted.len()];
    let mut reps: Vec<f64> = (0..cfg.resamples)
        .map(|_| resample_median(&sorted, &mut idx, &mut rng))
        .collect();
    reps.sort_by(f64::total_cmp);
    Ok(Interval::from_replicates(estimate, &reps, cfg.level))
}
