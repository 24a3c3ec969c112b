//! Drops by reason: the live watcher on `skb:kfree_skb`, and the counts a
//! capture recorded (`samples/NNNN/drops.json`, [`captured`]) for `--root`.
//!
//! The watcher counts in one of two ways ([`Counting`]):
//! - **BPF** (the default where the kernel allows it): a BPF program on the
//!   `kfree_skb` raw tracepoint (`sys::bpf`) counts every drop by reason in
//!   a per-CPU array, a few nanoseconds a drop; one perf event per online
//!   CPU (`sys::perf`) samples records for locations and protocols, enabled
//!   all the time while drops stay under [`WINDOW_BUDGET`] per drain and,
//!   above, for one drain in N, so that what a perf event costs per drop
//!   (the kernel builds a trace record for every hit while one is
//!   enabled) is paid for a bounded number of drops a second.
//! - **perf** (`--reason`, `--every`, or where BPF is refused: no
//!   `CAP_BPF`, a kernel before 5.17): the perf events count every drop and
//!   sample records, as below.
//!
//! Everything read from the host (tracefs' `format` file, `/proc/kallsyms`,
//! the online CPUs) goes through the [`Root`]; a root that is not the live
//! host has no tracepoint to open, only what a capture recorded.

pub mod captured;

use crate::capture::SampleHook;
use crate::files::OutDir;
use crate::{HostError, Root};
use model::drops::format::{parse_format, DropLayout};
use model::drops::kallsyms::Kallsyms;
use model::drops::ledger::RecordLedger;
use model::drops::record::{decode, records, Record};
pub use model::drops::Counting;
use model::drops::{next_period, DropCounts, FileProblem, Unavailable, NO_REASON_FIELD, OTHER};
use model::CpuSet;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use sys::perf::TracepointEvent;

/// Where tracefs is mounted on current kernels.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// Where it was before 4.1, under debugfs.
pub const TRACEFS_DEBUG: &str = "/sys/kernel/debug/tracing";
/// The event's directory under tracefs.
pub const EVENT_DIR: &str = "events/skb/kfree_skb";
/// The file a capture records per sample.
pub const DROPS_FILE: &str = "drops.json";

/// Records read per CPU per drain before the sample period grows: at the
/// watcher's 100 ms drains, 1000 records a second per CPU. Each record
/// costs the dropping CPU a perf sample, so the budget stays small (issue
/// 39's cost runs in bench/RESULTS.md); the total stays exact whatever it
/// is.
pub const BUDGET_PER_DRAIN: u64 = 100;
/// Ring pages per CPU (256 KiB with 4 KiB pages, about 4600 records).
pub const RING_PAGES: usize = 64;
/// Ring pages per CPU with [`Sampling::Every`] (2 MiB, about 37 000
/// records: bursts of other processes' drops between two drains).
pub const RING_PAGES_EVERY: usize = 512;
/// How often the rings should be drained (see [`DropWatcher::drain`]).
pub const DRAIN_EVERY: std::time::Duration = crate::capture::HOOK_TICK;
/// With [`Counting::Bpf`]: drops per drain (100 ms) up to which the perf
/// events stay enabled (every drop sampled up to [`BUDGET_PER_DRAIN`]
/// records); at N times that, they are enabled for one drain in N. So the
/// perf cost is paid for at most about 10 000 drops a second whatever the
/// rate (issue 39's cost runs in bench/RESULTS.md).
pub const WINDOW_BUDGET: u64 = 1000;
/// The raw tracepoint and the argument that is the reason
/// (`TP_PROTO(skb, location, reason[, rx_sk])`, include/trace/events/skb.h
/// since 5.17).
const RAW_TRACEPOINT: &str = "kfree_skb";
const REASON_ARG: u32 = 2;
/// How long a drain waits before reading a ring again when its records
/// fell behind its count (a record being written as the count was read).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(2);
/// Most distinct addresses whose names are kept.
const MAX_NAMED: usize = 4096;

/// How the watcher samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// Every drop while a CPU's drops stay within [`BUDGET_PER_DRAIN`] per
    /// drain, then one in N (exact totals always).
    Adaptive,
    /// Every drop always (period 1): exact by reason at any rate the ring
    /// holds, at the cost of one record per drop.
    Every,
}

/// The tracefs directory of the event, mounting tracefs when it is absent
/// and we are root on the live host.
fn event_dir(root: &Root) -> Result<PathBuf, Unavailable> {
    for base in [TRACEFS, TRACEFS_DEBUG] {
        let dir = Path::new(base).join(EVENT_DIR);
        if root.exists(dir.join("format")) {
            return Ok(dir);
        }
    }
    if root.exists(Path::new(TRACEFS).join("events")) {
        return Err(Unavailable::NoTracepoint);
    }
    // Only the mount can tell whether we may: EPERM is "not root".
    match sys::perf::mount_tracefs(Path::new(TRACEFS)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(sys::ethtool::errno::EPERM) => {
            return Err(Unavailable::NoTracefs)
        }
        Err(e) => {
            return Err(Unavailable::MountFailed {
                errno: model::drops::Errno::of(&e),
            })
        }
    }
    let dir = Path::new(TRACEFS).join(EVENT_DIR);
    if root.exists(dir.join("format")) {
        Ok(dir)
    } else {
        Err(Unavailable::NoTracepoint)
    }
}

/// The live watcher: the BPF counter when the kernel allows it, and one
/// perf event per online CPU.
#[derive(Debug)]
pub struct DropWatcher {
    bpf: Option<sys::bpf::ArgCounter>,
    /// Why BPF is not counting (it was tried and refused).
    bpf_refused: Option<String>,
    /// BPF: the total at the last drain, drains so far, and whether the
    /// perf events are open (closed between windows: a disabled event
    /// still leaves its probe registered on the tracepoint, which every
    /// drop pays for).
    last_total: u64,
    tick: u64,
    window_on: bool,
    events: Vec<TracepointEvent>,
    /// What reopens the events: the tracepoint's id, the CPUs, ring pages
    /// and filter.
    id: u64,
    cpu_ids: Vec<u32>,
    pages: usize,
    filter: Option<String>,
    periods: Vec<u64>,
    last_counts: Vec<u64>,
    /// Per CPU: whether its records kept up with its count.
    ledgers: Vec<RecordLedger>,
    layout: DropLayout,
    reasons: BTreeMap<u32, String>,
    /// Read at the first sampled drop (a debug build takes most of a
    /// second over 6.18's 120 000 lines; a quiet window never pays it).
    kallsyms: Option<Kallsyms>,
    root: Root,
    names: HashMap<u64, String>,
    sampling: Sampling,
    counts: DropCounts,
    buf: Vec<u8>,
}

impl DropWatcher {
    /// Open the watcher on the live host `root` (`Root::live()`); a
    /// captured root is [`Unavailable::NotCaptured`] here (read it with
    /// [`captured::read_captured`]).
    pub fn open(root: &Root, sampling: Sampling) -> Result<DropWatcher, Unavailable> {
        DropWatcher::open_only(root, sampling, &[])
    }

    /// [`DropWatcher::open_counting`] with BPF where the kernel allows it.
    pub fn open_only(
        root: &Root,
        sampling: Sampling,
        only: &[String],
    ) -> Result<DropWatcher, Unavailable> {
        DropWatcher::open_counting(root, sampling, only, Counting::Bpf)
    }

    /// [`DropWatcher::open`] counting only the drops of these reasons
    /// (names as the kernel's format file spells them): a tracepoint filter
    /// the kernel applies, so the total is their exact count whatever else
    /// the machine drops. Empty: every reason. `prefer`: [`Counting::Bpf`]
    /// tries the BPF counter (not with `only` or [`Sampling::Every`], which
    /// need perf's filter or every record) and falls back to perf when the
    /// kernel refuses it ([`DropWatcher::bpf_refused`] says why);
    /// [`Counting::Perf`] does not try.
    pub fn open_counting(
        root: &Root,
        sampling: Sampling,
        only: &[String],
        prefer: Counting,
    ) -> Result<DropWatcher, Unavailable> {
        if !root.is_live() {
            return Err(Unavailable::NotCaptured);
        }
        let dir = event_dir(root)?;
        let file = dir.join("format");
        let bad = |problem: FileProblem| Unavailable::BadFormat {
            file: file.clone(),
            problem,
        };
        let text = root.read(&file).map_err(|e| unreadable(&file, &e))?;
        let format = parse_format(&text).map_err(|e| bad(e.into()))?;
        let layout = DropLayout::of(&format).map_err(|e| bad(e.into()))?;
        let id = format.id.ok_or_else(|| bad(FileProblem::NoId))?;
        let filter = reason_filter(&format.reasons, only, layout.reason.is_some())?;
        let cpus = root
            .read("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| CpuSet::parse_list(t.trim()).ok())
            .unwrap_or_else(|| CpuSet::single(0));
        let period = 1;
        let pages = match sampling {
            Sampling::Adaptive => RING_PAGES,
            Sampling::Every => RING_PAGES_EVERY,
        };
        let cpu_ids: Vec<u32> = cpus.iter().collect();
        let periods = vec![period; cpu_ids.len()];
        let events = open_events(id, &cpu_ids, &periods, pages, filter.as_deref())?;
        let n = events.len();
        let want_bpf = prefer == Counting::Bpf && only.is_empty() && sampling == Sampling::Adaptive;
        let (bpf, bpf_refused) = if !want_bpf {
            (None, None)
        } else if layout.reason.is_none() {
            (
                None,
                Some("this kernel's kfree_skb has no reason".to_string()),
            )
        } else {
            match bpf_counter(root, &format.reasons) {
                Ok(b) => (Some(b), None),
                Err(e) => (None, Some(e.to_string())),
            }
        };
        let mut counts = DropCounts::new();
        if bpf.is_some() {
            counts.counting = Counting::Bpf;
        }
        Ok(DropWatcher {
            bpf,
            bpf_refused,
            last_total: 0,
            tick: 0,
            // open: the first drain closes it when the rate is high
            window_on: true,
            events,
            id,
            cpu_ids,
            pages,
            filter,
            periods,
            last_counts: vec![0; n],
            ledgers: vec![RecordLedger::default(); n],
            layout,
            reasons: format.reasons,
            kallsyms: None,
            root: root.clone(),
            names: HashMap::new(),
            sampling,
            counts,
            buf: Vec::new(),
        })
    }

    /// How this watcher counts.
    pub fn counting(&self) -> Counting {
        if self.bpf.is_some() {
            Counting::Bpf
        } else {
            Counting::Perf
        }
    }

    /// Why the BPF counter was asked for and not used (the kernel's
    /// refusal), so perf counts instead.
    pub fn bpf_refused(&self) -> Option<&str> {
        self.bpf_refused.as_deref()
    }

    /// Whether the kernel gives a reason (5.17 and later).
    pub fn has_reasons(&self) -> bool {
        self.layout.reason.is_some()
    }

    /// Whether `/proc/kallsyms` hid its addresses (`kptr_restrict`) or
    /// could not be read, so locations are addresses; `None` before the
    /// first drop (it is read then).
    pub fn locations_hidden(&self) -> Option<bool> {
        self.kallsyms.as_ref().map(|k| k.hidden() || k.is_empty())
    }

    /// CPUs watched.
    pub fn cpus(&self) -> usize {
        self.cpu_ids.len()
    }

    /// Read the records the rings hold and adapt each CPU's period to its
    /// rate. Call it often (every 100 ms) so the rings do not fill.
    pub fn drain(&mut self) {
        let mut thinned = false;
        let mut closing = false;
        let window_was_on = self.window_on;
        if let Some(b) = &self.bpf {
            let total = b.counts().iter().fold(0u64, |a, &c| a.wrapping_add(c));
            let hits = total.wrapping_sub(self.last_total);
            self.last_total = total;
            // drops while no perf event sampled
            thinned |= hits > 0 && !window_was_on;
            self.tick = self.tick.wrapping_add(1);
            let every = next_period(hits, WINDOW_BUDGET);
            let on = every == 1 || self.tick.is_multiple_of(every);
            if on && !window_was_on {
                // a window opens: new events, counting from 0
                let (id, pages, filter) = (self.id, self.pages, self.filter.as_deref());
                match open_events(id, &self.cpu_ids, &self.periods, pages, filter) {
                    Ok(evs) => {
                        self.events = evs;
                        self.last_counts = vec![0; self.cpu_ids.len()];
                        self.window_on = true;
                    }
                    // not sampled: said as thinned
                    Err(_) => thinned = true,
                }
            }
            closing = !on && window_was_on;
        }
        let mut owing = Vec::new();
        for i in 0..self.events.len() {
            // the count first: the records drained after it cover its hits
            let count = self.events[i].count();
            let records = self.read_ring(i);
            let Ok(c) = count else {
                thinned |= self.periods[i] > 1;
                continue;
            };
            let hits = c.saturating_sub(self.last_counts[i]);
            self.last_counts[i] = c;
            if self.bpf.is_some() && !window_was_on {
                // the event counted nothing while closed: keep its period
                continue;
            }
            if let Some(l) = self.ledgers.get_mut(i) {
                l.window(hits, records, self.periods[i] == 1);
                if l.owes() {
                    owing.push(i);
                }
            }
            // a window with drops while this CPU sampled one in N
            thinned |= self.periods[i] > 1 && hits > 0;
            let want = match self.sampling {
                Sampling::Every => 1,
                Sampling::Adaptive => next_period(hits, BUDGET_PER_DRAIN),
            };
            if want != self.periods[i] && self.events[i].set_period(want).is_ok() {
                self.periods[i] = want;
            }
        }
        if !owing.is_empty() {
            // a record of a hit counted just before the read may still be
            // being written: read once more before calling it unrecorded
            std::thread::sleep(SETTLE);
            for i in owing {
                let late = self.read_ring(i);
                if let Some(l) = self.ledgers.get_mut(i) {
                    l.late(late);
                }
            }
        }
        self.counts.unrecorded = self
            .ledgers
            .iter_mut()
            .fold(0u64, |a, l| a.saturating_add(l.close()));
        if closing {
            // read above; closing unregisters the events' probe
            self.events.clear();
            self.window_on = false;
        }
        if thinned {
            self.counts.thinned = self.counts.thinned.saturating_add(1);
        }
    }

    /// Drain event `i`'s ring into the counts; returns the samples read.
    fn read_ring(&mut self, i: usize) -> u64 {
        let Some(ev) = self.events.get(i) else {
            return 0;
        };
        self.buf.clear();
        ev.drain(&mut self.buf);
        let buf = std::mem::take(&mut self.buf);
        let mut samples = 0u64;
        for r in records(&buf) {
            match r {
                Record::Sample(raw) => {
                    samples = samples.saturating_add(1);
                    self.add(raw);
                }
                Record::Lost(n) => self.counts.lost = self.counts.lost.saturating_add(n),
                Record::Other => {}
            }
        }
        self.buf = buf;
        samples
    }

    fn add(&mut self, raw: &[u8]) {
        let Some(d) = decode(&self.layout, raw) else {
            return;
        };
        let unknown;
        let reason = match d.reason {
            Some(n) => match self.reasons.get(&n) {
                Some(r) => r.as_str(),
                None => {
                    unknown = format!("REASON_{n}");
                    unknown.as_str()
                }
            },
            None => NO_REASON_FIELD,
        };
        if !self.names.contains_key(&d.location) && self.names.len() < MAX_NAMED {
            let root = &self.root;
            let k = self.kallsyms.get_or_insert_with(|| {
                root.read("/proc/kallsyms")
                    .map(|t| Kallsyms::parse(&t))
                    .unwrap_or_default()
            });
            let n = k.name(d.location);
            self.names.insert(d.location, n);
        }
        let hex;
        let loc = match self.names.get(&d.location) {
            Some(n) => n.as_str(),
            None => {
                hex = format!("{:#x}", d.location);
                hex.as_str()
            }
        };
        if self.bpf.is_some() {
            // the reason is counted in the kernel
            self.counts.add_located(loc, d.protocol);
        } else {
            self.counts.add_sample(reason, loc, d.protocol);
        }
    }

    /// The cumulative counts now: the exact total read first, then the
    /// rings drained.
    pub fn counts(&mut self) -> DropCounts {
        if let Some(b) = &self.bpf {
            // read before the drain, whose first located record loads
            // /proc/kallsyms (seconds for a debug build under TCG): the
            // exact counts belong to the moment the caller asked
            let (total, by_reason) = by_reason(&b.counts(), &self.reasons);
            self.counts.total = total;
            self.counts.by_reason = by_reason;
            self.drain();
            return self.counts.clone();
        }
        let total = self
            .events
            .iter()
            .filter_map(|e| e.count().ok())
            .fold(0u64, u64::saturating_add);
        self.drain();
        self.counts.total = total;
        self.counts.clone()
    }
}

/// One perf event per CPU of `cpu_ids` on tracepoint `id`, enabled, with
/// its period, ring pages and `filter`.
fn open_events(
    id: u64,
    cpu_ids: &[u32],
    periods: &[u64],
    pages: usize,
    filter: Option<&str>,
) -> Result<Vec<TracepointEvent>, Unavailable> {
    let mut events = Vec::new();
    for (&cpu, &period) in cpu_ids.iter().zip(periods) {
        let ev = TracepointEvent::open(id, cpu, period, pages).map_err(|e| {
            Unavailable::NoPermission {
                errno: model::drops::Errno::of(&e),
            }
        })?;
        if let Some(f) = filter {
            ev.set_filter(f).map_err(|e| Unavailable::BadFilter {
                filter: f.to_string(),
                errno: model::drops::Errno::of(&e),
            })?;
        }
        events.push(ev);
    }
    Ok(events)
}

/// The BPF counter on `kfree_skb`: a slot per reason of the running
/// kernel's format (its numbers) and one for any larger value, for the
/// possible CPUs.
fn bpf_counter(
    root: &Root,
    reasons: &BTreeMap<u32, String>,
) -> std::io::Result<sys::bpf::ArgCounter> {
    let max = reasons.keys().next_back().copied().unwrap_or(0);
    let slots = max.saturating_add(2).clamp(2, sys::bpf::MAX_SLOTS);
    let cpus = root
        .read("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|t| sys::bpf::possible_cpus(&t))
        .ok_or_else(|| std::io::Error::other("/sys/devices/system/cpu/possible is unreadable"))?
        .min(sys::bpf::MAX_CPUS);
    sys::bpf::ArgCounter::attach(RAW_TRACEPOINT, REASON_ARG, slots, cpus)
}

/// The BPF counter's slots as (total, counts by reason name): the last
/// slot, every value beyond the format's, under [`OTHER`]; a number the
/// format does not name as `REASON_n`.
fn by_reason(slots: &[u64], names: &BTreeMap<u32, String>) -> (u64, BTreeMap<String, u64>) {
    let mut total = 0u64;
    let mut out = BTreeMap::new();
    let last = slots.len().saturating_sub(1);
    for (i, &n) in slots.iter().enumerate() {
        total = total.wrapping_add(n);
        if n == 0 {
            continue;
        }
        let name = match u32::try_from(i).ok().and_then(|k| names.get(&k)) {
            _ if i == last => OTHER.to_string(),
            Some(s) => s.clone(),
            None => format!("REASON_{i}"),
        };
        *out.entry(name).or_insert(0) += n;
    }
    (total, out)
}

/// Dropped packets of interface `iface` (`/proc/net/dev`'s rx and tx drop
/// columns) under `root`: the interface's own counters, which the
/// tracepoint cannot attribute (it carries no device).
pub fn iface_drops(root: &Root, iface: &str) -> Option<(u64, u64)> {
    let text = root.read("/proc/net/dev").ok()?;
    let dev = model::parse::netdev::parse_netdev(&text).ok()?;
    let s = dev.get(iface)?;
    Some((s.rx.drop, s.tx.drop))
}

/// The tracepoint filter selecting `only` (`None` when empty).
fn reason_filter(
    table: &BTreeMap<u32, String>,
    only: &[String],
    has_reason: bool,
) -> Result<Option<String>, Unavailable> {
    if only.is_empty() {
        return Ok(None);
    }
    if !has_reason {
        return Err(Unavailable::NoReasonField);
    }
    let mut parts = Vec::new();
    for name in only {
        let n = table
            .iter()
            .find(|(_, v)| *v == name)
            .map(|(k, _)| *k)
            .ok_or_else(|| Unavailable::UnknownReason { name: name.clone() })?;
        parts.push(format!("reason == {n}"));
    }
    Ok(Some(parts.join(" || ")))
}

/// `capture --samples` records the watcher's counts in each sample.
impl SampleHook for DropWatcher {
    fn tick(&mut self) {
        self.drain();
    }

    fn record(&mut self, dir: &OutDir) -> Result<(), HostError> {
        let c = self.counts();
        captured::write_counts(dir, &c)
    }
}

/// Where intervals come from: the live watcher, or a capture's samples.
#[derive(Debug)]
pub enum DropSource {
    /// The live host.
    Live {
        /// The watcher.
        watcher: Box<DropWatcher>,
        /// Counts at the last interval's end.
        prev: DropCounts,
        /// When that was.
        at: std::time::Instant,
        /// The root, for the interface's counters.
        root: Root,
    },
    /// A capture's recorded counts.
    Replay {
        /// The samples that have them.
        samples: Vec<captured::CapturedDrops>,
        /// The next interval ends at this sample.
        next: usize,
    },
}

/// One interval of a [`DropSource`].
#[derive(Debug, Clone)]
pub struct Interval {
    /// Drops by reason, location and protocol.
    pub drops: model::drops::DropInterval,
    /// The asked interface's own drop counters (rx, tx) over the interval.
    pub iface: Option<(u64, u64)>,
}

impl DropSource {
    /// The live watcher on the live host, the capture's counts otherwise.
    /// `only`: [`DropWatcher::open_only`]'s reasons (live only).
    pub fn open(
        root: &Root,
        sampling: Sampling,
        only: &[String],
    ) -> Result<DropSource, DropsError> {
        DropSource::open_counting(root, sampling, only, Counting::Bpf)
    }

    /// [`DropSource::open`] preferring `prefer`'s way of counting
    /// ([`DropWatcher::open_counting`]).
    pub fn open_counting(
        root: &Root,
        sampling: Sampling,
        only: &[String],
        prefer: Counting,
    ) -> Result<DropSource, DropsError> {
        if root.is_live() {
            let mut watcher = Box::new(DropWatcher::open_counting(root, sampling, only, prefer)?);
            let prev = watcher.counts();
            return Ok(DropSource::Live {
                watcher,
                prev,
                at: std::time::Instant::now(),
                root: root.clone(),
            });
        }
        let samples = captured::read_captured(root)?;
        Ok(DropSource::Replay { samples, next: 1 })
    }

    /// Whether locations are addresses because `/proc/kallsyms` hid them
    /// (live only; `None` before the first sampled drop or on a replay).
    pub fn locations_hidden(&self) -> Option<bool> {
        match self {
            DropSource::Live { watcher, .. } => watcher.locations_hidden(),
            DropSource::Replay { .. } => None,
        }
    }

    /// The live watcher (`None` on a replay).
    pub fn watcher(&self) -> Option<&DropWatcher> {
        match self {
            DropSource::Live { watcher, .. } => Some(watcher),
            DropSource::Replay { .. } => None,
        }
    }

    /// The cumulative counts so far (live: now; replay: the last sample).
    pub fn first(&self) -> Option<DropCounts> {
        match self {
            DropSource::Live { prev, .. } => Some(prev.clone()),
            DropSource::Replay { samples, .. } => samples.first().map(|s| s.counts.clone()),
        }
    }

    /// The next interval: live, after waiting `interval` (draining the
    /// rings meanwhile); replayed, the next recorded pair (`None` after the
    /// last). Also returns the cumulative counts at its end.
    ///
    /// `stop` is asked while waiting: when it says yes, the interval ends
    /// there (shorter), so a Ctrl-C still gets its last interval.
    pub fn next(
        &mut self,
        interval: std::time::Duration,
        iface: Option<&str>,
        stop: &dyn Fn() -> bool,
    ) -> Option<(Interval, DropCounts)> {
        match self {
            DropSource::Live {
                watcher,
                prev,
                at,
                root,
            } => {
                let before = iface.and_then(|i| iface_drops(root, i));
                let due = *at + interval;
                while let Some(wait) = due.checked_duration_since(std::time::Instant::now()) {
                    if stop() {
                        break;
                    }
                    std::thread::sleep(wait.min(DRAIN_EVERY));
                    watcher.drain();
                }
                let cur = watcher.counts();
                let now = std::time::Instant::now();
                let secs = now.duration_since(*at).as_secs_f64();
                let after = iface.and_then(|i| iface_drops(root, i));
                let drops = model::drops::DropInterval::between(prev, &cur, secs);
                *prev = cur.clone();
                *at = now;
                Some((
                    Interval {
                        drops,
                        iface: delta(before, after),
                    },
                    cur,
                ))
            }
            DropSource::Replay { samples, next } => {
                let a = samples.get(next.checked_sub(1)?)?;
                let b = samples.get(*next)?;
                *next += 1;
                let secs = b.at.saturating_sub(a.at) as f64 / 1e9;
                let drops = model::drops::DropInterval::between(&a.counts, &b.counts, secs);
                let of = |s: &captured::CapturedDrops| {
                    iface.and_then(|i| iface_drops(&Root::new(&s.dir), i))
                };
                let iface = delta(of(a), of(b));
                Some((Interval { drops, iface }, b.counts.clone()))
            }
        }
    }
}

/// The drops between a capture's first and last recorded counts, for
/// doctor's window; why there are none otherwise.
pub fn captured_window(root: &Root) -> Result<model::drops::DropInterval, Unavailable> {
    let samples = match captured::read_captured(root) {
        Ok(s) => s,
        Err(DropsError::Unavailable(u)) => return Err(u),
        Err(DropsError::Host(e)) => {
            let file = e.path().map(Path::to_path_buf).unwrap_or_default();
            return Err(match &e {
                // what read_captured says of a drops.json that does not parse
                HostError::Io { error, .. } if error.raw_os_error().is_none() => {
                    Unavailable::BadFormat {
                        file,
                        problem: FileProblem::NotCaptureFile,
                    }
                }
                _ => unreadable(&file, &e),
            });
        }
    };
    let (Some(a), Some(b)) = (samples.first(), samples.last()) else {
        return Err(Unavailable::NotCaptured);
    };
    let secs = b.at.saturating_sub(a.at) as f64 / 1e9;
    Ok(model::drops::DropInterval::between(
        &a.counts, &b.counts, secs,
    ))
}

/// A file the watcher could not read, as [`Unavailable::BadFormat`]: the
/// OS error when there is one.
fn unreadable(file: &Path, e: &HostError) -> Unavailable {
    let problem = match e.raw_os_error() {
        Some(n) => FileProblem::Unreadable {
            errno: model::drops::Errno(n),
        },
        None => FileProblem::NotPlain,
    };
    Unavailable::BadFormat {
        file: file.to_path_buf(),
        problem,
    }
}

fn delta(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    let (a, b) = (a?, b?);
    Some((b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)))
}

/// Why `nettune drops` cannot give intervals.
#[derive(Debug, thiserror::Error)]
pub enum DropsError {
    /// The tracepoint or a capture's counts are not there (one line).
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// A capture's file is unreadable or corrupt (named).
    #[error(transparent)]
    Host(#[from] HostError),
}
