//! Errors of the statistics functions.

use thiserror::Error;

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// The sample had no values.
    #[error("{what}: no values")]
    Empty {
        /// Which sample ("values", "cell", "baseline").
        what: &'static str,
    },
    /// A value was NaN or infinite.
    #[error("{what}: value #{index} is {value}, not a finite number")]
    NotFinite {
        /// Which sample.
        what: &'static str,
        /// 0-based position of the value in the input.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// More values than [`super::MAX_VALUES`].
    #[error("{what}: {n} values, more than the limit of {max}")]
    TooMany {
        /// Which sample.
        what: &'static str,
        /// How many values were given.
        n: usize,
        /// The limit.
        max: usize,
    },
    /// Fewer values than an interval needs.
    #[error("{what}: {n} value(s), an interval needs at least {min}")]
    TooFew {
        /// Which sample.
        what: &'static str,
        /// How many values were given.
        n: usize,
        /// The minimum.
        min: usize,
    },
    /// A parameter was outside its range.
    #[error("{name} = {value} is out of range ({range})")]
    BadParameter {
        /// The parameter's name.
        name: &'static str,
        /// Its value.
        value: f64,
        /// The accepted range, in words.
        range: &'static str,
    },
}
