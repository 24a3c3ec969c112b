//! tcp-crr: the client opens a connection per transaction (connect, one
//! request with the data preamble, one answer, close); the server accepts,
//! checks the preamble and answers. Both block in their syscalls.

use super::driver::{drive, Bounds, Idle, Pass, Workload};
use super::{filled, gone, would_block, Entry, Job, Load, Work, HIST_BYTES, TICK};
use crate::plan::Owns;
use crate::proto::{data_preamble, parse_data_preamble};
use crate::sock::apply_opts;
use crate::worker::{Ctx, Params};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// Connections in a row that may fail before the client gives up.
const MAX_FAILURES: u32 = 1000;

struct Client<'a> {
    p: &'a Params,
    domain: socket2::Domain,
    addr: socket2::SockAddr,
    req: Vec<u8>,
    resp: Vec<u8>,
    failures: u32,
}

impl Client<'_> {
    fn once(&mut self) -> io::Result<()> {
        let s = socket2::Socket::new(self.domain, socket2::Type::STREAM, None)?;
        s.set_write_timeout(Some(Duration::from_secs(1)))?;
        s.set_read_timeout(Some(Duration::from_secs(1)))?;
        if let Some(to) = self.addr.as_socket() {
            self.p.src.apply(&s, to, 0)?;
        }
        apply_opts(s.as_fd(), &self.p.cfg, true, self.p.force_buffers)?;
        s.connect(&self.addr)?;
        let mut s: TcpStream = s.into();
        s.write_all(&self.req)?;
        s.read_exact(&mut self.resp)?;
        Ok(())
    }
}

impl Workload for Client<'_> {
    fn pass(&mut self, ctx: &mut Ctx, t0: Instant) -> io::Result<Pass> {
        match self.once() {
            Ok(()) => {
                let t1 = Instant::now();
                ctx.record(t1.duration_since(t0).as_nanos() as u64);
                ctx.c.msgs += 1;
                ctx.c.bytes += self.resp.len() as u64;
                self.failures = 0;
            }
            Err(e) => {
                ctx.c.lost += 1;
                self.failures += 1;
                if self.failures >= MAX_FAILURES {
                    return Err(io::Error::other(format!(
                        "{MAX_FAILURES} connections in a row failed, last: {e}"
                    )));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(Pass::new(true, Idle::Again))
    }
}

/// tcp-crr clients, one per flow: the preamble, a request and a response
/// buffer, two histograms.
pub(super) const CLIENT: Entry = Entry {
    job: |s, o| {
        let target = s.target?;
        let flow = match o {
            Owns::Flows(f) => *f.first()?,
            Owns::Shared(_) => return None,
        };
        Some(Job::new(Work::CrrClient, move |ctx, p| {
            client(ctx, target, flow, p)
        }))
    },
    buffers: |l: &Load<'_>| l.workers * (16 + 2 * l.size + 2 * HIST_BYTES),
};

/// tcp-crr servers, one per listener: the preamble, a request and a
/// response buffer.
pub(super) const SERVER: Entry = Entry {
    job: |s, o| {
        let l = s.listener(o)?;
        Some(Job::new(Work::CrrServer, move |ctx, p| server(ctx, l, p)))
    },
    buffers: |l: &Load<'_>| l.workers * (16 + 2 * l.size),
};

/// Connect to `target` as `flow` again and again until the end of the window.
pub(super) fn client(ctx: &mut Ctx, target: SocketAddr, flow: u32, p: &Params) -> io::Result<()> {
    let size = p.cfg.size as usize;
    let mut req = data_preamble(p.test_id, flow).to_vec();
    req.resize(16 + size, 0x43);
    let mut w = Client {
        p,
        domain: socket2::Domain::for_address(target),
        addr: socket2::SockAddr::from(target),
        req,
        resp: filled(size, 0)?,
        failures: 0,
    };
    let b = Bounds {
        until: ctx.t.win_end(),
        single: true,
        busy: Duration::ZERO,
    };
    drive(&mut w, ctx, b)
}

struct Server<'a> {
    p: &'a Params,
    l: TcpListener,
    req: Vec<u8>,
    resp: Vec<u8>,
    sink: [u8; 64],
}

impl Server<'_> {
    /// Serve one accepted connection: `false` for another test's preamble.
    fn once(&mut self, mut s: TcpStream) -> io::Result<bool> {
        s.set_read_timeout(Some(Duration::from_secs(1)))?;
        s.set_write_timeout(Some(Duration::from_secs(1)))?;
        let _ = apply_opts(s.as_fd(), &self.p.cfg, true, self.p.force_buffers);
        s.read_exact(&mut self.req)?;
        let mut pre = [0u8; 16];
        pre.copy_from_slice(&self.req[..16]);
        match parse_data_preamble(&pre) {
            Some((id, _)) if id == self.p.test_id => {}
            _ => return Ok(false),
        }
        s.write_all(&self.resp)?;
        while s.read(&mut self.sink)? > 0 {}
        Ok(true)
    }
}

impl Workload for Server<'_> {
    fn pass(&mut self, ctx: &mut Ctx, _now: Instant) -> io::Result<Pass> {
        let s = match self.l.accept() {
            Ok((s, _)) => s,
            Err(e) if would_block(&e) || gone(&e) => return Ok(Pass::new(false, Idle::Again)),
            Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                ctx.c.errors += 1;
                std::thread::sleep(Duration::from_millis(1));
                return Ok(Pass::new(false, Idle::Again));
            }
            Err(e) => return Err(e),
        };
        match self.once(s) {
            Ok(true) => {
                ctx.c.msgs += 1;
                ctx.c.bytes += self.resp.len() as u64;
            }
            Ok(false) => ctx.c.foreign += 1,
            Err(_) => ctx.c.errors += 1,
        }
        Ok(Pass::new(true, Idle::Again))
    }
}

/// Accept and answer on `l` until the hard stop.
pub(super) fn server(ctx: &mut Ctx, l: TcpListener, p: &Params) -> io::Result<()> {
    let size = p.cfg.size as usize;
    socket2::SockRef::from(&l).set_read_timeout(Some(TICK))?;
    let mut w = Server {
        p,
        l,
        req: filled(size.saturating_add(16), 0)?,
        resp: filled(size, 0x63)?,
        sink: [0; 64],
    };
    let b = Bounds {
        until: ctx.t.hard_stop(),
        single: true,
        busy: Duration::ZERO,
    };
    drive(&mut w, ctx, b)
}
