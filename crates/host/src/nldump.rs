//! Netlink dumps doctor reads on a live host: qdiscs (`RTM_GETQDISC` over
//! rtnetlink) and established TCP sockets with their `tcp_info`
//! (`SOCK_DIAG_BY_FAMILY` over `NETLINK_SOCK_DIAG`).
//!
//! Netlink rather than `tc -j qdisc show` and `ss -tin`: the kernel's binary
//! layout is stable across versions, where ss's text changes, and nothing
//! outside the kernel must be installed (iproute2 is absent from minimal
//! images). The `ethtool` netlink code in `netlink.rs` sends one request for
//! one reply; a dump is many messages up to `NLMSG_DONE`, so this file has
//! its own small loop with a total deadline and caps on messages and bytes.
//! The decoders are pure and tested on bytes.

use model::doctor_facts::{Qdisc, TcpSocket};
use rustix::fd::OwnedFd;
use rustix::net::netlink::{self, SocketAddrNetlink};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};
use thiserror::Error;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const RTM_GETQDISC: u16 = 38;
const RTM_NEWQDISC: u16 = 36;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_STATS2: u16 = 7;
const TCA_STATS_QUEUE: u16 = 3;
const INET_DIAG_INFO: u16 = 2;
const TC_H_ROOT: u32 = 0xFFFF_FFFF;
const TCP_ESTABLISHED: u32 = 1;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const IPPROTO_TCP: u8 = 6;

/// Most messages read from one dump.
pub const MAX_MESSAGES: usize = 65_536;
/// Total time one dump may take.
pub const DUMP_DEADLINE: Duration = Duration::from_secs(3);

/// A dump that failed.
#[derive(Debug, Error)]
pub enum DumpError {
    /// Socket, send or receive failed.
    #[error("netlink {what}: {error}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        error: rustix::io::Errno,
    },
    /// The kernel answered with an error.
    #[error("netlink dump refused: errno {0}")]
    Errno(i32),
    /// The dump did not end within [`DUMP_DEADLINE`].
    #[error("netlink dump did not finish within {0:?}")]
    Deadline(Duration),
    /// A message was malformed.
    #[error("malformed netlink message: {0}")]
    Malformed(&'static str),
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// Route attributes (`struct rtattr`: u16 len, u16 type, payload, 4-aligned).
fn rtattrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(b, 0)?);
        let ty = u16_at(b, 2)? & 0x3fff;
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = b.get((len + 3) & !3..).unwrap_or_default();
        Some((ty, payload))
    })
}

/// Run one dump request on a netlink socket of `protocol` (`None` is route), calling `each`
/// with the type and body of every reply message.
fn dump(
    protocol: Option<rustix::net::Protocol>,
    ty: u16,
    payload: &[u8],
    mut each: impl FnMut(u16, &[u8]),
) -> Result<(), DumpError> {
    let io = |what| move |error| DumpError::Io { what, error };
    let fd: OwnedFd = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, protocol)
        .map_err(io("socket"))?;
    rustix::net::bind(&fd, &SocketAddrNetlink::new(0, 0)).map_err(io("bind"))?;
    rustix::net::sockopt::set_socket_timeout(
        &fd,
        rustix::net::sockopt::Timeout::Recv,
        Some(Duration::from_millis(500)),
    )
    .map_err(io("timeout"))?;
    let seq: u32 = 0x6e74_0001;
    let mut msg = Vec::with_capacity(16 + payload.len());
    msg.extend_from_slice(&((16 + payload.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&ty.to_ne_bytes());
    msg.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    msg.extend_from_slice(&seq.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    msg.extend_from_slice(payload);
    rustix::net::sendto(&fd, &msg, SendFlags::empty(), &SocketAddrNetlink::new(0, 0))
        .map_err(io("send"))?;
    let start = Instant::now();
    let mut buf = vec![0u8; 1 << 16];
    let mut count = 0usize;
    loop {
        if start.elapsed() > DUMP_DEADLINE {
            return Err(DumpError::Deadline(DUMP_DEADLINE));
        }
        let (_, n) = match rustix::net::recv(&fd, &mut buf[..], RecvFlags::empty()) {
            Ok(r) => r,
            Err(rustix::io::Errno::AGAIN) => return Err(DumpError::Deadline(DUMP_DEADLINE)),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(io("recv")(e)),
        };
        let data = buf.get(..n).unwrap_or_default();
        let mut off = 0;
        while off + 16 <= data.len() {
            let len = u32_at(data, off).unwrap_or(0) as usize;
            let mty = u16_at(data, off + 4).unwrap_or(0);
            let mseq = u32_at(data, off + 8).unwrap_or(0);
            if len < 16 || off + len > data.len() {
                return Err(DumpError::Malformed("message length"));
            }
            let body = &data[off + 16..off + len];
            if mseq == seq {
                match mty {
                    NLMSG_DONE => return Ok(()),
                    NLMSG_ERROR => {
                        let code = u32_at(body, 0).unwrap_or(0) as i32;
                        if code != 0 {
                            return Err(DumpError::Errno(-code));
                        }
                    }
                    _ => {
                        count += 1;
                        if count > MAX_MESSAGES {
                            // Enough to judge; the rest is left unread.
                            return Ok(());
                        }
                        each(mty, body);
                    }
                }
            }
            off += (len + 3) & !3;
        }
    }
}

/// A qdisc as the kernel reports it, before names are attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawQdisc {
    /// Interface index.
    pub ifindex: i32,
    /// Handle (major << 16 | minor).
    pub handle: u32,
    /// Parent handle (`TC_H_ROOT` at the root).
    pub parent: u32,
    /// Kind.
    pub kind: String,
    /// qlen, backlog, drops from `TCA_STATS2/TCA_STATS_QUEUE`.
    pub queue: Option<(u32, u32, u32)>,
    /// Packet limit (pfifo/bfifo `tc_fifo_qopt`, fq_codel and fq nested `LIMIT`).
    pub limit: Option<u32>,
}

/// Decode the body of an `RTM_NEWQDISC` message (`struct tcmsg` then attributes).
pub fn decode_qdisc(body: &[u8]) -> Option<RawQdisc> {
    let ifindex = u32_at(body, 4)? as i32;
    let handle = u32_at(body, 8)?;
    let parent = u32_at(body, 12)?;
    let mut kind = None;
    let mut queue = None;
    let mut options: &[u8] = &[];
    for (ty, p) in rtattrs(body.get(20..)?) {
        match ty {
            TCA_KIND => {
                let s = p.split(|b| *b == 0).next().unwrap_or_default();
                kind = Some(
                    String::from_utf8_lossy(s)
                        .chars()
                        .take(32)
                        .collect::<String>(),
                );
            }
            TCA_OPTIONS => options = p,
            TCA_STATS2 => {
                for (t, q) in rtattrs(p) {
                    if t == TCA_STATS_QUEUE {
                        queue = Some((u32_at(q, 0)?, u32_at(q, 4)?, u32_at(q, 8)?));
                    }
                }
            }
            _ => {}
        }
    }
    let kind = kind?;
    let nested = |want: u16| {
        rtattrs(options)
            .find(|(t, _)| *t == want)
            .and_then(|(_, p)| u32_at(p, 0))
    };
    let limit = match kind.as_str() {
        "pfifo" | "bfifo" | "pfifo_head_drop" => u32_at(options, 0),
        "fq_codel" => nested(2),
        "fq" => nested(1),
        _ => None,
    };
    Some(RawQdisc {
        ifindex,
        handle,
        parent,
        kind,
        queue,
        limit,
    })
}

/// `tc`'s way of printing a handle: `8001:` or `1:2`.
pub fn handle_text(h: u32) -> String {
    let (maj, min) = (h >> 16, h & 0xffff);
    if min == 0 {
        format!("{maj:x}:")
    } else {
        format!("{maj:x}:{min:x}")
    }
}

/// Attach interface names and TX queues: a qdisc whose parent is a class
/// `M:N` of an `mq`/`mqprio` root with handle `M:` serves TX queue N-1.
pub fn resolve_qdiscs(raw: &[RawQdisc], name_of: impl Fn(i32) -> Option<String>) -> Vec<Qdisc> {
    raw.iter()
        .map(|q| {
            let mq_root = raw.iter().find(|r| {
                r.ifindex == q.ifindex
                    && r.parent == TC_H_ROOT
                    && matches!(r.kind.as_str(), "mq" | "mqprio")
            });
            let tx_queue = mq_root.and_then(|r| {
                let (maj, min) = (q.parent >> 16, q.parent & 0xffff);
                (q.parent != TC_H_ROOT && maj == r.handle >> 16 && min > 0).then(|| min - 1)
            });
            Qdisc {
                interface: name_of(q.ifindex).unwrap_or_else(|| format!("ifindex {}", q.ifindex)),
                kind: q.kind.clone(),
                handle: handle_text(q.handle),
                root: q.parent == TC_H_ROOT,
                tx_queue,
                qlen: q.queue.map(|x| x.0),
                backlog: q.queue.map(|x| x.1),
                drops: q.queue.map(|x| x.2),
                limit: q.limit,
            }
        })
        .collect()
}

/// Every qdisc of the live host (all interfaces of the current namespace).
pub fn dump_qdiscs() -> Result<Vec<RawQdisc>, DumpError> {
    let mut out = Vec::new();
    let tcmsg = [0u8; 20];
    // NETLINK_ROUTE is protocol 0.
    dump(None, RTM_GETQDISC, &tcmsg, |ty, body| {
        if ty == RTM_NEWQDISC {
            if let Some(q) = decode_qdisc(body) {
                out.push(q);
            }
        }
    })?;
    Ok(out)
}

fn ip_of(family: u8, b: &[u8]) -> Option<IpAddr> {
    match family {
        AF_INET => Some(IpAddr::V4(Ipv4Addr::from(
            <[u8; 4]>::try_from(b.get(..4)?).ok()?,
        ))),
        AF_INET6 => Some(IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(b.get(..16)?).ok()?,
        ))),
        _ => None,
    }
}

/// Decode one `inet_diag_msg` with its `INET_DIAG_INFO` (`struct tcp_info`).
/// `None` when the message is short or carries no `tcp_info`.
pub fn decode_tcp_diag(body: &[u8]) -> Option<TcpSocket> {
    let family = *body.first()?;
    let port = |o: usize| Some(u16::from_be_bytes(body.get(o..o + 2)?.try_into().ok()?));
    let local_port = port(4)?;
    let remote_port = port(6)?;
    let local = ip_of(family, body.get(8..24)?)?;
    let remote = ip_of(family, body.get(24..40)?)?;
    let info = rtattrs(body.get(72..)?)
        .find(|(t, _)| *t == INET_DIAG_INFO)?
        .1;
    Some(TcpSocket {
        local,
        local_port,
        remote,
        remote_port,
        snd_mss: u32_at(info, 16)?,
        rtt_us: u32_at(info, 68)?,
        rttvar_us: u32_at(info, 72)?,
        snd_cwnd: u32_at(info, 80)?,
        bytes_acked: u64_at(info, 120),
        bytes_received: u64_at(info, 128),
        delivery_rate: u64_at(info, 160),
    })
}

/// Established TCP sockets (IPv4 and IPv6) of the current namespace with
/// their `tcp_info`.
pub fn dump_tcp_sockets() -> Result<Vec<TcpSocket>, DumpError> {
    let mut out = Vec::new();
    for family in [AF_INET, AF_INET6] {
        // struct inet_diag_req_v2: family, protocol, ext, pad, states, sockid (48 bytes).
        let mut req = vec![family, IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0];
        req.extend_from_slice(&(1u32 << TCP_ESTABLISHED).to_ne_bytes());
        req.extend_from_slice(&[0u8; 48]);
        dump(
            Some(netlink::SOCK_DIAG),
            SOCK_DIAG_BY_FAMILY,
            &req,
            |_, body| {
                if out.len() < MAX_MESSAGES {
                    if let Some(s) = decode_tcp_diag(body) {
                        out.push(s);
                    }
                }
            },
        )?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(ty: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(payload);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn tcmsg(ifindex: i32, handle: u32, parent: u32) -> Vec<u8> {
        let mut v = vec![0u8, 0, 0, 0];
        v.extend_from_slice(&ifindex.to_ne_bytes());
        v.extend_from_slice(&handle.to_ne_bytes());
        v.extend_from_slice(&parent.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v
    }

    // Shapes as kernel 6.18 sends them for `mq` with `fq_codel` children
    // and for a `pfifo` of limit 1000 (values set in the test).
    #[test]
    fn decodes_qdiscs_and_maps_mq_children() {
        let mut mq = tcmsg(2, 0, TC_H_ROOT);
        mq.extend(attr(TCA_KIND, b"mq\0"));
        let mut child = tcmsg(2, 0, 0x0000_0002);
        child.extend(attr(TCA_KIND, b"fq_codel\0"));
        child.extend(attr(TCA_OPTIONS, &attr(2, &10240u32.to_ne_bytes())));
        let mut q = Vec::new();
        for v in [3u32, 4500, 7, 0, 0] {
            q.extend_from_slice(&v.to_ne_bytes());
        }
        child.extend(attr(TCA_STATS2, &attr(TCA_STATS_QUEUE, &q)));
        let mut fifo = tcmsg(3, 0x0001_0000, TC_H_ROOT);
        fifo.extend(attr(TCA_KIND, b"pfifo\0"));
        fifo.extend(attr(TCA_OPTIONS, &1000u32.to_ne_bytes()));
        let raw: Vec<RawQdisc> = [mq, child, fifo]
            .iter()
            .filter_map(|b| decode_qdisc(b))
            .collect();
        assert_eq!(raw.len(), 3);
        assert_eq!(raw[1].queue, Some((3, 4500, 7)));
        assert_eq!(raw[1].limit, Some(10240));
        assert_eq!(raw[2].limit, Some(1000));
        let q = resolve_qdiscs(&raw, |i| Some(format!("eth{i}")));
        assert_eq!(q[0].tx_queue, None);
        assert!(q[0].root);
        assert_eq!(q[1].tx_queue, Some(1));
        assert_eq!(q[1].interface, "eth2");
        assert_eq!(q[2].handle, "1:");
        assert_eq!(handle_text(0x8001_0003), "8001:3");
    }

    #[test]
    fn short_or_hostile_bytes_decode_to_none() {
        assert!(decode_qdisc(&[]).is_none());
        assert!(decode_qdisc(&tcmsg(1, 0, 0)).is_none(), "no kind");
        let mut bad = tcmsg(1, 0, 0);
        bad.extend_from_slice(&[0xff, 0xff, 1, 0]);
        assert!(decode_qdisc(&bad).is_none());
        assert!(decode_tcp_diag(&[2; 71]).is_none());
    }

    #[test]
    fn decodes_tcp_info() {
        let mut m = vec![AF_INET, 1, 0, 0];
        m.extend_from_slice(&6379u16.to_be_bytes());
        m.extend_from_slice(&40000u16.to_be_bytes());
        let mut src = [0u8; 16];
        src[..4].copy_from_slice(&[10, 0, 0, 1]);
        let mut dst = [0u8; 16];
        dst[..4].copy_from_slice(&[10, 0, 0, 2]);
        m.extend_from_slice(&src);
        m.extend_from_slice(&dst);
        m.resize(72, 0);
        let mut info = vec![0u8; 232];
        info[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        info[68..72].copy_from_slice(&100_250u32.to_ne_bytes());
        info[72..76].copy_from_slice(&900u32.to_ne_bytes());
        info[80..84].copy_from_slice(&10u32.to_ne_bytes());
        info[120..128].copy_from_slice(&5_000_000u64.to_ne_bytes());
        m.extend(attr(INET_DIAG_INFO, &info));
        let s = decode_tcp_diag(&m).unwrap();
        assert_eq!(s.local, "10.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(s.local_port, 6379);
        assert_eq!(s.remote_port, 40000);
        assert_eq!(s.rtt_us, 100_250);
        assert_eq!(s.snd_mss, 1448);
        assert_eq!(s.bytes_acked, Some(5_000_000));
        assert!(!s.is_loopback());
        // A 4.1 kernel's shorter tcp_info (104 bytes): no bytes_acked.
        let mut old = m[..72].to_vec();
        old.extend(attr(INET_DIAG_INFO, &info[..104]));
        assert_eq!(decode_tcp_diag(&old).unwrap().bytes_acked, None);
    }

    #[test]
    fn live_dumps_run_within_the_deadline() {
        // Reading is allowed anywhere (no writes); the sandbox may forbid netlink.
        match dump_qdiscs() {
            Ok(q) => assert!(q.iter().all(|x| !x.kind.is_empty())),
            Err(e) => eprintln!("skipped: qdisc dump unavailable here: {e}"),
        }
        match dump_tcp_sockets() {
            Ok(s) => assert!(s.len() <= 2 * MAX_MESSAGES),
            Err(e) => eprintln!("skipped: sock_diag unavailable here: {e}"),
        }
    }
}
