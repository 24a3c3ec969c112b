//! Number formatting with units, deterministic for snapshots.

use model::experiment::Metric;

/// A display scale for one unit ([`model::metric::Scale`], the one
/// formatter of the terminal, Markdown and HTML), its unit made safe to
/// print (units come from results.json).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scale {
    pub factor: f64,
    pub unit: String,
}

impl Scale {
    /// The scale for values of `unit` around `magnitude` (a median, a maximum).
    pub fn for_unit(unit: &str, magnitude: f64) -> Scale {
        let s = model::metric::Scale::for_unit(unit, magnitude);
        Scale {
            factor: s.factor,
            unit: crate::esc::label(&s.unit, 24),
        }
    }

    fn model(&self) -> model::metric::Scale {
        model::metric::Scale {
            factor: self.factor,
            unit: self.unit.clone(),
        }
    }

    /// `v` in this scale, as a number (non-finite stays non-finite).
    pub fn apply(&self, v: f64) -> f64 {
        v / self.factor
    }

    /// `v` in this scale, with its unit.
    pub fn fmt(&self, v: f64) -> String {
        self.model().fmt(v)
    }

    /// `[lo, hi]` in this scale, with its unit.
    pub fn fmt_range(&self, lo: f64, hi: f64) -> String {
        self.model().fmt_range(lo, hi)
    }
}

pub(crate) use model::metric::{num, pct};

/// The metric for readers (`latency p99`).
pub(crate) fn metric_name(m: Metric) -> &'static str {
    m.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_formats() {
        let s = Scale::for_unit("bit/s", 58.1e6);
        assert_eq!(s.fmt(58.14e6), "58.1 Mbit/s");
        assert_eq!(s.fmt_range(55e6, 61.26e6), "[55.0, 61.3] Mbit/s");
        assert_eq!(Scale::for_unit("µs", 1500.0).fmt(1500.0), "1.50 ms");
        assert_eq!(Scale::for_unit("1/s", 802.0).fmt(802.0), "802/s");
        assert_eq!(
            Scale::for_unit("1/s", 802.0).fmt_range(674.0, 936.0),
            "[674, 936]/s"
        );
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(num(-0.0), "0");
        assert_eq!(pct(12.34), "+12.3 %");
        assert_eq!(pct(-3.0), "-3.00 %");
        assert_eq!(num(1e300), "1.000e300");
        assert_eq!(num(99.96), "100");
        assert_eq!(num(9.996), "10.0");
    }
}
