//! The per-flow bookkeeping every workload over (flow, socket) pairs keeps:
//! the sockets set up for the driver (blocking with a tick for a lone one,
//! non-blocking otherwise), which flows are still open, and the `pollfd`
//! array the driver waits on (one entry per socket, in the same order).

use super::{pollfds, set_blocking};
use crate::sock::tcp_info_of;
use crate::worker::Ctx;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd};

/// A worker's flows. Closing one stops polling it and counts it out.
pub(super) struct Flows<S> {
    /// (flow number, socket) pairs.
    socks: Vec<(u32, S)>,
    open: Vec<bool>,
    left: usize,
    pfds: Vec<libc::pollfd>,
}

impl<S: AsFd + AsRawFd> Flows<S> {
    /// `socks` made blocking (with a tick timeout) when `single`, else
    /// non-blocking, each polled for `events`.
    pub(super) fn new(socks: Vec<(u32, S)>, events: i16, single: bool) -> io::Result<Self> {
        for (_, s) in &socks {
            set_blocking(socket2::SockRef::from(s), single)?;
        }
        let n = socks.len();
        Ok(Flows {
            pfds: pollfds(socks.iter().map(|(_, s)| s), events),
            open: vec![true; n],
            left: n,
            socks,
        })
    }

    /// Number of flows (open or not).
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.socks.len()
    }

    /// The (flow number, socket) pairs.
    #[inline]
    pub(super) fn iter(&self) -> std::slice::Iter<'_, (u32, S)> {
        self.socks.iter()
    }

    /// The flow number of the `i`th socket.
    #[inline]
    pub(super) fn flow(&self, i: usize) -> u32 {
        self.socks[i].0
    }

    /// The socket of flow `i`.
    #[inline]
    pub(super) fn sock(&self, i: usize) -> &S {
        &self.socks[i].1
    }

    /// Whether flow `i` is still in use.
    #[inline]
    pub(super) fn is_open(&self, i: usize) -> bool {
        self.open[i]
    }

    /// Stop using flow `i`: no longer polled, no longer counted as open.
    #[inline]
    pub(super) fn close(&mut self, i: usize) {
        if std::mem::replace(&mut self.open[i], false) {
            self.left -= 1;
        }
        self.pfds[i].events = 0;
    }

    /// Whether every flow is closed.
    #[inline]
    pub(super) fn all_closed(&self) -> bool {
        self.left == 0
    }

    /// Poll flow `i` for `events` from now on.
    #[inline]
    pub(super) fn poll_for(&mut self, i: usize, events: i16) {
        self.pfds[i].events = events;
    }

    /// The `pollfd` array, for [`super::driver::Workload::pollfds`].
    #[inline]
    pub(super) fn pollfds(&mut self) -> &mut [libc::pollfd] {
        &mut self.pfds
    }
}

impl Flows<TcpStream> {
    /// Each flow's TCP_INFO into the worker's report (at the end of a test).
    pub(super) fn report_tcp_info(&self, ctx: &mut Ctx) {
        for (f, s) in &self.socks {
            if let Some(t) = tcp_info_of(*f, s) {
                ctx.tcp_info.push(t);
            }
        }
    }
}
