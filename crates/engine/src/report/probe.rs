//! The probe's part of a result (`probe` in the `--json` document); the
//! probe itself, which fills it, is `crate::probe`.

use serde::{Deserialize, Serialize};

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
