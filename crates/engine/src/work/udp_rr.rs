//! udp-rr: the client sends sequence-numbered requests (closed or open
//! loop), matches answers by sequence and gives up on a request after
//! [`UDP_RR_TIMEOUT`]; the server echoes in recvmmsg/sendmmsg batches.

use super::driver::{drive, Bounds, Idle, Pass, Workload};
use super::flows::Flows;
use super::tcp_rr::RrFlow;
use super::{
    datagram, filled, gone, pollfds, set_blocking, would_block, Entry, Job, Load, Work, BATCH,
    HIST_BYTES, RING_ENTRY_BYTES,
};
use crate::proto::{UdpHeader, UDP_HEADER};
use crate::sys::{self, Mmsg};
use crate::worker::{Ctx, Params};
use std::io;
use std::net::UdpSocket;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// A UDP request with no answer for this long counts as lost.
const UDP_RR_TIMEOUT: Duration = Duration::from_millis(200);

struct Client {
    flows: Flows<UdpSocket>,
    st: Vec<RrFlow>,
    size: usize,
    /// Requests carry a sequence header (size allows it).
    header: bool,
    cap: usize,
    single: bool,
    /// Requests per second per flow (open loop).
    rate: Option<f64>,
    start: Instant,
    tag: u32,
    req: Vec<u8>,
    buf: Vec<u8>,
}

impl Client {
    /// Send what is due on flow `i`.
    #[inline]
    fn send(
        &mut self,
        ctx: &mut Ctx,
        i: usize,
        now: Instant,
        next_due: &mut Option<Instant>,
    ) -> io::Result<bool> {
        let flow = self.flows.flow(i);
        let s = self.flows.sock(i);
        let f = &mut self.st[i];
        let mut progressed = false;
        loop {
            let due = match self.rate {
                Some(r) => {
                    let due = self.start + Duration::from_secs_f64(f.next_k as f64 / r);
                    if due > now {
                        *next_due = Some(next_due.map_or(due, |d| d.min(due)));
                        break;
                    }
                    due
                }
                None => now,
            };
            if f.ring.len() >= self.cap {
                break;
            }
            if self.header {
                UdpHeader {
                    tag: self.tag,
                    flow,
                    seq: f.seq,
                }
                .put(&mut self.req);
            }
            match s.send(&self.req[..self.size]) {
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
        Ok(progressed)
    }

    /// Read the answers waiting on flow `i`.
    #[inline]
    fn recv(&mut self, ctx: &mut Ctx, i: usize) -> io::Result<bool> {
        let s = self.flows.sock(i);
        let f = &mut self.st[i];
        let mut progressed = false;
        loop {
            match s.recv(&mut self.buf) {
                Ok(n) => {
                    let t = Instant::now();
                    progressed = true;
                    let hit = if self.header {
                        match UdpHeader::get(&self.buf[..n]) {
                            Some(h) if h.tag == self.tag => {
                                if f.ring.front().is_some_and(|e| e.0 == h.seq) {
                                    f.ring.pop_front()
                                } else {
                                    f.ring
                                        .iter()
                                        .position(|e| e.0 == h.seq)
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
                    if self.single {
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
        Ok(progressed)
    }
}

impl Workload for Client {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, now: Instant) -> io::Result<Pass> {
        let mut progressed = false;
        let mut next_due: Option<Instant> = None;
        for i in 0..self.flows.len() {
            // Give up on requests that got no answer.
            let ring = &mut self.st[i].ring;
            while let Some(&(_, t)) = ring.front() {
                if now.duration_since(t) < UDP_RR_TIMEOUT {
                    break;
                }
                ring.pop_front();
                ctx.c.lost += 1;
            }
            progressed |= self.send(ctx, i, now, &mut next_due)?;
            progressed |= self.recv(ctx, i)?;
        }
        Ok(Pass::new(progressed, Idle::Due(next_due)))
    }
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        self.flows.pollfds()
    }
}

/// udp-rr clients: a request, a 64 KiB response buffer, two histograms,
/// and a ring entry per request in flight.
pub(super) const CLIENT: Entry = Entry {
    job: |s, o| {
        let f = s.udp_flows(o)?;
        Some(Job::new(Work::UdpRrClient, move |ctx, p| client(ctx, f, p)))
    },
    buffers: |l: &Load<'_>| {
        l.workers * (datagram(l) + 65536 + 2 * HIST_BYTES) + l.flows * l.k * RING_ENTRY_BYTES
    },
};

/// udp-rr servers (echo), one per shared socket: a batch of datagrams.
pub(super) const SERVER: Entry = Entry {
    job: |s, o| {
        let sock = s.shared_udp(o)?;
        Some(Job::new(Work::UdpRrServer, move |ctx, p| {
            server(ctx, vec![sock], p)
        }))
    },
    buffers: |l: &Load<'_>| l.workers * BATCH as u128 * datagram(l),
};

/// Request on `flows` until the end of the window.
pub(super) fn client(ctx: &mut Ctx, flows: Vec<(u32, UdpSocket)>, p: &Params) -> io::Result<()> {
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
    let mut w = Client {
        st: flows.iter().map(|_| RrFlow::new(k)).collect(),
        size,
        header: size >= UDP_HEADER,
        cap: k,
        single,
        rate,
        start: ctx.t.start,
        tag: p.tag,
        req: filled(size.max(UDP_HEADER), 0x55)?,
        buf: vec![0u8; 65536],
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
    socks: Vec<UdpSocket>,
    single: bool,
    mm: Mmsg,
    /// Batch size: one request at a time needs no second recvmmsg attempt;
    /// a full batch doubles it, up to the slots there are.
    n: usize,
    pfds: Vec<libc::pollfd>,
}

impl Workload for Server {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, _now: Instant) -> io::Result<Pass> {
        let mut progressed = false;
        for s in &self.socks {
            match self.mm.recv(s.as_fd(), self.n, !self.single) {
                Ok(k) if k > 0 => {
                    progressed = true;
                    self.n = if k == self.n {
                        (self.n * 2).min(self.mm.slots())
                    } else {
                        k.max(1)
                    };
                    for i in 0..k {
                        ctx.c.bytes += self.mm.len(i) as u64;
                    }
                    ctx.c.msgs += k as u64;
                    if let Err(e) = self.mm.echo(s.as_fd(), k) {
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
        Ok(Pass::new(progressed, Idle::Poll))
    }
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        &mut self.pfds
    }
}

/// Echo on `socks` until the hard stop.
pub(super) fn server(ctx: &mut Ctx, socks: Vec<UdpSocket>, p: &Params) -> io::Result<()> {
    let busy = Duration::from_micros(p.cfg.busy_poll_us as u64);
    let single = socks.len() == 1 && busy.is_zero();
    for s in &socks {
        set_blocking(s.into(), single)?;
    }
    let mut w = Server {
        single,
        mm: Mmsg::new(BATCH, (p.cfg.size as usize).max(UDP_HEADER)),
        n: 1,
        pfds: pollfds(socks.iter(), libc::POLLIN),
        socks,
    };
    let b = Bounds {
        until: ctx.t.hard_stop(),
        single,
        busy,
    };
    drive(&mut w, ctx, b)
}
