//! Socket setup both ends share: SO_REUSEPORT listeners and UDP sockets
//! with a source filter, the configuration's socket options, TCP_INFO rows.

use crate::config::TestConfig;
use crate::report::TcpInfo;
use crate::sys;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;

/// A TCP listener with SO_REUSEADDR and SO_REUSEPORT.
pub(crate) fn reuseport_listener(addr: SocketAddr, backlog: i32) -> std::io::Result<TcpListener> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(backlog)?;
    Ok(s.into())
}

/// A UDP socket bound with SO_REUSEPORT that receives only datagrams from
/// `peer`: a socket filter, attached before the bind, drops all others in
/// the kernel, so a spoofed source can neither register a flow nor get an
/// echo (no reflection to third parties).
pub(crate) fn reuseport_udp_from(addr: SocketAddr, peer: IpAddr) -> std::io::Result<UdpSocket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::DGRAM,
        None,
    )?;
    s.attach_filter(&sys::source_filter(peer))?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Apply the configuration's socket options to a data socket.
pub(crate) fn apply_opts(fd: std::os::fd::BorrowedFd<'_>, cfg: &TestConfig, tcp: bool) {
    use sys::opt::*;
    if let Some(b) = cfg.sndbuf {
        if sys::set_int_opt(fd, SOL_SOCKET, SO_SNDBUFFORCE, b as i32).is_err() {
            let _ = sys::set_int_opt(fd, SOL_SOCKET, SO_SNDBUF, b as i32);
        }
    }
    if let Some(b) = cfg.rcvbuf {
        if sys::set_int_opt(fd, SOL_SOCKET, SO_RCVBUFFORCE, b as i32).is_err() {
            let _ = sys::set_int_opt(fd, SOL_SOCKET, SO_RCVBUF, b as i32);
        }
    }
    if cfg.busy_poll_us > 0 {
        let _ = sys::set_int_opt(fd, SOL_SOCKET, SO_BUSY_POLL, cfg.busy_poll_us as i32);
    }
    if tcp && cfg.nodelay {
        let _ = sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    }
}

/// TCP_INFO of a stream as a report row.
pub(crate) fn tcp_info_of(flow: u32, s: &TcpStream) -> Option<TcpInfo> {
    sys::tcp_info(s.as_fd()).ok().map(|t| TcpInfo {
        flow,
        retransmits: t.total_retrans,
        rtt_us: t.rtt_us,
        rttvar_us: t.rttvar_us,
        cwnd: t.snd_cwnd,
        mss: t.snd_mss,
    })
}
