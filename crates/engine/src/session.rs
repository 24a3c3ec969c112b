//! The one event loop both ends run while a test is under way: it takes the
//! CPU marks at the window's edges, merges the measuring workers' intervals,
//! tracks which workers ended, and hands control messages to the end's
//! [`Session`] hooks (the client's and the server's differ only there).

use crate::config::TestConfig;
use crate::cpu;
use crate::proto::{self, Msg};
use crate::report::{CpuReport, IntervalReport, UdpSnmp, WorkerReport};
use crate::side::{CpuWindow, SideRun};
use crate::worker::Event;
use host::Root;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// Drain time for receivers after the sender is done.
pub const DRAIN: Duration = Duration::from_millis(100);

/// How long before a scheduled start (without warm-up) the window's first
/// CPU mark is taken.
pub const MARK_LEAD: Duration = Duration::from_millis(10);

/// What differs between the ends during a test.
pub(crate) trait Session {
    /// Why the test failed.
    type Error;
    /// Once per turn, before waiting (the client says when its active
    /// workers are done).
    fn poll(&mut self, side: &SideRun) -> Result<(), Self::Error>;
    /// Whether the test may end once every worker and CPU mark is done.
    fn may_end(&self) -> bool {
        true
    }
    /// A completed interval of a direction this end measures.
    fn on_interval(&mut self, rep: IntervalReport) -> Result<(), Self::Error>;
    /// A control message; `Ok(Some(d))` stops the passive workers in `d`.
    fn on_ctrl(&mut self, m: Msg) -> Result<Option<Duration>, Self::Error>;
    /// The control connection closed or failed.
    fn on_ctrl_closed(&mut self, why: String) -> Result<(), Self::Error>;
    /// The test ran past its deadline.
    fn overran(&self) -> Self::Error;
}

/// What one end measured over the test, for its [`crate::report::SideReport`].
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Per worker.
    pub workers: Vec<WorkerReport>,
    /// CPU over the window.
    pub cpu: CpuReport,
    /// UDP snmp delta over the run.
    pub udp_snmp: Option<UdpSnmp>,
    /// Host samples over the window, for doctor (when it was asked for).
    pub doctor_samples: Option<Vec<host::sampler::Sample>>,
    /// Per-CPU use per interval.
    pub cpu_intervals: Vec<crate::report::IntervalCpu>,
    /// Effective buffers of the first data socket.
    pub buffers: Option<crate::report::SocketBuffers>,
}

/// Start `side`'s workers at `start` (now, or a scheduled instant each
/// worker sleeps until by itself) and run the test to its end: reads control
/// messages (frames of at most `max_frame`; a message for which `last` is
/// true is the peer's last) on a thread of their own, and gives up `grace`
/// after the workers' hard stop. Always joins the workers. `doctor`: also
/// keep host samples over the window for the doctor rules.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<S: Session>(
    mut side: SideRun,
    start: Instant,
    cfg: &TestConfig,
    root: &Root,
    doctor: bool,
    ctrl: &TcpStream,
    (max_frame, last): (usize, fn(&Msg) -> bool),
    grace: Duration,
    s: &mut S,
) -> (Outcome, Option<S::Error>) {
    let snmp0 = cpu::udp_snmp(root);
    let mut agg = side.aggregator(cfg);
    let t = side.start(start);
    let doctor_step = doctor.then(|| {
        crate::diagnosis::step(
            Duration::from_millis(cfg.duration_ms),
            Duration::from_millis(cfg.interval_ms),
        )
    });
    // A scheduled start without warm-up: the first CPU mark comes before
    // the workers wake, not with them.
    let lead = if start > Instant::now() && cfg.warmup_ms == 0 {
        MARK_LEAD
    } else {
        Duration::ZERO
    };
    let mut cpuw = CpuWindow::new(root.clone(), doctor_step).with_lead(lead);
    let _ = ctrl.set_read_timeout(None);
    match ctrl.try_clone() {
        Ok(reader) => {
            let tx = side.tx.clone();
            let _ = std::thread::Builder::new()
                .name("nt-ctrl".into())
                .spawn(move || {
                    let mut r = reader;
                    loop {
                        match proto::read_msg(&mut r, max_frame) {
                            Ok(m) => {
                                let end = last(&m);
                                if tx.send(Event::Ctrl(m)).is_err() || end {
                                    break;
                                }
                            }
                            Err(e) => {
                                let _ = tx.send(Event::CtrlClosed(e.to_string()));
                                break;
                            }
                        }
                    }
                });
        }
        Err(e) => {
            let _ = side
                .tx
                .send(Event::CtrlClosed(format!("control socket: {e}")));
        }
    }
    let deadline = t.hard_stop() + grace;
    let mut stop_at: Option<Instant> = None;
    let mut failure = None;
    loop {
        let now = Instant::now();
        // A stopped test (Ctrl-C on the client) closes its CPU window when
        // its workers have ended, not at the planned end.
        let stopped = side.abort.load(Ordering::Relaxed) && side.all_done();
        let next_cpu = if stopped { None } else { cpuw.poll(&t, now) };
        if let Err(e) = s.poll(&side) {
            failure = Some(e);
            break;
        }
        if stop_at.is_some_and(|at| now >= at) {
            side.stop_passive.store(true, Ordering::Relaxed);
        }
        if s.may_end() && side.all_done() && next_cpu.is_none() {
            break;
        }
        if now >= deadline {
            failure = Some(s.overran());
            break;
        }
        let mut tmo = Duration::from_millis(200);
        for x in [next_cpu, stop_at].into_iter().flatten() {
            tmo = tmo.min(x.saturating_duration_since(now));
        }
        let r = match side.rx.recv_timeout(tmo) {
            Ok(Event::Interval {
                dir,
                index,
                c,
                hist,
            }) => match agg.add(dir, index, c, hist) {
                Some(rep) => s.on_interval(rep),
                None => Ok(()),
            },
            Ok(Event::WorkerDone(i)) => {
                side.worker_done(i);
                Ok(())
            }
            Ok(Event::Ctrl(m)) => s.on_ctrl(m).map(|stop| {
                if let Some(d) = stop {
                    stop_at.get_or_insert(Instant::now() + d);
                }
            }),
            Ok(Event::CtrlClosed(why)) => s.on_ctrl_closed(why),
            Err(RecvTimeoutError::Timeout) => Ok(()),
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
    }
    if failure.is_some() {
        side.abort_all();
    }
    let (cpu, doctor_samples, cpu_intervals) = cpuw.report();
    let buffers = side.buffers;
    let workers = side.join();
    let snmp1 = cpu::udp_snmp(root);
    let udp_snmp = match (snmp0, snmp1) {
        (Some(a), Some(b)) => Some(b.since(&a).into()),
        _ => None,
    };
    (
        Outcome {
            workers,
            cpu,
            udp_snmp,
            doctor_samples,
            cpu_intervals,
            buffers,
        },
        failure,
    )
}
