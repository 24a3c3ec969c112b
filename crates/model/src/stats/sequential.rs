//! Sequential stopping for `--until-ci PCT`: repeat a cell until the 95 %
//! interval of its median is within PCT of the median, or a cap is reached.

use serde::{Deserialize, Serialize};

use super::{median_interval, BootstrapConfig, StatsError, MAX_VALUES, MIN_VALUES_FOR_INTERVAL};

/// The stopping rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// Target half-width of the interval, in % of the median (0 < x ≤ 100).
    pub target_pct: f64,
    /// Never stop before this many repeats (≥ [`MIN_VALUES_FOR_INTERVAL`]).
    pub min_repeats: usize,
    /// Always stop at this many repeats (≥ `min_repeats`, ≤ [`MAX_VALUES`]).
    pub max_repeats: usize,
    /// Bootstrap parameters of the interval.
    pub bootstrap: BootstrapConfig,
}

/// Why to run another repeat.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum WaitReason {
    /// Fewer repeats than the minimum.
    BelowMinimum {
        /// Repeats so far.
        have: usize,
        /// The minimum.
        min: usize,
    },
    /// The interval is still wider than the target.
    TooWide {
        /// Current half-width, % of the median.
        half_width_pct: f64,
    },
    /// The median is zero and the interval is not a point: no relative width.
    ZeroMedian,
}

/// Why to stop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum StopReason {
    /// The interval's half-width reached the target.
    Converged {
        /// Final half-width, % of the median.
        half_width_pct: f64,
    },
    /// The cap was reached before the target.
    CapReached {
        /// Final half-width, % of the median, when defined.
        half_width_pct: Option<f64>,
    },
}

/// Continue or stop, and why.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "decision")]
pub enum Decision {
    /// Run another repeat.
    Continue(WaitReason),
    /// Stop repeating this cell.
    Stop(StopReason),
}

impl StopRule {
    /// A rule with the default bootstrap (2000 resamples, 95 %).
    pub fn new(target_pct: f64, min_repeats: usize, max_repeats: usize) -> Self {
        StopRule {
            target_pct,
            min_repeats,
            max_repeats,
            bootstrap: BootstrapConfig::default(),
        }
    }

    /// Check the rule's parameters.
    pub fn validate(&self) -> Result<(), StatsError> {
        if !(self.target_pct > 0.0 && self.target_pct <= 100.0) {
            return Err(StatsError::BadParameter {
                name: "until-ci target %",
                value: self.target_pct,
                range: "above 0, at most 100",
            });
        }
        if !(MIN_VALUES_FOR_INTERVAL..=MAX_VALUES).contains(&self.min_repeats) {
            return Err(StatsError::BadParameter {
                name: "minimum repeats",
                value: self.min_repeats as f64,
                range: "3 to 10000",
            });
        }
        if !(self.min_repeats..=MAX_VALUES).contains(&self.max_repeats) {
            return Err(StatsError::BadParameter {
                name: "maximum repeats",
                value: self.max_repeats as f64,
                range: "the minimum to 10000",
            });
        }
        self.bootstrap.validate()
    }

    /// Decide, from the values measured so far, whether to run another
    /// repeat. NaN or infinite values are refused.
    pub fn decide(&self, values: &[f64]) -> Result<Decision, StatsError> {
        self.validate()?;
        let n = values.len();
        if n < self.min_repeats {
            // Still check the values so a bad one is reported at once.
            if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(StatsError::NotFinite {
                    what: "values",
                    index,
                    value,
                });
            }
            return Ok(Decision::Continue(WaitReason::BelowMinimum {
                have: n,
                min: self.min_repeats,
            }));
        }
        let interval = median_interval(values, &self.bootstrap)?;
        let hw = interval.half_width_pct();
        Ok(match hw {
            Some(h) if h <= self.target_pct => {
                Decision::Stop(StopReason::Converged { half_width_pct: h })
            }
            _ if n >= self.max_repeats => {
                Decision::Stop(StopReason::CapReached { half_width_pct: hw })
            }
            Some(h) => Decision::Continue(WaitReason::TooWide { half_width_pct: h }),
            None => Decision::Continue(WaitReason::ZeroMedian),
        })
    }
}
