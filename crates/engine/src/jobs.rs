//! The workloads' hot loops. Each runs on one worker thread over sockets it
//! owns. A worker with one socket blocks in the syscall (with a 100 ms timeout
//! so it still sees interval marks and the stop flag); a worker with several
//! uses non-blocking sockets and `poll`. No allocation happens in the loops.

use crate::config::{Direction, End, TestConfig, TestKind, UDP_HEADER};
use crate::proto::{data_preamble, parse_data_preamble};
use crate::sys::{self, Mmsg};
use crate::worker::{apply_opts, tcp_info_of, Ctx, Job, Params};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(100);
/// Open-loop senders spin (polling their sockets) rather than sleep for
/// waits shorter than this, so requests leave on time.
const SPIN_BELOW: Duration = Duration::from_micros(200);
const BATCH: usize = 64;
/// A UDP request with no answer for this long counts as lost.
const UDP_RR_TIMEOUT: Duration = Duration::from_millis(200);

/// A buffer of `len` bytes set to `byte`, or an error when the memory is not
/// there: a failed allocation ends this worker (and so its test) with a
/// message instead of aborting the whole process.
fn filled(len: usize, byte: u8) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!(
                "cannot allocate a buffer of {}",
                crate::config::human_bytes(len as u64)
            ),
        )
    })?;
    v.resize(len, byte);
    Ok(v)
}

/// Size of the receive buffer of a TCP stream receiver.
const TCP_RECV_BUF: usize = 256 * 1024;
/// UDP GRO receive batch: slots of 64 KiB.
const GRO_SLOTS: usize = 16;
/// Bytes of one flow's sequence window at a UDP receiver.
const SEQ_WIN_BYTES: u128 = std::mem::size_of::<SeqWin>() as u128;
/// Bytes one RR client keeps per request in flight (sequence, send time).
const RING_ENTRY_BYTES: u128 = std::mem::size_of::<(u64, Instant)>() as u128;
/// Bytes of one HDR histogram (1 ns – 100 s, 3 digits), rounded up; request
/// workers keep two.
const HIST_BYTES: u128 = 256 * 1024;

/// Bytes of buffers the workers of `end` allocate for a test: the sizes the
/// jobs below allocate (keep the two in step). Every input is a peer's
/// number, so this is computed in u128, where no product of them can
/// overflow, and saturates to u64.
pub fn buffer_bytes(cfg: &TestConfig, end: End) -> u64 {
    let size = u128::from(cfg.size);
    let k = u128::from(cfg.outstanding);
    let threads = u128::from(cfg.threads.max(1));
    let flows = u128::from(cfg.flows);
    let (fwd, rev) = match cfg.direction {
        Direction::Forward => (flows, 0),
        Direction::Reverse => (0, flows),
        Direction::Bidir => (flows, flows),
    };
    // Workers of a direction: flows spread over at most `threads`.
    let w = |n: u128| n.min(threads);
    let dg = size.max(UDP_HEADER as u128);
    let batch = BATCH as u128;
    let udp_recv = if cfg.udp_gro {
        GRO_SLOTS as u128 * 65536
    } else {
        batch * dg
    } + (fwd + rev) * SEQ_WIN_BYTES;
    let segs = if cfg.udp_gso {
        (GSO_SEGS as u128).min(65507 / size.max(1)).max(1)
    } else {
        0
    };
    let udp_send = batch * size + segs * size;
    let tcp_recv = TCP_RECV_BUF as u128;
    let rr = (size * k).max(64 * 1024);
    let hist = 2 * HIST_BYTES;
    let total = match (cfg.test, end) {
        (TestKind::TcpStream, End::Server) => w(fwd) * tcp_recv + w(rev) * size,
        (TestKind::TcpStream, End::Client) => w(fwd) * size + w(rev) * tcp_recv,
        (TestKind::TcpRr, End::Server) => w(fwd) * 2 * rr,
        (TestKind::TcpRr, End::Client) => {
            w(fwd) * ((size * k).max(size) + rr + hist) + fwd * k * RING_ENTRY_BYTES
        }
        (TestKind::TcpCrr, End::Server) => threads * (16 + 2 * size),
        (TestKind::TcpCrr, End::Client) => fwd * (16 + 2 * size + hist),
        (TestKind::UdpRr, End::Server) => threads * batch * dg,
        (TestKind::UdpRr, End::Client) => w(fwd) * (dg + 65536 + hist) + fwd * k * RING_ENTRY_BYTES,
        (TestKind::UdpStream, End::Server) => 65536 + w(fwd) * udp_recv + w(rev) * udp_send,
        (TestKind::UdpStream, End::Client) => w(fwd) * udp_send + w(rev) * udp_recv,
    };
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// Run a job to its end.
pub fn run(job: Job, ctx: &mut Ctx, p: &Params) -> io::Result<()> {
    match job {
        Job::TcpSend(f) => tcp_send(ctx, f, p),
        Job::TcpRecv(f) => tcp_recv(ctx, f, p),
        Job::UdpSend(f) => udp_send(ctx, f, p),
        Job::UdpRecv(s) => udp_recv(ctx, s, p),
        Job::TcpRrClient(f) => tcp_rr_client(ctx, f, p),
        Job::TcpRrServer(f) => tcp_rr_server(ctx, f, p),
        Job::UdpRrClient(f) => udp_rr_client(ctx, f, p),
        Job::UdpRrServer(s) => udp_rr_server(ctx, s, p),
        Job::CrrClient { target, flow } => crr_client(ctx, target, flow, p),
        Job::CrrServer(l) => crr_server(ctx, l, p),
    }
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

fn gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::NotConnected
    )
}

/// Poll `fds` for `events` until something is ready or `timeout`.
fn wait(pfds: &mut [libc::pollfd], timeout: Duration) -> io::Result<()> {
    let ms = timeout.as_micros().div_ceil(1000).min(100) as i32;
    sys::poll(pfds, ms).map(|_| ())
}

fn pollfds<'a, T: AsRawFd + 'a>(
    socks: impl Iterator<Item = &'a T>,
    events: i16,
) -> Vec<libc::pollfd> {
    socks
        .map(|s| libc::pollfd {
            fd: s.as_raw_fd(),
            events,
            revents: 0,
        })
        .collect()
}

fn blocking_tcp(s: &TcpStream, single: bool) -> io::Result<()> {
    s.set_nonblocking(!single)?;
    if single {
        s.set_read_timeout(Some(TICK))?;
        s.set_write_timeout(Some(TICK))?;
    }
    Ok(())
}

fn blocking_udp(s: &UdpSocket, single: bool) -> io::Result<()> {
    s.set_nonblocking(!single)?;
    if single {
        s.set_read_timeout(Some(TICK))?;
        s.set_write_timeout(Some(TICK))?;
    }
    Ok(())
}

/// Pacing: how long until `done + next` units are allowed at `rate` units/s.
fn pace(rate: f64, start: Instant, now: Instant, done: u64, next: u64) -> Option<Duration> {
    let allowed = rate * now.duration_since(start).as_secs_f64();
    let need = (done + next) as f64;
    if need <= allowed {
        None
    } else {
        Some(Duration::from_secs_f64(((need - allowed) / rate).min(0.1)))
    }
}

fn drain_errqueue(s: &TcpStream) {
    let sr = socket2::SockRef::from(s);
    let mut b = [std::mem::MaybeUninit::<u8>::uninit(); 64];
    for _ in 0..256 {
        if sr
            .recv_with_flags(&mut b, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT)
            .is_err()
        {
            break;
        }
    }
}

fn tcp_send(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>, p: &Params) -> io::Result<()> {
    let single = flows.len() == 1;
    let zc = p.cfg.zerocopy;
    for (_, s) in &flows {
        blocking_tcp(s, single)?;
        if zc {
            sys::set_int_opt(s.as_fd(), libc::SOL_SOCKET, sys::opt::SO_ZEROCOPY, 1)
                .map_err(|e| io::Error::other(format!("SO_ZEROCOPY: {e}")))?;
        }
    }
    let size = p.cfg.size as usize;
    let buf = filled(size, 0x5a)?;
    let flags = if zc { sys::opt::MSG_ZEROCOPY } else { 0 } | libc::MSG_NOSIGNAL;
    let rate = p.cfg.rate.map(|r| r / 8.0 / flows.len() as f64);
    let mut sent = vec![0u64; flows.len()];
    let mut open = vec![true; flows.len()];
    let mut pfds = pollfds(flows.iter().map(|(_, s)| s), libc::POLLOUT);
    let until = ctx.t.send_until();
    let mut zc_n = 0u32;
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= until || ctx.stopped() {
            break;
        }
        let mut progressed = false;
        let mut pace_wait: Option<Duration> = None;
        for (i, (_, s)) in flows.iter().enumerate() {
            if !open[i] {
                continue;
            }
            if let Some(r) = rate {
                if let Some(w) = pace(r, ctx.t.start, now, sent[i], size as u64) {
                    pace_wait = Some(pace_wait.map_or(w, |p| p.min(w)));
                    continue;
                }
            }
            match socket2::SockRef::from(s).send_with_flags(&buf, flags) {
                Ok(n) => {
                    sent[i] += n as u64;
                    ctx.c.bytes += n as u64;
                    progressed = true;
                    if zc {
                        zc_n += 1;
                        if zc_n % 16 == 0 {
                            drain_errqueue(s);
                        }
                    }
                }
                Err(e) if would_block(&e) => {}
                Err(e) if zc && e.raw_os_error() == Some(libc::ENOBUFS) => drain_errqueue(s),
                Err(e) if gone(&e) => {
                    open[i] = false;
                    ctx.c.errors += 1;
                }
                Err(e) => return Err(e),
            }
        }
        if !open.iter().any(|o| *o) {
            break;
        }
        if !progressed {
            if let Some(w) = pace_wait {
                std::thread::sleep(ctx.until_mark(now, w));
            } else if !single {
                wait(&mut pfds, ctx.until_mark(now, TICK))?;
            }
        }
    }
    for (f, s) in &flows {
        if let Some(t) = tcp_info_of(*f, s) {
            ctx.tcp_info.push(t);
        }
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    Ok(())
}

fn tcp_recv(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>, _p: &Params) -> io::Result<()> {
    let single = flows.len() == 1;
    for (_, s) in &flows {
        blocking_tcp(s, single)?;
    }
    let mut buf = filled(TCP_RECV_BUF, 0)?;
    let mut open = vec![true; flows.len()];
    let mut left = flows.len();
    let mut pfds = pollfds(flows.iter().map(|(_, s)| s), libc::POLLIN);
    let hard = ctx.t.hard_stop();
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= hard || ctx.stopped() || left == 0 {
            break;
        }
        let mut progressed = false;
        for (i, (_, s)) in flows.iter().enumerate() {
            if !open[i] {
                continue;
            }
            match (&*s).read(&mut buf) {
                Ok(0) => {
                    open[i] = false;
                    left -= 1;
                    pfds[i].events = 0;
                }
                Ok(n) => {
                    ctx.c.bytes += n as u64;
                    progressed = true;
                }
                Err(e) if would_block(&e) => {}
                Err(e) if gone(&e) => {
                    open[i] = false;
                    left -= 1;
                    pfds[i].events = 0;
                    ctx.c.errors += 1;
                }
                Err(e) => return Err(e),
            }
        }
        if !progressed && !single && left > 0 {
            wait(&mut pfds, ctx.until_mark(now, TICK))?;
        }
    }
    for (f, s) in &flows {
        if let Some(t) = tcp_info_of(*f, s) {
            ctx.tcp_info.push(t);
        }
    }
    Ok(())
}

fn put_header(b: &mut [u8], tag: u32, flow: u32, seq: u64) {
    b[..4].copy_from_slice(&tag.to_le_bytes());
    b[4..8].copy_from_slice(&flow.to_le_bytes());
    b[8..16].copy_from_slice(&seq.to_le_bytes());
}

fn get_header(b: &[u8]) -> Option<(u32, u32, u64)> {
    if b.len() < UDP_HEADER {
        return None;
    }
    let tag = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let flow = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let mut s = [0u8; 8];
    s.copy_from_slice(&b[8..16]);
    Some((tag, flow, u64::from_le_bytes(s)))
}

/// Sequence number of the registration datagrams a client sends before the
/// start (so the server learns each flow's address); never data.
pub const REGISTRATION_SEQ: u64 = u64::MAX;

/// Most datagrams one GSO send carries.
const GSO_SEGS: usize = 64;

fn udp_send(ctx: &mut Ctx, flows: Vec<(u32, UdpSocket)>, p: &Params) -> io::Result<()> {
    let size = p.cfg.size as usize;
    for (_, s) in &flows {
        blocking_udp(s, true)?;
        if p.cfg.udp_gso {
            sys::set_int_opt(
                s.as_fd(),
                sys::opt::SOL_UDP,
                sys::opt::UDP_SEGMENT,
                size as i32,
            )
            .map_err(|e| io::Error::other(format!("UDP_SEGMENT (--udp-gso): {e}")))?;
        }
    }
    let segs = if p.cfg.udp_gso {
        GSO_SEGS.min(65507 / size).max(1)
    } else {
        BATCH
    };
    let mut mm = Mmsg::new(BATCH, size);
    let mut big = if p.cfg.udp_gso {
        filled(segs.saturating_mul(size), 0)?
    } else {
        Vec::new()
    };
    let pps = p
        .cfg
        .rate
        .map(|r| r / (size as f64 * 8.0) / flows.len() as f64);
    let mut seq = vec![0u64; flows.len()];
    let until = ctx.t.send_until();
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= until || ctx.stopped() {
            break;
        }
        let mut pace_wait: Option<Duration> = None;
        for (i, (flow, s)) in flows.iter().enumerate() {
            let mut n = segs;
            if let Some(r) = pps {
                let allowed = (r * now.duration_since(ctx.t.start).as_secs_f64()) as u64;
                let can = allowed.saturating_sub(seq[i]) as usize;
                if can == 0 {
                    let w = pace(r, ctx.t.start, now, seq[i], 1).unwrap_or(Duration::ZERO);
                    pace_wait = Some(pace_wait.map_or(w, |p| p.min(w)));
                    continue;
                }
                n = n.min(can);
            }
            let res = if p.cfg.udp_gso {
                for j in 0..n {
                    put_header(&mut big[j * size..], p.tag, *flow, seq[i] + j as u64);
                }
                s.send(&big[..n * size]).map(|b| b / size)
            } else {
                for j in 0..n {
                    put_header(mm.slot_mut(j), p.tag, *flow, seq[i] + j as u64);
                }
                mm.send(s.as_fd(), n, size, libc::MSG_NOSIGNAL)
            };
            match res {
                Ok(k) => {
                    seq[i] += k as u64;
                    ctx.c.msgs += k as u64;
                    ctx.c.bytes += (k * size) as u64;
                }
                Err(e) if would_block(&e) => {}
                Err(e)
                    if gone(&e)
                        || e.raw_os_error() == Some(libc::ENOBUFS)
                        || e.raw_os_error() == Some(libc::EMSGSIZE) =>
                {
                    ctx.c.errors += 1;
                    if e.raw_os_error() == Some(libc::EMSGSIZE) {
                        return Err(io::Error::other(format!(
                            "datagram of {size} bytes too large for the path: {e}"
                        )));
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(w) = pace_wait {
            std::thread::sleep(ctx.until_mark(now, w));
        }
    }
    Ok(())
}

/// Sequence tracking of one UDP flow at the receiver: a 1024-datagram window.
#[derive(Debug, Clone)]
struct SeqWin {
    next: u64,
    bits: [u64; 16],
}

const WIN: u64 = 1024;

enum Seen {
    New(u64),
    Late,
    Dup,
}

impl SeqWin {
    fn new() -> SeqWin {
        SeqWin {
            next: 0,
            bits: [0; 16],
        }
    }
    #[inline]
    fn bit(seq: u64) -> (usize, u64) {
        let i = seq % WIN;
        ((i / 64) as usize, 1u64 << (i % 64))
    }
    #[inline]
    fn on(&mut self, seq: u64) -> Seen {
        if seq >= self.next {
            let gap = seq - self.next;
            if gap >= WIN {
                self.bits = [0; 16];
            } else {
                for s in self.next..seq {
                    let (w, b) = Self::bit(s);
                    self.bits[w] &= !b;
                }
            }
            let (w, b) = Self::bit(seq);
            self.bits[w] |= b;
            let adv = (seq - self.next).saturating_add(1);
            self.next = seq.saturating_add(1);
            Seen::New(adv)
        } else if self.next - seq > WIN {
            Seen::Late
        } else {
            let (w, b) = Self::bit(seq);
            if self.bits[w] & b != 0 {
                Seen::Dup
            } else {
                self.bits[w] |= b;
                Seen::Late
            }
        }
    }
}

#[inline]
fn count_datagram(ctx: &mut Ctx, wins: &mut [SeqWin], tag: u32, d: &[u8]) {
    let Some((t, flow, seq)) = get_header(d) else {
        ctx.c.foreign += 1;
        return;
    };
    if t != tag || flow as usize >= wins.len() {
        ctx.c.foreign += 1;
        return;
    }
    if seq == REGISTRATION_SEQ {
        return;
    }
    match wins[flow as usize].on(seq) {
        Seen::New(adv) => {
            ctx.c.expected += adv;
            ctx.c.msgs += 1;
            ctx.c.bytes += d.len() as u64;
        }
        Seen::Late => {
            ctx.c.out_of_order += 1;
            ctx.c.msgs += 1;
            ctx.c.bytes += d.len() as u64;
        }
        Seen::Dup => ctx.c.duplicates += 1,
    }
}

fn udp_recv(ctx: &mut Ctx, socks: Vec<UdpSocket>, p: &Params) -> io::Result<()> {
    let single = socks.len() == 1;
    let size = p.cfg.size as usize;
    for s in &socks {
        blocking_udp(s, single)?;
        if p.cfg.udp_gro {
            sys::set_int_opt(s.as_fd(), sys::opt::SOL_UDP, sys::opt::UDP_GRO, 1)
                .map_err(|e| io::Error::other(format!("UDP_GRO (--udp-gro): {e}")))?;
        }
    }
    let mut mm = if p.cfg.udp_gro {
        Mmsg::new(GRO_SLOTS, 65536)
    } else {
        Mmsg::new(BATCH, size.max(UDP_HEADER))
    };
    let mut wins = vec![SeqWin::new(); p.cfg.total_flows() as usize];
    let mut pfds = pollfds(socks.iter(), libc::POLLIN);
    let hard = ctx.t.hard_stop();
    let n = mm.slots();
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= hard || ctx.stopped() {
            break;
        }
        let mut progressed = false;
        for s in &socks {
            match mm.recv(s.as_fd(), n, !single) {
                Ok(k) => {
                    progressed |= k > 0;
                    ctx.c.reads += k as u64;
                    for i in 0..k {
                        let m = mm.msg(i);
                        if p.cfg.udp_gro {
                            for seg in m.chunks(size) {
                                count_datagram(ctx, &mut wins, p.tag, seg);
                            }
                        } else {
                            count_datagram(ctx, &mut wins, p.tag, m);
                        }
                    }
                }
                Err(e) if would_block(&e) || gone(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if !progressed && !single {
            wait(&mut pfds, ctx.until_mark(now, TICK))?;
        }
    }
    Ok(())
}

/// One RR flow's client state. The ring holds the (intended) send time of
/// every request in flight; it never grows past its preallocated capacity.
struct RrFlow {
    ring: VecDeque<(u64, Instant)>,
    rx_pending: usize,
    tx_owed: usize,
    next_k: u64,
    seq: u64,
}

fn tcp_rr_client(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>, p: &Params) -> io::Result<()> {
    if p.cfg.rate.is_some() {
        sys::set_timer_slack_ns(1);
    }
    let size = p.cfg.size as usize;
    let k = p.cfg.outstanding as usize;
    let rate = p.cfg.rate.map(|r| r / flows.len() as f64);
    let busy = Duration::from_micros(p.cfg.busy_poll_us as u64);
    let single = flows.len() == 1 && rate.is_none() && busy.is_zero();
    for (_, s) in &flows {
        blocking_tcp(s, single)?;
    }
    let cap = k;
    let now = Instant::now();
    let mut st: Vec<RrFlow> = flows
        .iter()
        .map(|_| {
            let mut ring = VecDeque::with_capacity(cap);
            let mut tx_owed = 0;
            if rate.is_none() {
                for _ in 0..k {
                    ring.push_back((0, now));
                }
                tx_owed = k * size;
            }
            RrFlow {
                ring,
                rx_pending: 0,
                tx_owed,
                next_k: 0,
                seq: 0,
            }
        })
        .collect();
    let req = filled(size.saturating_mul(k).max(size), 0x52)?;
    let mut buf = filled(size.saturating_mul(k).max(64 * 1024), 0)?;
    let mut pfds = pollfds(flows.iter().map(|(_, s)| s), libc::POLLIN);
    let end = ctx.t.win_end();
    let start = ctx.t.start;
    let mut idle_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= end || ctx.stopped() {
            break;
        }
        let mut progressed = false;
        let mut next_due: Option<Instant> = None;
        for (i, (_, s)) in flows.iter().enumerate() {
            let f = &mut st[i];
            if let Some(r) = rate {
                loop {
                    let due = start + Duration::from_secs_f64(f.next_k as f64 / r);
                    if due > now {
                        next_due = Some(next_due.map_or(due, |d| d.min(due)));
                        break;
                    }
                    if f.ring.len() >= cap {
                        break;
                    }
                    f.ring.push_back((0, due));
                    f.tx_owed += size;
                    f.next_k += 1;
                }
            }
            while f.tx_owed > 0 {
                let n = f.tx_owed.min(req.len());
                match (&*s).write(&req[..n]) {
                    Ok(w) => {
                        f.tx_owed -= w;
                        progressed = true;
                    }
                    Err(e) if would_block(&e) => break,
                    Err(e) => return Err(e),
                }
            }
            match (&*s).read(&mut buf) {
                Ok(0) => return Err(io::Error::other("server closed the connection")),
                Ok(n) => {
                    let t = Instant::now();
                    progressed = true;
                    f.rx_pending += n;
                    let done = f.rx_pending / size;
                    f.rx_pending %= size;
                    for _ in 0..done {
                        if let Some((_, sent)) = f.ring.pop_front() {
                            ctx.record(t.duration_since(sent).as_nanos() as u64);
                        }
                        ctx.c.msgs += 1;
                        ctx.c.bytes += size as u64;
                        if rate.is_none() {
                            f.ring.push_back((0, t));
                            f.tx_owed += size;
                        }
                    }
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
            pfds[i].events = libc::POLLIN | if f.tx_owed > 0 { libc::POLLOUT } else { 0 };
        }
        if progressed {
            idle_since = None;
        } else if !single {
            if !busy.is_zero() {
                let since = *idle_since.get_or_insert(now);
                if now.duration_since(since) < busy {
                    continue;
                }
            }
            let mut tmo = ctx.until_mark(now, TICK);
            if let Some(d) = next_due {
                tmo = tmo.min(d.saturating_duration_since(now));
            }
            if tmo >= SPIN_BELOW {
                sys::ppoll(&mut pfds, tmo - SPIN_BELOW / 2)?;
            }
        }
    }
    for (f, s) in &flows {
        if let Some(t) = tcp_info_of(*f, s) {
            ctx.tcp_info.push(t);
        }
    }
    Ok(())
}

fn tcp_rr_server(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>, p: &Params) -> io::Result<()> {
    let size = p.cfg.size as usize;
    let busy = Duration::from_micros(p.cfg.busy_poll_us as u64);
    let single = flows.len() == 1 && busy.is_zero();
    for (_, s) in &flows {
        blocking_tcp(s, single)?;
    }
    let inflight = size.saturating_mul(p.cfg.outstanding as usize);
    let resp = filled(inflight.max(64 * 1024), 0x41)?;
    let mut buf = filled(inflight.max(64 * 1024), 0)?;
    let mut pending = vec![0usize; flows.len()];
    let mut owed = vec![0usize; flows.len()];
    let mut open = vec![true; flows.len()];
    let mut left = flows.len();
    let mut pfds = pollfds(flows.iter().map(|(_, s)| s), libc::POLLIN);
    let hard = ctx.t.hard_stop();
    let mut idle_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= hard || ctx.stopped() || left == 0 {
            break;
        }
        let mut progressed = false;
        for (i, (_, s)) in flows.iter().enumerate() {
            if !open[i] {
                continue;
            }
            match (&*s).read(&mut buf) {
                Ok(0) => {
                    open[i] = false;
                    left -= 1;
                    pfds[i].events = 0;
                    continue;
                }
                Ok(n) => {
                    progressed = true;
                    pending[i] += n;
                    let done = pending[i] / size;
                    pending[i] %= size;
                    owed[i] += done * size;
                    ctx.c.msgs += done as u64;
                    ctx.c.bytes += n as u64;
                }
                Err(e) if would_block(&e) => {}
                Err(e) if gone(&e) => {
                    open[i] = false;
                    left -= 1;
                    pfds[i].events = 0;
                    continue;
                }
                Err(e) => return Err(e),
            }
            while owed[i] > 0 {
                let n = owed[i].min(resp.len());
                match (&*s).write(&resp[..n]) {
                    Ok(w) => owed[i] -= w,
                    Err(e) if would_block(&e) => break,
                    Err(e) if gone(&e) => {
                        owed[i] = 0;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            pfds[i].events = libc::POLLIN | if owed[i] > 0 { libc::POLLOUT } else { 0 };
        }
        if progressed {
            idle_since = None;
        } else if !single {
            if !busy.is_zero() {
                let since = *idle_since.get_or_insert(now);
                if now.duration_since(since) < busy {
                    continue;
                }
            }
            wait(&mut pfds, ctx.until_mark(now, TICK))?;
        }
    }
    Ok(())
}

fn udp_rr_client(ctx: &mut Ctx, flows: Vec<(u32, UdpSocket)>, p: &Params) -> io::Result<()> {
    if p.cfg.rate.is_some() {
        sys::set_timer_slack_ns(1);
    }
    let size = p.cfg.size as usize;
    let header = size >= UDP_HEADER;
    let k = p.cfg.outstanding as usize;
    let rate = p.cfg.rate.map(|r| r / flows.len() as f64);
    let busy = Duration::from_micros(p.cfg.busy_poll_us as u64);
    let single = flows.len() == 1 && rate.is_none() && busy.is_zero();
    for (_, s) in &flows {
        blocking_udp(s, single)?;
    }
    let cap = k;
    let mut st: Vec<RrFlow> = flows
        .iter()
        .map(|_| RrFlow {
            ring: VecDeque::with_capacity(cap),
            rx_pending: 0,
            tx_owed: 0,
            next_k: 0,
            seq: 0,
        })
        .collect();
    let mut req = filled(size.max(UDP_HEADER), 0x55)?;
    let mut buf = vec![0u8; 65536];
    let mut pfds = pollfds(flows.iter().map(|(_, s)| s), libc::POLLIN);
    let end = ctx.t.win_end();
    let start = ctx.t.start;
    let mut idle_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= end || ctx.stopped() {
            break;
        }
        let mut progressed = false;
        let mut next_due: Option<Instant> = None;
        for (i, (flow, s)) in flows.iter().enumerate() {
            let f = &mut st[i];
            // Give up on requests that got no answer.
            while let Some(&(_, t)) = f.ring.front() {
                if now.duration_since(t) < UDP_RR_TIMEOUT {
                    break;
                }
                f.ring.pop_front();
                ctx.c.lost += 1;
            }
            loop {
                let due = match rate {
                    Some(r) => {
                        let due = start + Duration::from_secs_f64(f.next_k as f64 / r);
                        if due > now {
                            next_due = Some(next_due.map_or(due, |d| d.min(due)));
                            break;
                        }
                        due
                    }
                    None => now,
                };
                if f.ring.len() >= cap {
                    break;
                }
                if header {
                    put_header(&mut req, p.tag, *flow, f.seq);
                }
                match s.send(&req[..size]) {
                    Ok(_) => {
                        f.ring.push_back((f.seq, due));
                        f.seq += 1;
                        f.next_k += 1;
                        progressed = true;
                    }
                    Err(e) if would_block(&e) => break,
                    Err(e) if gone(&e) => {
                        ctx.c.errors += 1;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            loop {
                match s.recv(&mut buf) {
                    Ok(n) => {
                        let t = Instant::now();
                        progressed = true;
                        let hit = if header {
                            match get_header(&buf[..n]) {
                                Some((tag, _, seq)) if tag == p.tag => {
                                    if f.ring.front().is_some_and(|e| e.0 == seq) {
                                        f.ring.pop_front()
                                    } else {
                                        f.ring
                                            .iter()
                                            .position(|e| e.0 == seq)
                                            .and_then(|pos| f.ring.remove(pos))
                                    }
                                }
                                _ => None,
                            }
                        } else {
                            f.ring.pop_front()
                        };
                        match hit {
                            Some((_, sent)) => {
                                ctx.record(t.duration_since(sent).as_nanos() as u64);
                                ctx.c.msgs += 1;
                                ctx.c.bytes += n as u64;
                            }
                            None => ctx.c.foreign += 1,
                        }
                        if single {
                            break;
                        }
                    }
                    Err(e) if would_block(&e) => break,
                    Err(e) if gone(&e) => {
                        ctx.c.errors += 1;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        if progressed {
            idle_since = None;
        } else if !single {
            if !busy.is_zero() {
                let since = *idle_since.get_or_insert(now);
                if now.duration_since(since) < busy {
                    continue;
                }
            }
            let mut tmo = ctx.until_mark(now, TICK);
            if let Some(d) = next_due {
                tmo = tmo.min(d.saturating_duration_since(now));
            }
            if tmo >= SPIN_BELOW {
                sys::ppoll(&mut pfds, tmo - SPIN_BELOW / 2)?;
            }
        }
    }
    Ok(())
}

fn udp_rr_server(ctx: &mut Ctx, socks: Vec<UdpSocket>, p: &Params) -> io::Result<()> {
    let busy = Duration::from_micros(p.cfg.busy_poll_us as u64);
    let single = socks.len() == 1 && busy.is_zero();
    for s in &socks {
        blocking_udp(s, single)?;
    }
    let mut mm = Mmsg::new(BATCH, (p.cfg.size as usize).max(UDP_HEADER));
    let mut pfds = pollfds(socks.iter(), libc::POLLIN);
    let hard = ctx.t.hard_stop();
    // Batch size adapts: one request at a time needs no second recvmmsg
    // attempt; a full batch doubles it, up to the slots there are.
    let mut n = 1usize;
    let mut idle_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= hard || ctx.stopped() {
            break;
        }
        let mut progressed = false;
        for s in &socks {
            match mm.recv(s.as_fd(), n, !single) {
                Ok(k) if k > 0 => {
                    progressed = true;
                    n = if k == n {
                        (n * 2).min(mm.slots())
                    } else {
                        k.max(1)
                    };
                    for i in 0..k {
                        ctx.c.bytes += mm.len(i) as u64;
                    }
                    ctx.c.msgs += k as u64;
                    if let Err(e) = mm.echo(s.as_fd(), k) {
                        if !would_block(&e) && !gone(&e) {
                            return Err(e);
                        }
                        ctx.c.errors += 1;
                    }
                }
                Ok(_) => {}
                Err(e) if would_block(&e) || gone(&e) => {}
                Err(e) => return Err(e),
            }
        }
        if progressed {
            idle_since = None;
        } else if !single {
            if !busy.is_zero() {
                let since = *idle_since.get_or_insert(now);
                if now.duration_since(since) < busy {
                    continue;
                }
            }
            wait(&mut pfds, ctx.until_mark(now, TICK))?;
        }
    }
    Ok(())
}

fn crr_client(
    ctx: &mut Ctx,
    target: std::net::SocketAddr,
    flow: u32,
    p: &Params,
) -> io::Result<()> {
    let size = p.cfg.size as usize;
    let mut req = data_preamble(p.test_id, flow).to_vec();
    req.resize(16 + size, 0x43);
    let mut resp = filled(size, 0)?;
    let end = ctx.t.win_end();
    let domain = socket2::Domain::for_address(target);
    let addr = socket2::SockAddr::from(target);
    let mut consecutive_failures = 0u32;
    loop {
        let t0 = Instant::now();
        ctx.tick(t0);
        if t0 >= end || ctx.stopped() {
            break;
        }
        let r: io::Result<()> = (|| {
            let s = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
            s.set_write_timeout(Some(Duration::from_secs(1)))?;
            s.set_read_timeout(Some(Duration::from_secs(1)))?;
            apply_opts(s.as_fd(), &p.cfg, true);
            s.connect(&addr)?;
            let mut s: TcpStream = s.into();
            s.write_all(&req)?;
            s.read_exact(&mut resp)?;
            Ok(())
        })();
        match r {
            Ok(()) => {
                let t1 = Instant::now();
                ctx.record(t1.duration_since(t0).as_nanos() as u64);
                ctx.c.msgs += 1;
                ctx.c.bytes += size as u64;
                consecutive_failures = 0;
            }
            Err(e) => {
                ctx.c.lost += 1;
                consecutive_failures += 1;
                if consecutive_failures >= 1000 {
                    return Err(io::Error::other(format!(
                        "1000 connections in a row failed, last: {e}"
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    Ok(())
}

fn crr_server(ctx: &mut Ctx, l: std::net::TcpListener, p: &Params) -> io::Result<()> {
    let size = p.cfg.size as usize;
    socket2::SockRef::from(&l).set_read_timeout(Some(TICK))?;
    let mut req = filled(size.saturating_add(16), 0)?;
    let resp = filled(size, 0x63)?;
    let mut sink = [0u8; 64];
    let hard = ctx.t.hard_stop();
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= hard || ctx.stopped() {
            break;
        }
        let (mut s, _) = match l.accept() {
            Ok(c) => c,
            Err(e) if would_block(&e) || gone(&e) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                ctx.c.errors += 1;
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            Err(e) => return Err(e),
        };
        let r: io::Result<bool> = (|| {
            s.set_read_timeout(Some(Duration::from_secs(1)))?;
            s.set_write_timeout(Some(Duration::from_secs(1)))?;
            apply_opts(s.as_fd(), &p.cfg, true);
            s.read_exact(&mut req)?;
            let mut pre = [0u8; 16];
            pre.copy_from_slice(&req[..16]);
            match parse_data_preamble(&pre) {
                Some((id, _)) if id == p.test_id => {}
                _ => return Ok(false),
            }
            s.write_all(&resp)?;
            while s.read(&mut sink)? > 0 {}
            Ok(true)
        })();
        match r {
            Ok(true) => {
                ctx.c.msgs += 1;
                ctx.c.bytes += size as u64;
            }
            Ok(false) => ctx.c.foreign += 1,
            Err(_) => ctx.c.errors += 1,
        }
    }
    Ok(())
}

/// Whether a test kind's client is the measuring side.
pub fn client_measures(t: TestKind) -> bool {
    !t.is_stream()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_window_counts_reorder_and_dups() {
        let mut w = SeqWin::new();
        assert!(matches!(w.on(0), Seen::New(1)));
        assert!(matches!(w.on(2), Seen::New(2)));
        assert!(matches!(w.on(1), Seen::Late));
        assert!(matches!(w.on(1), Seen::Dup));
        assert!(matches!(w.on(2), Seen::Dup));
        assert!(matches!(w.on(5000), Seen::New(4998)));
        assert!(matches!(w.on(3), Seen::Late));
        assert!(matches!(w.on(4999), Seen::Late));
        assert!(matches!(w.on(4999), Seen::Dup));
    }

    #[test]
    fn pacing() {
        let s = Instant::now();
        assert!(pace(1000.0, s, s + Duration::from_secs(1), 0, 500).is_none());
        let w = pace(1000.0, s, s + Duration::from_secs(1), 1000, 100).unwrap();
        assert!((w.as_secs_f64() - 0.1).abs() < 1e-6);
    }
}
