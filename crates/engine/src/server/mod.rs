//! `nettune serve`: accepts control connections, one thread per session,
//! each session running one test with its own data port and workers.
//!
//! A connection starts in a bounded pre-authentication pool (counted per
//! source prefix, IPv4 /24 and IPv6 /64) and has [`HANDSHAKE_TIMEOUT`] in
//! total for its preamble, token proof and setup. Only then does it take one
//! of the `max_sessions` session slots, so clients that never authenticate
//! cannot crowd out those that do. When the pool (or a prefix's share) is
//! full, the oldest unfinished handshake there is closed to make room: a
//! client that completes its handshake promptly always gets through.

use crate::auth;
use crate::config::{End, Limits, TestConfig, Transport};
use crate::error::EngineError;
use crate::proto::{
    self, DeadlineReader, Msg, ProtoError, UdpHeader, CAPS, MAX_CLIENT_FRAME, PROTO_VERSION,
};
use crate::report::{IntervalReport, SideReport};
use crate::session::{self, Session};
use crate::side::{SideRun, Sockets};
use crate::sock::{apply_opts, reuseport_listener, reuseport_udp_from};
use crate::worker::Params;
use host::Root;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

mod admission;
mod data;
mod errors;
mod preauth;
use data::*;
use errors::{Abort, FlowError, SessionError};
pub use preauth::preauth_prefix;
use preauth::*;

/// How long a client has for the whole handshake: preamble, token proof and
/// setup together (a total deadline, not a per-read timeout).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server waits for all data flows to connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one data connection has, in total, for its 16-byte preamble.
pub const DATA_PREAMBLE_TIMEOUT: Duration = Duration::from_secs(2);
pub use crate::session::DRAIN;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Control address.
    pub listen: SocketAddr,
    /// With `listen` on `[::]`: also take IPv4 clients (IPV6_V6ONLY off),
    /// and fall back to `0.0.0.0` when this host has no IPv6. Off, an IPv6
    /// address listens for IPv6 only.
    pub dual_stack: bool,
    /// Pre-shared token; when set, clients must prove it (and the server
    /// proves it back).
    pub token: Option<Vec<u8>>,
    /// Per-test, per-client and pre-authentication limits.
    pub limits: Limits,
    /// Most concurrent (authenticated) control sessions.
    pub max_sessions: usize,
    /// Root for facts and counters.
    pub root: Root,
    /// Log sessions to stderr.
    pub log: bool,
    /// The doctor rules a client may ask for (`bench --doctor`); without a
    /// hook the server does not offer the `doctor` capability.
    pub doctor: Option<crate::diagnosis::DoctorHook>,
}

#[derive(Debug)]
struct Shared {
    cfg: ServerConfig,
    per_client: Mutex<HashMap<IpAddr, u32>>,
    preauth: Mutex<Preauth>,
    sessions: AtomicUsize,
    /// New connections per prefix per second.
    conn_rate: Mutex<admission::ConnRate>,
    /// Eviction lines per second.
    log_rate: Mutex<admission::LogRate>,
    /// Test memory and tests per prefix.
    budget: Mutex<admission::Budget>,
}

/// A bound server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    ipv4_fallback: bool,
    shared: Arc<Shared>,
}

/// The control listener: SO_REUSEADDR, and on IPv6 IPV6_V6ONLY unless
/// `dual_stack`.
fn listen_socket(addr: SocketAddr, dual_stack: bool) -> std::io::Result<TcpListener> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    if addr.is_ipv6() {
        s.set_only_v6(!dual_stack)?;
    }
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

/// Write a log line; a closed stderr must not take the server down.
fn log(args: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "nettune serve: {args}");
}

/// The address a peer is counted under (IPv4-mapped IPv6 as IPv4).
fn source(peer: &SocketAddr) -> IpAddr {
    peer.ip().to_canonical()
}

impl Server {
    /// Bind the control port. A blank token is refused: it would look
    /// protected and run open.
    pub fn bind(cfg: ServerConfig) -> Result<Server, EngineError> {
        if cfg
            .token
            .as_ref()
            .is_some_and(|t| t.trim_ascii().is_empty())
        {
            return Err(EngineError::BlankToken);
        }
        let first = listen_socket(cfg.listen, cfg.dual_stack);
        let v6_any = cfg.listen.ip() == IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED);
        let (listener, ipv4_fallback) = match first {
            Ok(l) => (l, false),
            Err(e)
                if cfg.dual_stack
                    && v6_any
                    && matches!(
                        e.raw_os_error(),
                        Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL | libc::EPROTONOSUPPORT)
                    ) =>
            {
                let v4 = SocketAddr::new(
                    IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                    cfg.listen.port(),
                );
                let l = listen_socket(v4, false).map_err(|source| EngineError::Bind {
                    addr: v4.to_string(),
                    source,
                })?;
                (l, true)
            }
            Err(source) => {
                return Err(EngineError::Bind {
                    addr: cfg.listen.to_string(),
                    source,
                })
            }
        };
        Ok(Server {
            ipv4_fallback,
            listener,
            shared: Arc::new(Shared {
                cfg,
                per_client: Mutex::new(HashMap::new()),
                preauth: Mutex::new(Preauth::default()),
                sessions: AtomicUsize::new(0),
                conn_rate: Mutex::new(admission::ConnRate::default()),
                log_rate: Mutex::new(admission::LogRate::new(Instant::now())),
                budget: Mutex::new(admission::Budget::default()),
            }),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Whether a dual-stack `[::]` listener fell back to IPv4 because this
    /// host has no IPv6.
    pub fn ipv4_fallback(&self) -> bool {
        self.ipv4_fallback
    }

    /// Serve forever.
    pub fn serve(self) -> Result<(), EngineError> {
        loop {
            let (s, peer) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) => {
                    if self.shared.cfg.log {
                        log(format_args!("accept: {e}"));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            let now = Instant::now();
            let admitted = self
                .shared
                .conn_rate
                .lock()
                .is_ok_and(|mut r| r.admit(preauth_prefix(peer.ip()), now));
            if !admitted {
                // Not logged: a flood would flood the log.
                refuse_now(
                    &s,
                    "busy",
                    format!(
                        "too many new connections from {}/24 or /64 (at most {} a second); try again shortly",
                        preauth_prefix(peer.ip()),
                        admission::NEW_PER_PREFIX_PER_SEC
                    ),
                );
                continue;
            }
            let pre = match PreauthSlot::take(&self.shared, peer, &s) {
                Ok((p, evicted)) => {
                    for (e, why) in evicted {
                        let _ = e.conn.shutdown(std::net::Shutdown::Both);
                        if self.shared.cfg.log {
                            self.log_eviction(&e.peer, &peer, &why);
                        }
                    }
                    p
                }
                Err(busy) => {
                    refuse_now(&s, "busy", busy.to_string());
                    continue;
                }
            };
            let sh = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name("nt-session".into())
                .spawn(move || {
                    let r = session(s, peer, &sh, pre);
                    if sh.cfg.log {
                        if let Err(e) = r {
                            log(format_args!("{peer}: {e}"));
                        }
                    }
                });
            if let Err(e) = spawned {
                log(format_args!("cannot start a session thread: {e}"));
            }
        }
    }
}

impl Server {
    /// Log one eviction, at most [`admission::EVICTION_LINES_PER_SEC`] a
    /// second; the lines left out are counted in the next one.
    fn log_eviction(&self, gone: &SocketAddr, peer: &SocketAddr, why: &str) {
        let Ok((write, dropped)) = self
            .shared
            .log_rate
            .lock()
            .map(|mut r| r.line(Instant::now()))
        else {
            return;
        };
        if dropped > 0 {
            log(format_args!(
                "{dropped} more connections were closed before finishing their handshakes (not logged one by one)"
            ));
        }
        if write {
            log(format_args!(
                "{gone}: closed before finishing its handshake, to make room for {peer} ({why})"
            ));
        }
    }
}

/// Answer a connection with our preamble and an error, without blocking
/// the accept loop (one non-blocking write), and close it.
fn refuse_now(s: &TcpStream, code: &str, message: String) {
    let mut out = Vec::new();
    let _ = proto::write_preamble(&mut out);
    let _ = proto::write_msg(
        &mut out,
        &Msg::Error {
            code: code.into(),
            message,
        },
    );
    let _ = s.set_nonblocking(true);
    let mut w = s;
    let _ = w.write(&out);
}

/// A session slot, given back on drop.
#[derive(Debug)]
struct SessionSlot<'a> {
    sh: &'a Shared,
}

impl Drop for SessionSlot<'_> {
    fn drop(&mut self) {
        self.sh.sessions.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A running test's share of the memory budget and of its prefix's tests;
/// given back on drop.
struct BudgetSlot<'a> {
    sh: &'a Shared,
    prefix: IpAddr,
    need: u64,
}

impl<'a> BudgetSlot<'a> {
    /// Admit `cfg` from `peer` against `--max-total-memory` and
    /// `--max-tests-per-prefix`, or say why not.
    fn take(
        sh: &'a Shared,
        cfg: &TestConfig,
        peer: &SocketAddr,
    ) -> Result<Self, admission::NotAdmitted> {
        let l = &sh.cfg.limits;
        let need = crate::work::buffer_bytes(cfg, End::Server);
        let prefix = preauth_prefix(peer.ip());
        let mut b = sh
            .budget
            .lock()
            .map_err(|_| admission::NotAdmitted::Poisoned)?;
        b.admit(prefix, need, l.max_total_memory, l.max_tests_per_prefix)?;
        Ok(BudgetSlot { sh, prefix, need })
    }
}

impl Drop for BudgetSlot<'_> {
    fn drop(&mut self) {
        if let Ok(mut b) = self.sh.budget.lock() {
            b.release(self.prefix, self.need);
        }
    }
}

/// Tell the client why, and return the same as an error for the log.
fn refuse(s: &mut TcpStream, code: &'static str, message: String) -> SessionError {
    let _ = proto::write_msg(
        s,
        &Msg::Error {
            code: code.into(),
            message: message.clone(),
        },
    );
    SessionError::Refused { code, message }
}

/// Tell the client about `e` (under `code`) and return it for the log.
fn send_err(s: &mut TcpStream, code: &str, e: SessionError) -> SessionError {
    let _ = proto::write_msg(
        s,
        &Msg::Error {
            code: code.into(),
            message: e.to_string(),
        },
    );
    e
}

struct ClientSlot<'a> {
    sh: &'a Shared,
    ip: IpAddr,
}

impl Drop for ClientSlot<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.sh.per_client.lock() {
            if let Some(n) = m.get_mut(&self.ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.remove(&self.ip);
                }
            }
        }
    }
}

/// Preamble, hello, token proofs and setup, all within one total deadline.
/// Returns the validated configuration and whether the client asked for
/// the doctor rules (`--doctor`).
fn handshake(
    ctrl: &mut TcpStream,
    sh: &Shared,
    pre: &PreauthSlot,
) -> Result<(TestConfig, bool), SessionError> {
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let late = |what: &'static str| move |e: ProtoError| e.timed_out(what, HANDSHAKE_TIMEOUT);
    ctrl.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
    let _ = ctrl.set_nodelay(true);
    let v = proto::read_preamble(&mut DeadlineReader::new(ctrl, deadline))
        .map_err(late("the client's preamble"))?;
    proto::write_preamble(ctrl).map_err(ProtoError::from)?;
    if v != PROTO_VERSION {
        return Err(refuse(
            ctrl,
            "version",
            format!(
                "client speaks protocol v{v}, this server (nettune {}) speaks v{PROTO_VERSION}",
                env!("CARGO_PKG_VERSION")
            ),
        ));
    }
    let challenge = sh.cfg.token.as_ref().map(|_| auth::nonce());
    if challenge.is_none() {
        // No token to prove: the preamble is all a client can send first
        // (kept within a quota, since anyone can send one).
        pre.protect(false);
    }
    proto::write_msg(
        ctrl,
        &Msg::Hello {
            version: env!("CARGO_PKG_VERSION").into(),
            caps: CAPS
                .iter()
                .filter(|c| sh.cfg.doctor.is_some() || **c != crate::diagnosis::CAP)
                .map(|c| c.to_string())
                .collect(),
            challenge: challenge.clone(),
        },
    )
    .map_err(ProtoError::from)?;
    if let (Some(sn), Some(token)) = (&challenge, &sh.cfg.token) {
        let m = proto::read_msg(&mut DeadlineReader::new(ctrl, deadline), MAX_CLIENT_FRAME)
            .map_err(late("the client's token proof"))?;
        match m {
            Msg::Auth { nonce, proof } if nonce.len() <= 128 => {
                if !auth::verify_client(token, sn, &nonce, &proof) {
                    return Err(refuse(
                        ctrl,
                        "auth",
                        "authentication failed: wrong token".into(),
                    ));
                }
                // Proved: a slow rest of the handshake is never evicted.
                pre.protect(true);
                proto::write_msg(
                    ctrl,
                    &Msg::AuthOk {
                        proof: auth::server_proof(token, sn, &nonce),
                    },
                )
                .map_err(ProtoError::from)?;
            }
            _ => {
                return Err(refuse(
                    ctrl,
                    "auth",
                    "this server requires a token (--token-file or NETTUNE_TOKEN)".into(),
                ))
            }
        }
    }
    let m = proto::read_msg(&mut DeadlineReader::new(ctrl, deadline), MAX_CLIENT_FRAME)
        .map_err(late("the client's setup"))?;
    let (cfg, doctor) = match m {
        // Asked for doctor without offering it (a client that ignored the
        // capabilities): the test runs without.
        Msg::Setup { config, doctor } => (config, doctor && sh.cfg.doctor.is_some()),
        other => {
            return Err(refuse(
                ctrl,
                "protocol",
                format!("expected setup, got {}", other.name()),
            ))
        }
    };
    if let Err(x) = cfg.validate() {
        return Err(refuse(ctrl, "config", x.0));
    }
    if let Err(x) = cfg
        .check_limits(&sh.cfg.limits)
        .and_then(|()| crate::work::check_memory(&cfg, &sh.cfg.limits))
    {
        return Err(refuse(ctrl, "limit", x.0));
    }
    // The data path has the control connection's family (an IPv4 client of
    // a dual-stack listener arrives v4-mapped, and its data goes over IPv4).
    let v6 = ctrl.local_addr()?.ip().to_canonical().is_ipv6();
    if let Err(x) = cfg.check_family(v6) {
        return Err(refuse(ctrl, "config", x.0));
    }
    if let Some(c) = &cfg.congestion {
        if let Some(why) = crate::sock::congestion_refused(c, &sh.cfg.root) {
            return Err(refuse(ctrl, "config", format!("this server: {why}")));
        }
    }
    Ok((cfg, doctor))
}

fn session(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    sh: &Shared,
    pre: PreauthSlot,
) -> Result<(), SessionError> {
    let (mut cfg, doctor) = handshake(&mut ctrl, sh, &pre)?;
    // Without a token, a client gets at most the buffers the host allows
    // unprivileged sockets; with one, the server forces what was asked for
    // when the client asks to (`--force-buffers`; where the server holds
    // CAP_NET_ADMIN).
    let force = sh.cfg.token.is_some() && cfg.force_buffers;
    let notes = if force {
        Vec::new()
    } else {
        let (rmem, wmem) = crate::sock::mem_max(&sh.cfg.root);
        crate::sock::clamp_buffers(&mut cfg, rmem, wmem)
    };
    // Authenticated and set up: leave the pre-authentication pool and take
    // a session slot.
    drop(pre);
    if sh.sessions.fetch_add(1, Ordering::SeqCst) >= sh.cfg.max_sessions {
        sh.sessions.fetch_sub(1, Ordering::SeqCst);
        return Err(refuse(
            &mut ctrl,
            "busy",
            format!(
                "server is at its limit of {} concurrent sessions",
                sh.cfg.max_sessions
            ),
        ));
    }
    let _session = SessionSlot { sh };
    let _budget = match BudgetSlot::take(sh, &cfg, &peer) {
        Ok(b) => b,
        Err(why) => return Err(refuse(&mut ctrl, "busy", why.to_string())),
    };
    let ip = source(&peer);
    let _slot = {
        let mut m = sh.per_client.lock().map_err(|_| SessionError::Poisoned)?;
        let n = m.entry(ip).or_insert(0);
        if *n >= sh.cfg.limits.max_tests_per_client {
            let max = sh.cfg.limits.max_tests_per_client;
            drop(m);
            return Err(refuse(
                &mut ctrl,
                "limit",
                format!("{ip} already runs {max} tests here (the per-client limit)"),
            ));
        }
        *n += 1;
        ClientSlot { sh, ip }
    };
    if sh.cfg.log {
        log(format_args!(
            "{peer}: {} flows={} threads={} size={} duration={}ms",
            cfg.test,
            cfg.total_flows(),
            cfg.threads,
            cfg.size,
            cfg.duration_ms
        ));
    }
    if sh.cfg.log {
        for n in &notes {
            log(format_args!("{peer}: {n}"));
        }
    }
    run_test(ctrl, peer, (cfg, doctor), (force, notes), sh)
}

/// The server's hooks in the shared event loop.
struct ServerSession<'a> {
    ctrl: &'a mut TcpStream,
    /// The side's stop flags, raised when the client says `stop`.
    stop: [Arc<std::sync::atomic::AtomicBool>; 2],
}

impl Session for ServerSession<'_> {
    type Error = Abort;
    fn poll(&mut self, _side: &SideRun) -> Result<(), Abort> {
        Ok(())
    }
    fn on_interval(&mut self, rep: IntervalReport) -> Result<(), Abort> {
        let _ = proto::write_msg(self.ctrl, &Msg::Interval { report: rep });
        Ok(())
    }
    fn on_ctrl(&mut self, m: Msg) -> Result<Option<Duration>, Abort> {
        match m {
            Msg::ClientDone => Ok(Some(DRAIN)),
            Msg::Stop => {
                for f in &self.stop {
                    f.store(true, Ordering::Relaxed);
                }
                Ok(None)
            }
            other => Err(Abort::Unexpected(other.name())),
        }
    }
    fn on_ctrl_closed(&mut self, why: String) -> Result<(), Abort> {
        Err(Abort::Vanished(why))
    }
    fn overran(&self) -> Abort {
        Abort::Overran
    }
}

/// Most a scheduled start (`connected_at`) may lie ahead of the server's
/// clock: as long as the client has for `connected` itself.
pub const MAX_START_AHEAD: Duration = CONNECT_TIMEOUT;

/// Wait (at most [`CONNECT_TIMEOUT`] in all) for the client's `connected`,
/// answering its `time` questions before; returns when the workers start:
/// now for `connected`, the instant it names for `connected_at`.
fn await_connected(ctrl: &mut TcpStream) -> Result<Instant, SessionError> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut asked = 0u32;
    loop {
        let m = proto::read_msg(&mut DeadlineReader::new(&*ctrl, deadline), MAX_CLIENT_FRAME)
            .map_err(|e| {
                SessionError::LeftEarly(e.timed_out("the client's connected", CONNECT_TIMEOUT))
            })?;
        match m {
            Msg::Connected => return Ok(Instant::now()),
            Msg::Time if asked < proto::MAX_TIME_QUERIES => {
                asked += 1;
                let now = crate::report::realtime_ns();
                proto::write_msg(ctrl, &Msg::TimeIs { realtime_ns: now })
                    .map_err(ProtoError::from)?;
            }
            Msg::ConnectedAt { start_at_unix_ns } => {
                let now = crate::report::realtime_ns();
                let ahead = Duration::from_nanos(start_at_unix_ns.saturating_sub(now));
                if ahead > MAX_START_AHEAD {
                    return Err(refuse(
                        ctrl,
                        "protocol",
                        format!(
                            "connected_at names a start {:.1} s ahead (at most {})",
                            ahead.as_secs_f64(),
                            proto::secs(MAX_START_AHEAD)
                        ),
                    ));
                }
                return Ok(Instant::now() + ahead);
            }
            other => {
                return Err(refuse(
                    ctrl,
                    "protocol",
                    format!(
                        "expected connected, got {}{}",
                        other.name(),
                        if matches!(other, Msg::Time) {
                            format!(" (more than {})", proto::MAX_TIME_QUERIES)
                        } else {
                            String::new()
                        }
                    ),
                ))
            }
        }
    }
}

fn run_test(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    (cfg, doctor): (TestConfig, bool),
    (force, notes): (bool, Vec<String>),
    sh: &Shared,
) -> Result<(), SessionError> {
    let test_id: u64 = auth::random_u64() | 1;
    let tag = proto::udp_tag(test_id);
    // IPv4 clients of a dual-stack listener get IPv4 data sockets.
    let ip = ctrl.local_addr()?.ip().to_canonical();
    let peer_ip = source(&peer);
    let (socks, listener, port) = match bind_data(&cfg, ip, peer_ip, force) {
        Ok(d) => d,
        Err(x) => {
            return Err(send_err(
                &mut ctrl,
                "internal",
                SessionError::DataSockets(x),
            ))
        }
    };
    proto::write_msg(&mut ctrl, &Msg::Ready { test_id, port }).map_err(ProtoError::from)?;
    let mut rejected = 0u64;
    let mut side = SideRun::new(Params {
        cfg: cfg.clone(),
        test_id,
        tag,
        src: crate::sock::Source::default(),
        force_buffers: force,
    });
    let local = SocketAddr::new(ip, port);
    let started = start_workers(
        &mut side,
        (socks, listener),
        &cfg,
        local,
        peer_ip,
        &mut rejected,
    )
    .map_err(|e| send_err(&mut ctrl, "setup", e))
    .and_then(|()| await_connected(&mut ctrl));
    let start = match started {
        Ok(start) => start,
        Err(e) => {
            side.abort_all();
            let _ = side.join();
            return Err(e);
        }
    };
    if let Err(e) = proto::write_msg(&mut ctrl, &Msg::Go) {
        side.abort_all();
        let _ = side.join();
        return Err(ProtoError::from(e).into());
    }
    let root = sh.cfg.root.clone();
    let reader = ctrl.try_clone()?;
    let mut s = ServerSession {
        ctrl: &mut ctrl,
        stop: [side.abort.clone(), side.stop_passive.clone()],
    };
    let drops_run = sh.cfg.doctor.as_ref().filter(|_| doctor);
    let drops_run = drops_run.and_then(|h| h.start(&root));
    let (out, failure) = session::run(
        side,
        start,
        &cfg,
        &root,
        doctor,
        &reader,
        (MAX_CLIENT_FRAME, |_| false),
        Duration::from_secs(10),
        &mut s,
    );
    let _ = ctrl.shutdown(std::net::Shutdown::Read);
    if let Some(why) = failure {
        let _ = ctrl.shutdown(std::net::Shutdown::Both);
        return Err(why.into());
    }
    let report = SideReport {
        facts: host::snapshot::read_bench_facts_on(&root, Some((ip, peer_ip))),
        workers: out.workers,
        cpu: out.cpu,
        udp_snmp: out.udp_snmp,
        rejected_connections: rejected,
        doctor: out
            .doctor_samples
            .zip(sh.cfg.doctor.as_ref())
            .map(|(samples, hook)| hook.diagnose(&root, samples, drops_run).0.into()),
        cpu_intervals: out.cpu_intervals,
        notes,
        buffers: out.buffers,
    };
    ctrl.set_write_timeout(Some(Duration::from_secs(10)))?;
    proto::write_msg(
        &mut ctrl,
        &Msg::Report {
            report: Box::new(report),
        },
    )
    .map_err(SessionError::Report)?;
    if sh.cfg.log {
        log(format_args!("{peer}: {} done", cfg.test));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
