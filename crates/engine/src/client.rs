//! `nettune bench`: connect to a server, run one test, build the result.

use crate::auth;
use crate::config::{human_bytes, End, FlowDir, Limits, TestConfig, TestKind, UDP_HEADER};
use crate::cpu;
use crate::error::EngineError;
use crate::facts;
use crate::proto::{self, DeadlineReader, Msg, ProtoError, MAX_SERVER_FRAME, PROTO_VERSION};
use crate::report::{
    hist_from_pairs, new_histogram, BenchResult, DirSummary, IntervalReport, KernelCheck, Latency,
    Role, ServiceDemand, SideReport, UdpSummary, WorkerReport, RESULT_SCHEMA_VERSION,
};
use crate::side::{spread, CpuWindow, SideRun};
use crate::worker::{apply_opts, Event, Job, Params};
use host::Root;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

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
        }
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
            code: proto::printable(&code, 32),
            message: proto::printable(&message, 500),
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
    ] {
        if on {
            v.push(cap);
        }
    }
    v
}

/// Connect and authenticate; returns the control stream, its address and the
/// server's capabilities.
fn handshake(o: &ClientOpts) -> Result<(TcpStream, SocketAddr, Vec<String>), EngineError> {
    let addr = (o.host.as_str(), o.port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve {
            host: o.host.clone(),
            reason: e.to_string(),
        })?
        .next()
        .ok_or_else(|| EngineError::Resolve {
            host: o.host.clone(),
            reason: "no addresses".into(),
        })?;
    let mut s = TcpStream::connect_timeout(&addr, o.connect_timeout).map_err(|source| {
        EngineError::Connect {
            addr: addr.to_string(),
            source,
        }
    })?;
    let _ = s.set_nodelay(true);
    s.set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io_run("control socket"))?;
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let late =
        |what: &'static str| move |e: ProtoError| perr(&addr)(e.timed_out(what, HANDSHAKE_TIMEOUT));
    proto::write_preamble(&mut s).map_err(|e| perr(&addr)(e.into()))?;
    let theirs = proto::read_preamble(&mut DeadlineReader::new(&s, deadline))
        .map_err(late("the server's preamble"))?;
    if theirs != PROTO_VERSION {
        return Err(EngineError::Version {
            addr: addr.to_string(),
            theirs,
            ours: PROTO_VERSION,
            version: env!("CARGO_PKG_VERSION").into(),
        });
    }
    let hello = proto::read_msg(&mut DeadlineReader::new(&s, deadline), MAX_SERVER_FRAME)
        .map_err(late("the server's hello"))?;
    let (challenge, caps) = match hello {
        Msg::Hello {
            challenge, caps, ..
        } => (challenge, caps),
        other => return Err(server_error(other)),
    };
    if challenge.is_none() && o.token.is_some() {
        // A server without a token cannot prove it holds ours: running
        // anyway would let anyone downgrade the connection.
        return Err(EngineError::ServerWithoutToken {
            addr: addr.to_string(),
        });
    }
    if let Some(sn) = challenge {
        let Some(token) = &o.token else {
            return Err(EngineError::Auth(format!(
                "{addr} requires a token: pass --token-file FILE or set NETTUNE_TOKEN"
            )));
        };
        let cn = auth::nonce();
        proto::write_msg(
            &mut s,
            &Msg::Auth {
                nonce: cn.clone(),
                proof: auth::client_proof(token, &sn, &cn),
            },
        )
        .map_err(|e| perr(&addr)(e.into()))?;
        match proto::read_msg(&mut DeadlineReader::new(&s, deadline), MAX_SERVER_FRAME)
            .map_err(|e| e.timed_out("the server's token proof", HANDSHAKE_TIMEOUT))
        {
            Ok(Msg::AuthOk { proof }) => {
                if !auth::verify_server(token, &sn, &cn, &proof) {
                    return Err(EngineError::Auth(format!(
                        "{addr} could not prove it holds the same token"
                    )));
                }
            }
            Ok(Msg::Error { message, .. }) => {
                return Err(EngineError::Auth(format!(
                    "{addr}: {}",
                    proto::printable(&message, 500)
                )))
            }
            Ok(other) => return Err(server_error(other)),
            Err(ProtoError::Closed) => {
                return Err(EngineError::Auth(format!(
                    "{addr} closed the connection during authentication"
                )))
            }
            Err(e) => return Err(perr(&addr)(e)),
        }
    }
    Ok((s, addr, caps))
}

fn udp_flow_socket(cfg: &TestConfig, server: SocketAddr) -> Result<UdpSocket, EngineError> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0"
            .parse()
            .map_err(|_| EngineError::Run("address".into()))?
    } else {
        "[::]:0"
            .parse()
            .map_err(|_| EngineError::Run("address".into()))?
    };
    let s = UdpSocket::bind(bind).map_err(io_run("UDP socket"))?;
    apply_opts(s.as_fd(), cfg, false);
    s.connect(server).map_err(io_run("UDP connect"))?;
    Ok(s)
}

fn registration(tag: u32, flow: u32) -> [u8; UDP_HEADER] {
    let mut b = [0u8; UDP_HEADER];
    b[..4].copy_from_slice(&tag.to_le_bytes());
    b[4..8].copy_from_slice(&flow.to_le_bytes());
    b[8..].copy_from_slice(&crate::jobs::REGISTRATION_SEQ.to_le_bytes());
    b
}

/// Run one test against a server. `on_interval` sees every interval of both
/// sides as it completes.
pub fn run(
    o: &ClientOpts,
    cfg: &TestConfig,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<BenchResult, EngineError> {
    cfg.validate().map_err(|e| EngineError::Run(e.0))?;
    if o.token.as_ref().is_some_and(|t| t.trim_ascii().is_empty()) {
        return Err(EngineError::BlankToken);
    }
    let need = crate::jobs::buffer_bytes(cfg, End::Client);
    if need > o.max_memory {
        return Err(EngineError::Memory {
            need: human_bytes(need),
            limit: human_bytes(o.max_memory),
            hint: cfg.memory_hint(),
        });
    }
    let (mut ctrl, addr, caps) = handshake(o)?;
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
        &mut ctrl,
        &Msg::Setup {
            config: cfg.clone(),
        },
    )
    .map_err(|e| perr(&addr)(e.into()))?;
    let answer = proto::read_msg(
        &mut DeadlineReader::new(&ctrl, Instant::now() + HANDSHAKE_TIMEOUT),
        MAX_SERVER_FRAME,
    )
    .map_err(|e| perr(&addr)(e.timed_out("the server's answer to setup", HANDSHAKE_TIMEOUT)))?;
    let (test_id, port) = match answer {
        Msg::Ready { test_id, port } => (test_id, port),
        other => return Err(server_error(other)),
    };
    let tag = proto::udp_tag(test_id);
    let data = SocketAddr::new(addr.ip(), port);
    let n = cfg.total_flows();
    let mut side = SideRun::new(Params {
        cfg: cfg.clone(),
        test_id,
        tag,
    });
    let mut reg: Vec<(u32, UdpSocket)> = Vec::new();
    let built: Result<(), EngineError> = (|| {
        let add = |side: &mut SideRun, role: Role, dir: FlowDir, job: Job| {
            side.add(role, dir, job)
                .map_err(io_run("starting a worker"))
        };
        match cfg.test {
            TestKind::TcpStream | TestKind::TcpRr => {
                let mut flows = Vec::new();
                for f in 0..n {
                    let s = socket2::Socket::new(
                        socket2::Domain::for_address(data),
                        socket2::Type::STREAM,
                        None,
                    )
                    .map_err(io_run("TCP socket"))?;
                    apply_opts(s.as_fd(), cfg, true);
                    s.connect_timeout(&data.into(), Duration::from_secs(5))
                        .map_err(|e| EngineError::Run(format!("data connection to {data}: {e}")))?;
                    let mut s: TcpStream = s.into();
                    s.write_all(&proto::data_preamble(test_id, f))
                        .map_err(io_run("data preamble"))?;
                    flows.push((f, s));
                }
                let (fwd, rev): (Vec<_>, Vec<_>) = flows
                    .into_iter()
                    .partition(|(f, _)| cfg.flow_dir(*f) == FlowDir::Forward);
                for (d, mine) in [(FlowDir::Forward, fwd), (FlowDir::Reverse, rev)] {
                    for g in spread(mine, cfg.threads) {
                        let (role, job) = match (cfg.test, d) {
                            (TestKind::TcpRr, _) => (Role::Request, Job::TcpRrClient(g)),
                            (_, FlowDir::Forward) => (Role::Send, Job::TcpSend(g)),
                            (_, FlowDir::Reverse) => (Role::Recv, Job::TcpRecv(g)),
                        };
                        add(&mut side, role, d, job)?;
                    }
                }
            }
            TestKind::UdpStream | TestKind::UdpRr => {
                let mut fwd = Vec::new();
                let mut rev = Vec::new();
                for f in 0..n {
                    let s = udp_flow_socket(cfg, data)?;
                    if cfg.test == TestKind::UdpStream {
                        reg.push((f, s.try_clone().map_err(io_run("UDP socket"))?));
                    }
                    if cfg.flow_dir(f) == FlowDir::Forward {
                        fwd.push((f, s));
                    } else {
                        rev.push(s);
                    }
                }
                for g in spread(fwd, cfg.threads) {
                    if cfg.test == TestKind::UdpRr {
                        add(
                            &mut side,
                            Role::Request,
                            FlowDir::Forward,
                            Job::UdpRrClient(g),
                        )?;
                    } else {
                        add(&mut side, Role::Send, FlowDir::Forward, Job::UdpSend(g))?;
                    }
                }
                for g in spread(rev, cfg.threads) {
                    add(&mut side, Role::Recv, FlowDir::Reverse, Job::UdpRecv(g))?;
                }
            }
            TestKind::TcpCrr => {
                for f in 0..n {
                    add(
                        &mut side,
                        Role::Request,
                        FlowDir::Forward,
                        Job::CrrClient {
                            target: data,
                            flow: f,
                        },
                    )?;
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = built {
        side.abort_all();
        let _ = side.join();
        return Err(e);
    }
    for (f, s) in &reg {
        let _ = s.send(&registration(tag, *f));
    }
    proto::write_msg(&mut ctrl, &Msg::Connected).map_err(|e| perr(&addr)(e.into()))?;
    // Wait for Go, re-sending UDP registrations in case one was lost.
    ctrl.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(io_run("control socket"))?;
    let go_deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match proto::read_msg(&mut ctrl, MAX_SERVER_FRAME) {
            Ok(Msg::Go) => break,
            Ok(other) => {
                side.abort_all();
                let _ = side.join();
                return Err(server_error(other));
            }
            Err(ProtoError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) && Instant::now() < go_deadline =>
            {
                for (f, s) in &reg {
                    let _ = s.send(&registration(tag, *f));
                }
            }
            Err(e) => {
                side.abort_all();
                let _ = side.join();
                return Err(perr(&addr)(e));
            }
        }
    }
    drop(reg);
    let root = o.root.clone();
    let snmp0 = cpu::udp_snmp(&root);
    let mut agg = side.aggregator(cfg);
    let t = side.start(Instant::now());
    let mut cpuw = CpuWindow::new(root.clone());
    let _ = ctrl.set_read_timeout(None);
    let reader = ctrl.try_clone().map_err(io_run("control socket"))?;
    let tx = side.tx.clone();
    let _ = std::thread::Builder::new()
        .name("nt-ctrl".into())
        .spawn(move || {
            let mut r = reader;
            loop {
                match proto::read_msg(&mut r, MAX_SERVER_FRAME) {
                    Ok(m) => {
                        let last = matches!(m, Msg::Report { .. } | Msg::Error { .. });
                        if tx.send(Event::Ctrl(m)).is_err() || last {
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
    let mut intervals: Vec<IntervalReport> = Vec::new();
    // The server measures forward streams; it may send each of those
    // intervals once, and nothing else (the client stores what it sends).
    let server_dirs: Vec<FlowDir> = cfg
        .dirs()
        .into_iter()
        .filter(|d| cfg.test.is_stream() && *d == FlowDir::Forward)
        .collect();
    let mut from_server = std::collections::HashSet::new();
    let mut sent_done = false;
    let mut server_report: Option<SideReport> = None;
    let mut stop_at: Option<Instant> = None;
    let mut failure: Option<EngineError> = None;
    let deadline = t.hard_stop() + Duration::from_secs(20);
    loop {
        let now = Instant::now();
        let next_cpu = cpuw.poll(&t, now);
        if !sent_done && side.active_done() {
            sent_done = true;
            let msg = Msg::ClientDone;
            if let Err(e) = proto::write_msg(&mut ctrl, &msg) {
                failure = Some(EngineError::Run(format!("control connection lost: {e}")));
                side.abort_all();
                break;
            }
        }
        if let Some(s) = stop_at {
            if now >= s {
                side.stop_passive.store(true, Ordering::Relaxed);
            }
        }
        if server_report.is_some() && side.all_done() && next_cpu.is_none() {
            break;
        }
        if now >= deadline {
            failure = Some(EngineError::Run("the test overran its deadline".into()));
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
                    on_interval(&rep);
                    intervals.push(rep);
                }
            }
            Ok(Event::WorkerDone(i)) => {
                side.worker_done(i);
            }
            Ok(Event::Ctrl(Msg::Interval { report })) => {
                let ok = report.index < cfg.intervals()
                    && report.dir.is_some_and(|d| server_dirs.contains(&d))
                    && from_server.insert((report.dir, report.index));
                if !ok {
                    failure = Some(EngineError::Run(format!(
                        "the server sent an interval ({:?} #{}) this test does not have",
                        report.dir, report.index
                    )));
                    side.abort_all();
                    break;
                }
                on_interval(&report);
                intervals.push(report);
            }
            Ok(Event::Ctrl(Msg::Report { report })) => {
                server_report = Some(*report);
                stop_at.get_or_insert(Instant::now() + crate::server::DRAIN);
            }
            Ok(Event::Ctrl(m @ Msg::Error { .. })) => {
                failure = Some(server_error(m));
                side.abort_all();
                break;
            }
            Ok(Event::Ctrl(other)) => {
                failure = Some(server_error(other));
                side.abort_all();
                break;
            }
            Ok(Event::CtrlClosed(why)) => {
                if server_report.is_none() {
                    failure = Some(EngineError::Run(format!(
                        "server closed the control connection mid-test ({why})"
                    )));
                    side.abort_all();
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let cpu_report = cpuw.report();
    let workers = side.join();
    let snmp1 = cpu::udp_snmp(&root);
    let _ = ctrl.shutdown(std::net::Shutdown::Both);
    if let Some(f) = failure {
        return Err(f);
    }
    let Some(server) = server_report else {
        return Err(EngineError::Run("no report from the server".into()));
    };
    let client = SideReport {
        facts: facts::gather(&root),
        workers,
        cpu: cpu_report,
        udp_snmp: match (snmp0, snmp1) {
            (Some(a), Some(b)) => Some(cpu::snmp_delta(&a, &b)),
            _ => None,
        },
        rejected_connections: 0,
    };
    intervals.sort_by(|a, b| {
        (a.index, a.dir.map(|d| d == FlowDir::Reverse))
            .cmp(&(b.index, b.dir.map(|d| d == FlowDir::Reverse)))
    });
    let loopback = addr.ip().is_loopback();
    Ok(summarize(
        cfg,
        format!("{}:{}", o.host, o.port),
        test_id,
        client,
        server,
        intervals,
        loopback,
    ))
}

/// A sum that saturates: the server's report supplies some of the numbers.
fn ssum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0, u64::saturating_add)
}

fn sum_window<'a>(ws: impl Iterator<Item = &'a WorkerReport>) -> crate::report::Counters {
    let mut c = crate::report::Counters::default();
    for w in ws {
        c.add(&w.window);
    }
    c
}

fn sum_total<'a>(ws: impl Iterator<Item = &'a WorkerReport>) -> crate::report::Counters {
    let mut c = crate::report::Counters::default();
    for w in ws {
        c.add(&w.total);
    }
    c
}

/// Build the final document from both sides' reports.
pub fn summarize(
    cfg: &TestConfig,
    server_addr: String,
    test_id: u64,
    client: SideReport,
    server: SideReport,
    intervals: Vec<IntervalReport>,
    loopback: bool,
) -> BenchResult {
    let mut results = Vec::new();
    let mut notes = Vec::new();
    let seconds = cfg.duration_ms as f64 / 1000.0;
    for dir in cfg.dirs() {
        let server_measures = cfg.test.is_stream() && dir == FlowDir::Forward;
        let (meas, other, by) = if server_measures {
            (&server, &client, "server")
        } else {
            (&client, &server, "client")
        };
        let mw = || {
            meas.workers
                .iter()
                .filter(move |w| w.dir == Some(dir) && w.role.is_some_and(|r| r.measures()))
        };
        let win = sum_window(mw());
        let tot = sum_total(mw());
        let unit = match cfg.test {
            TestKind::TcpStream => "bytes",
            TestKind::UdpStream => "datagrams",
            TestKind::TcpRr | TestKind::UdpRr => "transactions",
            TestKind::TcpCrr => "connections",
        };
        let latency = if cfg.test.is_stream() {
            None
        } else {
            let mut h = new_histogram();
            for w in mw() {
                let _ = h.add(hist_from_pairs(&w.hist));
            }
            Some(Latency::from_hist(&h))
        };
        let sender_side = if cfg.test.is_stream() { other } else { &client };
        let tcp_info: Vec<_> = if cfg.test.is_udp() {
            Vec::new()
        } else {
            sender_side
                .workers
                .iter()
                .filter(|w| w.dir == Some(dir))
                .flat_map(|w| w.tcp_info.iter().copied())
                .collect()
        };
        let retransmits = ssum(tcp_info.iter().map(|t| t.retransmits as u64));
        let (udp, kernel_check) = if cfg.test == TestKind::UdpStream {
            let sent = ssum(
                other
                    .workers
                    .iter()
                    .filter(|w| w.dir == Some(dir) && w.role == Some(Role::Send))
                    .map(|w| w.total.msgs),
            );
            let received = tot.msgs;
            let lost = sent.saturating_sub(received);
            let u = UdpSummary {
                sent,
                received,
                lost,
                loss_pct: if sent > 0 {
                    lost as f64 * 100.0 / sent as f64
                } else {
                    0.0
                },
                out_of_order: tot.out_of_order,
                duplicates: tot.duplicates,
                foreign: tot.foreign,
            };
            let shared_ns = loopback && cfg.direction == crate::config::Direction::Bidir;
            let kc = meas.udp_snmp.filter(|_| !shared_ns).map(|s| {
                let app = tot.reads;
                let k = s.in_datagrams;
                let diff = if k > 0 {
                    (k as f64 - app as f64) * 100.0 / k as f64
                } else if app > 0 {
                    -100.0
                } else {
                    0.0
                };
                let mut note = String::new();
                if diff.abs() > 0.5 {
                    note.push_str("other UDP traffic in the receiving namespace counts too; ");
                }
                if s.rcvbuf_errors > 0 {
                    note.push_str(&format!(
                        "{} datagrams were dropped at the receiving socket (RcvbufErrors): raise --rcvbuf; ",
                        s.rcvbuf_errors
                    ));
                }
                if note.is_empty() {
                    note.push_str("receiver count and kernel InDatagrams agree");
                }
                KernelCheck {
                    app_received: app,
                    kernel_in_datagrams: k,
                    kernel_rcvbuf_errors: s.rcvbuf_errors,
                    difference_pct: diff,
                    agrees: diff.abs() <= 0.5,
                    note: note.trim_end_matches("; ").to_string(),
                }
            });
            if let Some(k) = &kc {
                if !k.agrees {
                    notes.push(format!(
                        "{dir:?} receiver counted {} datagrams, the kernel {} ({:+.2} %): {}",
                        k.app_received, k.kernel_in_datagrams, k.difference_pct, k.note
                    ));
                }
            }
            (Some(u), kc)
        } else {
            (None, None)
        };
        let errors = ssum(
            client
                .workers
                .iter()
                .chain(&server.workers)
                .filter(|w| w.dir == Some(dir))
                .map(|w| w.total.errors),
        );
        results.push(DirSummary {
            dir: Some(dir),
            measured_by: by.into(),
            seconds,
            bytes: win.bytes,
            bits_per_sec: win.bytes as f64 * 8.0 / seconds,
            msgs: if cfg.test == TestKind::TcpStream {
                0
            } else {
                win.msgs
            },
            per_sec: if cfg.test == TestKind::TcpStream {
                0.0
            } else {
                win.msgs as f64 / seconds
            },
            unit: unit.into(),
            udp,
            latency,
            tcp_info,
            retransmits,
            lost: win.lost,
            errors,
            kernel_check,
        });
    }
    for (side, r) in [("client", &client), ("server", &server)] {
        for w in &r.workers {
            if let Some(e) = &w.error {
                notes.push(format!(
                    "{side} worker {} ({:?}): {}",
                    w.worker,
                    w.role,
                    proto::printable(e, 300)
                ));
            }
        }
    }
    if loopback {
        notes.push("client and server run on one host: both CPU reports show the same CPUs".into());
    }
    let bytes = ssum(results.iter().map(|r| r.bytes));
    let msgs = ssum(results.iter().map(|r| r.msgs));
    let sd = |r: &SideReport| service_demand(cfg.test, r.cpu.host_busy_us, bytes, msgs);
    BenchResult {
        schema_version: RESULT_SCHEMA_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
        server: server_addr,
        test_id,
        config: cfg.clone(),
        results,
        intervals,
        client_service_demand: sd(&client),
        server_service_demand: sd(&server),
        client,
        server_side: server,
        notes,
    }
}

/// netperf-style service demand: busy CPU µs of the host over the window per unit of work.
pub fn service_demand(t: TestKind, busy_us: f64, bytes: u64, msgs: u64) -> ServiceDemand {
    let per = |units: f64| (units > 0.0 && busy_us > 0.0).then(|| busy_us / units);
    ServiceDemand {
        us_per_mb: if t.is_stream() {
            per(bytes as f64 / 1e6)
        } else {
            None
        },
        us_per_transaction: if t.is_stream() {
            None
        } else {
            per(msgs as f64)
        },
        us_per_kpkt: if t == TestKind::UdpStream {
            per(msgs as f64 / 1000.0)
        } else {
            None
        },
    }
}
