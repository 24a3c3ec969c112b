//! Number formatting with units, deterministic for snapshots.

use model::experiment::Metric;

/// A display scale for one unit: values are divided by `factor` and shown
/// with `unit`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scale {
    pub factor: f64,
    pub unit: String,
}

impl Scale {
    /// The scale for values of `unit` around `magnitude` (a median, a maximum).
    pub fn for_unit(unit: &str, magnitude: f64) -> Scale {
        let m = if magnitude.is_finite() {
            magnitude.abs()
        } else {
            0.0
        };
        let (factor, shown) = match unit {
            "bit/s" if m >= 1e9 => (1e9, "Gbit/s"),
            "bit/s" if m >= 1e6 => (1e6, "Mbit/s"),
            "bit/s" if m >= 1e3 => (1e3, "kbit/s"),
            "1/s" if m >= 1e6 => (1e6, "M/s"),
            "1/s" if m >= 1e3 => (1e3, "k/s"),
            "1/s" => (1.0, "/s"),
            "µs" | "us" if m >= 1e6 => (1e6, "s"),
            "µs" | "us" if m >= 1e3 => (1e3, "ms"),
            _ => (1.0, unit),
        };
        Scale {
            factor,
            unit: crate::esc::label(shown, 24),
        }
    }

    /// `v` in this scale, as a number (non-finite stays non-finite).
    pub fn apply(&self, v: f64) -> f64 {
        v / self.factor
    }

    /// `v` in this scale, with its unit.
    pub fn fmt(&self, v: f64) -> String {
        if self.unit.is_empty() {
            num(self.apply(v))
        } else if self.unit.starts_with('/') {
            format!("{}{}", num(self.apply(v)), self.unit)
        } else {
            format!("{} {}", num(self.apply(v)), self.unit)
        }
    }

    /// `[lo, hi]` in this scale, with its unit.
    pub fn fmt_range(&self, lo: f64, hi: f64) -> String {
        let r = format!("[{}, {}]", num(self.apply(lo)), num(self.apply(hi)));
        if self.unit.is_empty() {
            r
        } else if self.unit.starts_with('/') {
            format!("{r}{}", self.unit)
        } else {
            format!("{r} {}", self.unit)
        }
    }
}

/// A number with about three significant digits; `n/a` when not finite.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    let s = if a >= 1e15 {
        format!("{v:.3e}")
    } else if a >= 99.95 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 9.995 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.2e}")
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// A signed percentage (`+12.3 %`).
pub(crate) fn pct(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let s = num(v);
    if v > 0.0 {
        format!("+{s} %")
    } else {
        format!("{s} %")
    }
}

/// The metric for readers (`latency p99`).
pub(crate) fn metric_name(m: Metric) -> &'static str {
    match m {
        Metric::Throughput => "throughput",
        Metric::Transactions => "transactions",
        Metric::LatencyP50 => "latency p50",
        Metric::LatencyP99 => "latency p99",
        Metric::CpuPct => "CPU",
        Metric::SoftirqPct => "softirq",
        Metric::Retransmits => "retransmits",
        Metric::LossPct => "loss",
    }
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
