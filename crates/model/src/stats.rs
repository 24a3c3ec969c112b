//! Statistics for repeated measurements: summaries, bootstrap confidence
//! intervals of the median, comparison with a baseline (with a verdict per
//! metric), and sequential stopping for `--until-ci`.
//!
//! Everything here is pure and deterministic: resampling draws from a seeded
//! [`SplitMix64`], and the input is sorted before it is resampled, so a result
//! depends only on the multiset of values, the seed and the parameters.
//!
//! Limits: at most [`MAX_VALUES`] values per sample and [`MAX_RESAMPLES`]
//! bootstrap resamples, so the work of one interval is bounded.

mod bootstrap;
mod compare;
mod error;
mod rng;
mod sequential;
mod summary;

pub use bootstrap::{median_interval, BootstrapConfig, Interval, DEFAULT_MIN_EFFECT_PCT};
pub use compare::{
    compare, compare_by, compare_scaled, judge, ChangeScale, Comparison, Direction, Judgement,
    Statistic, Verdict, MAX_MORE_RUNS, MIN_EFFECT_POINTS,
};
pub use error::StatsError;
pub use rng::SplitMix64;
pub use sequential::{Decision, StopReason, StopRule, WaitReason};
pub use summary::{summarize, Summary};

/// Most values accepted in one sample (one cell's repeats of one metric).
pub const MAX_VALUES: usize = 10_000;
/// Most bootstrap resamples accepted.
pub const MAX_RESAMPLES: usize = 10_000;
/// Fewest values for which an interval (and hence a verdict) is given.
pub const MIN_VALUES_FOR_INTERVAL: usize = 3;
