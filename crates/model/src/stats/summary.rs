//! Point summaries of one sample.

use serde::{Deserialize, Serialize};

use super::{StatsError, MAX_VALUES};

/// Median, mean, spread and extremes of one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Median (mean of the two middle values when `n` is even).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); `None` for a single value.
    pub std_dev: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// Check a sample (non-empty, finite, bounded) and return it sorted.
pub(crate) fn checked_sorted(what: &'static str, values: &[f64]) -> Result<Vec<f64>, StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty { what });
    }
    if values.len() > MAX_VALUES {
        return Err(StatsError::TooMany {
            what,
            n: values.len(),
            max: MAX_VALUES,
        });
    }
    if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NotFinite { what, index, value });
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(sorted)
}

/// Median of a sorted, non-empty slice.
pub(crate) fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        // Halve first: no overflow for values near f64::MAX.
        sorted[n / 2 - 1] / 2.0 + sorted[n / 2] / 2.0
    }
}

/// Linear-interpolation quantile (type 7) of a sorted, non-empty slice.
pub(crate) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let h = last as f64 * p.clamp(0.0, 1.0);
    let lo = (h.floor() as usize).min(last);
    let hi = (lo + 1).min(last);
    let (a, b) = (sorted[lo], sorted[hi]);
    a + (h - lo as f64) * (b - a)
}

/// Summarize a sample. Refuses empty input, NaN/infinite values and more than
/// [`MAX_VALUES`] values.
pub fn summarize(values: &[f64]) -> Result<Summary, StatsError> {
    let sorted = checked_sorted("values", values)?;
    let n = sorted.len();
    // Welford's algorithm: stable for large, close values.
    let mut mean = 0.0;
    let mut m2 = 0.0;
    for (i, &x) in sorted.iter().enumerate() {
        let d = x - mean;
        mean += d / (i + 1) as f64;
        m2 += d * (x - mean);
    }
    let std_dev = (n > 1).then(|| (m2 / (n - 1) as f64).max(0.0).sqrt());
    Ok(Summary {
        n,
        median: median_sorted(&sorted),
        mean,
        std_dev,
        min: sorted[0],
        max: sorted[n - 1],
    })
}
