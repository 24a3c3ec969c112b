//! udp-stream: senders send sequence-numbered datagrams in sendmmsg (or GSO)
//! batches; receivers count them per flow in a sequence window, which tells
//! new, late (reordered) and duplicate datagrams apart.

use super::driver::{drive, Bounds, Idle, Pass, Workload};
use super::{
    datagram, filled, gone, pace, pollfds, set_blocking, would_block, Entry, Job, Load, Work,
    BATCH, GRO_SLOTS, GSO_SEGS,
};
use crate::proto::{UdpHeader, REGISTRATION_SEQ, UDP_HEADER};
use crate::sys::{self, Mmsg};
use crate::worker::{Ctx, Params};
use std::io;
use std::net::UdpSocket;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// Bytes of one flow's sequence window at a UDP receiver.
pub(super) const SEQ_WIN_BYTES: u128 = std::mem::size_of::<SeqWin>() as u128;

struct Send {
    flows: Vec<(u32, UdpSocket)>,
    size: usize,
    tag: u32,
    gso: bool,
    /// Datagrams per send.
    segs: usize,
    mm: Mmsg,
    /// The GSO super-datagram.
    big: Vec<u8>,
    /// Datagrams per second per flow, when paced.
    pps: Option<f64>,
    seq: Vec<u64>,
}

impl Workload for Send {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, now: Instant) -> io::Result<Pass> {
        let size = self.size;
        let mut pace_wait: Option<Duration> = None;
        for (i, (flow, s)) in self.flows.iter().enumerate() {
            let mut n = self.segs;
            if let Some(r) = self.pps {
                let allowed = (r * now.duration_since(ctx.t.start).as_secs_f64()) as u64;
                let can = allowed.saturating_sub(self.seq[i]) as usize;
                if can == 0 {
                    let w = pace(r, ctx.t.start, now, self.seq[i], 1).unwrap_or(Duration::ZERO);
                    pace_wait = Some(pace_wait.map_or(w, |p| p.min(w)));
                    continue;
                }
                n = n.min(can);
            }
            let header = |j: usize| UdpHeader {
                tag: self.tag,
                flow: *flow,
                seq: self.seq[i] + j as u64,
            };
            let res = if self.gso {
                for j in 0..n {
                    header(j).put(&mut self.big[j * size..]);
                }
                s.send(&self.big[..n * size]).map(|b| b / size)
            } else {
                for j in 0..n {
                    header(j).put(self.mm.slot_mut(j));
                }
                self.mm.send(s.as_fd(), n, size, libc::MSG_NOSIGNAL)
            };
            match res {
                Ok(k) => {
                    self.seq[i] += k as u64;
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
        // The sockets block, so a pass only waits to pace (even when
        // another flow sent).
        Ok(match pace_wait {
            Some(w) => Pass::new(false, Idle::Sleep(w)),
            None => Pass::new(true, Idle::Again),
        })
    }
}

/// udp-stream senders: a batch of datagrams, and a GSO buffer with `--udp-gso`.
pub(super) const SEND: Entry = Entry {
    job: |s, o| {
        let f = s.udp_flows(o)?;
        Some(Job::new(Work::UdpSend, move |ctx, p| send(ctx, f, p)))
    },
    buffers: |l: &Load<'_>| {
        let segs = if l.cfg.udp_gso {
            (GSO_SEGS as u128).min(65507 / l.size.max(1)).max(1)
        } else {
            0
        };
        l.workers * (BATCH as u128 * l.size + segs * l.size)
    },
};

/// udp-stream receivers (also the client's side of a reverse udp-rr flow):
/// a batch of datagrams (GRO slots with `--udp-gro`) and a sequence window
/// per flow of the test.
pub(super) const RECV: Entry = Entry {
    job: |s, o| {
        let socks: Vec<UdpSocket> = s.udp_flows(o)?.into_iter().map(|(_, s)| s).collect();
        Some(Job::new(Work::UdpRecv, move |ctx, p| recv(ctx, socks, p)))
    },
    buffers: |l: &Load<'_>| {
        let batch = if l.cfg.udp_gro {
            GRO_SLOTS as u128 * 65536
        } else {
            BATCH as u128 * datagram(l)
        };
        l.workers * (batch + l.all_flows * SEQ_WIN_BYTES)
    },
};

/// Send on `flows` until the send deadline.
pub(super) fn send(ctx: &mut Ctx, flows: Vec<(u32, UdpSocket)>, p: &Params) -> io::Result<()> {
    let size = p.cfg.size as usize;
    let gso = p.cfg.udp_gso;
    for (_, s) in &flows {
        set_blocking(s.into(), true)?;
        if gso {
            sys::set_int_opt(
                s.as_fd(),
                sys::opt::SOL_UDP,
                sys::opt::UDP_SEGMENT,
                size as i32,
            )
            .map_err(|e| io::Error::other(format!("UDP_SEGMENT (--udp-gso): {e}")))?;
        }
    }
    let segs = if gso {
        GSO_SEGS.min(65507 / size).max(1)
    } else {
        BATCH
    };
    let n = flows.len();
    let mut w = Send {
        size,
        tag: p.tag,
        gso,
        segs,
        mm: Mmsg::new(BATCH, size),
        big: if gso {
            filled(segs.saturating_mul(size), 0)?
        } else {
            Vec::new()
        },
        // Each flow's share of the total over all flows (not this thread's).
        pps: p.cfg.flow_rate().map(|r| r / (size as f64 * 8.0)),
        seq: vec![0; n],
        flows,
    };
    let b = Bounds {
        until: ctx.t.send_until(),
        single: true,
        busy: Duration::ZERO,
    };
    drive(&mut w, ctx, b)
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
    let Some(h) = UdpHeader::get(d) else {
        ctx.c.foreign += 1;
        return;
    };
    let Some(win) = wins.get_mut(h.flow as usize).filter(|_| h.tag == tag) else {
        ctx.c.foreign += 1;
        return;
    };
    if h.seq == REGISTRATION_SEQ {
        return;
    }
    match win.on(h.seq) {
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

struct Recv {
    socks: Vec<UdpSocket>,
    single: bool,
    size: usize,
    tag: u32,
    gro: bool,
    mm: Mmsg,
    wins: Vec<SeqWin>,
    pfds: Vec<libc::pollfd>,
}

impl Workload for Recv {
    #[inline]
    fn pass(&mut self, ctx: &mut Ctx, _now: Instant) -> io::Result<Pass> {
        let mut progressed = false;
        let n = self.mm.slots();
        for s in &self.socks {
            match self.mm.recv(s.as_fd(), n, !self.single) {
                Ok(k) => {
                    progressed |= k > 0;
                    ctx.c.reads += k as u64;
                    for i in 0..k {
                        let m = self.mm.msg(i);
                        if self.gro {
                            for seg in m.chunks(self.size) {
                                count_datagram(ctx, &mut self.wins, self.tag, seg);
                            }
                        } else {
                            count_datagram(ctx, &mut self.wins, self.tag, m);
                        }
                    }
                }
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

/// Receive on `socks` until the hard stop.
pub(super) fn recv(ctx: &mut Ctx, socks: Vec<UdpSocket>, p: &Params) -> io::Result<()> {
    let single = socks.len() == 1;
    let size = p.cfg.size as usize;
    let gro = p.cfg.udp_gro;
    for s in &socks {
        set_blocking(s.into(), single)?;
        if gro {
            sys::set_int_opt(s.as_fd(), sys::opt::SOL_UDP, sys::opt::UDP_GRO, 1)
                .map_err(|e| io::Error::other(format!("UDP_GRO (--udp-gro): {e}")))?;
        }
    }
    let mut w = Recv {
        single,
        size,
        tag: p.tag,
        gro,
        mm: if gro {
            Mmsg::new(GRO_SLOTS, 65536)
        } else {
            Mmsg::new(BATCH, size.max(UDP_HEADER))
        },
        wins: vec![SeqWin::new(); p.cfg.total_flows() as usize],
        pfds: pollfds(socks.iter(), libc::POLLIN),
        socks,
    };
    let b = Bounds {
        until: ctx.t.hard_stop(),
        single,
        busy: Duration::ZERO,
    };
    drive(&mut w, ctx, b)
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
}
