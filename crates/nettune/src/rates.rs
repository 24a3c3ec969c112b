//! Rates as `stat` and `top` print them, `-` when unknown.

use model::metric::{fmt_per_sec, fmt_pps};

/// An event rate (interrupts, softirqs, squeezes) in the one convention
/// (`37.6k/s`), `-` when unknown.
pub fn opt_per_sec(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), fmt_per_sec)
}

/// A packet rate in the one convention (`37.6 kpps`), `-` when unknown.
pub fn opt_pps(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), fmt_pps)
}
