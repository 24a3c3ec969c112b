//! `nettune bench`: connect to a server, run one test, build the result.

use crate::auth;
use crate::config::{human_bytes, End, Family, FlowDir, Limits, TestConfig, Transport};
use crate::error::EngineError;
use crate::probe::{IcmpProbe, ProbeKind, ProbeReport, ProbeSpec};
use crate::proto::{
    self, DeadlineReader, Msg, ProtoError, UdpHeader, MAX_SERVER_FRAME, MAX_SERVER_HANDSHAKE_FRAME,
    PROTO_VERSION,
};
pub use crate::report::{service_demand, summarize};
use crate::report::{BenchResult, IntervalReport, SideReport};
use crate::session::{self, Session};
use crate::side::{SideRun, Sockets};
use crate::sock::{apply_opts, Source};
use crate::worker::Params;
use host::Root;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod connect;
mod with_probe;
use connect::*;
pub use with_probe::run_with_probe;

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientOpts {
    /// Host name or address.
    pub host: String,
    /// Control port.
    pub port: u16,
    /// Pre-shared token.
    pub token: Option<Vec<u8>>,
    /// Root for facts and counters.
    pub root: Root,
    /// Control connect timeout.
    pub connect_timeout: Duration,
    /// Most buffer memory the test may take on this host, bytes.
    pub max_memory: u64,
    /// Only this address family (`-4`/`-6`); `None`: the first address the
    /// name resolves to (of `source.addr`'s family when that is set).
    pub family: Option<Family>,
    /// Source address and device of every socket (`--bind`, `--bind-dev`).
    pub source: Source,
    /// First client port of stream flows (`--cport`): flow i uses PORT + i.
    pub cport: Option<u16>,
    /// Set (by a SIGINT handler) to stop the test early: the client asks
    /// the server to stop too and returns what was measured so far.
    pub interrupt: Option<Arc<AtomicBool>>,
    /// Run the doctor rules on both ends over the window (`--doctor`):
    /// this end's through the hook, the server's through its own.
    pub doctor: Option<crate::diagnosis::DoctorHook>,
    /// Start the data flows at this CLOCK_REALTIME instant, ns since the
    /// epoch (`--start-at`, `fleet bench`): the flows open before it and
    /// both ends' workers sleep until it by themselves (an older server:
    /// the client waits for it, then `connected` and `go`). A past instant
    /// starts at once.
    pub start_at: Option<u64>,
}

impl ClientOpts {
    /// Options for `host:port` with the defaults of `nettune bench`.
    pub fn new(host: impl Into<String>, port: u16) -> ClientOpts {
        ClientOpts {
            host: host.into(),
            port,
            token: None,
            root: Root::new("/"),
            connect_timeout: Duration::from_secs(3),
            max_memory: Limits::default().max_test_memory,
            family: None,
            source: Source::default(),
            cport: None,
            interrupt: None,
            doctor: None,
            start_at: None,
        }
    }
}

/// Longest wait for `--start-at`.
pub const MAX_START_WAIT: Duration = Duration::from_secs(3600);
/// How long before `--start-at` the flows open (within the server's
/// 10 s for the client's `connected`).
const OPEN_BEFORE_START: Duration = Duration::from_secs(3);

/// Wait on CLOCK_REALTIME until `at_ns` less `early` (ns since the epoch),
/// in steps short enough to notice a stop flag or a clock step (sleeping,
/// not spinning: on a busy host spinning clients delay the server's `go`).
/// An instant
/// more than [`MAX_START_WAIT`] away is refused.
fn wait_until(at_ns: u64, early: Duration, stop: &[Arc<AtomicBool>]) -> Result<(), EngineError> {
    let target = at_ns.saturating_sub(u64::try_from(early.as_nanos()).unwrap_or(u64::MAX));
    let max = u64::try_from(MAX_START_WAIT.as_nanos()).unwrap_or(u64::MAX);
    if target.saturating_sub(crate::report::realtime_ns()) > max {
        return Err(EngineError::Run(format!(
            "--start-at {at_ns} is more than {} s away",
            MAX_START_WAIT.as_secs()
        )));
    }
    loop {
        let left = target.saturating_sub(crate::report::realtime_ns());
        if left == 0 {
            return Ok(());
        }
        if stop.iter().any(|f| f.load(Ordering::Relaxed)) {
            return Err(EngineError::Interrupted("before the test started"));
        }
        std::thread::sleep(Duration::from_nanos(left.min(20_000_000)));
    }
}

/// The whole handshake (preamble, hello, token proofs) must end within this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn perr(addr: &SocketAddr) -> impl Fn(ProtoError) -> EngineError + '_ {
    move |source| EngineError::Proto {
        addr: addr.to_string(),
        source,
    }
}

fn io_run(what: &str) -> impl Fn(std::io::Error) -> EngineError + '_ {
    move |e| EngineError::Run(format!("{what}: {e}"))
}

fn server_error(m: Msg) -> EngineError {
    match m {
        Msg::Error { code, message } => EngineError::Server {
            code: model::text::printable_capped(&code, 32),
            message: model::text::printable_capped(&message, 500),
        },
        other => EngineError::Run(format!(
            "unexpected {} message from the server",
            other.name()
        )),
    }
}

/// Capabilities a configuration needs from the server.
pub fn needed_caps(cfg: &TestConfig) -> Vec<&'static str> {
    let mut v = vec![cfg.test.name()];
    match cfg.direction {
        crate::config::Direction::Forward => {}
        crate::config::Direction::Reverse => v.push("reverse"),
        crate::config::Direction::Bidir => v.push("bidir"),
    }
    for (on, cap) in [
        (cfg.udp_gso, "udp-gso"),
        (cfg.udp_gro, "udp-gro"),
        (cfg.zerocopy, "zerocopy"),
        (cfg.busy_poll_us > 0, "busy-poll"),
        (cfg.congestion.is_some(), "congestion"),
        (cfg.tos.is_some(), "tos"),
        (cfg.mss.is_some(), "mss"),
    ] {
        if on {
            v.push(cap);
        }
    }
    v
}

/// The client's hooks in the shared event loop.
struct ClientSession<'a> {
    cfg: &'a TestConfig,
    ctrl: TcpStream,
    on_interval: &'a mut dyn FnMut(&IntervalReport),
    intervals: Vec<IntervalReport>,
    /// Forward stream intervals (the server measures those) already received.
    from_server: std::collections::HashSet<(Option<FlowDir>, u64)>,
    sent_done: bool,
    server_report: Option<SideReport>,
    /// Raised by Ctrl-C (or, for the probe's test, when the load's ends).
    interrupt: Vec<Arc<AtomicBool>>,
    /// The server understands `stop`.
    can_stop: bool,
    /// When the user interrupted the test.
    interrupted_at: Option<Instant>,
    /// When the measured window starts.
    win_start: Instant,
    /// Seconds into the window when the user interrupted the test.
    cut_at: Option<f64>,
}

impl Session for ClientSession<'_> {
    type Error = EngineError;
    fn poll(&mut self, side: &SideRun) -> Result<(), EngineError> {
        if self.interrupted_at.is_none() && self.interrupt.iter().any(|f| f.load(Ordering::Relaxed))
        {
            let now = Instant::now();
            self.interrupted_at = Some(now);
            self.cut_at = Some(now.saturating_duration_since(self.win_start).as_secs_f64());
            side.abort_all();
            if !self.can_stop {
                return Err(EngineError::Interrupted(
                    "(the server is an older nettune that cannot stop a test early)",
                ));
            }
            proto::write_msg(&mut self.ctrl, &Msg::Stop)
                .map_err(|e| EngineError::Run(format!("control connection lost: {e}")))?;
        }
        if !self.sent_done && side.active_done() {
            self.sent_done = true;
            proto::write_msg(&mut self.ctrl, &Msg::ClientDone)
                .map_err(|e| EngineError::Run(format!("control connection lost: {e}")))?;
        }
        Ok(())
    }
    fn may_end(&self) -> bool {
        self.server_report.is_some()
    }
    fn on_interval(&mut self, rep: IntervalReport) -> Result<(), EngineError> {
        // After Ctrl-C the workers close their remaining intervals empty:
        // those did not happen.
        if self.cut_at.is_some_and(|at| rep.start_s >= at) {
            return Ok(());
        }
        (self.on_interval)(&rep);
        self.intervals.push(rep);
        Ok(())
    }
    fn on_ctrl(&mut self, m: Msg) -> Result<Option<Duration>, EngineError> {
        match m {
            Msg::Interval { mut report } => {
                // Per-CPU use comes from the server's final report, checked;
                // an interval message carries none.
                report.cpu = None;
                // The server sends each interval of the directions it
                // measures (forward streams) once, and nothing else.
                let ok = report.index < self.cfg.intervals()
                    && report.dir.is_some_and(|d| {
                        self.cfg.dirs().contains(&d)
                            && crate::config::measured_by(self.cfg.test, d) == End::Server
                    })
                    && self.from_server.insert((report.dir, report.index));
                if !ok {
                    return Err(EngineError::Run(format!(
                        "the server sent an interval ({:?} #{}) this test does not have",
                        report.dir, report.index
                    )));
                }
                self.on_interval(report)?;
                Ok(None)
            }
            Msg::Report { report } => {
                self.server_report = Some(*report);
                Ok(Some(crate::session::DRAIN))
            }
            other => Err(server_error(other)),
        }
    }
    fn on_ctrl_closed(&mut self, why: String) -> Result<(), EngineError> {
        if self.server_report.is_none() {
            return Err(EngineError::Run(format!(
                "server closed the control connection mid-test ({why})"
            )));
        }
        Ok(())
    }
    fn overran(&self) -> EngineError {
        EngineError::Run("the test overran its deadline".into())
    }
}

/// Refuse what cannot run here before calling the server.
fn preflight(o: &ClientOpts, cfg: &TestConfig) -> Result<(), EngineError> {
    cfg.validate()?;
    if o.token.as_ref().is_some_and(|t| t.trim_ascii().is_empty()) {
        return Err(EngineError::BlankToken);
    }
    if let Some(p) = o.cport {
        if !cfg.test.is_stream() {
            return Err(EngineError::Run(format!(
                "--cport applies to stream tests (tcp-stream, udp-stream), not {}",
                cfg.test
            )));
        }
        if p == 0 {
            return Err(EngineError::Run(
                "--cport must be a port from 1 to 65535".into(),
            ));
        }
        flow_port(cfg, o.cport, cfg.total_flows().saturating_sub(1))?;
    }
    if let Some(c) = &cfg.congestion {
        if let Some(why) = crate::sock::congestion_refused(c, &o.root) {
            return Err(EngineError::Run(format!("--congestion: {why}")));
        }
    }
    let need = crate::work::buffer_bytes(cfg, End::Client);
    if need > o.max_memory {
        return Err(EngineError::Memory {
            need: human_bytes(need),
            limit: human_bytes(o.max_memory),
            hint: cfg.memory_hint(),
        });
    }
    Ok(())
}

/// Check the server's capabilities and send the setup; returns the test id
/// and data port of the server's answer.
fn setup(
    ctrl: &mut TcpStream,
    addr: &SocketAddr,
    caps: &[String],
    cfg: &TestConfig,
    doctor: bool,
) -> Result<(u64, u16), EngineError> {
    if let Some(missing) = needed_caps(cfg)
        .into_iter()
        .find(|c| !caps.iter().any(|x| x == c))
    {
        return Err(EngineError::Server {
            code: "caps".into(),
            message: format!("{addr} does not support {missing} (an older nettune?)"),
        });
    }
    proto::write_msg(
        ctrl,
        &Msg::Setup {
            config: cfg.clone(),
            doctor,
        },
    )
    .map_err(|e| perr(addr)(e.into()))?;
    let answer = proto::read_msg(
        &mut DeadlineReader::new(ctrl, Instant::now() + HANDSHAKE_TIMEOUT),
        MAX_SERVER_HANDSHAKE_FRAME,
    )
    .map_err(|e| perr(addr)(e.timed_out("the server's answer to setup", HANDSHAKE_TIMEOUT)))?;
    match answer {
        Msg::Ready { test_id, port } => Ok((test_id, port)),
        other => Err(server_error(other)),
    }
}

/// The server's doctor report for `--doctor`: read from what it sent, or
/// `None` with a note saying why there is none (`offered`: whether it
/// listed the `doctor` capability, so was asked).
fn server_findings(
    addr: &SocketAddr,
    offered: bool,
    sent: Option<crate::diagnosis::PeerReport>,
    notes: &mut Vec<String>,
) -> Option<model::findings::Report> {
    match sent {
        Some(v) => crate::diagnosis::from_peer(v, notes),
        None if offered => {
            notes.push("the server sent no doctor report: its findings are missing".into());
            None
        }
        None => {
            notes.push(format!(
                "{addr} does not run doctor (an older nettune?): only this host's findings are shown"
            ));
            None
        }
    }
}

/// A test whose flows are open and whose workers wait for `go`.
struct Prepared {
    ctrl: TcpStream,
    addr: SocketAddr,
    caps: Vec<String>,
    server_doctor: bool,
    test_id: u64,
    tag: u32,
    side: SideRun,
    reg: Vec<(u32, UdpSocket)>,
}

impl Prepared {
    /// Give up before `go`: stop the waiting workers and close.
    fn abandon(self) {
        self.side.abort_all();
        let _ = self.side.join();
        let _ = self.ctrl.shutdown(std::net::Shutdown::Both);
    }
}

/// Check, connect, authenticate, set up, and open the data flows with
/// their workers waiting for `go`.
fn prepare(o: &ClientOpts, cfg: &TestConfig) -> Result<Prepared, EngineError> {
    preflight(o, cfg)?;
    if let Some(at) = o.start_at {
        let stop: Vec<Arc<AtomicBool>> = o.interrupt.iter().cloned().collect();
        wait_until(at, OPEN_BEFORE_START, &stop)?;
    }
    let (mut ctrl, addr, caps) = handshake(o, cfg)?;
    // An older server does not know doctor: the test runs, with a note.
    let server_doctor = o.doctor.is_some() && caps.iter().any(|c| c == crate::diagnosis::CAP);
    let (test_id, port) = setup(&mut ctrl, &addr, &caps, cfg, server_doctor)?;
    let tag = proto::udp_tag(test_id);
    let mut side = SideRun::new(Params {
        cfg: cfg.clone(),
        test_id,
        tag,
        src: o.source.clone(),
        force_buffers: cfg.force_buffers,
    });
    let local = ctrl.local_addr().ok().map(|a| a.ip());
    let opened = connect_flows(o, cfg, SocketAddr::new(addr.ip(), port), test_id, local).and_then(
        |(mut socks, reg)| {
            side.add_planned(End::Client, &mut socks)
                .map_err(io_run("starting a worker"))?;
            Ok(reg)
        },
    );
    match opened {
        Ok(reg) => Ok(Prepared {
            ctrl,
            addr,
            caps,
            server_doctor,
            test_id,
            tag,
            side,
            reg,
        }),
        Err(e) => {
            side.abort_all();
            let _ = side.join();
            Err(e)
        }
    }
}

/// What happens around `go` (the latency probe starts there).
#[derive(Default)]
struct Hooks<'a> {
    /// Just before `connected` is sent.
    before_go: Option<Box<dyn FnOnce() + 'a>>,
    /// Right after `go`, with its instant.
    after_go: Option<Box<dyn FnOnce(Instant) + 'a>>,
    /// Another flag that stops the test like Ctrl-C (the probe's test
    /// stops with the load).
    stop: Option<Arc<AtomicBool>>,
}

/// Run a prepared test from `go` to the result.
fn execute(
    o: &ClientOpts,
    cfg: &TestConfig,
    p: Prepared,
    on_interval: &mut dyn FnMut(&IntervalReport),
    hooks: Hooks<'_>,
) -> Result<BenchResult, EngineError> {
    let Prepared {
        mut ctrl,
        addr,
        caps,
        server_doctor,
        test_id,
        tag,
        side,
        reg,
    } = p;
    if let Some(f) = hooks.before_go {
        f();
    }
    let stop_flags: Vec<Arc<AtomicBool>> = [o.interrupt.clone(), hooks.stop]
        .into_iter()
        .flatten()
        .collect();
    let go = wait_for_go(o, &caps, &mut ctrl, &addr, (&reg, tag), &stop_flags);
    let go = match go {
        Ok(go) => go,
        Err(e) => {
            side.abort_all();
            let _ = side.join();
            return Err(e);
        }
    };
    drop(reg);
    let starts = side.starts();
    if let Some(f) = hooks.after_go {
        f(go);
    }
    let root = o.root.clone();
    // Drops by reason from `go` to the end of the run (`--doctor`).
    let drops_run = o.doctor.as_ref().and_then(|h| h.start(&root));
    // The data flows use the control connection's addresses: its ends name
    // the interface the test used (docs/engine.md, "Units").
    let conn = ctrl.local_addr().ok().map(|l| (l.ip(), addr.ip()));
    let mut s = ClientSession {
        cfg,
        ctrl: ctrl.try_clone().map_err(io_run("control socket"))?,
        on_interval,
        intervals: Vec::new(),
        from_server: std::collections::HashSet::new(),
        sent_done: false,
        server_report: None,
        interrupt: stop_flags,
        can_stop: caps.iter().any(|c| c == "stop"),
        interrupted_at: None,
        win_start: go + Duration::from_millis(cfg.warmup_ms),
        cut_at: None,
    };
    let start_time = std::time::SystemTime::now() + go.saturating_duration_since(Instant::now());
    let last: fn(&Msg) -> bool = |m| matches!(m, Msg::Report { .. } | Msg::Error { .. });
    let (out, failure) = session::run(
        side,
        go,
        cfg,
        &root,
        o.doctor.is_some(),
        &ctrl,
        (MAX_SERVER_FRAME, last),
        Duration::from_secs(20),
        &mut s,
    );
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    if let Some(f) = failure {
        return Err(f);
    }
    let Some(mut server) = s.server_report else {
        return Err(EngineError::Run("no report from the server".into()));
    };
    let mut doctor_notes = Vec::new();
    let doctor = o.doctor.as_ref().map(|hook| {
        let peer = server.doctor.take();
        let (client, drops) = match out.doctor_samples {
            Some(samples) => {
                let (report, drops) = hook.diagnose(&root, samples, drops_run);
                let drops = model::drops::run::RunDrops::of(crate::diagnosis::DROPS_HOST, &drops);
                (Some(report), Some(drops))
            }
            None => (None, None),
        };
        crate::diagnosis::BenchDoctor {
            client,
            server: server_findings(&addr, server_doctor, peer, &mut doctor_notes),
            drops,
        }
    });
    // A server that was not asked must not slip a report in.
    server.doctor = None;
    let server_cpu = std::mem::take(&mut server.cpu_intervals);
    // The server's notes (such as a clamped buffer), escaped and bounded.
    let server_notes: Vec<String> = std::mem::take(&mut server.notes)
        .iter()
        .take(crate::report::MAX_SERVER_NOTES)
        .map(|n| model::text::printable_capped(n, 300))
        .collect();
    let client = SideReport {
        facts: host::snapshot::read_bench_facts_on(&root, conn),
        workers: out.workers,
        cpu: out.cpu,
        udp_snmp: out.udp_snmp,
        rejected_connections: 0,
        doctor: None,
        cpu_intervals: Vec::new(),
        notes: Vec::new(),
        buffers: out.buffers,
    };
    let mut intervals = s.intervals;
    intervals.sort_by(|a, b| {
        (a.index, a.dir.map(|d| d == FlowDir::Reverse))
            .cmp(&(b.index, b.dir.map(|d| d == FlowDir::Reverse)))
    });
    let loopback = addr.ip().is_loopback();
    let mut res = summarize(
        cfg,
        format!("{}:{}", o.host, o.port),
        test_id,
        client,
        server,
        intervals,
        loopback,
    );
    res.start_time = model::time::rfc3339_utc(start_time);
    // The first flow's actual start (its worker's clock as it began).
    res.started_at_unix_ns = starts.span().map(|(first, _)| first);
    res.family = Some(Family::of(addr.ip()));
    if let Some(at) = s.cut_at {
        crate::report::cut_short(&mut res, at);
    }
    crate::report::attach_interval_cpu(&mut res, out.cpu_intervals, server_cpu);
    res.notes.extend(server_notes);
    res.notes.extend(doctor_notes);
    res.doctor = doctor;
    Ok(res)
}

/// Wait for `go` and say when it was. A scheduled start: with a server that
/// takes one, everything is said before the instant and both ends' workers
/// sleep until it by themselves; with an older server, wait, then
/// `connected` and `go`.
fn wait_for_go(
    o: &ClientOpts,
    caps: &[String],
    ctrl: &mut TcpStream,
    addr: &SocketAddr,
    (reg, tag): (&[(u32, UdpSocket)], u32),
    stop_flags: &[Arc<AtomicBool>],
) -> Result<Instant, EngineError> {
    let any_stop = AnyFlag(stop_flags.to_vec());
    let scheduled = o
        .start_at
        .filter(|_| caps.iter().any(|c| c == proto::CAP_START_AT));
    match (scheduled, o.start_at) {
        (Some(at), _) => await_scheduled_go(ctrl, addr, (reg, tag), Some(&any_stop), at),
        (None, at) => at
            .map_or(Ok(()), |at| wait_until(at, Duration::ZERO, stop_flags))
            .and_then(|()| await_go(ctrl, addr, (reg, tag), Some(&any_stop), &Msg::Connected))
            .map(|()| Instant::now()),
    }
}

/// Several stop flags read as one.
struct AnyFlag(Vec<Arc<AtomicBool>>);

impl AnyFlag {
    fn raised(&self) -> bool {
        self.0.iter().any(|f| f.load(Ordering::Relaxed))
    }
}

/// Run one test against a server. `on_interval` sees every interval of both
/// sides as it completes.
pub fn run(
    o: &ClientOpts,
    cfg: &TestConfig,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<BenchResult, EngineError> {
    let p = prepare(o, cfg)?;
    execute(o, cfg, p, on_interval, Hooks::default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_start_wait_ends_at_its_instant_or_a_stop() {
        let now = crate::report::realtime_ns();
        let at = now + 30_000_000;
        wait_until(at, Duration::ZERO, &[]).unwrap();
        assert!(crate::report::realtime_ns() >= at);
        // `early` ends it before the instant; a past instant at once.
        let t = Instant::now();
        wait_until(
            crate::report::realtime_ns() + 2_000_000_000,
            Duration::from_secs(2),
            &[],
        )
        .unwrap();
        wait_until(1, Duration::ZERO, &[]).unwrap();
        assert!(t.elapsed() < Duration::from_secs(1));
        let stop = Arc::new(AtomicBool::new(true));
        let e = wait_until(
            crate::report::realtime_ns() + 1_000_000_000,
            Duration::ZERO,
            &[stop],
        )
        .unwrap_err();
        assert!(matches!(e, EngineError::Interrupted(_)), "{e}");
        let far = crate::report::realtime_ns() + 2 * 3_600_000_000_000;
        let e = wait_until(far, Duration::ZERO, &[]).unwrap_err();
        assert!(e.to_string().contains("3600 s away"), "{e}");
    }

    #[test]
    fn refusals_before_any_connection_are_typed() {
        // Port 9 on a documentation address: never reached, both are
        // refused before connecting.
        let o = ClientOpts::new("192.0.2.1", 9);
        let bad = TestConfig {
            size: 0,
            ..TestConfig::default()
        };
        let e = run(&o, &bad, &mut |_| {}).unwrap_err();
        assert!(matches!(e, EngineError::Config(_)), "{e}");
        let long = TestConfig {
            duration_ms: 2_000_000,
            ..TestConfig::default()
        };
        let spec: crate::ProbeSpec = "rr:1".parse().unwrap();
        let e = run_with_probe(&o, &long, Some(&spec), &mut |_| {}).unwrap_err();
        assert!(
            matches!(
                e,
                EngineError::Probe(crate::ProbeCheckError::TooMany { need: 2, .. })
            ),
            "{e}"
        );
    }

    #[test]
    fn a_server_without_doctor_is_a_note_not_a_failure() {
        let addr: SocketAddr = "192.0.2.1:5290".parse().unwrap();
        let mut notes = Vec::new();
        assert!(server_findings(&addr, false, None, &mut notes).is_none());
        assert_eq!(
            notes,
            ["192.0.2.1:5290 does not run doctor (an older nettune?): only this host's findings are shown"]
        );
        let mut notes = Vec::new();
        assert!(server_findings(&addr, true, None, &mut notes).is_none());
        assert!(notes[0].contains("sent no doctor report"), "{notes:?}");
        let mut notes = Vec::new();
        let v = serde_json::json!({"schema_version": 1, "findings": [], "skipped": []});
        let r = server_findings(
            &addr,
            true,
            Some(crate::diagnosis::PeerReport::from_json(&v.to_string())),
            &mut notes,
        )
        .unwrap();
        assert!(r.findings.is_empty() && notes.is_empty());
    }
}
