//! Drops by the kernel's own word: the `skb:kfree_skb` tracepoint's reason,
//! location and protocol, counted and sampled (`host::drops` reads them),
//! turned into per-interval rates and named by the catalogue
//! ([`reasons`]).
//!
//! How the numbers are made: per CPU, one perf event on the tracepoint
//! counts every drop exactly ([`DropCounts::total`]) and writes one raw
//! record per `period` drops ([`DropCounts::sampled`]). When every drop of
//! an interval was sampled (the period stayed 1 on every CPU, nothing lost)
//! the counts by reason, location and protocol are exact (the records of a
//! drop counted just before the interval's end may be read just after it,
//! so their sum can differ from the total by the drops of that instant);
//! otherwise they are the sampled shares scaled to the exact total, marked
//! `exact: false`. A drop counted at period 1 whose record never comes
//! (the kernel counted it and wrote no sample, [`ledger`]) makes the
//! interval inexact too.
//!
//! With [`Counting::Bpf`] a BPF program on the raw tracepoint counts every
//! drop by reason in the kernel instead (`by_reason` exact, `total` their
//! sum), and perf samples records only for locations and protocols, during
//! windows whose share of the time shrinks as the rate grows; those rows
//! are then shares of the exact total.
//!
//! What the tracepoint does not carry: the device and the network
//! namespace (only the skb's address, which user space cannot follow
//! without BPF). The counts are the whole machine's, every namespace's.

pub mod format;
pub mod kallsyms;
pub mod ledger;
pub mod reasons;
pub mod record;
pub mod run;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `schema_version` of `nettune drops --json` lines and of a capture's
/// `drops.json` (docs/schema/drops.json).
pub const DROPS_SCHEMA_VERSION: u32 = 1;

/// Most distinct keys kept per map; further ones count under [`OTHER`].
pub const MAX_KEYS: usize = 512;

/// The key that collects what [`MAX_KEYS`] left out.
pub const OTHER: &str = "(other)";

/// The reason key when the kernel has no reason field (before 5.17).
pub const NO_REASON_FIELD: &str = "(no reason field)";

/// How the drops were counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Counting {
    /// A perf event per CPU counts every drop (the total) and samples
    /// records; counts by reason are the sampled ones.
    #[default]
    Perf,
    /// A BPF program on the raw tracepoint counts every drop by reason in
    /// the kernel (exact by reason at any rate); perf samples records only
    /// for locations and protocols, in windows.
    Bpf,
}

impl Counting {
    /// What the human screen says.
    pub fn describe(self) -> &'static str {
        match self {
            Counting::Perf => "perf events count, records sampled",
            Counting::Bpf => "BPF counts by reason, locations sampled",
        }
    }
}

/// Cumulative counts since the watcher started: what a capture records per
/// sample, and what two of make an interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropCounts {
    /// `schema_version` ([`DROPS_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Every drop, exactly (the events' counts, summed over CPUs).
    pub total: u64,
    /// Drops whose raw record was read.
    pub sampled: u64,
    /// Records the kernel could not write (ring full).
    pub lost: u64,
    /// Drops counted while every drop was to be sampled (period 1) whose
    /// record never came, though the ring had room ([`ledger`]). Seen on
    /// 6.18: drops freed in a softirq that interrupted the idle task of one
    /// CPU counted, and no sample written. Makes the interval inexact.
    #[serde(default)]
    pub unrecorded: u64,
    /// Windows in which some CPU sampled fewer than every drop (its period
    /// above 1): an interval where this does not move saw every drop.
    #[serde(default)]
    pub thinned: u64,
    /// How they were counted: with [`Counting::Bpf`], `by_reason` is
    /// every drop by reason (exact), not the sampled ones.
    #[serde(default)]
    pub counting: Counting,
    /// Sampled drops by reason name (every drop with [`Counting::Bpf`]).
    pub by_reason: BTreeMap<String, u64>,
    /// Sampled drops by location (`symbol+0xoff`, or the address).
    pub by_location: BTreeMap<String, u64>,
    /// Sampled drops by protocol (`IPv4`, `IPv6`, `ARP`, or `0x88cc`).
    pub by_protocol: BTreeMap<String, u64>,
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    // no allocation for a key already there (the common case per sample)
    if let Some(v) = map.get_mut(key) {
        *v = v.saturating_add(n);
        return;
    }
    let key = if map.len() >= MAX_KEYS { OTHER } else { key };
    let v = map.entry(key.to_string()).or_insert(0);
    *v = v.saturating_add(n);
}

/// The name of an ethertype.
pub fn protocol_name(p: u16) -> String {
    match p {
        0x0800 => "IPv4".into(),
        0x86dd => "IPv6".into(),
        0x0806 => "ARP".into(),
        0 => "none".into(),
        p => format!("{p:#06x}"),
    }
}

impl DropCounts {
    /// Empty counts of the current schema.
    pub fn new() -> Self {
        DropCounts {
            schema_version: DROPS_SCHEMA_VERSION,
            ..DropCounts::default()
        }
    }

    /// Count one sampled drop.
    pub fn add_sample(&mut self, reason: &str, location: &str, protocol: Option<u16>) {
        bump(&mut self.by_reason, reason, 1);
        self.add_located(location, protocol);
    }

    /// Count one sampled drop's location and protocol only (its reason is
    /// counted apart, [`Counting::Bpf`]).
    pub fn add_located(&mut self, location: &str, protocol: Option<u16>) {
        self.sampled = self.sampled.saturating_add(1);
        bump(&mut self.by_location, location, 1);
        match protocol {
            Some(0x0800) => bump(&mut self.by_protocol, "IPv4", 1),
            Some(0x86dd) => bump(&mut self.by_protocol, "IPv6", 1),
            Some(p) => bump(&mut self.by_protocol, &protocol_name(p), 1),
            None => {}
        }
    }
}

/// One key's count and rate in an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Reason, location or protocol.
    pub name: String,
    /// Drops in the interval (exact, or the sampled share of the exact
    /// total when the interval is not exact).
    pub count: u64,
    /// `count` per second.
    pub per_sec: f64,
}

/// Drops in one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DropInterval {
    /// Length of the interval, seconds.
    pub seconds: f64,
    /// Every drop of the interval (exact).
    pub total: u64,
    /// `total` per second.
    pub per_sec: f64,
    /// Drops whose record was read.
    pub sampled: u64,
    /// Records lost (ring full).
    pub lost: u64,
    /// Drops counted with period 1 whose record never came
    /// ([`DropCounts::unrecorded`]).
    #[serde(default)]
    pub unrecorded: u64,
    /// Whether every drop was sampled, so the rows are exact counts.
    pub exact: bool,
    /// How the drops were counted.
    #[serde(default)]
    pub counting: Counting,
    /// Whether the reason rows are exact counts (`exact`, or counted by
    /// reason in the kernel, [`Counting::Bpf`]).
    #[serde(default)]
    pub reasons_exact: bool,
    /// By reason, largest first.
    pub reasons: Vec<Row>,
    /// By kernel location, largest first.
    pub locations: Vec<Row>,
    /// By protocol, largest first.
    pub protocols: Vec<Row>,
}

fn rows(
    cur: &BTreeMap<String, u64>,
    prev: &BTreeMap<String, u64>,
    scale: Option<(u64, u64)>,
    seconds: f64,
) -> Vec<Row> {
    let mut out: Vec<Row> = cur
        .iter()
        .filter_map(|(k, v)| {
            let d = v.saturating_sub(prev.get(k).copied().unwrap_or(0));
            let count = match scale {
                // sampled share of the exact total, rounded to nearest
                Some((total, sampled)) if sampled > 0 => {
                    let c = (u128::from(d) * u128::from(total) + u128::from(sampled) / 2)
                        / u128::from(sampled);
                    u64::try_from(c).unwrap_or(u64::MAX)
                }
                _ => d,
            };
            (count > 0).then(|| Row {
                name: k.clone(),
                count,
                per_sec: per_sec(count, seconds),
            })
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    out
}

fn per_sec(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

impl DropInterval {
    /// The interval from `prev` to `cur` (cumulative counts `seconds`
    /// apart). A counter that went back (a restarted watcher) counts from 0.
    pub fn between(prev: &DropCounts, cur: &DropCounts, seconds: f64) -> DropInterval {
        let reset = cur.total < prev.total || cur.sampled < prev.sampled;
        let empty = DropCounts::default();
        let prev = if reset { &empty } else { prev };
        let total = cur.total - prev.total;
        let sampled = cur.sampled - prev.sampled;
        let lost = cur.lost.saturating_sub(prev.lost);
        let unrecorded = cur.unrecorded.saturating_sub(prev.unrecorded);
        let exact = lost == 0 && unrecorded == 0 && cur.thinned == prev.thinned;
        let scale = (!exact).then_some((total, sampled));
        let bpf = cur.counting == Counting::Bpf;
        DropInterval {
            seconds,
            total,
            per_sec: per_sec(total, seconds),
            sampled,
            lost,
            unrecorded,
            exact,
            counting: cur.counting,
            reasons_exact: exact || bpf,
            reasons: rows(
                &cur.by_reason,
                &prev.by_reason,
                if bpf { None } else { scale },
                seconds,
            ),
            locations: rows(&cur.by_location, &prev.by_location, scale, seconds),
            protocols: rows(&cur.by_protocol, &prev.by_protocol, scale, seconds),
        }
    }

    /// The count of reason `name` in this interval (0 when absent).
    pub fn reason(&self, name: &str) -> u64 {
        self.reasons
            .iter()
            .find(|r| r.name == name)
            .map_or(0, |r| r.count)
    }
}

/// The sample period that keeps the records of the next window near
/// `budget`, given `hits` in the last one: 1 (every drop) while `hits`
/// stays within the budget.
pub fn next_period(hits: u64, budget: u64) -> u64 {
    if budget == 0 {
        return 1;
    }
    hits.div_ceil(budget).max(1)
}

/// An OS error number, shown as the OS words it (`Operation not permitted
/// (os error 1)`, the same text as the `std::io::Error` it came from).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Errno(pub i32);

/// EIO: what an I/O error without an OS number counts as.
const EIO: i32 = 5;

impl Errno {
    /// The number of `e` (EIO when it has none: every error here comes from
    /// a system call, which always gives one).
    pub fn of(e: &std::io::Error) -> Errno {
        Errno(e.raw_os_error().unwrap_or(EIO))
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&std::io::Error::from_raw_os_error(self.0), f)
    }
}

/// What is wrong with a file of [`Unavailable::BadFormat`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileProblem {
    /// The OS refused the read.
    #[error("unreadable: {errno}")]
    Unreadable {
        /// read(2)'s or open(2)'s error.
        errno: Errno,
    },
    /// Not a regular file of at most the size read, or a path that leaves
    /// the root (no OS error to give).
    #[error("not a plain file that can be read (a FIFO, device, directory, oversized, or a link out of the root)")]
    NotPlain,
    /// The format file's content is not what nettune parses.
    #[error(transparent)]
    Format(#[from] format::FormatError),
    /// The format file has no `ID:` line (the perf event's config).
    #[error("no ID line")]
    NoId,
    /// A capture's file (its samples index, a sample's drops.json) does
    /// not parse, or has a `schema_version` this nettune does not read.
    #[error("not a capture file this nettune reads (corrupt, or another schema_version)")]
    NotCaptureFile,
}

/// Why drops by reason cannot be read: one line each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Unavailable {
    /// No tracefs at /sys/kernel/tracing (or /sys/kernel/debug/tracing)
    /// and not root to mount it.
    #[error(
        "drops by reason: tracefs is not mounted at /sys/kernel/tracing and mounting it needs root"
    )]
    NoTracefs,
    /// tracefs could not be mounted.
    #[error("drops by reason: mounting tracefs at /sys/kernel/tracing failed: {errno}")]
    MountFailed {
        /// mount(2)'s error.
        errno: Errno,
    },
    /// No `skb/kfree_skb` event (a kernel without the tracepoint).
    #[error("drops by reason: this kernel has no skb:kfree_skb tracepoint")]
    NoTracepoint,
    /// perf_event_open refused (needs CAP_PERFMON or root).
    #[error("drops by reason: perf_event_open on skb:kfree_skb was refused ({errno}); run as root or with CAP_PERFMON")]
    NoPermission {
        /// perf_event_open(2)'s error.
        errno: Errno,
    },
    /// A file the watcher reads (the tracepoint's format file, a
    /// capture's drops.json) could not be read or parsed.
    #[error("drops by reason: {}: {problem}", file.display())]
    BadFormat {
        /// The file, as a path on the host or inside the capture.
        file: std::path::PathBuf,
        /// What is wrong with it.
        problem: FileProblem,
    },
    /// Not read: doctor reads drops while it samples a live host, or from a
    /// capture's samples.
    #[error("drops by reason: not read (doctor reads them while sampling the live host, or from a capture's samples)")]
    NotRead,
    /// `--reason` on a kernel before 5.17, whose event has no reason field.
    #[error("drops by reason: this kernel's skb:kfree_skb has no reason field (Linux 5.17 added it): --reason cannot select")]
    NoReasonField,
    /// `--reason` names no reason of the running kernel.
    #[error("drops by reason: `{name}` is not a reason of this kernel (its names are in /sys/kernel/tracing/events/skb/kfree_skb/format)")]
    UnknownReason {
        /// The name given.
        name: String,
    },
    /// The kernel refused the filter.
    #[error("drops by reason: the kernel refused the tracepoint filter `{filter}`: {errno}")]
    BadFilter {
        /// The filter.
        filter: String,
        /// The ioctl's error.
        errno: Errno,
    },
    /// The thread that drains the rings over a run could not start.
    #[error("drops by reason: starting the thread that drains the watcher failed: {errno}")]
    NoDrainThread {
        /// The error of the thread's creation.
        errno: Errno,
    },
    /// The thread that drained the rings over a run panicked (its counts
    /// are gone).
    #[error("drops by reason: the thread that drained the watcher panicked")]
    DrainPanicked,
    /// A captured tree without drop counts.
    #[error("drops by reason: this capture has none (record them with `nettune capture --samples N` as root)")]
    NotCaptured,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed errno says what the `io::Error` it came from said, so the
    /// one line is the same text it was as a string.
    #[test]
    fn an_errno_reads_as_the_os_error_it_came_from() {
        let e = std::io::Error::from_raw_os_error(1);
        let why = Unavailable::NoPermission {
            errno: Errno::of(&e),
        };
        assert_eq!(
            why.to_string(),
            format!("drops by reason: perf_event_open on skb:kfree_skb was refused ({e}); run as root or with CAP_PERFMON")
        );
        let other = std::io::Error::other("no number");
        assert_eq!(Errno::of(&other), Errno(5));
        let f = Unavailable::BadFilter {
            filter: "reason == 2".into(),
            errno: Errno(22),
        };
        assert!(f.to_string().ends_with("(os error 22)"), "{f}");
    }

    /// A bad file is named, with what is wrong: typed, not a string.
    #[test]
    fn a_bad_file_names_itself_and_its_problem() {
        let file = std::path::PathBuf::from("/sys/kernel/tracing/events/skb/kfree_skb/format");
        let u = Unavailable::BadFormat {
            file: file.clone(),
            problem: FileProblem::NoId,
        };
        assert_eq!(
            u.to_string(),
            "drops by reason: /sys/kernel/tracing/events/skb/kfree_skb/format: no ID line"
        );
        let f = Unavailable::BadFormat {
            file: file.clone(),
            problem: format::FormatError::NoLocation.into(),
        };
        assert!(f
            .to_string()
            .ends_with("format: kfree_skb format: no 8-byte `location` field"));
        let r = Unavailable::BadFormat {
            file,
            problem: FileProblem::Unreadable { errno: Errno(13) },
        };
        assert!(r.to_string().contains("format: unreadable: "), "{r}");
        assert!(r.to_string().ends_with("(os error 13)"), "{r}");
    }
}
