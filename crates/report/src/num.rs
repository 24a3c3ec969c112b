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
}

pub(crate) use model::metric::num;

/// The metric for readers (`latency p99`).
pub(crate) fn metric_name(m: Metric) -> &'static str {
    m.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's scale is the model's, with the unit from results.json
    /// cleaned and capped.
    #[test]
    fn the_models_scale_with_a_safe_unit() {
        for (unit, v) in [("bit/s", 58.14e6), ("µs", 1500.0), ("1/s", 802.0)] {
            assert_eq!(
                Scale::for_unit(unit, v).fmt(v),
                model::metric::Scale::for_unit(unit, v).fmt(v)
            );
        }
        let hostile = format!("\u{1b}[2J{}", "x".repeat(100));
        let s = Scale::for_unit(&hostile, 1.0);
        assert!(s.unit.chars().count() <= 25, "{}", s.unit);
        assert!(!s.unit.contains('\u{1b}'), "{}", s.unit);
    }
}
