//! The experiment file of `nettune experiment FILE.toml` (see
//! `docs/experiment.md`): parsing, validation, expansion into cells (full
//! factorial) and a randomized run order from a seed.
//!
//! Pure: the caller reads the file and prefixes errors with its path. Every
//! error names the 1-based line and the key (`factor[2].levels[1]`).

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use toml::Spanned;

use crate::stats::{Direction, SplitMix64};
use crate::CpuSet;

/// Most cells (level combinations) an experiment may have.
pub const MAX_CELLS: usize = 256;
/// Most repeats per cell (fixed, or the cap of `until_ci`).
pub const MAX_REPEATS: u32 = 1000;
/// Most factors.
pub const MAX_FACTORS: usize = 8;
/// Most levels per factor.
pub const MAX_LEVELS: usize = 32;
/// Most workloads.
pub const MAX_WORKLOADS: usize = 16;
/// Largest experiment file accepted, in bytes.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// An experiment file was refused: where, which key, and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}, key `{key}`: {kind}")]
pub struct ExperimentError {
    /// 1-based line.
    pub line: usize,
    /// The key, as a path (`hosts.lab.rate_mbit`, `factor[2].levels[0]`).
    pub key: String,
    /// What was wrong.
    pub kind: ErrorKind,
}

/// Classes of experiment-file errors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ErrorKind {
    /// TOML syntax or schema error (unknown key, wrong type, missing key),
    /// with the `toml` crate's message.
    #[error("{message}")]
    Toml {
        /// The parser's message (first line).
        message: String,
    },
    /// A value outside its range or of the wrong shape.
    #[error("`{value}` is not {expected}")]
    BadValue {
        /// The value as written (truncated).
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A factor that nettune does not know.
    #[error("unknown factor `{name}` (known: {known})")]
    UnknownFactor {
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        known: &'static str,
    },
    /// A factor without levels.
    #[error("a factor needs at least one level")]
    EmptyLevels,
    /// The same name or level twice.
    #[error("`{value}` appears twice")]
    Duplicate {
        /// The repeated value.
        value: String,
    },
    /// Too many of something.
    #[error("{count} {what}, more than the limit of {max}")]
    TooMany {
        /// What was counted.
        what: &'static str,
        /// How many.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Something required is missing or two keys conflict.
    #[error("{0}")]
    Structure(&'static str),
}

// ---------------------------------------------------------------------------
// Raw TOML schema.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<Spanned<String>>,
    description: Option<String>,
    seed: Option<u64>,
    repeats: Option<Spanned<i64>>,
    warmup: Option<Spanned<i64>>,
    until_ci: Option<Spanned<f64>>,
    max_repeats: Option<Spanned<i64>>,
    hosts: RawHosts,
    #[serde(default)]
    workload: Vec<RawWorkload>,
    #[serde(default)]
    factor: Vec<RawFactor>,
    responses: RawResponses,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHosts {
    lab: Option<RawLab>,
    agents: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLab {
    hosts: Option<Spanned<i64>>,
    queues: Option<Spanned<i64>>,
    rate_mbit: Option<Spanned<f64>>,
    delay_ms: Option<Spanned<f64>>,
    jitter_ms: Option<Spanned<f64>>,
    loss_pct: Option<Spanned<f64>>,
    /// "veth" (default) or "loopback".
    path: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Spanned<String>,
    test: Spanned<String>,
    size: Option<Spanned<i64>>,
    flows: Option<Spanned<i64>>,
    duration_s: Option<Spanned<f64>>,
    nodelay: Option<bool>,
    sndbuf: Option<Spanned<i64>>,
    rcvbuf: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFactor {
    name: Spanned<String>,
    levels: Spanned<Vec<Spanned<toml::Value>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponses {
    metrics: Spanned<Vec<Spanned<String>>>,
    probe: Option<RawProbe>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    kind: Spanned<String>,
    interval_ms: Option<Spanned<f64>>,
}

// ---------------------------------------------------------------------------
// Validated model.

/// A validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    /// Short name: 1 to 32 letters, digits, `_` or `-` (defaults to
    /// "experiment"); never a path, so it can name a directory.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Seed of the run order and of the bootstrap.
    pub seed: u64,
    /// Fixed repeats per cell (the minimum when `until_ci` is set).
    pub repeats: u32,
    /// Warm-up runs per cell, discarded.
    pub warmup: u32,
    /// Sequential stopping, if asked.
    pub until_ci: Option<UntilCi>,
    /// Where the experiment runs.
    pub hosts: Hosts,
    /// What runs in every cell.
    pub workloads: Vec<Workload>,
    /// The factors and their levels.
    pub factors: Vec<Factor>,
    /// What is measured.
    pub responses: Responses,
}

/// `until_ci`: repeat until the 95 % interval is within `target_pct` % of the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UntilCi {
    /// Target half-width, % of the median.
    pub target_pct: f64,
    /// Cap of repeats.
    pub max_repeats: u32,
}

/// Hosts of an experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hosts {
    /// A lab built on this machine.
    Lab(LabTopology),
    /// Remote `nettune serve` agents, by address.
    Agents(Vec<String>),
}

/// Which path the lab's traffic takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LabPath {
    /// Network namespaces joined by veth pairs.
    Veth,
    /// Loopback of one namespace (the lab's overhead baseline).
    Loopback,
}

/// A lab topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabTopology {
    /// Number of hosts (namespaces), 2..=8.
    pub hosts: u32,
    /// Queues per veth, 1..=64.
    pub queues: u32,
    /// Link rate, Mbit/s.
    pub rate_mbit: Option<f64>,
    /// Delay added to the round trip (the lab puts half in each
    /// direction), ms.
    pub delay_ms: f64,
    /// Jitter of that round trip, ms.
    pub jitter_ms: f64,
    /// Loss, %.
    pub loss_pct: f64,
    /// Path of the traffic.
    pub path: LabPath,
}

/// Kinds of bench test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Bulk TCP.
    TcpStream,
    /// UDP datagrams.
    UdpStream,
    /// TCP request/response.
    TcpRr,
    /// TCP connect/request/response/close.
    TcpCrr,
}

/// One workload (bench options).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Name used in results.
    pub name: String,
    /// The test.
    pub test: TestKind,
    /// Message size, bytes.
    pub size: Option<u32>,
    /// Parallel flows (connections).
    pub flows: u32,
    /// Duration of one run, s.
    pub duration_s: f64,
    /// TCP_NODELAY (Nagle off).
    pub nodelay: bool,
    /// Application send buffer (SO_SNDBUF), bytes.
    pub sndbuf: Option<u32>,
    /// Application receive buffer (SO_RCVBUF), bytes.
    pub rcvbuf: Option<u32>,
}

/// The value type a knob takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KnobType {
    /// Integer in an inclusive range.
    Int(i64, i64),
    /// true/false.
    Bool,
    /// A CPU list (`"0-1"`) or `""`/`"off"` for none.
    Cpus,
    /// A name such as a congestion control or a profile.
    Name,
    /// `[min, default, max]` bytes.
    Triple,
    /// `[low, high]` ports.
    PortRange,
}

macro_rules! knobs {
    ($( $variant:ident = $name:literal : $ty:expr, $doc:literal; )*) => {
        /// A factor: a profile, a single knob or a bench option.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Knob { $( #[doc = $doc] $variant, )* }

        impl Knob {
            /// Every knob.
            pub const ALL: &'static [Knob] = &[$(Knob::$variant),*];
            /// Its name in the file.
            pub fn name(self) -> &'static str { match self { $(Knob::$variant => $name,)* } }
            fn ty(self) -> KnobType { match self { $(Knob::$variant => $ty,)* } }
        }
        const KNOWN: &str = concat!($($name, " "),*);
    };
}

knobs! {
    Profile = "profile": KnobType::Name, "A tuning profile by name (`untuned` for none).";
    RpsCpus = "rps_cpus": KnobType::Cpus, "RPS CPUs of every receive queue.";
    RpsFlowCnt = "rps_flow_cnt": KnobType::Int(0, 1 << 20), "RFS flow count per queue.";
    XpsCpus = "xps_cpus": KnobType::Cpus, "XPS CPUs of every transmit queue.";
    GroFlushTimeout = "gro_flush_timeout": KnobType::Int(0, 1_000_000_000), "GRO flush timeout, ns.";
    NapiDeferHardIrqs = "napi_defer_hard_irqs": KnobType::Int(0, i32::MAX as i64), "NAPI deferred hard IRQs.";
    ThreadedNapi = "threaded_napi": KnobType::Bool, "Threaded NAPI.";
    Channels = "channels": KnobType::Int(1, 1024), "Combined channels (queues).";
    RmemMax = "rmem_max": KnobType::Int(4096, i32::MAX as i64), "net.core.rmem_max, bytes.";
    WmemMax = "wmem_max": KnobType::Int(4096, i32::MAX as i64), "net.core.wmem_max, bytes.";
    TcpRmem = "tcp_rmem": KnobType::Triple, "net.ipv4.tcp_rmem [min, default, max].";
    TcpWmem = "tcp_wmem": KnobType::Triple, "net.ipv4.tcp_wmem [min, default, max].";
    CongestionControl = "congestion_control": KnobType::Name, "net.ipv4.tcp_congestion_control.";
    TcpTwReuse = "tcp_tw_reuse": KnobType::Int(0, 2), "net.ipv4.tcp_tw_reuse.";
    IpLocalPortRange = "ip_local_port_range": KnobType::PortRange, "net.ipv4.ip_local_port_range [low, high].";
    CoalesceRxUsecs = "coalesce_rx_usecs": KnobType::Int(0, 100_000), "NIC rx-usecs coalescing.";
    CoalesceTxUsecs = "coalesce_tx_usecs": KnobType::Int(0, 100_000), "NIC tx-usecs coalescing.";
    AdaptiveRx = "adaptive_rx": KnobType::Bool, "NIC adaptive rx coalescing.";
    Flows = "flows": KnobType::Int(1, 1024), "Bench option: parallel flows.";
    BusyPoll = "busy_poll": KnobType::Int(0, 1_000_000), "Bench option: SO_BUSY_POLL, µs.";
    CpuPin = "cpu_pin": KnobType::Cpus, "Bench option: pin bench threads to these CPUs.";
    Sndbuf = "sndbuf": KnobType::Int(0, i32::MAX as i64), "Bench option: SO_SNDBUF, bytes (0: default).";
    Rcvbuf = "rcvbuf": KnobType::Int(0, i32::MAX as i64), "Bench option: SO_RCVBUF, bytes (0: default).";
    ForceBuffers = "force_buffers": KnobType::Bool, "Bench option: --force-buffers (SO_RCVBUFFORCE/SO_SNDBUFFORCE past rmem_max/wmem_max).";
}

impl Knob {
    /// Look a knob up by its file name.
    pub fn from_name(name: &str) -> Option<Knob> {
        Knob::ALL.iter().copied().find(|k| k.name() == name)
    }
}

/// One level of a factor.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum Level {
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A name (profile, congestion control).
    Name(String),
    /// A CPU list; empty for none.
    Cpus(Vec<u32>),
    /// `[min, default, max]`.
    Triple([u64; 3]),
    /// `[low, high]`.
    Range([u16; 2]),
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Int(v) => write!(f, "{v}"),
            Level::Bool(v) => write!(f, "{v}"),
            Level::Name(v) => f.write_str(v),
            Level::Cpus(v) if v.is_empty() => f.write_str("off"),
            Level::Cpus(v) => {
                let s: Vec<String> = v.iter().map(u32::to_string).collect();
                write!(f, "{}", s.join(","))
            }
            Level::Triple([a, b, c]) => write!(f, "{a} {b} {c}"),
            Level::Range([a, b]) => write!(f, "{a}-{b}"),
        }
    }
}

/// A factor and its levels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Factor {
    /// The knob.
    pub knob: Knob,
    /// Its levels, in file order.
    pub levels: Vec<Level>,
}

/// A measured response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Goodput, bit/s.
    Throughput,
    /// Transactions (or connections) per second.
    Transactions,
    /// Median latency of the RR flow or probe.
    LatencyP50,
    /// 99th percentile latency.
    LatencyP99,
    /// Total CPU %.
    CpuPct,
    /// Softirq % per CPU.
    SoftirqPct,
    /// Retransmitted segments.
    Retransmits,
    /// Lost datagrams, %.
    LossPct,
}

impl Metric {
    const NAMES: &'static [(&'static str, Metric)] = &[
        ("throughput", Metric::Throughput),
        ("transactions", Metric::Transactions),
        ("latency_p50", Metric::LatencyP50),
        ("latency_p99", Metric::LatencyP99),
        ("cpu_pct", Metric::CpuPct),
        ("softirq_pct", Metric::SoftirqPct),
        ("retransmits", Metric::Retransmits),
        ("loss_pct", Metric::LossPct),
    ];

    /// Which way the metric improves.
    pub fn direction(self) -> Direction {
        match self {
            Metric::Throughput | Metric::Transactions => Direction::HigherIsBetter,
            _ => Direction::LowerIsBetter,
        }
    }
}

/// A latency probe running alongside the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// A TCP request/response flow.
    Rr,
    /// ICMP echo, as ping.
    Icmp,
}

/// The probe and its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Probe {
    /// Kind of probe.
    pub kind: ProbeKind,
    /// Interval between probes, ms.
    pub interval_ms: f64,
}

/// What is measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Responses {
    /// The metrics.
    pub metrics: Vec<Metric>,
    /// The latency probe, if any.
    pub probe: Option<Probe>,
}

/// One cell: a level of every factor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// 0-based index in the expansion order.
    pub index: usize,
    /// `(factor, level)` pairs in factor order.
    pub levels: Vec<(Knob, Level)>,
}

impl Cell {
    /// A short label such as `gro_flush_timeout=20000 napi_defer_hard_irqs=2`.
    pub fn label(&self) -> String {
        if self.levels.is_empty() {
            return "baseline".into();
        }
        let parts: Vec<String> = self
            .levels
            .iter()
            .map(|(k, l)| format!("{}={l}", k.name()))
            .collect();
        parts.join(" ")
    }
}

impl Experiment {
    /// Number of cells (product of the level counts).
    pub fn cell_count(&self) -> usize {
        self.factors
            .iter()
            .try_fold(1usize, |acc, f| acc.checked_mul(f.levels.len()))
            .unwrap_or(usize::MAX)
    }

    /// All cells, full factorial; the last factor varies fastest. Cell 0 has
    /// every factor at its first level: the baseline.
    pub fn cells(&self) -> Vec<Cell> {
        let n = self.cell_count().min(MAX_CELLS);
        (0..n)
            .map(|index| {
                let mut rest = index;
                let mut levels = Vec::with_capacity(self.factors.len());
                for f in self.factors.iter().rev() {
                    let k = f.levels.len().max(1);
                    if let Some(l) = f.levels.get(rest % k) {
                        levels.push((f.knob, l.clone()));
                    }
                    rest /= k;
                }
                levels.reverse();
                Cell { index, levels }
            })
            .collect()
    }

    /// A random permutation of the cell indexes, the same for the same seed.
    pub fn run_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.cell_count().min(MAX_CELLS)).collect();
        SplitMix64::new(self.seed).shuffle(&mut order);
        order
    }
}

// ---------------------------------------------------------------------------
// Parsing.

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |s| s.matches('\n').count() + 1)
}

/// Key path for a serde error at `span`: the enclosing table header (with
/// the index of an array of tables) and the key on the error's line.
fn key_at(text: &str, span: &Range<usize>) -> String {
    let start = span.start.min(text.len());
    let before = text.get(..start).unwrap_or("");
    // Headers up to and including the error's own line (a missing key is
    // reported at its table's header).
    let line_end = text
        .get(start..)
        .and_then(|r| r.find('\n'))
        .map_or(text.len(), |i| start + i);
    let mut header = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in text.get(..line_end).unwrap_or("").lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let i = match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => {
                    *c += 1;
                    *c
                }
                None => {
                    counts.push((name.clone(), 0));
                    0
                }
            };
            header = format!("{name}[{i}]");
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            header = name.trim().to_string();
        }
    }
    // The span's own text is the key when `=` follows it (unknown keys).
    let spanned = text.get(span.clone()).unwrap_or("").trim();
    let after = text.get(span.end.min(text.len())..).unwrap_or("");
    let is_key = !spanned.is_empty()
        && !spanned.contains(['\n', '[', '{', '"'])
        && after.trim_start().starts_with('=');
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(line_start..).unwrap_or("");
    let line = line.lines().next().unwrap_or("");
    let line_key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('[') && !k.starts_with('#'));
    let key = match (is_key, line_key) {
        (true, Some(lk)) if lk != spanned => format!("{lk}.{spanned}"),
        (true, _) => spanned.to_string(),
        (false, Some(lk)) => lk.to_string(),
        (false, None) => String::new(),
    };
    // Escaped and cut: the key comes from the file (a key of control
    // characters must not reach a terminal raw; the fuzzer found one).
    truncate(&match (header.is_empty(), key.is_empty()) {
        (true, true) => "(top level)".into(),
        (true, false) => key,
        (false, true) => header,
        (false, false) => format!("{header}.{key}"),
    })
}

/// Span of the first line that opens `[name]` or `[name.…]` or sets `name = …`.
fn header_span(text: &str, name: &str) -> Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let hit = t
            .strip_prefix('[')
            .map(|r| r.trim_start())
            .is_some_and(|r| r.starts_with(name))
            || t.strip_prefix(name)
                .is_some_and(|r| r.trim_start().starts_with(['=', '.']));
        if hit {
            return offset..offset + line.len();
        }
        offset += line.len();
    }
    0..0
}

/// At most 48 characters of a value from the file, control characters
/// escaped, so an error stays on one line whatever the file holds.
fn truncate(s: &str) -> String {
    let t: String = s
        .chars()
        .take(48)
        .flat_map(|c| {
            let esc: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            esc
        })
        .collect();
    if s.chars().count() > 48 {
        format!("{t}…")
    } else {
        t
    }
}

struct Ctx<'a> {
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, key: impl Into<String>, kind: ErrorKind) -> ExperimentError {
        ExperimentError {
            line: line_of(self.text, span.start),
            key: key.into(),
            kind,
        }
    }

    fn bad(
        &self,
        span: Range<usize>,
        key: &str,
        value: impl fmt::Display,
        expected: &'static str,
    ) -> ExperimentError {
        self.err(
            span,
            key,
            ErrorKind::BadValue {
                value: truncate(&value.to_string()),
                expected,
            },
        )
    }

    fn int(
        &self,
        v: &Option<Spanned<i64>>,
        key: &str,
        default: i64,
        lo: i64,
        hi: i64,
        expected: &'static str,
    ) -> Result<i64, ExperimentError> {
        match v {
            None => Ok(default),
            Some(s) if (lo..=hi).contains(s.get_ref()) => Ok(*s.get_ref()),
            Some(s) => Err(self.bad(s.span(), key, s.get_ref(), expected)),
        }
    }

    fn float(
        &self,
        v: &Option<Spanned<f64>>,
        key: &str,
        lo: f64,
        hi: f64,
        expected: &'static str,
    ) -> Result<Option<f64>, ExperimentError> {
        match v {
            None => Ok(None),
            Some(s) if s.get_ref().is_finite() && (lo..=hi).contains(s.get_ref()) => {
                Ok(Some(*s.get_ref()))
            }
            Some(s) => Err(self.bad(s.span(), key, s.get_ref(), expected)),
        }
    }
}

fn to_u32(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_level(
    ctx: &Ctx<'_>,
    knob: Knob,
    v: &Spanned<toml::Value>,
    key: &str,
) -> Result<Level, ExperimentError> {
    let span = v.span();
    let shown = v.get_ref().to_string();
    let int_of = |x: &toml::Value| x.as_integer();
    match (knob.ty(), v.get_ref()) {
        (KnobType::Int(lo, hi), toml::Value::Integer(i)) if (lo..=hi).contains(i) => {
            Ok(Level::Int(*i))
        }
        (KnobType::Int(..), _) => Err(ctx.bad(span, key, shown, int_range_text(knob))),
        (KnobType::Bool, toml::Value::Boolean(b)) => Ok(Level::Bool(*b)),
        (KnobType::Bool, _) => Err(ctx.bad(span, key, shown, "true or false")),
        (KnobType::Name, toml::Value::String(s)) if is_name(s) => Ok(Level::Name(s.clone())),
        (KnobType::Name, _) => Err(ctx.bad(
            span,
            key,
            shown,
            "a name (letters, digits, _ or -, at most 32)",
        )),
        (KnobType::Cpus, toml::Value::String(s)) => {
            if s.is_empty() || s == "off" {
                return Ok(Level::Cpus(Vec::new()));
            }
            match CpuSet::parse_list(s) {
                Ok(set) if !set.is_empty() && set.len() <= 4096 => {
                    Ok(Level::Cpus(set.iter().collect()))
                }
                _ => Err(ctx.bad(span, key, shown, "a CPU list such as \"0-1,3\", or \"off\"")),
            }
        }
        (KnobType::Cpus, _) => {
            Err(ctx.bad(span, key, shown, "a CPU list such as \"0-1,3\", or \"off\""))
        }
        (KnobType::Triple, toml::Value::Array(a)) => {
            let t: Vec<i64> = a.iter().filter_map(int_of).collect();
            match t.as_slice() {
                [x, y, z]
                    if a.len() == 3 && 0 < *x && x <= y && y <= z && *z <= i64::from(i32::MAX) =>
                {
                    Ok(Level::Triple([*x as u64, *y as u64, *z as u64]))
                }
                _ => Err(ctx.bad(
                    span,
                    key,
                    shown,
                    "[min, default, max] bytes, 0 < min <= default <= max <= 2147483647",
                )),
            }
        }
        (KnobType::Triple, _) => Err(ctx.bad(
            span,
            key,
            shown,
            "[min, default, max] bytes, 0 < min <= default <= max <= 2147483647",
        )),
        (KnobType::PortRange, toml::Value::Array(a)) => {
            let t: Vec<i64> = a.iter().filter_map(int_of).collect();
            match t.as_slice() {
                [lo, hi] if a.len() == 2 && 1 <= *lo && lo < hi && *hi <= 65535 => {
                    Ok(Level::Range([*lo as u16, *hi as u16]))
                }
                _ => Err(ctx.bad(
                    span,
                    key,
                    shown,
                    "[low, high] ports, 1 <= low < high <= 65535",
                )),
            }
        }
        (KnobType::PortRange, _) => Err(ctx.bad(
            span,
            key,
            shown,
            "[low, high] ports, 1 <= low < high <= 65535",
        )),
    }
}

fn int_range_text(knob: Knob) -> &'static str {
    match knob {
        Knob::RpsFlowCnt => "an integer 0..=1048576",
        Knob::GroFlushTimeout => "an integer of ns 0..=1000000000",
        Knob::NapiDeferHardIrqs => "an integer 0..=2147483647",
        Knob::Channels => "an integer 1..=1024",
        Knob::RmemMax | Knob::WmemMax => "an integer of bytes 4096..=2147483647",
        Knob::TcpTwReuse => "0, 1 or 2",
        Knob::CoalesceRxUsecs | Knob::CoalesceTxUsecs => "an integer of µs 0..=100000",
        Knob::Flows => "an integer 1..=1024",
        Knob::BusyPoll => "an integer of µs 0..=1000000",
        _ => "an integer 0..=2147483647",
    }
}

/// Parse and validate an experiment file's text.
pub fn parse(text: &str) -> Result<Experiment, ExperimentError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ExperimentError {
            line: 1,
            key: "(file)".into(),
            kind: ErrorKind::TooMany {
                what: "bytes",
                count: text.len(),
                max: MAX_FILE_BYTES,
            },
        });
    }
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        ExperimentError {
            line: line_of(text, span.start),
            key: key_at(text, &span),
            kind: ErrorKind::Toml {
                message: e
                    .message()
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
            },
        }
    })?;
    let ctx = Ctx { text };

    // The name becomes a directory name (`nettune-experiment-NAME`) and is
    // printed: a name like a workload's, never a path or escape codes.
    let name = match &raw.name {
        None => "experiment".to_string(),
        Some(n) if is_name(n.get_ref()) => n.get_ref().clone(),
        Some(n) => {
            return Err(ctx.bad(
                n.span(),
                "name",
                n.get_ref(),
                "a name (letters, digits, _ or -, at most 32)",
            ))
        }
    };

    // Repeats.
    let repeats = ctx.int(
        &raw.repeats,
        "repeats",
        5,
        1,
        i64::from(MAX_REPEATS),
        "an integer 1..=1000",
    )?;
    let warmup = ctx.int(&raw.warmup, "warmup", 1, 0, 100, "an integer 0..=100")?;
    let until_ci = match ctx.float(
        &raw.until_ci,
        "until_ci",
        0.01,
        100.0,
        "a percentage above 0, at most 100",
    )? {
        None => {
            if let Some(m) = &raw.max_repeats {
                return Err(ctx.err(
                    m.span(),
                    "max_repeats",
                    ErrorKind::Structure("max_repeats needs until_ci"),
                ));
            }
            None
        }
        Some(target_pct) => {
            let lo = repeats.max(3);
            let max = ctx.int(
                &raw.max_repeats,
                "max_repeats",
                (lo * 4).min(i64::from(MAX_REPEATS)),
                lo,
                i64::from(MAX_REPEATS),
                "an integer from repeats (at least 3) to 1000",
            )?;
            if repeats < 3 {
                let span = raw.repeats.as_ref().map_or(0..0, Spanned::span);
                return Err(ctx.bad(
                    span,
                    "repeats",
                    repeats,
                    "at least 3 with until_ci (the minimum before stopping)",
                ));
            }
            Some(UntilCi {
                target_pct,
                max_repeats: to_u32(max),
            })
        }
    };

    // Hosts.
    let hspan = header_span(text, "hosts");
    let hosts = match (&raw.hosts.lab, &raw.hosts.agents) {
        (Some(_), Some(_)) => {
            return Err(ctx.err(
                hspan,
                "hosts",
                ErrorKind::Structure("give either hosts.lab or hosts.agents, not both"),
            ))
        }
        (None, None) => {
            return Err(ctx.err(
                hspan,
                "hosts",
                ErrorKind::Structure("give hosts.lab (a lab topology) or hosts.agents (addresses)"),
            ))
        }
        (None, Some(agents)) => {
            if agents.is_empty() {
                return Err(ctx.err(
                    hspan,
                    "hosts.agents",
                    ErrorKind::Structure("at least one agent address"),
                ));
            }
            if agents.len() > 16 {
                return Err(ctx.err(
                    hspan,
                    "hosts.agents",
                    ErrorKind::TooMany {
                        what: "agents",
                        count: agents.len(),
                        max: 16,
                    },
                ));
            }
            let mut out = Vec::new();
            for (i, a) in agents.iter().enumerate() {
                let s = a.get_ref();
                if s.parse::<std::net::SocketAddr>().is_err()
                    && s.parse::<std::net::IpAddr>().is_err()
                {
                    return Err(ctx.bad(
                        a.span(),
                        &format!("hosts.agents[{i}]"),
                        s,
                        "an address such as \"192.0.2.7\" or \"[2001:db8::7]:7878\"",
                    ));
                }
                out.push(s.clone());
            }
            Hosts::Agents(out)
        }
        (Some(lab), None) => {
            let path = match lab.path.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
                None | Some(("veth", _)) => LabPath::Veth,
                Some(("loopback", _)) => LabPath::Loopback,
                Some((other, span)) => {
                    return Err(ctx.bad(span, "hosts.lab.path", other, "\"veth\" or \"loopback\""))
                }
            };
            let delay_ms = ctx
                .float(
                    &lab.delay_ms,
                    "hosts.lab.delay_ms",
                    0.0,
                    10_000.0,
                    "a delay of 0 to 10000 ms",
                )?
                .unwrap_or(0.0);
            let jitter_ms = ctx
                .float(
                    &lab.jitter_ms,
                    "hosts.lab.jitter_ms",
                    0.0,
                    10_000.0,
                    "a jitter of 0 to 10000 ms",
                )?
                .unwrap_or(0.0);
            if jitter_ms > delay_ms {
                let span = lab.jitter_ms.as_ref().map_or(hspan.clone(), Spanned::span);
                return Err(ctx.bad(span, "hosts.lab.jitter_ms", jitter_ms, "at most delay_ms"));
            }
            Hosts::Lab(LabTopology {
                hosts: to_u32(ctx.int(
                    &lab.hosts,
                    "hosts.lab.hosts",
                    2,
                    2,
                    8,
                    "an integer 2..=8",
                )?),
                queues: to_u32(ctx.int(
                    &lab.queues,
                    "hosts.lab.queues",
                    1,
                    1,
                    64,
                    "an integer 1..=64",
                )?),
                rate_mbit: ctx.float(
                    &lab.rate_mbit,
                    "hosts.lab.rate_mbit",
                    0.001,
                    100_000.0,
                    "a rate of 0.001 to 100000 Mbit/s",
                )?,
                delay_ms,
                jitter_ms,
                loss_pct: ctx
                    .float(
                        &lab.loss_pct,
                        "hosts.lab.loss_pct",
                        0.0,
                        100.0,
                        "a loss of 0 to 100 %",
                    )?
                    .unwrap_or(0.0),
                path,
            })
        }
    };

    // Workloads.
    if raw.workload.is_empty() {
        return Err(ExperimentError {
            line: 1,
            key: "workload".into(),
            kind: ErrorKind::Structure("at least one [[workload]] is needed"),
        });
    }
    if raw.workload.len() > MAX_WORKLOADS {
        return Err(ctx.err(
            raw.workload[MAX_WORKLOADS].name.span(),
            format!("workload[{MAX_WORKLOADS}]"),
            ErrorKind::TooMany {
                what: "workloads",
                count: raw.workload.len(),
                max: MAX_WORKLOADS,
            },
        ));
    }
    let mut workloads = Vec::new();
    let mut names = BTreeSet::new();
    for (i, w) in raw.workload.iter().enumerate() {
        let k = |f: &str| format!("workload[{i}].{f}");
        let name = w.name.get_ref();
        if !is_name(name) {
            return Err(ctx.bad(
                w.name.span(),
                &k("name"),
                name,
                "a name (letters, digits, _ or -, at most 32)",
            ));
        }
        if !names.insert(name.clone()) {
            return Err(ctx.err(
                w.name.span(),
                k("name"),
                ErrorKind::Duplicate {
                    value: truncate(name),
                },
            ));
        }
        let test = match w.test.get_ref().as_str() {
            "tcp-stream" => TestKind::TcpStream,
            "udp-stream" => TestKind::UdpStream,
            "tcp-rr" => TestKind::TcpRr,
            "tcp-crr" => TestKind::TcpCrr,
            other => {
                return Err(ctx.bad(
                    w.test.span(),
                    &k("test"),
                    other,
                    "tcp-stream, udp-stream, tcp-rr or tcp-crr",
                ))
            }
        };
        let size = match &w.size {
            None => None,
            Some(_) => Some(to_u32(ctx.int(
                &w.size,
                &k("size"),
                0,
                1,
                1 << 24,
                "a size of 1 to 16777216 bytes",
            )?)),
        };
        let buf = |v: &Option<Spanned<i64>>, f: &str| -> Result<Option<u32>, ExperimentError> {
            match v {
                None => Ok(None),
                Some(_) => Ok(Some(to_u32(ctx.int(
                    v,
                    &k(f),
                    0,
                    4096,
                    i64::from(i32::MAX),
                    "a buffer of 4096 to 2147483647 bytes",
                )?))),
            }
        };
        workloads.push(Workload {
            name: name.clone(),
            test,
            size,
            flows: to_u32(ctx.int(&w.flows, &k("flows"), 1, 1, 1024, "an integer 1..=1024")?),
            duration_s: ctx
                .float(
                    &w.duration_s,
                    &k("duration_s"),
                    0.1,
                    600.0,
                    "a duration of 0.1 to 600 s",
                )?
                .unwrap_or(5.0),
            nodelay: w.nodelay.unwrap_or(false),
            sndbuf: buf(&w.sndbuf, "sndbuf")?,
            rcvbuf: buf(&w.rcvbuf, "rcvbuf")?,
        });
    }

    // Factors.
    if raw.factor.len() > MAX_FACTORS {
        return Err(ctx.err(
            raw.factor[MAX_FACTORS].name.span(),
            format!("factor[{MAX_FACTORS}]"),
            ErrorKind::TooMany {
                what: "factors",
                count: raw.factor.len(),
                max: MAX_FACTORS,
            },
        ));
    }
    let mut factors = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cells: usize = 1;
    for (i, f) in raw.factor.iter().enumerate() {
        let name = f.name.get_ref();
        let Some(knob) = Knob::from_name(name) else {
            return Err(ctx.err(
                f.name.span(),
                format!("factor[{i}].name"),
                ErrorKind::UnknownFactor {
                    name: truncate(name),
                    known: KNOWN.trim_end(),
                },
            ));
        };
        if !seen.insert(knob) {
            return Err(ctx.err(
                f.name.span(),
                format!("factor[{i}].name"),
                ErrorKind::Duplicate {
                    value: truncate(name),
                },
            ));
        }
        let levels_raw = f.levels.get_ref();
        if levels_raw.is_empty() {
            return Err(ctx.err(
                f.levels.span(),
                format!("factor[{i}].levels"),
                ErrorKind::EmptyLevels,
            ));
        }
        if levels_raw.len() > MAX_LEVELS {
            return Err(ctx.err(
                f.levels.span(),
                format!("factor[{i}].levels"),
                ErrorKind::TooMany {
                    what: "levels",
                    count: levels_raw.len(),
                    max: MAX_LEVELS,
                },
            ));
        }
        let mut levels: Vec<Level> = Vec::new();
        for (j, v) in levels_raw.iter().enumerate() {
            let key = format!("factor[{i}].levels[{j}]");
            let level = parse_level(&ctx, knob, v, &key)?;
            if levels.contains(&level) {
                return Err(ctx.err(
                    v.span(),
                    key,
                    ErrorKind::Duplicate {
                        value: truncate(&level.to_string()),
                    },
                ));
            }
            levels.push(level);
        }
        cells = cells.saturating_mul(levels.len());
        if cells > MAX_CELLS {
            return Err(ctx.err(
                f.levels.span(),
                format!("factor[{i}].levels"),
                ErrorKind::TooMany {
                    what: "cells",
                    count: cells,
                    max: MAX_CELLS,
                },
            ));
        }
        factors.push(Factor { knob, levels });
    }

    // Responses.
    let r = &raw.responses;
    if r.metrics.get_ref().is_empty() {
        return Err(ctx.err(
            r.metrics.span(),
            "responses.metrics",
            ErrorKind::Structure("at least one metric"),
        ));
    }
    let mut metrics = Vec::new();
    for (i, m) in r.metrics.get_ref().iter().enumerate() {
        let Some(&(_, metric)) = Metric::NAMES.iter().find(|(n, _)| n == m.get_ref()) else {
            return Err(ctx.bad(m.span(), &format!("responses.metrics[{i}]"), m.get_ref(), "throughput, transactions, latency_p50, latency_p99, cpu_pct, softirq_pct, retransmits or loss_pct"));
        };
        if metrics.contains(&metric) {
            return Err(ctx.err(
                m.span(),
                format!("responses.metrics[{i}]"),
                ErrorKind::Duplicate {
                    value: truncate(m.get_ref()),
                },
            ));
        }
        metrics.push(metric);
    }
    let probe = match &r.probe {
        None => None,
        Some(p) => {
            let kind = match p.kind.get_ref().as_str() {
                "rr" => ProbeKind::Rr,
                "icmp" => ProbeKind::Icmp,
                other => {
                    return Err(ctx.bad(
                        p.kind.span(),
                        "responses.probe.kind",
                        other,
                        "\"rr\" or \"icmp\"",
                    ))
                }
            };
            let interval_ms = ctx
                .float(
                    &p.interval_ms,
                    "responses.probe.interval_ms",
                    1.0,
                    10_000.0,
                    "an interval of 1 to 10000 ms",
                )?
                .unwrap_or(100.0);
            Some(Probe { kind, interval_ms })
        }
    };

    Ok(Experiment {
        name,
        description: raw.description.unwrap_or_default(),
        seed: raw.seed.unwrap_or(1),
        repeats: to_u32(repeats),
        warmup: to_u32(warmup),
        until_ci,
        hosts,
        workloads,
        factors,
        responses: Responses { metrics, probe },
    })
}
