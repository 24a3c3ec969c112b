//! tcp-stream: senders write one buffer per pass and flow (optionally
//! paced, optionally MSG_ZEROCOPY); receivers read until every flow closes.

use super::driver::{drive, Bounds, Idle, Pass, Workload};
use super::flows::Flows;
use super::{filled, gone, pace, would_block, Entry, Job, Load, Work, TCP_RECV_BUF};
use crate::sys;
use crate::worker::{Ctx, Params};
use std::io::{self, Read};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

struct Send {
    flows: Flows<TcpStream>,
    buf: Vec<u8>,
    flags: i32,
    zc: bool,
    zc_n: u32,
    /// Bytes per second per flow, when paced.
    rate: Option<f64>,
    sent: Vec<u64>,
}

/// Read (and drop) the zero-copy completions, so the socket's option memory
/// does not fill.
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

impl Workload for Send {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, now: Instant) -> io::Result<Pass> {
        let size = self.buf.len() as u64;
        let mut progressed = false;
        let mut pace_wait: Option<Duration> = None;
        for i in 0..self.flows.len() {
            if !self.flows.is_open(i) {
                continue;
            }
            if let Some(r) = self.rate {
                if let Some(w) = pace(r, ctx.t.start, now, self.sent[i], size) {
                    pace_wait = Some(pace_wait.map_or(w, |p| p.min(w)));
                    continue;
                }
            }
            let sent =
                socket2::SockRef::from(self.flows.sock(i)).send_with_flags(&self.buf, self.flags);
            match sent {
                Ok(n) => {
                    self.sent[i] += n as u64;
                    ctx.c.bytes += n as u64;
                    progressed = true;
                    if self.zc {
                        self.zc_n += 1;
                        if self.zc_n.is_multiple_of(16) {
                            drain_errqueue(self.flows.sock(i));
                        }
                    }
                }
                Err(e) if would_block(&e) => {}
                Err(e) if self.zc && e.raw_os_error() == Some(libc::ENOBUFS) => {
                    drain_errqueue(self.flows.sock(i))
                }
                Err(e) if gone(&e) => {
                    self.flows.close(i);
                    ctx.c.errors += 1;
                }
                Err(e) => return Err(e),
            }
        }
        let idle = match pace_wait {
            Some(w) => Idle::Sleep(w),
            None => Idle::Poll,
        };
        Ok(Pass::new(progressed, idle))
    }
    fn done(&self) -> bool {
        self.flows.all_closed()
    }
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        self.flows.pollfds()
    }
    fn finish(&mut self, ctx: &mut Ctx) {
        self.flows.report_tcp_info(ctx);
        for (_, s) in self.flows.iter() {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
    }
}

/// tcp-stream senders: a buffer of `--size` each.
pub(super) const SEND: Entry = Entry {
    job: |s, o| {
        let f = s.tcp_flows(o)?;
        Some(Job::new(Work::TcpSend, move |ctx, p| send(ctx, f, p)))
    },
    buffers: |l: &Load<'_>| l.workers * l.size,
};

/// tcp-stream receivers: one receive buffer each.
pub(super) const RECV: Entry = Entry {
    job: |s, o| {
        let f = s.tcp_flows(o)?;
        Some(Job::new(Work::TcpRecv, move |ctx, _| recv(ctx, f)))
    },
    buffers: |l: &Load<'_>| l.workers * TCP_RECV_BUF as u128,
};

/// Send on `flows` until the send deadline.
pub(super) fn send(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>, p: &Params) -> io::Result<()> {
    let single = flows.len() == 1;
    let zc = p.cfg.zerocopy;
    let flows = Flows::new(flows, libc::POLLOUT, single)?;
    for (_, s) in flows.iter() {
        if zc {
            sys::set_int_opt(s.as_fd(), libc::SOL_SOCKET, sys::opt::SO_ZEROCOPY, 1)
                .map_err(|e| io::Error::other(format!("SO_ZEROCOPY: {e}")))?;
        }
    }
    let n = flows.len();
    let mut w = Send {
        buf: filled(p.cfg.size as usize, 0x5a)?,
        flags: if zc { sys::opt::MSG_ZEROCOPY } else { 0 } | libc::MSG_NOSIGNAL,
        zc,
        zc_n: 0,
        // Each flow's share of the total over all flows (not this thread's).
        rate: p.cfg.flow_rate().map(|r| r / 8.0),
        sent: vec![0; n],
        flows,
    };
    let b = Bounds {
        until: ctx.t.send_until(),
        single,
        busy: Duration::ZERO,
    };
    drive(&mut w, ctx, b)
}

struct Recv {
    flows: Flows<TcpStream>,
    buf: Vec<u8>,
}

impl Workload for Recv {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, _now: Instant) -> io::Result<Pass> {
        let mut progressed = false;
        for i in 0..self.flows.len() {
            if !self.flows.is_open(i) {
                continue;
            }
            let read = self.flows.sock(i).read(&mut self.buf);
            match read {
                Ok(0) => self.flows.close(i),
                Ok(n) => {
                    ctx.c.bytes += n as u64;
                    progressed = true;
                }
                Err(e) if would_block(&e) => {}
                Err(e) if gone(&e) => {
                    self.flows.close(i);
                    ctx.c.errors += 1;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Pass::new(progressed, Idle::Poll))
    }
    fn done(&self) -> bool {
        self.flows.all_closed()
    }
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        self.flows.pollfds()
    }
    fn finish(&mut self, ctx: &mut Ctx) {
        self.flows.report_tcp_info(ctx);
    }
}

/// Receive on `flows` until they close or the hard stop.
pub(super) fn recv(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>) -> io::Result<()> {
    let single = flows.len() == 1;
    let mut w = Recv {
        buf: filled(TCP_RECV_BUF, 0)?,
        flows: Flows::new(flows, libc::POLLIN, single)?,
    };
    let b = Bounds {
        until: ctx.t.hard_stop(),
        single,
        busy: Duration::ZERO,
    };
    drive(&mut w, ctx, b)
}
