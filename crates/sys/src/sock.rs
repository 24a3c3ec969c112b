//! Socket options `socket2`/`rustix` do not cover: an integer option by
//! number (UDP GSO/GRO, busy-poll, zero-copy, forced buffer sizes) and
//! `TCP_INFO`.

use crate::cvt;
use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, BorrowedFd};

/// `setsockopt(fd, level, name, &int)`.
#[inline]
pub fn set_int_opt(fd: BorrowedFd<'_>, level: i32, name: i32, val: i32) -> io::Result<()> {
    // SAFETY: `val` lives across the call; the length is that of a c_int.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&val as *const i32).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Option numbers used by the engine (from `<linux/udp.h>`, `<asm/socket.h>`).
pub mod opt {
    /// `SOL_UDP`.
    pub const SOL_UDP: i32 = libc::SOL_UDP;
    /// `UDP_SEGMENT` (GSO segment size, Linux 4.18+).
    pub const UDP_SEGMENT: i32 = libc::UDP_SEGMENT;
    /// `UDP_GRO` (Linux 5.0+).
    pub const UDP_GRO: i32 = libc::UDP_GRO;
    /// `SO_BUSY_POLL` (Linux 3.11+).
    pub const SO_BUSY_POLL: i32 = libc::SO_BUSY_POLL;
    /// `SO_ZEROCOPY` (Linux 4.14+).
    pub const SO_ZEROCOPY: i32 = libc::SO_ZEROCOPY;
    /// `MSG_ZEROCOPY`.
    pub const MSG_ZEROCOPY: i32 = libc::MSG_ZEROCOPY;
    /// `SO_RCVBUFFORCE` (needs CAP_NET_ADMIN; ignores `rmem_max`).
    pub const SO_RCVBUFFORCE: i32 = libc::SO_RCVBUFFORCE;
    /// `SO_SNDBUFFORCE`.
    pub const SO_SNDBUFFORCE: i32 = libc::SO_SNDBUFFORCE;
    /// `SOL_SOCKET`.
    pub const SOL_SOCKET: i32 = libc::SOL_SOCKET;
    /// `SO_RCVBUF`.
    pub const SO_RCVBUF: i32 = libc::SO_RCVBUF;
    /// `SO_SNDBUF`.
    pub const SO_SNDBUF: i32 = libc::SO_SNDBUF;
}

/// The TCP_INFO fields the engine reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfoRaw {
    /// `tcpi_total_retrans`: segments retransmitted over the connection's life.
    pub total_retrans: u32,
    /// `tcpi_rtt` in µs (smoothed).
    pub rtt_us: u32,
    /// `tcpi_rttvar` in µs.
    pub rttvar_us: u32,
    /// `tcpi_snd_cwnd` in segments.
    pub snd_cwnd: u32,
    /// `tcpi_snd_mss` in bytes.
    pub snd_mss: u32,
}

/// `getsockopt(TCP_INFO)`.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfoRaw> {
    // SAFETY: tcp_info is plain old data; zero is a valid value.
    let mut ti: libc::tcp_info = unsafe { zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `ti`/`len` are valid for writes of their sizes; the kernel
    // writes at most `len` bytes.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut ti as *mut libc::tcp_info).cast(),
            &mut len,
        )
    })?;
    Ok(TcpInfoRaw {
        total_retrans: ti.tcpi_total_retrans,
        rtt_us: ti.tcpi_rtt,
        rttvar_us: ti.tcpi_rttvar,
        snd_cwnd: ti.tcpi_snd_cwnd,
        snd_mss: ti.tcpi_snd_mss,
    })
}
