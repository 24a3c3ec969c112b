//! The workloads' hot loops. Each runs on one worker thread over sockets it
//! owns, plugged into the one poll driver of [`driver`]: a workload only
//! says what one pass over its sockets does; the driver owns the clock,
//! interval marks, stop flags, busy-polling and the idle wait. A worker with
//! one socket blocks in the syscall (with a 100 ms timeout so it still sees
//! interval marks and the stop flag); a worker with several uses
//! non-blocking sockets and `poll`. No allocation happens in the loops.

mod crr;
mod driver;
mod flows;
mod tcp_rr;
mod tcp_stream;
mod udp_rr;
mod udp_stream;

use crate::config::{
    human_bytes, ConfigError, Direction, End, Limits, TestConfig, TestKind, UDP_HEADER,
};
use crate::worker::{Ctx, Params};
use std::io;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Longest a worker blocks in one syscall or poll.
const TICK: Duration = Duration::from_millis(100);
/// Open-loop senders spin (polling their sockets) rather than sleep for
/// waits shorter than this, so requests leave on time.
const SPIN_BELOW: Duration = Duration::from_micros(200);
/// Datagrams per sendmmsg/recvmmsg batch.
const BATCH: usize = 64;
/// Size of the receive buffer of a TCP stream receiver.
const TCP_RECV_BUF: usize = 256 * 1024;
/// UDP GRO receive batch: slots of 64 KiB.
const GRO_SLOTS: usize = 16;
/// Most datagrams one GSO send carries.
const GSO_SEGS: usize = 64;
/// Bytes one RR client keeps per request in flight (sequence, send time).
const RING_ENTRY_BYTES: u128 = std::mem::size_of::<(u64, Instant)>() as u128;
/// Bytes of one HDR histogram (1 ns – 100 s, 3 digits), rounded up; request
/// workers keep two.
const HIST_BYTES: u128 = 256 * 1024;

/// Sockets a worker runs on.
#[derive(Debug)]
pub(crate) enum Job {
    /// TCP stream sender over these (flow, socket) pairs.
    TcpSend(Vec<(u32, TcpStream)>),
    /// TCP stream receiver.
    TcpRecv(Vec<(u32, TcpStream)>),
    /// UDP stream sender over connected sockets.
    UdpSend(Vec<(u32, UdpSocket)>),
    /// UDP stream receiver over these sockets (any flows).
    UdpRecv(Vec<UdpSocket>),
    /// TCP RR client.
    TcpRrClient(Vec<(u32, TcpStream)>),
    /// TCP RR server.
    TcpRrServer(Vec<(u32, TcpStream)>),
    /// UDP RR client over connected sockets.
    UdpRrClient(Vec<(u32, UdpSocket)>),
    /// UDP RR server (echo) over these sockets.
    UdpRrServer(Vec<UdpSocket>),
    /// TCP CRR client: connect to `target` again and again as `flow`.
    CrrClient {
        /// Server data address.
        target: std::net::SocketAddr,
        /// Flow index (in the preamble).
        flow: u32,
    },
    /// TCP CRR server on a SO_REUSEPORT listener.
    CrrServer(TcpListener),
}

/// Run a job to its end.
pub(crate) fn run(job: Job, ctx: &mut Ctx, p: &Params) -> io::Result<()> {
    match job {
        Job::TcpSend(f) => tcp_stream::send(ctx, f, p),
        Job::TcpRecv(f) => tcp_stream::recv(ctx, f),
        Job::UdpSend(f) => udp_stream::send(ctx, f, p),
        Job::UdpRecv(s) => udp_stream::recv(ctx, s, p),
        Job::TcpRrClient(f) => tcp_rr::client(ctx, f, p),
        Job::TcpRrServer(f) => tcp_rr::server(ctx, f, p),
        Job::UdpRrClient(f) => udp_rr::client(ctx, f, p),
        Job::UdpRrServer(s) => udp_rr::server(ctx, s, p),
        Job::CrrClient { target, flow } => crr::client(ctx, target, flow, p),
        Job::CrrServer(l) => crr::server(ctx, l, p),
    }
}

/// Bytes of buffers the workers of `end` allocate for a test: the sizes the
/// workloads allocate (keep the two in step). Every input is a peer's
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
    } + (fwd + rev) * udp_stream::SEQ_WIN_BYTES;
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

/// Refuse a test whose buffers on the server ([`buffer_bytes`]) exceed the
/// server's per-test memory limit; the message names the flags to lower.
pub(crate) fn check_memory(cfg: &TestConfig, l: &Limits) -> Result<(), ConfigError> {
    let need = buffer_bytes(cfg, End::Server);
    if need > l.max_test_memory {
        return Err(ConfigError(format!(
            "this test needs {} of buffer memory on the server, above its limit of {} per test ({})",
            human_bytes(need),
            human_bytes(l.max_test_memory),
            cfg.memory_hint()
        )));
    }
    Ok(())
}

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

/// Blocking with a [`TICK`] timeout for a lone socket, non-blocking otherwise.
fn set_blocking(s: socket2::SockRef<'_>, single: bool) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn pacing() {
        let s = Instant::now();
        assert!(pace(1000.0, s, s + Duration::from_secs(1), 0, 500).is_none());
        let w = pace(1000.0, s, s + Duration::from_secs(1), 1000, 100).unwrap();
        assert!((w.as_secs_f64() - 0.1).abs() < 1e-6);
    }

    #[test]
    fn memory_budget_refuses_huge_tests_only() {
        let l = Limits::default();
        for t in TestKind::ALL {
            let c = TestConfig {
                test: t,
                size: t.default_size(),
                ..TestConfig::default()
            };
            check_memory(&c, &l).unwrap();
            assert!(buffer_bytes(&c, End::Client) < 8 << 20, "{t}");
            assert!(buffer_bytes(&c, End::Server) < 8 << 20, "{t}");
        }
        let c = TestConfig {
            test: TestKind::TcpRr,
            size: 16 << 20,
            outstanding: 4096,
            ..TestConfig::default()
        };
        c.validate().unwrap();
        assert_eq!(buffer_bytes(&c, End::Server), 128 << 30);
        let e = check_memory(&c, &l).unwrap_err().0;
        assert!(e.contains("128 GiB of buffer memory"), "{e}");
        assert!(e.contains("256 MiB"), "{e}");
        // Every input at its largest: no overflow, just a huge number.
        let c = TestConfig {
            test: TestKind::TcpRr,
            flows: u32::MAX,
            threads: u32::MAX,
            size: u32::MAX,
            outstanding: u32::MAX,
            ..TestConfig::default()
        };
        assert_eq!(buffer_bytes(&c, End::Client), u64::MAX);
        assert!(check_memory(&c, &l).is_err());
    }
}
