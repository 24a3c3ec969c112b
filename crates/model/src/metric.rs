//! How a measured response is named and shown: [`Metric::key`] (its key in
//! results.json), [`Metric::unit`], [`Metric::name`] for readers, and the
//! one number formatter of the terminal tables, the Markdown summary and the
//! HTML page ([`Scale`], [`num`], [`pct`], [`Metric::format`]).

use crate::experiment::Metric;
pub use crate::units::{
    BITS_PER_SEC, CONNECTIONS_PER_SEC, EVENTS_PER_SEC, PACKETS_PER_SEC, TRANSACTIONS_PER_SEC,
};

impl Metric {
    /// The key of the metric in a run's values (its snake_case name).
    pub fn key(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::Transactions => "transactions",
            Metric::LatencyP50 => "latency_p50",
            Metric::LatencyP99 => "latency_p99",
            Metric::CpuPct => "cpu_pct",
            Metric::SoftirqPct => "softirq_pct",
            Metric::CpuPerWork => "cpu_per_work",
            Metric::Retransmits => "retransmits",
            Metric::LossPct => "loss_pct",
            Metric::PacketRate => "packet_rate",
            Metric::IrqRate => "irq_rate",
        }
    }

    /// The unit its values are recorded in (for [`Metric::CpuPerWork`],
    /// whose unit depends on the test, the generic `CPU-s/work`: see
    /// [`Metric::unit_for`]).
    pub fn unit(self) -> &'static str {
        match self {
            Metric::CpuPerWork => "CPU-s/work",
            Metric::Throughput => "bit/s",
            Metric::Transactions => "1/s",
            Metric::LatencyP50 | Metric::LatencyP99 => "µs",
            Metric::CpuPct | Metric::SoftirqPct | Metric::LossPct => "%",
            Metric::Retransmits => "segments",
            Metric::PacketRate => PACKETS_PER_SEC,
            Metric::IrqRate => EVENTS_PER_SEC,
        }
    }

    /// The metric for readers (`latency p99`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::Transactions => "transactions",
            Metric::LatencyP50 => "latency p50",
            Metric::LatencyP99 => "latency p99",
            Metric::CpuPct => "CPU",
            Metric::SoftirqPct => "softirq",
            Metric::CpuPerWork => "CPU per work",
            Metric::Retransmits => "retransmits",
            Metric::LossPct => "loss",
            Metric::PacketRate => "packet rate",
            Metric::IrqRate => "interrupts",
        }
    }

    /// The unit of its values in a workload of bench test `test`
    /// (`tcp-stream`): [`cpu_work_unit`] for [`Metric::CpuPerWork`],
    /// connections per second for the transactions of a test that counts
    /// connections (tcp-crr), else [`Metric::unit`].
    pub fn unit_for(self, test: &str) -> &'static str {
        match self {
            Metric::CpuPerWork => cpu_work_unit(test),
            // tcp-crr's transactions are connections: `cps`, as bench says.
            Metric::Transactions
                if crate::catalogue::CATALOGUE
                    .iter()
                    .any(|k| k.name == test && k.rate_unit == Some(CONNECTIONS_PER_SEC)) =>
            {
                CONNECTIONS_PER_SEC
            }
            _ => self.unit(),
        }
    }

    /// `v` (in [`Metric::unit`]) scaled for reading: `2.41 ms`, `18.1 Gbit/s`.
    pub fn format(self, v: f64) -> String {
        format_value(self.unit(), v)
    }
}

/// The unit of CPU per work of bench test `test` (`tcp-stream`): CPU-seconds
/// per GB (10^9 bytes) for streams, per million datagrams for udp-stream,
/// per 1000 transactions for request/response and per 1000 connections
/// for tcp-crr; `CPU-s/work` for a test nettune does not know.
pub fn cpu_work_unit(test: &str) -> &'static str {
    match test {
        "tcp-stream" => "CPU-s/GB",
        "udp-stream" => "CPU-s/Mpkt",
        "tcp-rr" | "udp-rr" => "CPU-s/1k tx",
        "tcp-crr" => "CPU-s/1k conn",
        _ => "CPU-s/work",
    }
}

/// `v` in `unit` scaled on its own magnitude: `2.41 ms`, `802 tps`, `12.3 %`.
pub fn format_value(unit: &str, v: f64) -> String {
    Scale::for_unit(unit, v).fmt(v)
}

/// A rate of events per second, scaled: `950/s`, `37.6k/s`, `1.25M/s`.
pub fn fmt_per_sec(v: f64) -> String {
    format_value(EVENTS_PER_SEC, v)
}

/// A rate in bit/s, scaled: `25.3 Gbit/s`, `4.00 kbit/s`.
pub fn fmt_bits(v: f64) -> String {
    format_value(BITS_PER_SEC, v)
}

/// A rate in packets/s, scaled: `404 kpps`, `1.20 Mpps`, `950 pps`.
pub fn fmt_pps(v: f64) -> String {
    format_value(PACKETS_PER_SEC, v)
}

/// A duration in nanoseconds in the unit its magnitude calls for, with
/// three significant digits: `850 ns`, `54.3 µs`, `2.25 ms`, `1.50 s`.
pub fn fmt_ns(ns: u64) -> String {
    format_value("ns", ns as f64)
}

/// A display scale for one unit: values are divided by `factor` and shown
/// with `unit`.
///
/// The one convention of every table and summary (`docs/engine.md`,
/// "Units"): a rate takes an SI prefix (k, M, G) chosen on its magnitude and
/// a named unit (`bit/s`, `pps`, `tps`); a time takes the unit (ns, µs, ms,
/// s) in which its magnitude is at least 1; both print about three
/// significant digits ([`num`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// What values are divided by.
    pub factor: f64,
    /// The unit shown after them (`Gbit/s`, `ms`, `kpps`).
    pub unit: String,
}

impl Scale {
    /// The scale for values of `unit` around `magnitude` (a median, a maximum).
    ///
    /// The step is chosen on the magnitude as [`num`] prints it (three
    /// significant digits), so a value that rounds up to 1000 takes the
    /// next step: 999.6e6 bit/s is `1.00 Gbit/s`, never `1000 Mbit/s`.
    pub fn for_unit(unit: &str, magnitude: f64) -> Scale {
        let m = if magnitude.is_finite() {
            magnitude.abs()
        } else {
            0.0
        };
        let si = |named: &str| {
            let (factor, prefix) = step(m, &[(1e9, "G"), (1e6, "M"), (1e3, "k")], (1.0, ""));
            (factor, format!("{prefix}{named}"))
        };
        let time = |base: f64| {
            // `base`: nanoseconds per recorded unit (1 for ns, 1000 for µs).
            let (per, shown) = step(
                m * base,
                &[(1e9, "s"), (1e6, "ms"), (1e3, "µs")],
                (1.0, "ns"),
            );
            (per / base, shown.to_string())
        };
        let (factor, shown) = match unit {
            BITS_PER_SEC | PACKETS_PER_SEC | TRANSACTIONS_PER_SEC | CONNECTIONS_PER_SEC
            | EVENTS_PER_SEC => si(unit),
            // Transactions are recorded in `1/s` (results.json keeps it).
            "1/s" => si(TRANSACTIONS_PER_SEC),
            "ns" => time(1.0),
            "µs" | "us" => time(1e3),
            _ => (1.0, unit.to_string()),
        };
        Scale {
            factor,
            unit: shown,
        }
    }

    /// `v` in this scale, as a number (non-finite stays non-finite).
    pub fn apply(&self, v: f64) -> f64 {
        v / self.factor
    }

    /// `v` in this scale, with its unit.
    pub fn fmt(&self, v: f64) -> String {
        self.with_unit(num(self.apply(v)))
    }

    /// `[lo, hi]` in this scale, with its unit.
    pub fn fmt_range(&self, lo: f64, hi: f64) -> String {
        self.with_unit(format!(
            "[{}, {}]",
            num(self.apply(lo)),
            num(self.apply(hi))
        ))
    }

    fn with_unit(&self, s: String) -> String {
        if self.unit.is_empty() {
            s
        } else if self
            .unit
            .trim_start_matches(['k', 'M', 'G'])
            .starts_with('/')
        {
            format!("{s}{}", self.unit)
        } else {
            format!("{s} {}", self.unit)
        }
    }
}

/// Where [`num`] prints a value of three integer digits as `1000`: from
/// here a value belongs to the next step of its scale.
const ROUNDS_TO_1000: f64 = 999.5;

/// The step of a ladder (largest first) for a non-negative `m`: climbing
/// from `smallest`, the next step is taken while `m` in the current one
/// would print as 1000 or more ([`ROUNDS_TO_1000`]).
fn step(
    m: f64,
    ladder: &[(f64, &'static str)],
    smallest: (f64, &'static str),
) -> (f64, &'static str) {
    let mut lower = smallest;
    for &(factor, name) in ladder.iter().rev() {
        if m / lower.0 >= ROUNDS_TO_1000 {
            lower = (factor, name);
        } else {
            break;
        }
    }
    lower
}

/// A number with three significant digits, trailing zeros kept (`0.0470`,
/// `0.500`, `2.40`, `12.0`); integers of three digits or more in full
/// (`240`, `12345`); below 0.001 and from 10^15 in scientific notation
/// (`4.70e-4`); `n/a` when not finite.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    // Each bound is where rounding to the next wider format's digits would
    // carry into a fourth digit (9.996 is `10.0`, not `10.00`).
    let s = if a >= 1e15 {
        format!("{v:.3e}")
    } else if a >= 99.95 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 9.995 {
        format!("{v:.1}")
    } else if a >= 0.9995 {
        format!("{v:.2}")
    } else if a >= 0.099_95 {
        format!("{v:.3}")
    } else if a >= 0.009_995 {
        format!("{v:.4}")
    } else if a >= 0.000_999_5 {
        format!("{v:.5}")
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
pub fn pct(v: f64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_formats() {
        let s = Scale::for_unit("bit/s", 58.1e6);
        assert_eq!(s.fmt(58.14e6), "58.1 Mbit/s");
        assert_eq!(s.fmt_range(55e6, 61.26e6), "[55.0, 61.3] Mbit/s");
        assert_eq!(Scale::for_unit("µs", 1500.0).fmt(1500.0), "1.50 ms");
        assert_eq!(Scale::for_unit("1/s", 802.0).fmt(802.0), "802 tps");
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(num(-0.0), "0");
        assert_eq!(pct(12.34), "+12.3 %");
        assert_eq!(num(99.96), "100");
        assert_eq!(
            Scale::for_unit("1/s", 802.0).fmt_range(674.0, 936.0),
            "[674, 936] tps"
        );
        assert_eq!(pct(-3.0), "-3.00 %");
        assert_eq!(num(1e300), "1.000e300");
        assert_eq!(num(9.996), "10.0");
    }

    /// Bench printed `404.17 kdatagrams/s` and `18.44 ktransactions/s`, the
    /// lab `51.0 k/s`: one style now, SI prefix and a named rate.
    #[test]
    fn rates_take_an_si_prefix_and_a_named_unit() {
        assert_eq!(format_value(PACKETS_PER_SEC, 404_170.0), "404 kpps");
        assert_eq!(format_value(PACKETS_PER_SEC, 1.2e6), "1.20 Mpps");
        assert_eq!(format_value(PACKETS_PER_SEC, 999.0), "999 pps");
        assert_eq!(format_value(TRANSACTIONS_PER_SEC, 18_440.0), "18.4 ktps");
        assert_eq!(format_value(CONNECTIONS_PER_SEC, 12_340.0), "12.3 kcps");
        assert_eq!(Metric::Transactions.format(51_000.0), "51.0 ktps");
        assert_eq!(fmt_bits(25.3e9), "25.3 Gbit/s");
        assert_eq!(fmt_bits(240e6), "240 Mbit/s");
        assert_eq!(fmt_bits(f64::NAN), "n/a bit/s");
        assert_eq!(
            Scale::for_unit("1/s", 51e3).fmt_range(49.8e3, 52e3),
            "[49.8, 52.0] ktps"
        );
    }

    /// Bench's latency table had its own time formatter (`123.4 µs`, `5.2
    /// µs`); times now follow the one rule: the unit in which the magnitude
    /// is at least 1, three significant digits.
    #[test]
    fn times_follow_one_rule() {
        assert_eq!(fmt_ns(850), "850 ns");
        assert_eq!(fmt_ns(5_200), "5.20 µs");
        assert_eq!(fmt_ns(54_300), "54.3 µs");
        assert_eq!(fmt_ns(123_400), "123 µs");
        assert_eq!(fmt_ns(2_250_000), "2.25 ms");
        assert_eq!(fmt_ns(12_340_000_000), "12.3 s");
        assert_eq!(fmt_ns(0), "0 ns");
        assert_eq!(format_value("µs", 123.4), "123 µs");
        // The unit in which the value is at least 1, whatever it was recorded in.
        assert_eq!(format_value("µs", 0.5), "500 ns");
        assert_eq!(format_value("µs", 2.5e6), "2.50 s");
    }

    /// Below 1, `num` printed two decimals (`0.05` for 0.047, one digit;
    /// `0.50`): three significant digits now, trailing zeros kept as they
    /// are from 1 up (`2.40`).
    #[test]
    fn three_significant_digits_below_one_as_above() {
        assert_eq!(num(0.047), "0.0470");
        assert_eq!(num(0.5), "0.500");
        assert_eq!(num(-0.5), "-0.500");
        assert_eq!(num(0.1234), "0.123");
        assert_eq!(num(0.99949), "0.999");
        assert_eq!(num(0.9996), "1.00");
        assert_eq!(num(0.09996), "0.100");
        assert_eq!(num(0.009996), "0.0100");
        assert_eq!(num(0.0012345), "0.00123");
        assert_eq!(num(0.000_999_6), "0.00100");
        assert_eq!(num(0.000_47), "4.70e-4");
        assert_eq!(num(2.4), "2.40");
        assert_eq!(num(12.0), "12.0");
        assert_eq!(num(240.0), "240");
        assert_eq!(fmt_pps(37_600.0), "37.6 kpps");
        assert_eq!(fmt_pps(950.0), "950 pps");
        assert_eq!(fmt_pps(0.5), "0.500 pps");
    }

    /// The lab printed `2408.4 µs` where the report printed `2.41 ms`; one
    /// formatter now prints the report's.
    #[test]
    fn a_metric_formats_as_the_report_does() {
        assert_eq!(Metric::LatencyP99.format(2408.4), "2.41 ms");
        assert_eq!(Metric::Throughput.format(18.1e9), "18.1 Gbit/s");
        assert_eq!(Metric::SoftirqPct.format(12.34), "12.3 %");
        assert_eq!(Metric::LatencyP50.key(), "latency_p50");
        assert_eq!(Metric::Retransmits.unit(), "segments");
    }

    /// The scale was chosen on the raw magnitude, before rounding: 999.6e6
    /// bit/s printed `1000 Mbit/s` beside `1.00 Gbit/s`. It is chosen on
    /// the value rounded to three significant digits now.
    #[test]
    fn the_scale_is_chosen_after_rounding() {
        assert_eq!(fmt_bits(999.6e6), "1.00 Gbit/s");
        assert_eq!(fmt_bits(999.4e6), "999 Mbit/s");
        assert_eq!(fmt_bits(999.5e6), "1.00 Gbit/s");
        assert_eq!(fmt_bits(-999.6e6), "-1.00 Gbit/s");
        assert_eq!(fmt_bits(999.7e3), "1.00 Mbit/s");
        assert_eq!(format_value("µs", 999.7), "1.00 ms");
        assert_eq!(format_value("µs", 999.4), "999 µs");
        assert_eq!(fmt_ns(999_700), "1.00 ms");
        assert_eq!(fmt_ns(999_600_000), "1.00 s");
        assert_eq!(format_value("µs", 0.9997), "1.00 µs");
        assert_eq!(fmt_pps(999_700.0), "1.00 Mpps");
        assert_eq!(fmt_pps(999_400.0), "999 kpps");
        assert_eq!(fmt_pps(999.7), "1.00 kpps");
        assert_eq!(fmt_pps(999_600_000.0), "1.00 Gpps");
        assert_eq!(Metric::Transactions.format(999_700.0), "1.00 Mtps");
        // The largest unit has nothing above it: the number grows instead.
        assert_eq!(fmt_bits(999.7e9), "1000 Gbit/s");
        assert_eq!(format_value("µs", 999.7e6), "1000 s");
        // A range takes the scale of its magnitude, rounded the same way.
        let s = Scale::for_unit("bit/s", 999.8e6);
        assert_eq!(s.fmt_range(990e6, 1.01e9), "[0.990, 1.01] Gbit/s");
    }

    /// `nettune stat` printed a bare `274.2k` beside `274 kpps`: event
    /// rates take the same three digits and their unit.
    #[test]
    fn event_rates_carry_their_unit() {
        assert_eq!(fmt_per_sec(950.4), "950/s");
        assert_eq!(fmt_per_sec(274_200.0), "274k/s");
        assert_eq!(fmt_per_sec(37_552.0), "37.6k/s");
        assert_eq!(fmt_per_sec(1_250_000.0), "1.25M/s");
        assert_eq!(fmt_per_sec(999_700.0), "1.00M/s");
        assert_eq!(fmt_per_sec(0.0), "0/s");
        assert_eq!(fmt_per_sec(0.5), "0.500/s");
    }

    /// CPU per work is named in the test's unit and is better lower; CPU
    /// and softirq % are neither better nor worse by themselves.
    #[test]
    fn cpu_per_work_has_the_tests_unit() {
        use crate::stats::Direction;
        assert_eq!(Metric::CpuPerWork.key(), "cpu_per_work");
        assert_eq!(Metric::CpuPerWork.unit_for("tcp-stream"), "CPU-s/GB");
        assert_eq!(Metric::CpuPerWork.unit_for("udp-stream"), "CPU-s/Mpkt");
        assert_eq!(Metric::CpuPerWork.unit_for("tcp-rr"), "CPU-s/1k tx");
        assert_eq!(Metric::CpuPerWork.unit_for("udp-rr"), "CPU-s/1k tx");
        assert_eq!(Metric::CpuPerWork.unit_for("tcp-crr"), "CPU-s/1k conn");
        assert_eq!(Metric::CpuPerWork.unit_for("bogus"), "CPU-s/work");
        assert_eq!(Metric::LatencyP99.unit_for("tcp-rr"), "µs");
        assert_eq!(Metric::Transactions.unit_for("tcp-crr"), "cps");
        assert_eq!(Metric::Transactions.unit_for("tcp-rr"), "1/s");
        assert_eq!(Metric::CpuPerWork.direction(), Direction::LowerIsBetter);
        assert_eq!(Metric::CpuPct.direction(), Direction::Neither);
        assert_eq!(Metric::SoftirqPct.direction(), Direction::Neither);
        assert_eq!(Scale::for_unit("CPU-s/GB", 1.17).fmt(1.17), "1.17 CPU-s/GB");
    }
}
