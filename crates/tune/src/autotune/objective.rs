//! What the search optimizes ([`Objective`]), what else it watches
//! ([`Response`]) and the limits it must keep ([`Constraint`]).

use std::fmt;

use model::catalogue::{names_or, KindSpec};
use model::experiment::{Metric, TestKind};
use model::stats::{Comparison, Direction, Interval, Statistic};
use model::units::{CONNECTIONS_PER_SEC, PACKETS_PER_SEC, TRANSACTIONS_PER_SEC};

use super::AutotuneError;

/// The objective of `nettune autotune --objective`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objective {
    /// Highest goodput (bit/s) of a stream workload.
    MaxThroughput,
    /// Most packets per second: datagrams of a fixed-size udp-stream (their
    /// rate is the bit rate over the size) or transactions of tcp-rr or udp-rr.
    MaxPps,
    /// Lowest 99th-percentile latency (tcp-rr, udp-rr, tcp-crr, or any workload with
    /// a latency probe).
    MinP99,
    /// Most connections per second (tcp-crr).
    MaxCps,
}

/// The objectives by their command-line name.
const OBJECTIVES: &[(&str, Objective)] = &[
    ("max-throughput", Objective::MaxThroughput),
    ("max-pps", Objective::MaxPps),
    ("min-p99", Objective::MinP99),
    ("max-cps", Objective::MaxCps),
];

impl Objective {
    /// Look an objective up by its command-line name.
    pub fn parse(text: &str) -> Result<Objective, AutotuneError> {
        OBJECTIVES
            .iter()
            .find(|(n, _)| *n == text)
            .map(|(_, o)| *o)
            .ok_or_else(|| AutotuneError::UnknownObjective {
                text: model::text::printable_capped(text, 64),
            })
    }

    /// Its command-line name.
    pub fn name(self) -> &'static str {
        OBJECTIVES
            .iter()
            .find(|(_, o)| *o == self)
            .map_or("?", |(n, _)| n)
    }

    /// Which way it improves.
    pub fn direction(self) -> Direction {
        match self {
            Objective::MinP99 => Direction::LowerIsBetter,
            _ => Direction::HigherIsBetter,
        }
    }

    /// The statistic of each arm's runs a search judges by default: the
    /// mean for a rate (what a user gets over time, and where the lab's
    /// runs fall in two modes, the statistic whose interval narrows with
    /// the runs), the median for a 99th percentile (one run's tail seen
    /// through a stall should not move the arm).
    pub fn default_statistic(self) -> Statistic {
        match self {
            Objective::MinP99 => Statistic::Median,
            Objective::MaxThroughput | Objective::MaxPps | Objective::MaxCps => Statistic::Mean,
        }
    }

    /// The metric that measures this objective for a workload of `test`
    /// (`probe`: a latency probe runs beside the load), or why the workload
    /// cannot measure it. Checked before anything runs.
    pub fn metric_for(self, test: TestKind, probe: bool) -> Result<Metric, AutotuneError> {
        let refuse = |needs: String| AutotuneError::Unmeasurable {
            what: self.name().to_string(),
            test: test.name(),
            needs,
        };
        // Read from the catalogue, so a new test kind is measured by the
        // objectives its kind of work serves without a line here.
        let spec = test.spec();
        let rate = |unit: &str| spec.rate_unit == Some(unit);
        let workloads = |f: fn(&KindSpec) -> bool| format!("a {} workload", names_or(f));
        match self {
            Objective::MaxThroughput if spec.stream => Ok(Metric::Throughput),
            Objective::MaxThroughput => Err(refuse(workloads(|k| k.stream))),
            // Datagrams received per second: what a packet-rate user counts
            // (bit/s follows the datagram size, which a candidate may change);
            // or a request/response's transactions, one message each way.
            Objective::MaxPps if rate(PACKETS_PER_SEC) => Ok(Metric::PacketRate),
            Objective::MaxPps if rate(TRANSACTIONS_PER_SEC) => Ok(Metric::Transactions),
            Objective::MaxPps => Err(refuse(workloads(|k| {
                matches!(k.rate_unit, Some(PACKETS_PER_SEC | TRANSACTIONS_PER_SEC))
            }))),
            Objective::MinP99 if !spec.stream || probe => Ok(Metric::LatencyP99),
            Objective::MinP99 => Err(refuse(format!(
                "a latency source: {}, or a probe (--probe rr|icmp)",
                workloads(|k| !k.stream)
            ))),
            Objective::MaxCps if rate(CONNECTIONS_PER_SEC) => Ok(Metric::Transactions),
            Objective::MaxCps => Err(refuse(workloads(|k| {
                k.rate_unit == Some(CONNECTIONS_PER_SEC)
            }))),
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A measured response a run reports: a metric, or CPU per unit of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Response {
    /// A metric of the experiment model (`cpu_per_work` included: CPU
    /// seconds per unit of the workload's work).
    Metric(Metric),
}

impl Response {
    /// Its key (`latency_p99`, `cpu_per_work`).
    pub fn key(self) -> &'static str {
        match self {
            Response::Metric(m) => m.key(),
        }
    }

    /// Which way it improves.
    pub fn direction(self) -> Direction {
        match self {
            Response::Metric(m) => m.direction(),
        }
    }

    /// Whether a workload of `test` (with a latency probe when `probe`)
    /// yields this response, as the lab's metric extraction does.
    pub fn measurable(self, test: TestKind, probe: bool) -> bool {
        let stream = test.is_stream();
        match self {
            Response::Metric(Metric::Throughput) => stream,
            Response::Metric(Metric::Transactions) => !stream,
            Response::Metric(Metric::LatencyP50 | Metric::LatencyP99) => !stream || probe,
            Response::Metric(Metric::Retransmits) => !test.is_udp(),
            Response::Metric(Metric::LossPct | Metric::PacketRate) => stream && test.is_udp(),
            Response::Metric(
                Metric::CpuPct | Metric::SoftirqPct | Metric::CpuPerWork | Metric::IrqRate,
            ) => true,
        }
    }
}

/// The names a constraint may use (short aliases first).
const RESPONSES: &[(&str, Response)] = &[
    ("p99", Response::Metric(Metric::LatencyP99)),
    ("p50", Response::Metric(Metric::LatencyP50)),
    ("cpu", Response::Metric(Metric::CpuPct)),
    ("softirq", Response::Metric(Metric::SoftirqPct)),
    ("loss", Response::Metric(Metric::LossPct)),
    ("cpu_per_work", Response::Metric(Metric::CpuPerWork)),
    ("throughput", Response::Metric(Metric::Throughput)),
    ("transactions", Response::Metric(Metric::Transactions)),
    ("latency_p50", Response::Metric(Metric::LatencyP50)),
    ("latency_p99", Response::Metric(Metric::LatencyP99)),
    ("cpu_pct", Response::Metric(Metric::CpuPct)),
    ("softirq_pct", Response::Metric(Metric::SoftirqPct)),
    ("retransmits", Response::Metric(Metric::Retransmits)),
    ("loss_pct", Response::Metric(Metric::LossPct)),
    ("pps", Response::Metric(Metric::PacketRate)),
    ("packet_rate", Response::Metric(Metric::PacketRate)),
    ("irq", Response::Metric(Metric::IrqRate)),
    ("irq_rate", Response::Metric(Metric::IrqRate)),
];

/// Which side of its bound a constraint keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `<=`: the change may be at most the bound.
    AtMost,
    /// `>=`: the change must be at least the bound.
    AtLeast,
}

/// A limit on a response's change against the baseline, such as
/// `p99<=+5%` (p99 may grow by at most 5 %) or `throughput>=-1%`.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// The response limited.
    pub response: Response,
    /// Which side of the bound it keeps.
    pub bound: Bound,
    /// The bound, % change against the baseline.
    pub limit_pct: f64,
    /// The constraint as written (trimmed, at most 64 characters).
    pub text: String,
}

/// Largest |bound| a constraint accepts, %.
const MAX_LIMIT_PCT: f64 = 1000.0;

impl Constraint {
    /// Parse `NAME<=±X%` or `NAME>=±X%`. Errors quote the text.
    pub fn parse(text: &str) -> Result<Constraint, AutotuneError> {
        let shown = model::text::printable_capped(text.trim(), 64);
        let bad = |reason: &'static str| AutotuneError::BadConstraint {
            text: shown.clone(),
            reason,
        };
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (name, bound, rest) = if let Some((n, r)) = t.split_once("<=") {
            (n, Bound::AtMost, r)
        } else if let Some((n, r)) = t.split_once(">=") {
            (n, Bound::AtLeast, r)
        } else {
            return Err(bad("expected NAME<=X% or NAME>=X%, such as p99<=+5%"));
        };
        let response = RESPONSES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, r)| *r)
            .ok_or_else(|| {
                bad("unknown response (known: p99, p50, throughput, transactions, cpu, cpu_per_work, softirq, retransmits, loss, irq_rate)")
            })?;
        let Some(number) = rest.strip_suffix('%') else {
            return Err(bad(
                "the bound is a % change against the baseline, such as +5% or -1%",
            ));
        };
        let limit_pct: f64 = number
            .parse()
            .map_err(|_| bad("the bound is not a number, such as +5% or -1%"))?;
        if !(limit_pct.is_finite() && limit_pct.abs() <= MAX_LIMIT_PCT) {
            return Err(bad("the bound must be between -1000% and +1000%"));
        }
        Ok(Constraint {
            response,
            bound,
            limit_pct,
            text: shown,
        })
    }

    /// Check that a workload of `test` measures the constrained response.
    pub fn check_workload(&self, test: TestKind, probe: bool) -> Result<(), AutotuneError> {
        if self.response.measurable(test, probe) {
            Ok(())
        } else {
            Err(AutotuneError::Unmeasurable {
                what: format!("constraint `{}`", self.text),
                test: test.name(),
                needs: "a workload (or probe) that reports this response".into(),
            })
        }
    }

    /// The interval a constraint is judged on: the % change, or, when the
    /// baseline median is zero (no % exists), the difference against a
    /// bound of zero.
    pub(crate) fn interval(c: &Comparison) -> (Interval, bool) {
        match c.change_pct {
            Some(p) => (p, true),
            None => (c.difference, false),
        }
    }

    fn limit(&self, relative: bool) -> f64 {
        if relative {
            self.limit_pct
        } else {
            0.0
        }
    }

    /// Whether the whole interval keeps the bound.
    pub fn holds(&self, c: &Comparison) -> bool {
        let (i, rel) = Constraint::interval(c);
        match self.bound {
            Bound::AtMost => i.hi <= self.limit(rel),
            Bound::AtLeast => i.lo >= self.limit(rel),
        }
    }

    /// Whether the whole interval breaks the bound (the candidate cannot
    /// keep it, whatever more runs show).
    pub fn broken(&self, c: &Comparison) -> bool {
        let (i, rel) = Constraint::interval(c);
        match self.bound {
            Bound::AtMost => i.lo > self.limit(rel),
            Bound::AtLeast => i.hi < self.limit(rel),
        }
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
