//! The engine's system calls: the `unsafe` ones re-exported from
//! `nettune-sys` (sendmmsg/recvmmsg batches, TCP_INFO, UDP GSO/GRO and
//! busy-poll socket options, per-thread rusage, `poll` over the workloads'
//! stored `pollfd` arrays), and the safe ones built here: the source-address
//! BPF filter, CPU pinning, timer slack and the clock tick (through rustix).
//! The engine itself has no `unsafe` code.

pub use ::sys::mmsg::Mmsg;
pub use ::sys::poll::{poll, ppoll};
pub use ::sys::rusage::{process_rusage, thread_rusage, Rusage};
pub use ::sys::sched;
pub use ::sys::sock::{opt, set_int_opt, tcp_info};

use std::io;

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

/// `prctl(PR_SET_TIMERSLACK)` for the calling thread (default slack is
/// 50 µs; 0 restores the thread's default).
pub fn set_timer_slack_ns(ns: u64) {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(ns));
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
        assert!(clock_ticks() > 0);
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
}
