//! What both ends share: spawning the workers of one side from the plan,
//! the start gate, the stop flags and CPU marks around the window.

use crate::agg::Aggregator;
use crate::config::{End, FlowDir, TestConfig};
use crate::cpu::{self, CpuMark};
use crate::plan::plan;
use crate::report::{CpuReport, Role, WorkerReport};
use crate::sys;
pub(crate) use crate::work::Sockets;
use crate::work::{self, Job};
use crate::worker::{Ctx, Event, Gate, Params, Timing};
use host::sampler::Sample;
use host::Root;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The workers of one side of one test.
#[derive(Debug)]
pub struct SideRun {
    handles: Vec<(Role, FlowDir, JoinHandle<WorkerReport>)>,
    gate: Arc<Gate>,
    /// Stops passive workers (receivers, responders).
    pub stop_passive: Arc<AtomicBool>,
    /// Stops everything (peer vanished).
    pub abort: Arc<AtomicBool>,
    /// Events from workers (and the control reader).
    pub rx: Receiver<Event>,
    /// Sender for the control reader.
    pub tx: Sender<Event>,
    params: Arc<Params>,
    next_cpu: usize,
    /// Effective buffers of the first data socket handed to
    /// [`SideRun::add_planned`].
    pub buffers: Option<crate::report::SocketBuffers>,
    done: Vec<bool>,
    starts: Arc<Starts>,
}

pub use crate::worker::Starts;

impl SideRun {
    /// An empty side.
    pub fn new(params: Params) -> SideRun {
        let (tx, rx) = channel();
        SideRun {
            handles: Vec::new(),
            gate: Gate::new(),
            stop_passive: Arc::new(AtomicBool::new(false)),
            abort: Arc::new(AtomicBool::new(false)),
            rx,
            tx,
            params: Arc::new(params),
            next_cpu: 0,
            done: Vec::new(),
            buffers: None,
            starts: Arc::new(Starts::default()),
        }
    }

    /// When the workers began (filled in as they start).
    pub fn starts(&self) -> Arc<Starts> {
        self.starts.clone()
    }

    /// The test's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Spawn the workers `plan` gives `end`, on `socks`.
    pub fn add_planned(&mut self, end: End, socks: &mut Sockets) -> std::io::Result<()> {
        if self.buffers.is_none() {
            self.buffers = socks.effective_buffers(self.params.force_buffers);
        }
        for w in plan(&self.params.cfg, end) {
            let job = work::job(&w, socks).ok_or_else(|| {
                std::io::Error::other(format!("no socket for {:?} worker {:?}", w.work, w.owns))
            })?;
            self.add(end, w.role, w.dir, job)?;
        }
        Ok(())
    }

    /// Spawn a worker (it waits for [`SideRun::start`]).
    fn add(&mut self, end: End, role: Role, dir: FlowDir, job: Job) -> std::io::Result<()> {
        let cpus = self.params.cfg.cpus_for(end);
        let cpu = (!cpus.is_empty()).then(|| cpus[self.next_cpu % cpus.len()]);
        self.next_cpu += 1;
        let stop = match role {
            Role::Recv | Role::Respond => self.stop_passive.clone(),
            Role::Send | Role::Request => self.abort.clone(),
        };
        let idx = self.handles.len();
        let spec = Spec {
            worker: idx as u32,
            role,
            dir,
            cpu,
            job,
        };
        let h = spawn(
            spec,
            self.params.clone(),
            self.gate.clone(),
            stop,
            self.tx.clone(),
            (idx, self.starts.clone()),
        )?;
        self.handles.push((role, dir, h));
        self.done.push(false);
        Ok(())
    }

    /// Measuring workers per direction (for the aggregator).
    pub fn aggregator(&self, cfg: &TestConfig) -> Aggregator {
        let mut v: Vec<(FlowDir, usize)> = Vec::new();
        for d in cfg.dirs() {
            let n = self.measuring_in(d);
            if n > 0 {
                v.push((d, n));
            }
        }
        Aggregator::new(cfg, v)
    }

    fn measuring_in(&self, d: FlowDir) -> usize {
        self.handles
            .iter()
            .filter(|(r, dir, _)| *dir == d && r.measures())
            .count()
    }

    /// Open the gate: workers start timing from `start`; one in the future
    /// is a scheduled start, each worker sleeps until it by itself.
    pub fn start(&self, start: Instant) -> Timing {
        self.gate.open(start);
        Timing::new(&self.params.cfg, start)
    }

    /// Mark worker `i` done; returns whether all active workers (senders,
    /// requesters) are done now.
    pub fn worker_done(&mut self, i: usize) -> bool {
        if let Some(d) = self.done.get_mut(i) {
            *d = true;
        }
        self.active_done()
    }

    /// Whether every active worker has ended.
    pub fn active_done(&self) -> bool {
        self.handles
            .iter()
            .zip(&self.done)
            .all(|((r, _, _), d)| *d || matches!(r, Role::Recv | Role::Respond))
    }

    /// Whether every worker has ended.
    pub fn all_done(&self) -> bool {
        self.done.iter().all(|d| *d)
    }

    /// Stop everything now.
    pub fn abort_all(&self) {
        self.abort.store(true, Ordering::Relaxed);
        self.stop_passive.store(true, Ordering::Relaxed);
        self.gate.abort();
    }

    /// Join all workers.
    pub fn join(self) -> Vec<WorkerReport> {
        self.gate.abort();
        self.handles
            .into_iter()
            .map(|(role, _, h)| {
                h.join().unwrap_or_else(|_| WorkerReport {
                    role: Some(role),
                    error: Some("worker thread panicked".into()),
                    ..WorkerReport::default()
                })
            })
            .collect()
    }
}

/// What one worker is.
#[derive(Debug)]
struct Spec {
    /// Index within the side.
    worker: u32,
    /// Role.
    role: Role,
    /// Direction.
    dir: FlowDir,
    /// CPU to pin to.
    cpu: Option<u32>,
    /// Sockets.
    job: Job,
}

/// Spawn a worker thread; it waits on `gate` (and then for the start
/// instant the gate names), notes its start, runs, and returns its report.
fn spawn(
    spec: Spec,
    p: Arc<Params>,
    gate: Arc<Gate>,
    stop: Arc<AtomicBool>,
    events: Sender<Event>,
    (index, starts): (usize, Arc<Starts>),
) -> std::io::Result<std::thread::JoinHandle<WorkerReport>> {
    std::thread::Builder::new()
        .name(format!("nt-{:?}-{}", spec.role, spec.worker).to_lowercase())
        .spawn(move || {
            let mut pin_err = None;
            if let Some(cpu) = spec.cpu {
                if let Err(e) = sys::pin_thread(cpu) {
                    pin_err = Some(format!("pinning to CPU {cpu}: {e}"));
                }
            }
            let done_tx = events.clone();
            let start = gate.wait();
            let t = Timing::new(&p.cfg, start.unwrap_or_else(Instant::now));
            let mut ctx = Ctx::new(
                (spec.worker, spec.role, spec.dir, spec.cpu),
                t,
                stop,
                events,
            );
            if let Some(at) = start {
                // The workload allocates its buffers first; its poll loop
                // then waits for the instant (Ctx::await_start), under
                // SCHED_FIFO only for the wait and the first send.
                ctx = ctx.scheduled_start(at, starts);
            }
            let r = if start.is_none() {
                Err(std::io::Error::other("test aborted before start"))
            } else {
                work::run(spec.job, &mut ctx, &p)
            };
            let err = pin_err.or(r.err().map(|e| e.to_string()));
            let rep = ctx.finish(err);
            let _ = done_tx.send(Event::WorkerDone(index));
            rep
        })
}

/// CPU marks at the window's edges, `/proc/stat` at every interval edge
/// (per-CPU use per interval), and (for `--doctor`) host samples at the
/// start, every step and the end of the window.
#[derive(Debug)]
pub struct CpuWindow {
    sampler: host::sampler::Sampler,
    root: Root,
    start: Option<CpuMark>,
    end: Option<CpuMark>,
    doctor: Option<DoctorSamples>,
    iv: IntervalStats,
    lead: Duration,
}

/// Most interval × CPU cells one side keeps (about 80 bytes each in JSON,
/// so the server's report stays far below the client's frame limit).
pub const MAX_INTERVAL_CPU_CELLS: usize = 200_000;

/// Per-CPU use per interval, from `/proc/stat` read at each interval edge.
#[derive(Debug, Default)]
struct IntervalStats {
    /// Next interval to close (its end edge is due next).
    next: u64,
    prev: Option<model::parse::stat::ProcStat>,
    out: Vec<crate::report::IntervalCpu>,
    cells: usize,
    capped: bool,
}

impl IntervalStats {
    /// The end edge of interval `i`.
    fn edge(t: &Timing, i: u64) -> Instant {
        u32::try_from(i.saturating_add(1))
            .ok()
            .and_then(|n| t.interval.checked_mul(n))
            .and_then(|d| t.win_start().checked_add(d))
            .map_or(t.win_end(), |e| e.min(t.win_end()))
    }
    /// Close the intervals whose end edge passed at `now` (one read; a late
    /// read closes only the latest of them, the others get no entry).
    fn poll(&mut self, root: &Root, t: &Timing, now: Instant) -> Option<Instant> {
        if self.next >= t.intervals || self.capped {
            return None;
        }
        if now < Self::edge(t, self.next) {
            return Some(Self::edge(t, self.next));
        }
        let mut last = self.next;
        while last + 1 < t.intervals && now >= Self::edge(t, last + 1) {
            last += 1;
        }
        let cur = cpu::read_stat(root);
        if let (Some(a), Some(b), true) = (&self.prev, &cur, last == self.next) {
            let cpus = cpu::per_cpu(a, b);
            self.cells = self.cells.saturating_add(cpus.len().max(1));
            if self.cells > MAX_INTERVAL_CPU_CELLS {
                self.capped = true;
            } else {
                self.out
                    .push(crate::report::IntervalCpu { index: last, cpus });
            }
        }
        self.prev = cur;
        self.next = last + 1;
        (self.next < t.intervals && !self.capped).then(|| Self::edge(t, self.next))
    }
}

/// The samples doctor rates are computed from.
#[derive(Debug)]
struct DoctorSamples {
    step: Duration,
    next: Option<Instant>,
    samples: Vec<Sample>,
}

impl CpuWindow {
    /// Not yet started; `doctor_step`: also keep a sample every step.
    pub fn new(root: Root, doctor_step: Option<Duration>) -> CpuWindow {
        CpuWindow {
            sampler: host::sampler::Sampler::new(root.clone()),
            root,
            iv: IntervalStats::default(),
            start: None,
            end: None,
            lead: Duration::ZERO,
            doctor: doctor_step.map(|step| DoctorSamples {
                step,
                next: None,
                samples: Vec::new(),
            }),
        }
    }
    /// Take the window's first mark `lead` before its start: a scheduled
    /// start with no warm-up, where every worker of the host wakes at that
    /// instant, must not find the host's sessions reading `/proc` then too.
    /// (The report's seconds run from the mark: `lead` of idle is counted.)
    pub fn with_lead(mut self, lead: Duration) -> CpuWindow {
        self.lead = lead;
        self
    }
    /// A mark now, kept for doctor too.
    fn mark(&mut self) -> CpuMark {
        let m = cpu::mark(&mut self.sampler);
        if let (Some(d), Some(s)) = (&mut self.doctor, m.sample()) {
            d.samples.push(s.clone());
        }
        m
    }
    /// Take the marks that are due at `now`; returns the next due instant.
    pub fn poll(&mut self, t: &Timing, now: Instant) -> Option<Instant> {
        let early = self.lead;
        if self.start.is_none() {
            if now + early >= t.win_start() {
                self.iv.prev = cpu::read_stat(&self.root);
                self.start = Some(self.mark());
                if let Some(d) = &mut self.doctor {
                    d.next = Some(t.win_start() + d.step);
                }
            } else {
                return Some(t.win_start().checked_sub(early).unwrap_or(t.win_start()));
            }
        }
        let iv_due = self.iv.poll(&self.root, t, now);
        if self.end.is_none() {
            if now >= t.win_end() {
                self.end = Some(self.mark());
            } else {
                let mut due = iv_due.map_or(t.win_end(), |d| d.min(t.win_end()));
                if let Some(d) = &mut self.doctor {
                    if let Some(next) = d.next.filter(|n| *n < t.win_end()) {
                        if now >= next {
                            if let Ok(s) = self.sampler.sample() {
                                d.samples.push(s);
                            }
                            let mut n = next;
                            while n <= now {
                                n += d.step;
                            }
                            d.next = Some(n);
                        }
                    }
                    if let Some(n) = d.next {
                        due = due.min(n);
                    }
                }
                return Some(due);
            }
        }
        None
    }
    /// The report (marks missing ones now), doctor's samples when it keeps
    /// them, and the per-CPU use per interval.
    pub fn report(
        mut self,
    ) -> (
        CpuReport,
        Option<Vec<Sample>>,
        Vec<crate::report::IntervalCpu>,
    ) {
        let a = match self.start.take() {
            Some(a) => a,
            None => self.mark(),
        };
        let b = match self.end.take() {
            Some(b) => b,
            None => self.mark(),
        };
        let mut r = cpu::report(&a, &b);
        if self.iv.capped {
            let n = self.iv.out.len();
            let note = format!("per-CPU use kept for the first {n} intervals only");
            r.note = Some(match r.note {
                Some(x) => format!("{x}; {note}"),
                None => note,
            });
        }
        (r, self.doctor.map(|d| d.samples), self.iv.out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::sock::reuseport_udp_from;
    use std::net::{SocketAddr, UdpSocket};
    use std::time::Duration;

    fn delivered(rx: &UdpSocket, from: SocketAddr) -> bool {
        let tx = UdpSocket::bind(from).unwrap();
        tx.send_to(b"0123456789abcdef", rx.local_addr().unwrap())
            .unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 64];
        rx.recv(&mut b).is_ok()
    }

    fn stat(root: &std::path::Path, cpu0: [u64; 7], cpu1: [u64; 7]) {
        let line = |n: &str, v: [u64; 7]| {
            format!(
                "{n} {} 0 {} {} {} {} {} 0 0 0\n",
                v[0], v[1], v[2], v[3], v[4], v[5]
            )
        };
        let sum: Vec<u64> = (0..7).map(|i| cpu0[i] + cpu1[i]).collect();
        let text = line("cpu", sum.try_into().unwrap()) + &line("cpu0", cpu0) + &line("cpu1", cpu1);
        std::fs::write(root.join("proc/stat"), text).unwrap();
    }

    #[test]
    fn per_interval_cpu_is_read_at_each_edge_and_a_late_read_skips() {
        use super::{IntervalStats, Timing};
        use crate::config::TestConfig;
        use std::time::Instant;
        let dir = std::env::temp_dir().join(format!("nt-ivcpu-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        let root = host::Root::new(&dir);
        let cfg = TestConfig {
            warmup_ms: 0,
            duration_ms: 3000,
            interval_ms: 1000,
            ..TestConfig::default()
        };
        let t0 = Instant::now();
        let t = Timing::new(&cfg, t0);
        let s = Duration::from_secs;
        // usr sys idle iowait irq softirq
        stat(&dir, [0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0]);
        let mut iv = IntervalStats {
            prev: crate::cpu::read_stat(&root),
            ..IntervalStats::default()
        };
        assert_eq!(iv.poll(&root, &t, t0), Some(t0 + s(1)));
        // Interval 0: cpu0 a quarter softirq, cpu1 idle.
        stat(&dir, [25, 0, 50, 0, 0, 25, 0], [0, 0, 100, 0, 0, 0, 0]);
        assert_eq!(iv.poll(&root, &t, t0 + s(1)), Some(t0 + s(2)));
        // Read late, past both remaining edges: one read cannot tell the two
        // intervals apart, so neither gets an entry.
        stat(&dir, [25, 0, 250, 0, 0, 25, 0], [0, 0, 300, 0, 0, 0, 0]);
        assert_eq!(iv.poll(&root, &t, t0 + s(3)), None);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(iv.out.len(), 1, "{:?}", iv.out);
        let c = &iv.out[0];
        assert_eq!(c.index, 0);
        assert_eq!(
            (c.cpus[0].cpu, c.cpus[0].softirq, c.cpus[0].idle),
            (0, 25.0, 50.0)
        );
        assert_eq!((c.cpus[1].cpu, c.cpus[1].idle), (1, 100.0));
    }

    #[test]
    fn udp_sockets_take_only_the_peers_datagrams() {
        let rx = reuseport_udp_from("127.0.0.1:0".parse().unwrap(), "127.0.0.1".parse().unwrap())
            .unwrap();
        assert!(!delivered(&rx, "127.0.0.2:0".parse().unwrap()));
        assert!(delivered(&rx, "127.0.0.1:0".parse().unwrap()));
        // An IPv4-mapped peer is matched as IPv4.
        let rx = reuseport_udp_from(
            "127.0.0.1:0".parse().unwrap(),
            "::ffff:127.0.0.2".parse().unwrap(),
        )
        .unwrap();
        assert!(delivered(&rx, "127.0.0.2:0".parse().unwrap()));
        assert!(!delivered(&rx, "127.0.0.1:0".parse().unwrap()));
    }

    #[test]
    fn ipv6_filter_compares_all_four_words() {
        let Ok(probe) = UdpSocket::bind("[::1]:0") else {
            eprintln!("skipped: no IPv6 loopback");
            return;
        };
        drop(probe);
        let any: SocketAddr = "[::1]:0".parse().unwrap();
        let rx = reuseport_udp_from(any, "::1".parse().unwrap()).unwrap();
        assert!(delivered(&rx, any));
        // One address differing in each 32-bit word in turn.
        for other in ["1::1", "0:0:1::1", "::1:0:0:1", "::2"] {
            let rx = reuseport_udp_from(any, other.parse().unwrap()).unwrap();
            assert!(!delivered(&rx, any), "{other}");
        }
    }
}
