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

use crate::config::catalogue::Grouping;
#[cfg(test)]
use crate::config::TestKind;
use crate::config::{
    human_bytes, ConfigError, Direction, End, FlowDir, Limits, TestConfig, UDP_HEADER,
};
use crate::plan::{Owns, Work, WorkerPlan};
use crate::worker::{Ctx, Params};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
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

/// Bytes of the buffer a server reads the flows' registrations into (kinds
/// whose flows register, see `KindSpec::sequenced`).
pub(crate) const REGISTRATION_BUF: usize = 65536;

/// What this module needs of one workload (one row of [`entry`]): both are
/// called once per worker or test, at setup, never in a loop.
pub(crate) struct Entry {
    /// Take the sockets of a worker that owns `owns` from `socks` and bind
    /// them to the workload; `None` when one is missing.
    pub job: fn(&mut Sockets, &Owns) -> Option<Job>,
    /// Bytes of buffers the workers of [`Load`] allocate (keep in step
    /// with what the workload allocates).
    pub buffers: fn(&Load<'_>) -> u128,
}

/// The row of workload `w`: the one place a workload is wired in.
fn entry(w: Work) -> Entry {
    match w {
        Work::TcpSend => tcp_stream::SEND,
        Work::TcpRecv => tcp_stream::RECV,
        Work::UdpSend => udp_stream::SEND,
        Work::UdpRecv => udp_stream::RECV,
        Work::TcpRrClient => tcp_rr::CLIENT,
        Work::TcpRrServer => tcp_rr::SERVER,
        Work::UdpRrClient => udp_rr::CLIENT,
        Work::UdpRrServer => udp_rr::SERVER,
        Work::CrrClient => crr::CLIENT,
        Work::CrrServer => crr::SERVER,
    }
}

/// A workload's run over the sockets it took, called once on its thread.
type RunOnce = Box<dyn FnOnce(&mut Ctx, &Params) -> io::Result<()> + Send>;

/// A worker's sockets bound to its workload, run once on its thread.
pub(crate) struct Job {
    work: Work,
    run: RunOnce,
}

impl Job {
    /// `run` as the job of a `work` worker. The hot loop inside `run` is
    /// the workload's own, monomorphic; only this one call is dynamic.
    fn new(
        work: Work,
        run: impl FnOnce(&mut Ctx, &Params) -> io::Result<()> + Send + 'static,
    ) -> Job {
        Job {
            work,
            run: Box::new(run),
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("work", &self.work).finish()
    }
}

/// The job of planned worker `w`, taking its sockets from `socks`; `None`
/// when one is missing.
pub(crate) fn job(w: &WorkerPlan, socks: &mut Sockets) -> Option<Job> {
    (entry(w.work).job)(socks, &w.owns)
}

/// Run a job to its end.
pub(crate) fn run(job: Job, ctx: &mut Ctx, p: &Params) -> io::Result<()> {
    (job.run)(ctx, p)
}

/// The sockets of one end, by flow or by shared index, that the planned
/// workers take theirs from.
#[derive(Debug, Default)]
pub(crate) struct Sockets {
    /// TCP data connections, by flow.
    pub tcp: Vec<Option<TcpStream>>,
    /// Connected UDP sockets, by flow.
    pub udp: Vec<Option<UdpSocket>>,
    /// The data port's shared UDP sockets (udp-rr server).
    pub shared_udp: Vec<Option<UdpSocket>>,
    /// The data port's listeners (tcp-crr server).
    pub listeners: Vec<Option<TcpListener>>,
    /// Where a tcp-crr client connects.
    pub target: Option<SocketAddr>,
}

fn take<T>(v: &mut [Option<T>], i: u32) -> Option<T> {
    v.get_mut(i as usize)?.take()
}

fn owned(owns: &Owns) -> &[u32] {
    match owns {
        Owns::Flows(f) => f,
        Owns::Shared(_) => &[],
    }
}

impl Sockets {
    /// SO_RCVBUF/SO_SNDBUF of the first data socket present.
    pub(crate) fn effective_buffers(&self, forced: bool) -> Option<crate::report::SocketBuffers> {
        use std::os::fd::AsFd;
        let fd = (self.tcp.iter().flatten().next().map(|s| s.as_fd()))
            .or_else(|| self.udp.iter().flatten().next().map(|s| s.as_fd()))
            .or_else(|| self.shared_udp.iter().flatten().next().map(|s| s.as_fd()))
            .or_else(|| self.listeners.iter().flatten().next().map(|s| s.as_fd()))?;
        crate::sock::effective_buffers(fd, forced)
    }

    /// The TCP connections of the flows `owns` names.
    fn tcp_flows(&mut self, owns: &Owns) -> Option<Vec<(u32, TcpStream)>> {
        owned(owns)
            .iter()
            .map(|f| Some((*f, take(&mut self.tcp, *f)?)))
            .collect()
    }

    /// The connected UDP sockets of the flows `owns` names.
    fn udp_flows(&mut self, owns: &Owns) -> Option<Vec<(u32, UdpSocket)>> {
        owned(owns)
            .iter()
            .map(|f| Some((*f, take(&mut self.udp, *f)?)))
            .collect()
    }

    /// The shared UDP socket `owns` names.
    fn shared_udp(&mut self, owns: &Owns) -> Option<UdpSocket> {
        match owns {
            Owns::Shared(i) => take(&mut self.shared_udp, *i),
            Owns::Flows(_) => None,
        }
    }

    /// The listener `owns` names.
    fn listener(&mut self, owns: &Owns) -> Option<TcpListener> {
        match owns {
            Owns::Shared(i) => take(&mut self.listeners, *i),
            Owns::Flows(_) => None,
        }
    }
}

/// The workers of one workload at one end, for [`Entry::buffers`]. Every
/// input is a peer's number, so all are u128, where no product of them can
/// overflow.
pub(crate) struct Load<'a> {
    /// The test.
    pub cfg: &'a TestConfig,
    /// `--size`.
    pub size: u128,
    /// `--outstanding`.
    pub k: u128,
    /// Workers of this workload.
    pub workers: u128,
    /// Flows they run.
    pub flows: u128,
    /// Flows of the test over both directions.
    pub all_flows: u128,
}

/// Bytes of buffers the workers of `end` allocate for a test: the sizes the
/// workloads allocate (each workload's `buffers`, keep the two in step).
/// Every input is a peer's number, so this is computed in u128, where no
/// product of them can overflow, and saturates to u64.
pub fn buffer_bytes(cfg: &TestConfig, end: End) -> u64 {
    let kind = cfg.test.spec();
    let threads = u128::from(cfg.threads.max(1));
    let flows = u128::from(cfg.flows);
    let (fwd, rev) = match cfg.direction {
        Direction::Forward => (flows, 0),
        Direction::Reverse => (0, flows),
        Direction::Bidir => (flows, flows),
    };
    // Request/response tests run forward only (`validate` refuses the
    // others); count them so even before validation.
    let rev_runs = if kind.stream { rev } else { 0 };
    let load = |flows: u128, workers: u128| Load {
        cfg,
        size: u128::from(cfg.size),
        k: u128::from(cfg.outstanding),
        workers,
        flows,
        all_flows: fwd + rev,
    };
    let mut total = if end == End::Server && kind.sequenced {
        REGISTRATION_BUF as u128
    } else {
        0
    };
    let first = kind.runs(end, FlowDir::Forward);
    if first.grouping == Grouping::Shared {
        // As `plan`: one worker per shared socket, whatever the direction.
        total += (entry(first.work).buffers)(&load(fwd, threads));
    } else {
        for (dir, n) in [(FlowDir::Forward, fwd), (FlowDir::Reverse, rev_runs)] {
            let r = kind.runs(end, dir);
            let workers = match r.grouping {
                Grouping::Spread | Grouping::Shared => n.min(threads),
                Grouping::PerFlow => n,
            };
            total += (entry(r.work).buffers)(&load(n, workers));
        }
    }
    u64::try_from(total).unwrap_or(u64::MAX)
}

/// Datagram buffer size of a UDP workload: `--size`, at least a header.
fn datagram(l: &Load<'_>) -> u128 {
    l.size.max(UDP_HEADER as u128)
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
