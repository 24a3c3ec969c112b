//! A session's data plane: the data port, accepting the client's TCP flows
//! (or registering its UDP flow sockets) and starting the workers.

use super::*;

/// Open the test's data sockets on `ip`; UDP sockets take datagrams only
/// from `peer` (the control connection's peer address). For tcp-stream and
/// tcp-rr the one listener is returned apart; its connections come later.
pub(super) fn bind_data(
    cfg: &TestConfig,
    ip: IpAddr,
    peer: IpAddr,
    force: bool,
) -> std::io::Result<(Sockets, Option<TcpListener>, u16)> {
    let any = SocketAddr::new(ip, 0);
    let mut socks = Sockets::default();
    match cfg.test.spec().transport {
        Transport::Tcp => {
            let l = reuseport_listener(any, 1024)?;
            // Buffer sizes set on the listener reach the accepted sockets
            // before the handshake, so they shape the window scale.
            apply_opts(l.as_fd(), cfg, true, force)?;
            let port = l.local_addr()?.port();
            Ok((socks, Some(l), port))
        }
        Transport::TcpPerTransaction => {
            let first = reuseport_listener(any, 4096)?;
            let port = first.local_addr()?.port();
            let mut v = vec![first];
            for _ in 1..cfg.threads {
                v.push(reuseport_listener(SocketAddr::new(ip, port), 4096)?);
            }
            for l in &v {
                apply_opts(l.as_fd(), cfg, true, force)?;
            }
            socks.listeners = v.into_iter().map(Some).collect();
            Ok((socks, None, port))
        }
        Transport::Udp => {
            let first = reuseport_udp_from(any, peer)?;
            let port = first.local_addr()?.port();
            let mut v = vec![first];
            for _ in 1..cfg.threads {
                v.push(reuseport_udp_from(SocketAddr::new(ip, port), peer)?);
            }
            for s in &v {
                apply_opts(s.as_fd(), cfg, false, force)?;
            }
            socks.shared_udp = v.into_iter().map(Some).collect();
            Ok((socks, None, port))
        }
    }
}

/// Accept the test's TCP flows (matching test id, each flow once), by flow.
fn accept_flows(
    l: &TcpListener,
    cfg: &TestConfig,
    (test_id, force): (u64, bool),
    rejected: &mut u64,
) -> Result<Vec<Option<TcpStream>>, FlowError> {
    let n = cfg.total_flows() as usize;
    let mut got: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    socket2::SockRef::from(l).set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut have = 0;
    while have < n {
        if Instant::now() >= deadline {
            return Err(FlowError::TcpShort { have, want: n });
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
                apply_opts(s.as_fd(), cfg, true, force).map_err(std::io::Error::from)?;
                got[f as usize] = Some(s);
                have += 1;
            }
            _ => *rejected += 1,
        }
    }
    Ok(got)
}

/// Learn the client address of each UDP stream flow from its registration
/// datagrams, and open a connected socket per flow on the data port, so
/// flows spread over the receiving workers exactly as TCP flows do (a hash
/// over SO_REUSEPORT sockets may put two flows on one). Registrations count
/// only from `peer`, the control connection's address.
fn register_udp(
    socks: &[Option<UdpSocket>],
    cfg: &TestConfig,
    (tag, force): (u32, bool),
    local: SocketAddr,
    peer: IpAddr,
) -> Result<Vec<Option<UdpSocket>>, FlowError> {
    let want = cfg.total_flows();
    let mut addrs: HashMap<u32, SocketAddr> = HashMap::new();
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let mut buf = vec![0u8; crate::work::REGISTRATION_BUF];
    for s in socks.iter().flatten() {
        s.set_read_timeout(Some(Duration::from_millis(20)))?;
    }
    while addrs.len() < want as usize {
        if Instant::now() >= deadline {
            return Err(FlowError::UdpShort {
                have: addrs.len(),
                want: want as usize,
            });
        }
        for s in socks.iter().flatten() {
            if let Ok((n, from)) = s.recv_from(&mut buf) {
                match UdpHeader::get(&buf[..n]) {
                    Some(h)
                        if h.tag == tag && h.flow < want && from.ip().to_canonical() == peer =>
                    {
                        addrs.insert(h.flow, from);
                    }
                    _ => {}
                }
            }
        }
    }
    let mut out = Vec::new();
    for f in 0..want {
        let s = reuseport_udp_from(local, peer)?;
        apply_opts(s.as_fd(), cfg, false, force).map_err(std::io::Error::from)?;
        if let Some(a) = addrs.get(&f) {
            s.connect(*a)?;
        }
        out.push(Some(s));
    }
    Ok(out)
}

/// Open, accept or register the data flows and start the workers.
pub(super) fn start_workers(
    side: &mut SideRun,
    (mut socks, listener): (Sockets, Option<TcpListener>),
    cfg: &TestConfig,
    local: SocketAddr,
    peer: IpAddr,
    rejected: &mut u64,
) -> Result<(), SessionError> {
    let p = side.params();
    let (test_id, tag, force) = (p.test_id, p.tag, p.force_buffers);
    if let Some(l) = listener {
        socks.tcp = accept_flows(&l, cfg, (test_id, force), rejected)?;
    }
    if cfg.test.spec().sequenced {
        socks.udp = register_udp(&socks.shared_udp, cfg, (tag, force), local, peer)?;
    }
    side.add_planned(End::Server, &mut socks)
        .map_err(SessionError::Worker)
}
