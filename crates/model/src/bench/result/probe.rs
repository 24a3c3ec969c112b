//! The probe's part of a result (`probe` in the `--json` document); the
//! probe itself, which fills it, is the engine's `probe`.

use super::BenchResult;
use crate::bench::config::{Direction, TestConfig, TestKind};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use thiserror::Error;

/// What the probe sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// A paced TCP request/response flow.
    Rr,
    /// ICMP echo.
    Icmp,
}

/// What the probe measured (`probe` in the `--json` document). Latencies in
/// µs; the percentiles are null when nothing was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// `rr` or `icmp`.
    pub kind: ProbeKind,
    /// Interval between probes, ms.
    pub interval_ms: u64,
    /// Probes sent in the window (rr: transactions the schedule put there).
    pub sent: u64,
    /// Probes answered.
    pub answered: u64,
    /// `sent − answered` (rr: still unanswered at the window's end).
    pub lost: u64,
    /// icmp: interval slots not sent because the probe thread woke more
    /// than an interval late (busy CPUs; ping skips them too); rr: 0.
    #[serde(default)]
    pub skipped: u64,
    /// Smallest round trip, µs.
    pub min_us: Option<u64>,
    /// Median, µs.
    pub p50_us: Option<u64>,
    /// 90th percentile, µs.
    pub p90_us: Option<u64>,
    /// 99th percentile, µs.
    pub p99_us: Option<u64>,
    /// Largest, µs.
    pub max_us: Option<u64>,
    /// Every non-empty bucket: `[highest equivalent value µs, count]`, ascending.
    pub histogram: Vec<[u64; 2]>,
    /// Why the probe measured less than asked, or nothing.
    pub note: Option<String>,
}

/// Interval when `--probe KIND` gives none, ms.
pub const DEFAULT_INTERVAL_MS: u64 = 10;
/// Shortest probe interval, ms.
pub const MIN_INTERVAL_MS: u64 = 1;
/// Longest probe interval, ms.
pub const MAX_INTERVAL_MS: u64 = 1_000;
/// Most probes one test may send (duration ÷ interval).
pub const MAX_SAMPLES: u64 = 1_000_000;
/// Request and response size of the `rr` probe, bytes (a ping's 56 + 8).
pub const RR_SIZE: u32 = 64;
/// The accepted forms of `--probe`, for usage errors.
pub const USAGE: &str =
    "expected rr or icmp, optionally with an interval in ms from 1 to 1000 (rr, icmp, rr:5, icmp:200)";

impl ProbeKind {
    /// `rr` or `icmp`.
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::Rr => "rr",
            ProbeKind::Icmp => "icmp",
        }
    }
}

/// `--probe KIND[:MS]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSpec {
    /// What to send.
    pub kind: ProbeKind,
    /// One probe every this many ms.
    pub interval_ms: u64,
}

/// A malformed `--probe` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{given}`: {USAGE}")]
pub struct ProbeParseError {
    /// The value as given (escaped, bounded).
    pub given: String,
}

impl FromStr for ProbeSpec {
    type Err = ProbeParseError;
    fn from_str(s: &str) -> Result<ProbeSpec, ProbeParseError> {
        let bad = || ProbeParseError {
            given: crate::text::printable_capped(s, 40),
        };
        let (k, ms) = match s.split_once(':') {
            Some((k, ms)) => (k, Some(ms)),
            None => (s, None),
        };
        let kind = match k {
            "rr" => ProbeKind::Rr,
            "icmp" => ProbeKind::Icmp,
            _ => return Err(bad()),
        };
        let interval_ms = match ms {
            None => DEFAULT_INTERVAL_MS,
            Some(m) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) => m
                .parse::<u64>()
                .ok()
                .filter(|v| (MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(v))
                .ok_or_else(bad)?,
            Some(_) => return Err(bad()),
        };
        Ok(ProbeSpec { kind, interval_ms })
    }
}

impl ProbeSpec {
    /// Probes the schedule puts in `ms` milliseconds.
    pub fn scheduled(&self, ms: u64) -> u64 {
        ms / self.interval_ms.max(1)
    }

    /// Refuse a probe this test cannot bound.
    pub fn check(&self, cfg: &TestConfig) -> Result<(), ProbeCheckError> {
        if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&self.interval_ms) {
            return Err(ProbeCheckError::Interval { usage: USAGE });
        }
        let n = self.scheduled(cfg.duration_ms);
        if n > MAX_SAMPLES {
            return Err(ProbeCheckError::TooMany {
                kind: self.kind.name(),
                interval_ms: self.interval_ms,
                secs: cfg.duration_ms / 1000,
                n,
                max: MAX_SAMPLES,
                need: cfg.duration_ms.div_ceil(MAX_SAMPLES),
            });
        }
        Ok(())
    }

    /// The `rr` probe's own test: one open-loop tcp-rr flow at one
    /// transaction per interval, over the load's warm-up and window.
    pub fn rr_config(&self, load: &TestConfig) -> TestConfig {
        TestConfig {
            test: TestKind::TcpRr,
            flows: 1,
            threads: 1,
            cpus: Vec::new(),
            size: RR_SIZE,
            duration_ms: load.duration_ms,
            warmup_ms: load.warmup_ms,
            // One interval: the probe's own interval reports and CPU reads
            // are not used, so it makes as few as it can.
            interval_ms: load.duration_ms.max(load.interval_ms),
            direction: Direction::Forward,
            rate: Some(1000.0 / self.interval_ms.max(1) as f64),
            outstanding: 1,
            nodelay: true,
            tos: load.tos,
            ..TestConfig::default()
        }
    }
}

/// An HDR histogram in µs, 1 µs to 100 s, 3 significant digits.
pub fn us_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000, 3)
        .or_else(|_| Histogram::new(3))
        .unwrap_or_else(|_| super::new_histogram())
}

impl ProbeReport {
    /// A report from the probe's histogram (µs), its sent and skipped counts and a note.
    pub fn from_hist(
        spec: &ProbeSpec,
        (sent, skipped): (u64, u64),
        h: &Histogram<u64>,
        note: Option<String>,
    ) -> Self {
        let answered = h.len();
        let q = |p: f64| (!h.is_empty()).then(|| h.value_at_quantile(p));
        ProbeReport {
            kind: spec.kind,
            interval_ms: spec.interval_ms,
            sent,
            answered,
            lost: sent.saturating_sub(answered),
            skipped,
            min_us: (!h.is_empty()).then(|| h.min()),
            p50_us: q(0.50),
            p90_us: q(0.90),
            p99_us: q(0.99),
            max_us: (!h.is_empty()).then(|| h.max()),
            histogram: super::hist_pairs(h),
            note,
        }
    }

    /// A probe that could not run.
    pub fn failed(spec: &ProbeSpec, why: String) -> ProbeReport {
        ProbeReport::from_hist(spec, (0, 0), &us_histogram(), Some(why))
    }

    /// The `rr` probe's report from its own test's result: the latency
    /// histogram (ns, from each request's intended send time) in whole µs,
    /// rounded.
    pub fn from_rr(spec: &ProbeSpec, r: &BenchResult) -> ProbeReport {
        let mut h = us_histogram();
        let mut seconds = 0.0;
        if let Some(d) = r.results.first() {
            seconds = d.seconds;
            if let Some(l) = &d.latency {
                for [ns, n] in &l.histogram {
                    h.saturating_record_n((ns.saturating_add(500) / 1000).max(1), *n);
                }
            }
        }
        let ms = if seconds.is_finite() && seconds > 0.0 {
            (seconds * 1000.0).round() as u64
        } else {
            0
        };
        let mut notes: Vec<String> = r
            .notes
            .iter()
            .filter(|n| !n.contains("both CPU reports"))
            .cloned()
            .collect();
        if r.interrupted {
            notes.push("interrupted".into());
        }
        let note = (!notes.is_empty()).then(|| notes.join("; "));
        ProbeReport::from_hist(spec, (spec.scheduled(ms), 0), &h, note)
    }

    /// The one-line human summary (its note is among the result's notes).
    pub fn line(&self) -> String {
        // The one time rule of every summary (model::metric).
        let us = |v: Option<u64>| {
            v.map_or("-".to_string(), |v| {
                crate::metric::format_value("µs", v as f64)
            })
        };
        format!(
            "probe {} every {} ms: p50 {} p99 {} ({}/{} answered)",
            self.kind.name(),
            self.interval_ms,
            us(self.p50_us),
            us(self.p99_us),
            self.answered,
            self.sent
        )
    }
}

/// A `--probe` this test cannot bound (`ProbeSpec::check`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProbeCheckError {
    /// The interval is outside the probe's limits.
    #[error("--probe: {usage}")]
    Interval {
        /// The flag's usage, with its limits.
        usage: &'static str,
    },
    /// The window would need more probes than a result keeps.
    #[error("--probe {kind}:{interval_ms} over {secs} s would send {n} probes, more than {max}: use an interval of at least {need} ms")]
    TooMany {
        /// The probe's kind (`rr`, `icmp`).
        kind: &'static str,
        /// The interval given, ms.
        interval_ms: u64,
        /// The test's window, s.
        secs: u64,
        /// Probes it would send.
        n: u64,
        /// The most probes a result keeps.
        max: u64,
        /// The shortest interval that fits, ms.
        need: u64,
    },
}
