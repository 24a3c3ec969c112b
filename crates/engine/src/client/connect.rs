//! The client's side of the handshake: resolving and connecting to the
//! server, the control-connection handshake, the data connections (TCP
//! flows, UDP flow sockets and their registration) and the wait for `go`.

use super::*;

/// The server's address: the first of the name's addresses of the family
/// `-4`/`-6` (or `--bind`) asks for.
fn resolve(o: &ClientOpts) -> Result<SocketAddr, EngineError> {
    let want = o.family.or(o.source.addr.map(Family::of));
    if let (Some(f), Some(b)) = (o.family, o.source.addr) {
        if Family::of(b) != f {
            return Err(EngineError::Run(format!(
                "--bind {b} is not an {} address",
                f.label()
            )));
        }
    }
    let all: Vec<SocketAddr> = (o.host.as_str(), o.port)
        .to_socket_addrs()
        .map_err(|e| EngineError::Resolve {
            host: o.host.clone(),
            reason: e.to_string(),
        })?
        .map(|a| SocketAddr::new(a.ip().to_canonical(), a.port()))
        .collect();
    match want {
        None => all.first().copied(),
        Some(f) => all.iter().copied().find(|a| Family::of(a.ip()) == f),
    }
    .ok_or_else(|| EngineError::Resolve {
        host: o.host.clone(),
        reason: match want {
            None => "no addresses".into(),
            Some(f) => format!("no {} address", f.label()),
        },
    })
}

/// The control connection, from `--bind`/`--bind-dev` when given.
fn connect_control(o: &ClientOpts, addr: SocketAddr) -> Result<TcpStream, EngineError> {
    let conn = |source| EngineError::Connect {
        addr: addr.to_string(),
        source,
    };
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )
    .map_err(conn)?;
    o.source
        .apply(&s, addr, 0)
        .map_err(|e| EngineError::Run(format!("control connection to {addr}: {e}")))?;
    s.connect_timeout(&addr.into(), o.connect_timeout)
        .map_err(conn)?;
    Ok(s.into())
}

/// Connect and authenticate; returns the control stream, its address and the
/// server's capabilities.
pub(super) fn handshake(
    o: &ClientOpts,
    cfg: &TestConfig,
) -> Result<(TcpStream, SocketAddr, Vec<String>), EngineError> {
    let addr = resolve(o)?;
    cfg.check_family(addr.is_ipv6()).map_err(|e| {
        EngineError::Run(format!(
            "{e} ({} is {})",
            addr.ip(),
            Family::of(addr.ip()).label()
        ))
    })?;
    let mut s = connect_control(o, addr)?;
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
    let hello = proto::read_msg(
        &mut DeadlineReader::new(&s, deadline),
        MAX_SERVER_HANDSHAKE_FRAME,
    )
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
        match proto::read_msg(
            &mut DeadlineReader::new(&s, deadline),
            MAX_SERVER_HANDSHAKE_FRAME,
        )
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
                    model::text::printable_capped(&message, 500)
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

fn udp_flow_socket(
    cfg: &TestConfig,
    server: SocketAddr,
    src: &Source,
    port: u16,
) -> Result<UdpSocket, EngineError> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(server),
        socket2::Type::DGRAM,
        None,
    )
    .map_err(io_run("UDP socket"))?;
    src.apply(&s, server, port).map_err(io_run("UDP socket"))?;
    if !(src.addr.is_some() || port != 0) {
        let any: SocketAddr = if server.is_ipv4() {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        s.bind(&any.into()).map_err(io_run("UDP socket"))?;
    }
    apply_opts(s.as_fd(), cfg, false, cfg.force_buffers)
        .map_err(|e| EngineError::Run(e.to_string()))?;
    let s: UdpSocket = s.into();
    s.connect(server).map_err(io_run("UDP connect"))?;
    Ok(s)
}

/// The client port of `flow` with `--cport` (stream tests only), checked.
pub(super) fn flow_port(
    cfg: &TestConfig,
    cport: Option<u16>,
    flow: u32,
) -> Result<u16, EngineError> {
    let Some(p) = cport.filter(|_| cfg.test.is_stream()) else {
        return Ok(0);
    };
    u32::from(p)
        .checked_add(flow)
        .and_then(|x| u16::try_from(x).ok())
        .ok_or_else(|| {
            EngineError::Run(format!(
                "--cport {p} with {} flows runs past port 65535",
                cfg.total_flows()
            ))
        })
}

/// Open the test's data sockets to `data` (TCP connections with their
/// preambles, or connected UDP sockets); returns them and, for udp-stream,
/// a clone of each flow's socket to send its registration on.
pub(super) fn connect_flows(
    o: &ClientOpts,
    cfg: &TestConfig,
    data: SocketAddr,
    test_id: u64,
    local: Option<std::net::IpAddr>,
) -> Result<(Sockets, Vec<(u32, UdpSocket)>), EngineError> {
    // With --cport, bind the control connection's own source address rather
    // than the wildcard, which would collide with every socket (TIME_WAIT
    // ones included) holding that port on any other local address.
    let src = match (o.cport, o.source.addr, local) {
        (Some(_), None, Some(ip)) => Source {
            addr: Some(ip),
            dev: o.source.dev.clone(),
        },
        _ => o.source.clone(),
    };
    let mut socks = Sockets {
        target: Some(data),
        ..Sockets::default()
    };
    let mut reg = Vec::new();
    for f in 0..cfg.total_flows() {
        match cfg.test.spec().transport {
            Transport::Tcp => {
                let s = socket2::Socket::new(
                    socket2::Domain::for_address(data),
                    socket2::Type::STREAM,
                    None,
                )
                .map_err(io_run("TCP socket"))?;
                let port = flow_port(cfg, o.cport, f)?;
                src.apply(&s, data, port)
                    .map_err(|e| EngineError::Run(format!("flow {f}: {e}")))?;
                apply_opts(s.as_fd(), cfg, true, cfg.force_buffers)
                    .map_err(|e| EngineError::Run(e.to_string()))?;
                s.connect_timeout(&data.into(), Duration::from_secs(5))
                    .map_err(|e| EngineError::Run(format!("data connection to {data}: {e}")))?;
                let mut s: TcpStream = s.into();
                s.write_all(&proto::data_preamble(test_id, f))
                    .map_err(io_run("data preamble"))?;
                socks.tcp.push(Some(s));
            }
            Transport::Udp => {
                let port = flow_port(cfg, o.cport, f)?;
                let s = udp_flow_socket(cfg, data, &src, port)
                    .map_err(|e| EngineError::Run(format!("flow {f}: {e}")))?;
                if cfg.test.spec().sequenced {
                    reg.push((f, s.try_clone().map_err(io_run("UDP socket"))?));
                }
                socks.udp.push(Some(s));
            }
            Transport::TcpPerTransaction => {}
        }
    }
    Ok((socks, reg))
}

/// Send every flow's registration datagram (again).
fn register(reg: &[(u32, UdpSocket)], tag: u32) {
    for (f, s) in reg {
        let _ = s.send(&UdpHeader::registration(tag, *f));
    }
}

/// `time` exchanges a scheduled start takes to read the server's clock.
const TIME_SAMPLES: u32 = 8;

/// The server's clock against ours over the control connection (the
/// exchange of the smallest round trip, NTP-style: [`model::clock`]). A
/// udp-stream server reads its flows' registrations before it answers:
/// they are sent again while an answer is awaited.
fn server_clock(
    ctrl: &mut TcpStream,
    addr: &SocketAddr,
    (reg, tag): (&[(u32, UdpSocket)], u32),
    interrupt: Option<&AnyFlag>,
) -> Result<model::clock::Offset, EngineError> {
    ctrl.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(io_run("control socket"))?;
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    model::clock::estimate_with(TIME_SAMPLES, crate::report::realtime_ns, || {
        proto::write_msg(ctrl, &Msg::Time).map_err(|e| perr(addr)(e.into()))?;
        loop {
            match proto::read_msg(ctrl, MAX_SERVER_HANDSHAKE_FRAME) {
                Ok(Msg::TimeIs { realtime_ns }) => return Ok(realtime_ns),
                Ok(other) => return Err(server_error(other)),
                Err(_) if interrupt.is_some_and(AnyFlag::raised) => {
                    return Err(EngineError::Interrupted("before the test started"))
                }
                Err(ProtoError::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if Instant::now() >= deadline {
                        return Err(perr(addr)(ProtoError::TimedOut {
                            what: "the server's time",
                            after: HANDSHAKE_TIMEOUT,
                        }));
                    }
                    register(reg, tag);
                }
                Err(e) => return Err(perr(addr)(e)),
            }
        }
    })?
    .ok_or_else(|| {
        EngineError::Run("this host's clock stepped back while reading the server's".into())
    })
}

/// A scheduled start with a server that takes one ([`proto::CAP_START_AT`]):
/// read its clock, say `connected_at` with `at` (our CLOCK_REALTIME, ns)
/// on its clock, and wait for `go`, all before `at`. Returns `at` as an
/// [`Instant`] (now for a past one): the workers sleep until it by
/// themselves, and so do the server's, so no message is on the way at `at`.
pub(super) fn await_scheduled_go(
    ctrl: &mut TcpStream,
    addr: &SocketAddr,
    (reg, tag): (&[(u32, UdpSocket)], u32),
    interrupt: Option<&AnyFlag>,
    at: u64,
) -> Result<Instant, EngineError> {
    register(reg, tag);
    let off = server_clock(ctrl, addr, (reg, tag), interrupt)?;
    let msg = Msg::ConnectedAt {
        start_at_unix_ns: off.to_agent(at),
    };
    await_go(ctrl, addr, (reg, tag), interrupt, &msg)?;
    let left = at.saturating_sub(crate::report::realtime_ns());
    Ok(Instant::now() + Duration::from_nanos(left))
}

/// Say `msg` (`connected`, or `connected_at`) and wait for `Go`,
/// re-sending the UDP registrations in case one was lost.
pub(super) fn await_go(
    ctrl: &mut TcpStream,
    addr: &SocketAddr,
    (reg, tag): (&[(u32, UdpSocket)], u32),
    interrupt: Option<&AnyFlag>,
    msg: &Msg,
) -> Result<(), EngineError> {
    register(reg, tag);
    proto::write_msg(ctrl, msg).map_err(|e| perr(addr)(e.into()))?;
    ctrl.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(io_run("control socket"))?;
    let go_deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match proto::read_msg(ctrl, MAX_SERVER_HANDSHAKE_FRAME) {
            Ok(Msg::Go) => return Ok(()),
            Ok(other) => return Err(server_error(other)),
            Err(_) if interrupt.is_some_and(AnyFlag::raised) => {
                return Err(EngineError::Interrupted("before the test started"))
            }
            Err(ProtoError::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) && Instant::now() < go_deadline =>
            {
                register(reg, tag);
            }
            Err(e) => return Err(perr(addr)(e)),
        }
    }
}
