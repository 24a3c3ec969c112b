//! The engine's only `unsafe` code: thin wrappers over Linux syscalls that
//! `socket2`/`rustix` do not cover (sendmmsg/recvmmsg batches, TCP_INFO,
//! UDP GSO/GRO and busy-poll socket options, per-thread rusage, `poll` over
//! the workloads' stored `pollfd` arrays). CPU pinning, timer slack and the
//! clock tick go through rustix.
//!
//! Left here on purpose: rustix 1.1 has `sendmmsg` but no `recvmmsg`, and its
//! `MMsgHdr` borrows its buffers per call, so [`Mmsg`]'s preallocated,
//! reused headers (no allocation per batch) stay on libc; rustix's `poll`
//! takes `PollFd`s that borrow each socket, which the workloads (owning
//! their sockets and a `pollfd` array side by side) cannot hold without
//! rebuilding the array on every wait.
//!
//! Audit rule: every `unsafe` block passes pointers to memory owned by `self`
//! or by a live borrow for the duration of the call, and lengths that match
//! those buffers.
#![allow(unsafe_code)]

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, BorrowedFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `setsockopt(fd, level, name, &int)`.
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

/// A classic BPF socket filter that accepts only packets whose source
/// address is `peer` (read from the IPv4 or IPv6 header; an IPv4-mapped
/// address counts as IPv4) and drops every other.
///
/// The filter first checks the IP version nibble, so on a dual-stack socket
/// an IPv6 packet whose address bytes happen to hold the IPv4 peer's address
/// at the IPv4 source offset (or the reverse) is dropped too.
pub fn source_filter(peer: std::net::IpAddr) -> Vec<libc::sock_filter> {
    use std::net::IpAddr;
    const LD_B_ABS: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const RSH_K: u16 = (libc::BPF_ALU | libc::BPF_RSH | libc::BPF_K) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let ins = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    // Loads at SKF_NET_OFF + n read the network header, wherever the
    // socket layer's data starts.
    let net = libc::SKF_NET_OFF as u32;
    // The IP version and (offset in the network header, 32-bit word of the
    // address) pairs.
    let (version, words): (u32, Vec<(u32, u32)>) = match peer.to_canonical() {
        IpAddr::V4(a) => (4, vec![(12, u32::from_be_bytes(a.octets()))]),
        IpAddr::V6(a) => {
            let o = a.octets();
            let w = (0..4)
                .map(|i| {
                    let w =
                        u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]);
                    (8 + 4 * i as u32, w)
                })
                .collect();
            (6, w)
        }
    };
    let n = words.len();
    let mut prog = Vec::with_capacity(2 * n + 5);
    // A = version nibble; on a mismatch jump past the address checks and
    // the accept, to the drop.
    prog.push(ins(LD_B_ABS, 0, 0, net));
    prog.push(ins(RSH_K, 0, 0, 4));
    prog.push(ins(JEQ_K, 0, (2 * n + 1) as u8, version));
    for (i, (off, w)) in words.into_iter().enumerate() {
        prog.push(ins(LD_W_ABS, 0, 0, net.wrapping_add(off)));
        // On a mismatch skip the remaining load/compare pairs and the accept.
        prog.push(ins(JEQ_K, 0, (2 * (n - 1 - i) + 1) as u8, w));
    }
    prog.push(ins(RET_K, 0, 0, u32::MAX));
    prog.push(ins(RET_K, 0, 0, 0));
    prog
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

/// User and system CPU time in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User time, µs.
    pub user_us: u64,
    /// System time, µs.
    pub sys_us: u64,
}

fn rusage(who: libc::c_int) -> Rusage {
    // SAFETY: rusage is plain old data; zero is valid.
    let mut ru: libc::rusage = unsafe { zeroed() };
    // SAFETY: `ru` is valid for writes during the call.
    let r = unsafe { libc::getrusage(who, &mut ru) };
    if r != 0 {
        return Rusage::default();
    }
    let us = |t: libc::timeval| (t.tv_sec as u64) * 1_000_000 + t.tv_usec as u64;
    Rusage {
        user_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
    }
}

/// `getrusage(RUSAGE_THREAD)` of the calling thread.
pub fn thread_rusage() -> Rusage {
    rusage(libc::RUSAGE_THREAD)
}

/// `getrusage(RUSAGE_SELF)` of the process.
pub fn process_rusage() -> Rusage {
    rusage(libc::RUSAGE_SELF)
}

/// `AT_CLKTCK` (what `sysconf(_SC_CLK_TCK)` returns): the unit of
/// `/proc/stat` (USER_HZ), 100 if unknown.
pub fn clock_ticks() -> u64 {
    match rustix::param::clock_ticks_per_second() {
        0 => 100,
        v => v,
    }
}

/// Pin the calling thread to one CPU.
pub fn pin_thread(cpu: u32) -> io::Result<()> {
    if cpu as usize >= rustix::thread::CpuSet::MAX_CPU {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu as usize);
    rustix::thread::sched_setaffinity(None, &set).map_err(io::Error::from)
}

/// `poll(2)` over `(fd, events)`; returns the revents in place.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: the slice is valid for reads and writes of `len` pollfds.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// Most datagrams one batch holds.
pub const MAX_BATCH: usize = 256;

/// `ppoll(2)` with a nanosecond timeout.
pub fn ppoll(fds: &mut [libc::pollfd], timeout: std::time::Duration) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the slice is valid for `len` pollfds; `ts` lives across the
    // call; a null sigmask leaves the mask unchanged.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// `prctl(PR_SET_TIMERSLACK)` for the calling thread (default slack is
/// 50 µs; 0 restores the thread's default).
pub fn set_timer_slack_ns(ns: u64) {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(ns));
}

/// Preallocated buffers and headers for `recvmmsg`/`sendmmsg` batches.
///
/// Slot `i` is `bufs[i*slot .. (i+1)*slot]`; after a receive, `len(i)` is the
/// datagram's length and `addr(i)` its source. Nothing allocates per call.
pub struct Mmsg {
    slot: usize,
    bufs: Vec<u8>,
    iov: Vec<libc::iovec>,
    hdr: Vec<libc::mmsghdr>,
    addr: Vec<libc::sockaddr_storage>,
    namelen: Vec<libc::socklen_t>,
}

impl std::fmt::Debug for Mmsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mmsg")
            .field("slots", &self.hdr.len())
            .field("slot", &self.slot)
            .finish()
    }
}

impl Mmsg {
    /// `n` slots of `slot` bytes each.
    pub fn new(n: usize, slot: usize) -> Mmsg {
        let n = n.clamp(1, MAX_BATCH);
        Mmsg {
            slot,
            bufs: vec![0u8; n * slot],
            // SAFETY: iovec/mmsghdr/sockaddr_storage are plain old data and
            // all-zero (null pointers, zero lengths) is a valid value for each.
            iov: (0..n).map(|_| unsafe { zeroed() }).collect(),
            hdr: (0..n).map(|_| unsafe { zeroed() }).collect(),
            addr: (0..n).map(|_| unsafe { zeroed() }).collect(),
            namelen: vec![0; n],
        }
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.hdr.len()
    }

    /// The writable bytes of slot `i`.
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.slot..(i + 1) * self.slot]
    }

    /// Received datagram `i` (valid after [`Mmsg::recv`]).
    pub fn msg(&self, i: usize) -> &[u8] {
        let len = (self.hdr[i].msg_len as usize).min(self.slot);
        &self.bufs[i * self.slot..i * self.slot + len]
    }

    /// Length of received datagram `i`.
    pub fn len(&self, i: usize) -> usize {
        self.hdr[i].msg_len as usize
    }

    fn prep(&mut self, n: usize, len: impl Fn(usize) -> usize, names: bool) {
        let base = self.bufs.as_mut_ptr();
        for i in 0..n {
            let l = len(i).min(self.slot);
            // SAFETY: i*slot + l <= bufs.len(), so the pointer stays in bounds.
            self.iov[i].iov_base = unsafe { base.add(i * self.slot) }.cast();
            self.iov[i].iov_len = l;
            // SAFETY: msghdr is plain old data; zero is valid.
            let mut h: libc::msghdr = unsafe { zeroed() };
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
            if names {
                h.msg_name = (&mut self.addr[i] as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = self.namelen[i];
            }
            self.hdr[i].msg_hdr = h;
            self.hdr[i].msg_len = 0;
        }
    }

    /// `recvmmsg` up to `n` datagrams (all slots if `n` is larger).
    /// With `dontwait`, returns `WouldBlock` when nothing is queued.
    pub fn recv(&mut self, fd: BorrowedFd<'_>, n: usize, dontwait: bool) -> io::Result<usize> {
        let n = n.min(self.slots());
        for l in self.namelen.iter_mut().take(n) {
            *l = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        let slot = self.slot;
        self.prep(n, |_| slot, true);
        let flags = if dontwait {
            libc::MSG_DONTWAIT
        } else {
            libc::MSG_WAITFORONE
        };
        // SAFETY: hdr[..n] point at iov/bufs/addr owned by self, all valid
        // for writes of the lengths given; no timeout pointer.
        let r = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.hdr.as_mut_ptr(),
                n as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let r = r as usize;
        for i in 0..r {
            self.namelen[i] = self.hdr[i].msg_hdr.msg_namelen;
        }
        Ok(r)
    }

    fn sendmmsg(
        &mut self,
        fd: BorrowedFd<'_>,
        from: usize,
        n: usize,
        flags: i32,
    ) -> io::Result<usize> {
        // SAFETY: hdr[from..from+n] were prepared by `prep` and point into
        // buffers owned by self.
        let r = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                self.hdr.as_mut_ptr().add(from),
                n as libc::c_uint,
                flags,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// `sendmmsg` of the first `n` slots, `len` bytes each, on a connected
    /// socket. Returns how many were sent (fewer on `dontwait` back-pressure).
    pub fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        n: usize,
        len: usize,
        flags: i32,
    ) -> io::Result<usize> {
        let n = n.min(self.slots());
        self.prep(n, |_| len, false);
        let mut done = 0;
        while done < n {
            match self.sendmmsg(fd, done, n - done, flags) {
                Ok(0) => break,
                Ok(k) => done += k,
                Err(e) if done > 0 && e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// Send the `n` datagrams just received back to their sources.
    pub fn echo(&mut self, fd: BorrowedFd<'_>, n: usize) -> io::Result<usize> {
        let m = n.min(self.slots());
        let mut lens = [0usize; MAX_BATCH];
        for (i, l) in lens.iter_mut().enumerate().take(m) {
            *l = self.hdr[i].msg_len as usize;
        }
        self.prep(m, |i| lens[i], true);
        let mut done = 0;
        while done < m {
            match self.sendmmsg(fd, done, m - done, 0) {
                Ok(0) => break,
                Ok(k) => done += k,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

/// `TUNSETIFF`: `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// The part of `struct ifreq` that `TUNSETIFF` reads and writes: the name
/// and the flags (`ifr_flags`), padded to the kernel's 40-byte `ifreq`.
#[repr(C)]
struct IfreqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    pad: [u8; 22],
}

/// Open a layer-3 TUN device (`IFF_TUN | IFF_NO_PI`) named `name`
/// (created if absent; at most 15 bytes), non-blocking and close-on-exec.
/// The device lives as long as the returned fd (it is not persistent): the
/// kernel removes it when the fd closes, in whatever namespace it was moved to.
pub fn open_tun(name: &str) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("TUN name {name:?}: 1..15 bytes, no NUL"),
        ));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    let mut req = IfreqFlags {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        pad: [0; 22],
    };
    for (d, s) in req.name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: `file` is an open fd for the whole call; `req` is a live,
    // NUL-terminated (zeroed tail) ifreq-sized struct that TUNSETIFF reads
    // and may write back (the final name) within its 40 bytes.
    cvt(unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            TUNSETIFF as _,
            &mut req as *mut IfreqFlags,
        )
    })?;
    Ok(file.into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
    use std::time::Duration;

    /// Run the classic BPF subset `source_filter` uses over a packet whose
    /// network header starts at `pkt[0]`; returns the accepted length.
    fn run_filter(prog: &[libc::sock_filter], pkt: &[u8]) -> u32 {
        let net = libc::SKF_NET_OFF as u32;
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = prog[pc];
            let off = i.k.wrapping_sub(net) as usize;
            match i.code as u32 {
                c if c == libc::BPF_LD | libc::BPF_B | libc::BPF_ABS => {
                    let Some(b) = pkt.get(off) else { return 0 };
                    a = u32::from(*b);
                }
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    let Some(w) = pkt.get(off..off + 4) else {
                        return 0;
                    };
                    a = u32::from_be_bytes(w.try_into().unwrap());
                }
                c if c == libc::BPF_ALU | libc::BPF_RSH | libc::BPF_K => a >>= i.k,
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    pc += usize::from(if a == i.k { i.jt } else { i.jf });
                }
                c if c == libc::BPF_RET | libc::BPF_K => return i.k,
                c => panic!("unexpected opcode {c:#x}"),
            }
            pc += 1;
        }
    }

    fn v4_packet(src: Ipv4Addr) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&src.octets());
        p
    }

    fn v6_packet(src: Ipv6Addr) -> Vec<u8> {
        let mut p = vec![0u8; 48];
        p[0] = 0x60;
        p[8..24].copy_from_slice(&src.octets());
        p
    }

    #[test]
    fn filter_accepts_only_the_peer_of_its_family() {
        let v4: Ipv4Addr = "10.1.2.3".parse().unwrap();
        let f = source_filter(IpAddr::V4(v4));
        assert_ne!(run_filter(&f, &v4_packet(v4)), 0);
        assert_eq!(run_filter(&f, &v4_packet("10.1.2.4".parse().unwrap())), 0);
        // An IPv6 packet holding the IPv4 peer's address where an IPv4
        // header has its source (bytes 12..16 = address bytes 4..8) must not
        // pass: without the version check it did.
        let confusing: Ipv6Addr = "2001:db8:a01:203::1".parse().unwrap();
        assert_eq!(&v6_packet(confusing)[12..16], &v4.octets());
        assert_eq!(run_filter(&f, &v6_packet(confusing)), 0);

        let v6: Ipv6Addr = "2001:db8::7".parse().unwrap();
        let f = source_filter(IpAddr::V6(v6));
        assert_ne!(run_filter(&f, &v6_packet(v6)), 0);
        for other in ["2001:db8::8", "2001:db9::7", "::1"] {
            assert_eq!(run_filter(&f, &v6_packet(other.parse().unwrap())), 0);
        }
        assert_eq!(run_filter(&f, &v4_packet(v4)), 0);
        // A v4-mapped peer filters as IPv4.
        let f = source_filter(IpAddr::V6(v4.to_ipv6_mapped()));
        assert_ne!(run_filter(&f, &v4_packet(v4)), 0);
        assert_eq!(run_filter(&f, &v6_packet(v4.to_ipv6_mapped())), 0);
    }

    /// Whether a datagram from `from` reaches a socket bound to `to` that
    /// carries the filter for `peer` (the real kernel, loopback only).
    fn delivered(to: SocketAddr, peer: IpAddr, from: SocketAddr) -> bool {
        let s = socket2::Socket::new(socket2::Domain::for_address(to), socket2::Type::DGRAM, None)
            .unwrap();
        if to.is_ipv6() {
            s.set_only_v6(false).unwrap();
        }
        s.attach_filter(&source_filter(peer)).unwrap();
        s.bind(&to.into()).unwrap();
        let rx: UdpSocket = s.into();
        rx.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut dst = rx.local_addr().unwrap();
        if from.is_ipv4() && dst.is_ipv6() {
            dst = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), dst.port());
        }
        let tx = UdpSocket::bind(from).unwrap();
        tx.send_to(b"x", dst).unwrap();
        let mut b = [0u8; 8];
        rx.recv(&mut b).is_ok()
    }

    #[test]
    fn rustix_wrappers_behave_as_the_libc_ones_did() {
        // Pinning a fresh thread to CPU 0 leaves exactly CPU 0 in its mask.
        std::thread::spawn(|| {
            pin_thread(0).unwrap();
            let set = rustix::thread::sched_getaffinity(None).unwrap();
            assert!(set.is_set(0));
            assert_eq!(set.count(), 1);
            // Out of the set's range: EINVAL, as before.
            let e = pin_thread(u32::MAX).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
            set_timer_slack_ns(1);
            assert_eq!(rustix::thread::current_timer_slack().unwrap(), 1);
        })
        .join()
        .unwrap();
        // SAFETY: sysconf has no memory arguments (test-only comparison).
        let libc_hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        assert_eq!(clock_ticks(), libc_hz as u64);
    }

    fn ipv6_loopback() -> bool {
        UdpSocket::bind("[::1]:0").is_ok()
    }

    #[test]
    fn kernel_applies_the_filter_to_ipv4_ipv6_and_mapped_sources() {
        let v4 = |s: &str| -> SocketAddr { format!("{s}:0").parse().unwrap() };
        let lo4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert!(delivered(v4("127.0.0.1"), lo4, v4("127.0.0.1")));
        assert!(!delivered(v4("127.0.0.1"), lo4, v4("127.0.0.2")));
        if !ipv6_loopback() {
            eprintln!("skipping the IPv6 half: no IPv6 loopback here");
            return;
        }
        let any6: SocketAddr = "[::]:0".parse().unwrap();
        let lo6: SocketAddr = "[::1]:0".parse().unwrap();
        // Dual-stack socket, IPv4 peer: its IPv4 datagrams pass, others not.
        assert!(delivered(any6, lo4, v4("127.0.0.1")));
        assert!(!delivered(any6, lo4, v4("127.0.0.2")));
        assert!(!delivered(any6, lo4, lo6));
        // The same peer given v4-mapped.
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert!(delivered(any6, mapped, v4("127.0.0.1")));
        // IPv6 peer.
        assert!(delivered(lo6, IpAddr::V6(Ipv6Addr::LOCALHOST), lo6));
        assert!(!delivered(lo6, "::2".parse().unwrap(), lo6));
        assert!(!delivered(
            any6,
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            v4("127.0.0.1")
        ));
    }

    #[test]
    fn open_tun_refuses_bad_names_before_any_syscall() {
        for bad in ["", "sixteen-bytes-xx", "a\0b"] {
            let e = super::open_tun(bad).expect_err(bad);
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }
}
