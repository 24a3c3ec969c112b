//! tcp-rr: the client keeps `outstanding` requests in flight per flow
//! (closed loop) or sends them at a rate (open loop) and times each answer;
//! the server answers every whole request.

use super::driver::{drive, Bounds, Idle, Pass, Workload};
use super::flows::Flows;
use super::{filled, gone, would_block, Entry, Job, Load, Work, HIST_BYTES, RING_ENTRY_BYTES};
use crate::sys;
use crate::worker::{Ctx, Params};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// One RR flow's client state. The ring holds the (intended) send time of
/// every request in flight; it never grows past its preallocated capacity.
pub(super) struct RrFlow {
    pub ring: VecDeque<(u64, Instant)>,
    pub rx_pending: usize,
    pub tx_owed: usize,
    pub next_k: u64,
    pub seq: u64,
}

impl RrFlow {
    pub fn new(cap: usize) -> RrFlow {
        RrFlow {
            ring: VecDeque::with_capacity(cap),
            rx_pending: 0,
            tx_owed: 0,
            next_k: 0,
            seq: 0,
        }
    }
}

struct Client {
    flows: Flows<TcpStream>,
    st: Vec<RrFlow>,
    size: usize,
    cap: usize,
    /// Requests per second per flow (open loop).
    rate: Option<f64>,
    start: Instant,
    req: Vec<u8>,
    buf: Vec<u8>,
}

impl Workload for Client {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, now: Instant) -> io::Result<Pass> {
        let size = self.size;
        let mut progressed = false;
        let mut next_due: Option<Instant> = None;
        for i in 0..self.flows.len() {
            let s = self.flows.sock(i);
            let f = &mut self.st[i];
            if let Some(r) = self.rate {
                loop {
                    let due = self.start + Duration::from_secs_f64(f.next_k as f64 / r);
                    if due > now {
                        next_due = Some(next_due.map_or(due, |d| d.min(due)));
                        break;
                    }
                    if f.ring.len() >= self.cap {
                        break;
                    }
                    f.ring.push_back((0, due));
                    f.tx_owed += size;
                    f.next_k += 1;
                }
            }
            while f.tx_owed > 0 {
                let n = f.tx_owed.min(self.req.len());
                match (&*s).write(&self.req[..n]) {
                    Ok(w) => {
                        f.tx_owed -= w;
                        progressed = true;
                    }
                    Err(e) if would_block(&e) => break,
                    Err(e) => return Err(e),
                }
            }
            match (&*s).read(&mut self.buf) {
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
                        if self.rate.is_none() {
                            f.ring.push_back((0, t));
                            f.tx_owed += size;
                        }
                    }
                }
                Err(e) if would_block(&e) => {}
                Err(e) => return Err(e),
            }
            let events = libc::POLLIN | if f.tx_owed > 0 { libc::POLLOUT } else { 0 };
            self.flows.poll_for(i, events);
        }
        Ok(Pass::new(progressed, Idle::Due(next_due)))
    }
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        self.flows.pollfds()
    }
    fn finish(&mut self, ctx: &mut Ctx) {
        self.flows.report_tcp_info(ctx);
    }
}

/// The request/response buffer of an RR worker: all requests in flight,
/// at least 64 KiB.
fn rr_buf(l: &Load<'_>) -> u128 {
    (l.size * l.k).max(64 * 1024)
}

/// tcp-rr clients: requests in flight, a response buffer, two histograms,
/// and a ring entry per request in flight.
pub(super) const CLIENT: Entry = Entry {
    job: |s, o| {
        let f = s.tcp_flows(o)?;
        Some(Job::new(Work::TcpRrClient, move |ctx, p| client(ctx, f, p)))
    },
    buffers: |l: &Load<'_>| {
        l.workers * ((l.size * l.k).max(l.size) + rr_buf(l) + 2 * HIST_BYTES)
            + l.flows * l.k * RING_ENTRY_BYTES
    },
};

/// tcp-rr servers: a request and a response buffer each.
pub(super) const SERVER: Entry = Entry {
    job: |s, o| {
        let f = s.tcp_flows(o)?;
        Some(Job::new(Work::TcpRrServer, move |ctx, p| server(ctx, f, p)))
    },
    buffers: |l: &Load<'_>| l.workers * 2 * rr_buf(l),
};

/// Request on `flows` until the end of the window.
pub(super) fn client(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>, p: &Params) -> io::Result<()> {
    if p.cfg.rate.is_some() {
        sys::set_timer_slack_ns(1);
    }
    let size = p.cfg.size as usize;
    let k = p.cfg.outstanding as usize;
    // Each flow's share of the total over all flows (not this thread's).
    let rate = p.cfg.flow_rate();
    let busy = Duration::from_micros(p.cfg.busy_poll_us as u64);
    let single = flows.len() == 1 && rate.is_none() && busy.is_zero();
    let flows = Flows::new(flows, libc::POLLIN, single)?;
    let now = Instant::now();
    let st = flows
        .iter()
        .map(|_| {
            let mut f = RrFlow::new(k);
            if rate.is_none() {
                for _ in 0..k {
                    f.ring.push_back((0, now));
                }
                f.tx_owed = k * size;
            }
            f
        })
        .collect();
    let mut w = Client {
        st,
        size,
        cap: k,
        rate,
        start: ctx.t.start,
        req: filled(size.saturating_mul(k).max(size), 0x52)?,
        buf: filled(size.saturating_mul(k).max(64 * 1024), 0)?,
        flows,
    };
    let b = Bounds {
        until: ctx.t.win_end(),
        single,
        busy,
    };
    drive(&mut w, ctx, b)
}

struct Server {
    flows: Flows<TcpStream>,
    size: usize,
    resp: Vec<u8>,
    buf: Vec<u8>,
    pending: Vec<usize>,
    owed: Vec<usize>,
}

impl Workload for Server {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, _now: Instant) -> io::Result<Pass> {
        let size = self.size;
        let mut progressed = false;
        for i in 0..self.flows.len() {
            if !self.flows.is_open(i) {
                continue;
            }
            let read = self.flows.sock(i).read(&mut self.buf);
            match read {
                Ok(0) => {
                    self.flows.close(i);
                    continue;
                }
                Ok(n) => {
                    progressed = true;
                    self.pending[i] += n;
                    let done = self.pending[i] / size;
                    self.pending[i] %= size;
                    self.owed[i] += done * size;
                    ctx.c.msgs += done as u64;
                    ctx.c.bytes += n as u64;
                }
                Err(e) if would_block(&e) => {}
                Err(e) if gone(&e) => {
                    self.flows.close(i);
                    continue;
                }
                Err(e) => return Err(e),
            }
            let s = self.flows.sock(i);
            while self.owed[i] > 0 {
                let n = self.owed[i].min(self.resp.len());
                match (&*s).write(&self.resp[..n]) {
                    Ok(w) => self.owed[i] -= w,
                    Err(e) if would_block(&e) => break,
                    Err(e) if gone(&e) => {
                        self.owed[i] = 0;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            let events = libc::POLLIN | if self.owed[i] > 0 { libc::POLLOUT } else { 0 };
            self.flows.poll_for(i, events);
        }
        Ok(Pass::new(progressed, Idle::Poll))
    }
    fn done(&self) -> bool {
        self.flows.all_closed()
    }
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        self.flows.pollfds()
    }
}

/// Answer on `flows` until they close or the hard stop.
pub(super) fn server(ctx: &mut Ctx, flows: Vec<(u32, TcpStream)>, p: &Params) -> io::Result<()> {
    let busy = Duration::from_micros(p.cfg.busy_poll_us as u64);
    let single = flows.len() == 1 && busy.is_zero();
    let flows = Flows::new(flows, libc::POLLIN, single)?;
    let inflight = (p.cfg.size as usize).saturating_mul(p.cfg.outstanding as usize);
    let n = flows.len();
    let mut w = Server {
        size: p.cfg.size as usize,
        resp: filled(inflight.max(64 * 1024), 0x41)?,
        buf: filled(inflight.max(64 * 1024), 0)?,
        pending: vec![0; n],
        owed: vec![0; n],
        flows,
    };
    let b = Bounds {
        until: ctx.t.hard_stop(),
        single,
        busy,
    };
    drive(&mut w, ctx, b)
}
