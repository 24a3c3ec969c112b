//! A worker's own state: one thread each, owning its counters and
//! histogram ([`Ctx`]), the run's clock ([`Timing`]) and what it tells the
//! session ([`Event`]). The hot path touches only the worker's own memory;
//! it reads the clock once per batch or transaction and publishes a
//! snapshot at interval boundaries. (Spawning is in `side`, the workloads
//! in `work`; neither is imported here.)

use crate::config::{FlowDir, TestConfig};
use crate::proto::Msg;
use crate::report::{hist_pairs, new_histogram, Counters, Role, TcpInfo, WorkerReport};
use crate::sys;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long stream senders keep going past the window, so the receiver's
/// window (timed from its own start) is always full.
pub const SEND_TAIL: Duration = Duration::from_millis(50);
/// Passive workers give up this long after the window if nobody stops them.
pub const HARD_TAIL: Duration = Duration::from_secs(5);

/// The run's clock, shared by all workers of one side.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// When `Go` happened on this side.
    pub start: Instant,
    /// Warm-up length.
    pub warmup: Duration,
    /// Window length.
    pub duration: Duration,
    /// Interval length.
    pub interval: Duration,
    /// Number of intervals in the window.
    pub intervals: u64,
}

impl Timing {
    /// From a configuration and a start instant.
    pub fn new(cfg: &TestConfig, start: Instant) -> Timing {
        Timing {
            start,
            warmup: Duration::from_millis(cfg.warmup_ms),
            duration: Duration::from_millis(cfg.duration_ms),
            interval: Duration::from_millis(cfg.interval_ms),
            intervals: cfg.intervals(),
        }
    }
    /// Start of the measured window.
    pub fn win_start(&self) -> Instant {
        self.start + self.warmup
    }
    /// End of the measured window.
    pub fn win_end(&self) -> Instant {
        self.win_start() + self.duration
    }
    /// When stream senders stop.
    pub fn send_until(&self) -> Instant {
        self.win_end() + SEND_TAIL
    }
    /// When passive workers stop at the latest.
    pub fn hard_stop(&self) -> Instant {
        self.win_end() + HARD_TAIL
    }
    fn boundary(&self, i: u64) -> Instant {
        let t = self.win_start() + self.interval * (i as u32);
        t.min(self.win_end())
    }
}

/// Something a session's event loop receives.
#[derive(Debug)]
pub enum Event {
    /// A measuring worker finished interval `index`.
    Interval {
        /// Direction.
        dir: FlowDir,
        /// Interval number.
        index: u64,
        /// Counter deltas.
        c: Counters,
        /// Latency samples of the interval.
        hist: Option<Box<Histogram<u64>>>,
    },
    /// A control message arrived.
    Ctrl(Msg),
    /// The control connection failed or closed.
    CtrlClosed(String),
    /// A worker thread ended (its index in the session's list).
    WorkerDone(usize),
}

/// Sleep until `at` (a scheduled start; at once for a past one), waking
/// early when `stop` is raised (checked every 100 ms).
/// When this side's workers actually began (CLOCK_REALTIME ns): each
/// worker notes its clock when it leaves the gate (and, for a scheduled
/// start, its own sleep), just before its first send or receive.
#[derive(Debug)]
pub struct Starts {
    first: AtomicU64,
    last: AtomicU64,
}

impl Default for Starts {
    /// No worker started yet.
    fn default() -> Starts {
        Starts {
            first: AtomicU64::new(u64::MAX),
            last: AtomicU64::new(0),
        }
    }
}

impl Starts {
    pub(crate) fn note(&self, ns: u64) {
        self.first.fetch_min(ns, Ordering::Relaxed);
        self.last.fetch_max(ns, Ordering::Relaxed);
    }
    /// The earliest and the latest worker start, if any worker started.
    pub fn span(&self) -> Option<(u64, u64)> {
        let (a, b) = (
            self.first.load(Ordering::Relaxed),
            self.last.load(Ordering::Relaxed),
        );
        (a <= b).then_some((a, b))
    }
}

/// The `SCHED_FIFO` priority a worker waits at for a scheduled start (the
/// lowest: above every normal thread, below the kernel's own).
const START_PRIORITY: i32 = 1;

pub(crate) fn sleep_until(at: Instant, stop: &AtomicBool) {
    loop {
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Start gate: workers wait here until the session opens it (or aborts).
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<Option<Option<Instant>>>,
    cv: Condvar,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Arc<Gate> {
        Arc::new(Gate::default())
    }
    /// Open with the start instant.
    pub fn open(&self, start: Instant) {
        if let Ok(mut s) = self.state.lock() {
            *s = Some(Some(start));
        }
        self.cv.notify_all();
    }
    /// Release waiters without starting.
    pub fn abort(&self) {
        if let Ok(mut s) = self.state.lock() {
            if s.is_none() {
                *s = Some(None);
            }
        }
        self.cv.notify_all();
    }
    pub(crate) fn wait(&self) -> Option<Instant> {
        let Ok(mut s) = self.state.lock() else {
            return None;
        };
        loop {
            if let Some(v) = *s {
                return v;
            }
            s = match self.cv.wait(s) {
                Ok(s) => s,
                Err(_) => return None,
            };
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Warmup,
    Window,
    Done,
}

/// A worker's own state: counters, histograms, interval bookkeeping.
#[derive(Debug)]
pub struct Ctx {
    /// Cumulative counters; the hot path adds to these directly.
    pub c: Counters,
    /// Clock.
    pub t: Timing,
    /// Role.
    pub role: Role,
    /// Direction.
    pub dir: FlowDir,
    /// TCP_INFO gathered at the end.
    pub tcp_info: Vec<TcpInfo>,
    worker: u32,
    cpu: Option<u32>,
    phase: Phase,
    next_mark: Instant,
    iv: u64,
    mark_c: Counters,
    win_c0: Counters,
    window: Counters,
    hist_iv: Option<Box<Histogram<u64>>>,
    hist: Option<Box<Histogram<u64>>>,
    ru0: sys::Rusage,
    ru: sys::Rusage,
    stop: Arc<AtomicBool>,
    events: Sender<Event>,
    /// Ticks seen, up to 2 (the yield after the first batch).
    ticks: u8,
    /// Runs under `SCHED_FIFO` until its first batch (a scheduled start).
    realtime: bool,
    /// A scheduled start not yet waited for, and where to note it.
    scheduled: Option<(Instant, Arc<Starts>)>,
}

impl Ctx {
    /// A worker's state before its start: `worker` is its index on its
    /// side, `cpu` the CPU it is pinned to.
    pub(crate) fn new(
        (worker, role, dir, cpu): (u32, Role, FlowDir, Option<u32>),
        t: Timing,
        stop: Arc<AtomicBool>,
        events: Sender<Event>,
    ) -> Ctx {
        let latency = role == Role::Request;
        Ctx {
            c: Counters::default(),
            t,
            role,
            dir,
            tcp_info: Vec::new(),
            worker,
            cpu,
            phase: Phase::Warmup,
            next_mark: t.win_start(),
            iv: 0,
            mark_c: Counters::default(),
            win_c0: Counters::default(),
            window: Counters::default(),
            hist_iv: latency.then(|| Box::new(new_histogram())),
            hist: latency.then(|| Box::new(new_histogram())),
            ru0: sys::Rusage::default(),
            ru: sys::Rusage::default(),
            stop,
            events,
            ticks: 0,
            realtime: false,
            scheduled: None,
        }
    }

    /// The worker starts at `at` (noted in `starts` when it does); it waits
    /// in [`Ctx::await_start`], after its workload and buffers exist.
    pub(crate) fn scheduled_start(mut self, at: Instant, starts: Arc<Starts>) -> Ctx {
        self.scheduled = Some((at, starts));
        self
    }

    /// Wait for the scheduled start, if any: under `SCHED_FIFO` (where
    /// allowed, and only when the instant is ahead) so the worker wakes at
    /// its instant rather than a scheduler slice later; the first
    /// [`Ctx::tick`], after the first send, puts it back under the normal
    /// policy. Called by the poll loop once the workload has allocated its
    /// buffers, so no allocation (224 MiB filled took ~140 ms) runs under
    /// `SCHED_FIFO`.
    pub(crate) fn await_start(&mut self) {
        let Some((at, starts)) = self.scheduled.take() else {
            return;
        };
        self.realtime = at > Instant::now() && crate::sys::sched::set_fifo(START_PRIORITY).is_ok();
        sleep_until(at, &self.stop);
        starts.note(crate::report::realtime_ns());
    }

    /// Whether this thread still runs under `SCHED_FIFO` for its start.
    #[cfg(test)]
    pub(crate) fn realtime(&self) -> bool {
        self.realtime
    }

    /// Call with a fresh `Instant::now()` once per batch or transaction.
    /// After the first batch the worker yields its CPU once: workers that
    /// woke at the same start (a scheduled start, many flows or hosts on
    /// few CPUs) begin theirs then, not a scheduler slice later behind a
    /// sender that never blocks.
    #[inline]
    pub fn tick(&mut self, now: Instant) {
        if self.ticks < 2 {
            self.ticks += 1;
            if self.ticks == 2 {
                // After the first pass (the first send): back to the
                // normal policy, then let the others run.
                if self.realtime {
                    self.realtime = false;
                    let _ = crate::sys::sched::set_normal();
                }
                std::thread::yield_now();
            }
        }
        if now >= self.next_mark {
            self.mark(now);
        }
    }

    /// Record one latency sample (counted only inside the window).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        if self.phase == Phase::Window {
            if let Some(h) = self.hist_iv.as_mut() {
                h.saturating_record(ns.max(1));
            }
        }
    }

    /// Whether the session asked workers to stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Time until the next interval mark (for poll timeouts), at most `cap`.
    pub fn until_mark(&self, now: Instant, cap: Duration) -> Duration {
        self.next_mark.saturating_duration_since(now).min(cap)
    }

    #[cold]
    fn mark(&mut self, now: Instant) {
        while now >= self.next_mark && self.phase != Phase::Done {
            match self.phase {
                Phase::Warmup => {
                    self.phase = Phase::Window;
                    self.win_c0 = self.c;
                    self.mark_c = self.c;
                    self.ru0 = sys::thread_rusage();
                    self.next_mark = self.t.boundary(1);
                }
                Phase::Window => {
                    let d = self.c.minus(&self.mark_c);
                    self.mark_c = self.c;
                    let hist = match (self.hist_iv.as_mut(), self.hist.as_mut()) {
                        (Some(iv), Some(total)) => {
                            let _ = total.add(&**iv);
                            let snap = iv.clone();
                            iv.reset();
                            Some(snap)
                        }
                        _ => None,
                    };
                    if self.role.measures() {
                        let _ = self.events.send(Event::Interval {
                            dir: self.dir,
                            index: self.iv,
                            c: d,
                            hist,
                        });
                    }
                    self.iv += 1;
                    if self.iv >= self.t.intervals {
                        self.phase = Phase::Done;
                        self.window = self.c.minus(&self.win_c0);
                        let r = sys::thread_rusage();
                        self.ru = sys::Rusage {
                            user_us: r.user_us.saturating_sub(self.ru0.user_us),
                            sys_us: r.sys_us.saturating_sub(self.ru0.sys_us),
                        };
                        self.next_mark = now + Duration::from_secs(86_400 * 365);
                    } else {
                        self.next_mark = self.t.boundary(self.iv + 1);
                    }
                }
                Phase::Done => {}
            }
        }
    }

    pub(crate) fn finish(mut self, error: Option<String>) -> WorkerReport {
        if self.phase != Phase::Done {
            // Ended early: close the remaining intervals (empty) so the
            // session's aggregation completes.
            self.mark(self.t.win_end().max(Instant::now()));
        }
        WorkerReport {
            worker: self.worker,
            role: Some(self.role),
            dir: Some(self.dir),
            cpu: self.cpu,
            window: self.window,
            total: self.c,
            hist: self.hist.as_deref().map(hist_pairs).unwrap_or_default(),
            tcp_info: std::mem::take(&mut self.tcp_info),
            user_us: self.ru.user_us,
            sys_us: self.ru.sys_us,
            error,
        }
    }
}

/// Per-test parameters workers read.
#[derive(Debug, Clone)]
pub struct Params {
    /// Configuration.
    pub cfg: TestConfig,
    /// Test id.
    pub test_id: u64,
    /// UDP tag.
    pub tag: u32,
    /// Where this end's new connections come from (tcp-crr clients).
    pub src: crate::sock::Source,
    /// Set buffer sizes past `net.core.{r,w}mem_max` where allowed
    /// ([`crate::sock::apply_opts`]); a server without a token does not.
    pub force_buffers: bool,
}
