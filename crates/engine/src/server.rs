//! `nettune serve`: accepts control connections, one thread per session,
//! each session running one test with its own data port and workers.
//!
//! A connection starts in a bounded pre-authentication pool (counted per
//! source address) and has [`HANDSHAKE_TIMEOUT`] in total for its preamble,
//! token proof and setup. Only then does it take one of the `max_sessions`
//! session slots, so clients that never authenticate cannot crowd out those
//! that do.

use crate::auth;
use crate::config::{FlowDir, Limits, TestConfig, TestKind, UDP_HEADER};
use crate::cpu;
use crate::error::EngineError;
use crate::facts;
use crate::proto::{self, DeadlineReader, Msg, ProtoError, CAPS, MAX_CLIENT_FRAME, PROTO_VERSION};
use crate::report::{Role, SideReport};
use crate::side::{reuseport_listener, reuseport_udp_from, spread, CpuWindow, SideRun};
use crate::worker::{Event, Job, Params};
use host::Root;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How long a client has for the whole handshake: preamble, token proof and
/// setup together (a total deadline, not a per-read timeout).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server waits for all data flows to connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one data connection has, in total, for its 16-byte preamble.
pub const DATA_PREAMBLE_TIMEOUT: Duration = Duration::from_secs(2);
/// Drain time for receivers after the sender is done.
pub const DRAIN: Duration = Duration::from_millis(100);

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Control address.
    pub listen: SocketAddr,
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
}

/// Connections that have not finished the handshake.
#[derive(Debug, Default)]
struct Preauth {
    total: u32,
    per_ip: HashMap<IpAddr, u32>,
}

#[derive(Debug)]
struct Shared {
    cfg: ServerConfig,
    per_client: Mutex<HashMap<IpAddr, u32>>,
    preauth: Mutex<Preauth>,
    sessions: AtomicUsize,
}

/// A bound server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
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
        let listener = TcpListener::bind(cfg.listen).map_err(|source| EngineError::Bind {
            addr: cfg.listen.to_string(),
            source,
        })?;
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                cfg,
                per_client: Mutex::new(HashMap::new()),
                preauth: Mutex::new(Preauth::default()),
                sessions: AtomicUsize::new(0),
            }),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
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
            let pre = match PreauthSlot::take(&self.shared, source(&peer)) {
                Ok(p) => p,
                Err(message) => {
                    refuse_now(&s, "busy", message);
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

/// A place in the pre-authentication pool, given back on drop (also when a
/// session thread panics).
#[derive(Debug)]
struct PreauthSlot {
    sh: Arc<Shared>,
    ip: IpAddr,
}

impl PreauthSlot {
    fn take(sh: &Arc<Shared>, ip: IpAddr) -> Result<PreauthSlot, String> {
        let l = &sh.cfg.limits;
        let Ok(mut p) = sh.preauth.lock() else {
            return Err("server error (lock poisoned)".into());
        };
        if p.total >= l.max_unauthenticated {
            return Err(format!(
                "server has {} connections that have not finished the handshake (its limit); try again in {}",
                p.total,
                proto::secs(HANDSHAKE_TIMEOUT)
            ));
        }
        let n = p.per_ip.entry(ip).or_insert(0);
        if *n >= l.max_unauthenticated_per_ip {
            return Err(format!(
                "{ip} already has {n} connections that have not finished the handshake (the per-address limit); try again in {}",
                proto::secs(HANDSHAKE_TIMEOUT)
            ));
        }
        *n += 1;
        p.total += 1;
        Ok(PreauthSlot { sh: sh.clone(), ip })
    }
}

impl Drop for PreauthSlot {
    fn drop(&mut self) {
        if let Ok(mut p) = self.sh.preauth.lock() {
            p.total = p.total.saturating_sub(1);
            if let Some(n) = p.per_ip.get_mut(&self.ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    p.per_ip.remove(&self.ip);
                }
            }
        }
    }
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

/// Why a session ended early.
#[derive(Debug, Error)]
enum SessionError {
    /// The control connection failed or timed out.
    #[error(transparent)]
    Proto(#[from] ProtoError),
    /// A socket option could not be set.
    #[error("control socket: {0}")]
    Io(#[from] std::io::Error),
    /// We refused the client (and told it so).
    #[error("refused ({code}): {message}")]
    Refused {
        /// Error code sent.
        code: &'static str,
        /// Message sent.
        message: String,
    },
    /// The test failed after it was set up.
    #[error("{0}")]
    Test(String),
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

fn send_err(s: &mut TcpStream, code: &str, message: String) -> String {
    let _ = proto::write_msg(
        s,
        &Msg::Error {
            code: code.into(),
            message: message.clone(),
        },
    );
    format!("{code}: {message}")
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
/// Returns the validated configuration.
fn handshake(ctrl: &mut TcpStream, sh: &Shared) -> Result<TestConfig, SessionError> {
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
    proto::write_msg(
        ctrl,
        &Msg::Hello {
            version: env!("CARGO_PKG_VERSION").into(),
            caps: CAPS.iter().map(|c| c.to_string()).collect(),
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
    let cfg = match m {
        Msg::Setup { config } => config,
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
    if let Err(x) = cfg.check_limits(&sh.cfg.limits) {
        return Err(refuse(ctrl, "limit", x.0));
    }
    Ok(cfg)
}

fn session(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    sh: &Shared,
    pre: PreauthSlot,
) -> Result<(), SessionError> {
    let cfg = handshake(&mut ctrl, sh)?;
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
    let ip = source(&peer);
    let _slot = {
        let mut m = sh
            .per_client
            .lock()
            .map_err(|_| SessionError::Test("lock poisoned".into()))?;
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
    run_test(ctrl, peer, cfg, sh).map_err(SessionError::Test)
}

enum Data {
    Tcp(TcpListener),
    Crr(Vec<TcpListener>),
    Udp(Vec<UdpSocket>),
}

/// Open the test's data sockets on `ip`; UDP sockets take datagrams only
/// from `peer` (the control connection's peer address).
fn bind_data(cfg: &TestConfig, ip: IpAddr, peer: IpAddr) -> std::io::Result<(Data, u16)> {
    let any = SocketAddr::new(ip, 0);
    match cfg.test {
        TestKind::TcpStream | TestKind::TcpRr => {
            let l = reuseport_listener(any, 1024)?;
            // Buffer sizes set on the listener reach the accepted sockets
            // before the handshake, so they shape the window scale.
            crate::worker::apply_opts(std::os::fd::AsFd::as_fd(&l), cfg, true);
            let port = l.local_addr()?.port();
            Ok((Data::Tcp(l), port))
        }
        TestKind::TcpCrr => {
            let first = reuseport_listener(any, 4096)?;
            let port = first.local_addr()?.port();
            let mut v = vec![first];
            for _ in 1..cfg.threads {
                v.push(reuseport_listener(SocketAddr::new(ip, port), 4096)?);
            }
            for l in &v {
                crate::worker::apply_opts(std::os::fd::AsFd::as_fd(l), cfg, true);
            }
            Ok((Data::Crr(v), port))
        }
        TestKind::UdpStream | TestKind::UdpRr => {
            let first = reuseport_udp_from(any, peer)?;
            let port = first.local_addr()?.port();
            let mut v = vec![first];
            for _ in 1..cfg.threads {
                v.push(reuseport_udp_from(SocketAddr::new(ip, port), peer)?);
            }
            for s in &v {
                crate::worker::apply_opts(std::os::fd::AsFd::as_fd(s), cfg, false);
            }
            Ok((Data::Udp(v), port))
        }
    }
}

/// Accept the test's TCP flows (matching test id, each flow once).
fn accept_flows(
    l: &TcpListener,
    cfg: &TestConfig,
    test_id: u64,
    rejected: &mut u64,
) -> Result<Vec<(u32, TcpStream)>, String> {
    let n = cfg.total_flows() as usize;
    let mut got: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    socket2::SockRef::from(l)
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let mut have = 0;
    while have < n {
        if Instant::now() >= deadline {
            return Err(format!(
                "only {have} of {n} data connections arrived within {} s",
                CONNECT_TIMEOUT.as_secs()
            ));
        }
        let (s, _) = match l.accept() {
            Ok(c) => c,
            Err(_) => continue,
        };
        // A total deadline per connection, so one that dribbles its preamble
        // cannot hold the accept loop.
        let by = (Instant::now() + DATA_PREAMBLE_TIMEOUT).min(deadline);
        let mut pre = [0u8; 16];
        if DeadlineReader::new(&s, by).read_exact(&mut pre).is_err() {
            *rejected += 1;
            continue;
        }
        match proto::parse_data_preamble(&pre) {
            Some((id, f)) if id == test_id && (f as usize) < n && got[f as usize].is_none() => {
                crate::worker::apply_opts(std::os::fd::AsFd::as_fd(&s), cfg, true);
                got[f as usize] = Some(s);
                have += 1;
            }
            _ => *rejected += 1,
        }
    }
    Ok(got
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|s| (i as u32, s)))
        .collect())
}

/// Learn the client address of each UDP stream flow from its registration
/// datagrams, and open a connected socket per flow on the data port.
/// Registrations count only from `peer`, the control connection's address.
fn register_udp(
    socks: &[UdpSocket],
    cfg: &TestConfig,
    tag: u32,
    local: SocketAddr,
    peer: IpAddr,
) -> Result<Vec<(u32, UdpSocket)>, String> {
    let want: Vec<u32> = (0..cfg.total_flows()).collect();
    let mut addrs: HashMap<u32, SocketAddr> = HashMap::new();
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut buf = vec![0u8; 65536];
    for s in socks {
        s.set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(|e| e.to_string())?;
    }
    while addrs.len() < want.len() {
        if Instant::now() >= deadline {
            return Err(format!(
                "only {} of {} UDP flows registered",
                addrs.len(),
                want.len()
            ));
        }
        for s in socks {
            if let Ok((n, from)) = s.recv_from(&mut buf) {
                if n >= UDP_HEADER {
                    let t = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
                    let f = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
                    if t == tag && want.contains(&f) && from.ip().to_canonical() == peer {
                        addrs.insert(f, from);
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    for f in want {
        let s = reuseport_udp_from(local, peer).map_err(|e| e.to_string())?;
        crate::worker::apply_opts(std::os::fd::AsFd::as_fd(&s), cfg, false);
        s.connect(addrs[&f]).map_err(|e| e.to_string())?;
        out.push((f, s));
    }
    Ok(out)
}

fn run_test(
    mut ctrl: TcpStream,
    peer: SocketAddr,
    cfg: TestConfig,
    sh: &Shared,
) -> Result<(), String> {
    let test_id: u64 = rand::random::<u64>() | 1;
    let tag = proto::udp_tag(test_id);
    let ip = ctrl.local_addr().map_err(|e| e.to_string())?.ip();
    let peer_ip = source(&peer);
    let (data, port) = match bind_data(&cfg, ip, peer_ip) {
        Ok(d) => d,
        Err(x) => {
            return Err(send_err(
                &mut ctrl,
                "internal",
                format!("cannot open data sockets: {x}"),
            ))
        }
    };
    proto::write_msg(&mut ctrl, &Msg::Ready { test_id, port }).map_err(|x| x.to_string())?;
    let mut rejected = 0u64;
    let mut side = SideRun::new(Params {
        cfg: cfg.clone(),
        test_id,
        tag,
    });
    let add = |side: &mut SideRun, role: Role, dir: FlowDir, job: Job| {
        side.add(role, dir, job)
            .map_err(|x| format!("cannot start a worker: {x}"))
    };
    let built: Result<(), String> = (|| {
        match data {
            Data::Tcp(l) => {
                let flows = accept_flows(&l, &cfg, test_id, &mut rejected)?;
                let (fwd, rev): (Vec<_>, Vec<_>) = flows
                    .into_iter()
                    .partition(|(f, _)| cfg.flow_dir(*f) == FlowDir::Forward);
                for (d, mine) in [(FlowDir::Forward, fwd), (FlowDir::Reverse, rev)] {
                    for group in spread(mine, cfg.threads) {
                        let (role, job) = match (cfg.test, d) {
                            (TestKind::TcpRr, _) => (Role::Respond, Job::TcpRrServer(group)),
                            (_, FlowDir::Forward) => (Role::Recv, Job::TcpRecv(group)),
                            (_, FlowDir::Reverse) => (Role::Send, Job::TcpSend(group)),
                        };
                        add(&mut side, role, d, job)?;
                    }
                }
            }
            Data::Crr(ls) => {
                for l in ls {
                    add(
                        &mut side,
                        Role::Respond,
                        FlowDir::Forward,
                        Job::CrrServer(l),
                    )?;
                }
            }
            Data::Udp(socks) => {
                if cfg.test == TestKind::UdpRr {
                    for s in socks {
                        add(
                            &mut side,
                            Role::Respond,
                            FlowDir::Forward,
                            Job::UdpRrServer(vec![s]),
                        )?;
                    }
                } else {
                    // One connected socket per flow, so flows spread over the
                    // receiving workers exactly as TCP flows do (a hash over
                    // SO_REUSEPORT sockets may put two flows on one).
                    let local = SocketAddr::new(ip, port);
                    let flows = register_udp(&socks, &cfg, tag, local, peer_ip)?;
                    let (fwd, rev): (Vec<_>, Vec<_>) = flows
                        .into_iter()
                        .partition(|(f, _)| cfg.flow_dir(*f) == FlowDir::Forward);
                    for group in spread(fwd, cfg.threads) {
                        let socks = group.into_iter().map(|(_, s)| s).collect();
                        add(&mut side, Role::Recv, FlowDir::Forward, Job::UdpRecv(socks))?;
                    }
                    for group in spread(rev, cfg.threads) {
                        add(&mut side, Role::Send, FlowDir::Reverse, Job::UdpSend(group))?;
                    }
                }
            }
        }
        Ok(())
    })();
    if let Err(x) = built {
        side.abort_all();
        let _ = side.join();
        return Err(send_err(&mut ctrl, "setup", x));
    }
    let connected = proto::read_msg(
        &mut DeadlineReader::new(&ctrl, Instant::now() + CONNECT_TIMEOUT),
        MAX_CLIENT_FRAME,
    )
    .map_err(|e| e.timed_out("the client's connected", CONNECT_TIMEOUT));
    match connected {
        Ok(Msg::Connected) => {}
        Ok(other) => {
            side.abort_all();
            let _ = side.join();
            return Err(send_err(
                &mut ctrl,
                "protocol",
                format!("expected connected, got {}", other.name()),
            ));
        }
        Err(x) => {
            side.abort_all();
            let _ = side.join();
            return Err(format!("client left before the start: {x}"));
        }
    }
    let root = sh.cfg.root.clone();
    let snmp0 = cpu::udp_snmp(&root);
    let mut agg = side.aggregator(&cfg);
    proto::write_msg(&mut ctrl, &Msg::Go).map_err(|x| x.to_string())?;
    let t = side.start(Instant::now());
    let mut cpuw = CpuWindow::new(root.clone());
    // Control reader: forwards the client's messages (or its departure).
    let _ = ctrl.set_read_timeout(None);
    let reader = ctrl.try_clone().map_err(|x| x.to_string())?;
    let tx = side.tx.clone();
    let _ = std::thread::Builder::new()
        .name("nt-ctrl".into())
        .spawn(move || {
            let mut r = reader;
            loop {
                match proto::read_msg(&mut r, MAX_CLIENT_FRAME) {
                    Ok(m) => {
                        if tx.send(Event::Ctrl(m)).is_err() {
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
    let deadline = t.hard_stop() + Duration::from_secs(10);
    let mut stop_at: Option<Instant> = None;
    let mut aborted: Option<String> = None;
    loop {
        let now = Instant::now();
        let next_cpu = cpuw.poll(&t, now);
        if let Some(s) = stop_at {
            if now >= s {
                side.stop_passive
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        if side.all_done() && next_cpu.is_none() {
            break;
        }
        if now >= deadline {
            aborted = Some("test overran its deadline".into());
            side.abort_all();
            break;
        }
        let mut tmo = Duration::from_millis(200);
        for x in [next_cpu, stop_at].into_iter().flatten() {
            tmo = tmo.min(x.saturating_duration_since(now));
        }
        match side.rx.recv_timeout(tmo) {
            Ok(Event::Interval {
                dir,
                index,
                c,
                hist,
            }) => {
                if let Some(rep) = agg.add(dir, index, c, hist) {
                    let _ = proto::write_msg(&mut ctrl, &Msg::Interval { report: rep });
                }
            }
            Ok(Event::WorkerDone(i)) => {
                side.worker_done(i);
            }
            Ok(Event::Ctrl(Msg::ClientDone)) => {
                stop_at.get_or_insert(Instant::now() + DRAIN);
            }
            Ok(Event::Ctrl(other)) => {
                aborted = Some(format!("unexpected {} mid-test", other.name()));
                side.abort_all();
                break;
            }
            Ok(Event::CtrlClosed(why)) => {
                aborted = Some(format!("client vanished mid-test ({why})"));
                side.abort_all();
                break;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let cpu_report = cpuw.report();
    let workers = side.join();
    let snmp1 = cpu::udp_snmp(&root);
    let _ = ctrl.shutdown(std::net::Shutdown::Read);
    if let Some(why) = aborted {
        let _ = ctrl.shutdown(std::net::Shutdown::Both);
        return Err(why);
    }
    let report = SideReport {
        facts: facts::gather(&root),
        workers,
        cpu: cpu_report,
        udp_snmp: match (snmp0, snmp1) {
            (Some(a), Some(b)) => Some(cpu::snmp_delta(&a, &b)),
            _ => None,
        },
        rejected_connections: rejected,
    };
    ctrl.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(|x| x.to_string())?;
    proto::write_msg(
        &mut ctrl,
        &Msg::Report {
            report: Box::new(report),
        },
    )
    .map_err(|x| format!("sending the report: {x}"))?;
    if sh.cfg.log {
        log(format_args!("{peer}: {} done", cfg.test));
    }
    Ok(())
}
