//! Round-trip time to a host by ICMP echo (`plan --bdp RATE,HOST`, as Red Hat's RHEL 6 tuning slides size buffers:
//! "get RTT from ping"): a few probes within a total deadline over an
//! unprivileged ICMP datagram socket (a "ping socket", allowed by
//! `net.ipv4.ping_group_range`), else a raw ICMP socket (CAP_NET_RAW).

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::Read;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Most probes one measurement sends.
pub const MAX_PROBES: u32 = 64;

/// Why an RTT could not be measured.
#[derive(Debug, Error)]
pub enum RttError {
    /// The name did not resolve.
    #[error("resolving {host}: {source}")]
    Resolve {
        /// Host as given.
        host: String,
        /// Resolver error.
        source: std::io::Error,
    },
    /// It resolved to no address.
    #[error("{host} resolves to no address")]
    NoAddress {
        /// Host as given.
        host: String,
    },
    /// Neither an ICMP datagram socket nor a raw one could be opened.
    #[error("ICMP socket for {addr}: {source} (allow unprivileged ping with sysctl net.ipv4.ping_group_range, or run as root)")]
    Socket {
        /// Address probed.
        addr: IpAddr,
        /// Error of the datagram socket.
        source: std::io::Error,
    },
    /// The echo request could not be sent.
    #[error("ICMP echo to {addr}: {source}")]
    Send {
        /// Address probed.
        addr: IpAddr,
        /// Send error.
        source: std::io::Error,
    },
    /// No reply came within the deadline.
    #[error("no ICMP echo reply from {addr} to {sent} probe(s) within {} ms{}", deadline.as_millis(), last.as_ref().map(|e| format!(" (last error: {e})")).unwrap_or_default())]
    NoReply {
        /// Address probed.
        addr: IpAddr,
        /// Probes sent.
        sent: u32,
        /// The total deadline.
        deadline: Duration,
        /// The last receive error other than a timeout (e.g. host unreachable).
        last: Option<std::io::Error>,
    },
}

/// Round-trip times of the probes that were answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echoes {
    /// Address probed.
    pub addr: IpAddr,
    /// Probes sent.
    pub sent: u32,
    /// One RTT per reply, in the order sent.
    pub rtts: Vec<Duration>,
    /// `"icmp datagram"` or `"icmp raw"`: the socket used.
    pub socket: &'static str,
}

impl Echoes {
    /// Median RTT in microseconds (the lower middle of an even count), at least 1.
    pub fn median_us(&self) -> Option<u64> {
        median_us(&self.rtts)
    }
}

/// Median of `rtts` in whole microseconds (at least 1); `None` when empty.
pub fn median_us(rtts: &[Duration]) -> Option<u64> {
    let mut v: Vec<Duration> = rtts.to_vec();
    v.sort();
    let m = v.get(v.len().checked_sub(1)? / 2)?;
    Some(u64::try_from(m.as_micros()).unwrap_or(u64::MAX).max(1))
}

/// The addresses of `host` (a name or an IP literal, `[v6]` allowed) with `port`.
/// Name resolution uses the system resolver and its own timeouts.
pub fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, RttError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let addrs: Vec<SocketAddr> = (bare, port)
        .to_socket_addrs()
        .map_err(|source| RttError::Resolve {
            host: host.into(),
            source,
        })?
        .take(16)
        .collect();
    if addrs.is_empty() {
        return Err(RttError::NoAddress { host: host.into() });
    }
    Ok(addrs)
}

const MAGIC: &[u8; 8] = b"nettune\0";

fn checksum(b: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in b.chunks(2) {
        let w = u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)]);
        sum = sum.wrapping_add(u32::from(w));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An ICMP (v6 when `v6`) echo request carrying `seq`, our magic and `nonce`
/// (24 bytes); shared with the engine's latency probe.
pub fn echo_request(v6: bool, ident: u16, seq: u16, nonce: u64) -> Vec<u8> {
    let mut p = vec![if v6 { 128 } else { 8 }, 0, 0, 0];
    p.extend_from_slice(&ident.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(MAGIC);
    p.extend_from_slice(&nonce.to_be_bytes());
    if !v6 {
        // ICMPv6 checksums cover a pseudo-header: the kernel fills them in.
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
    }
    p
}

/// Whether `b` (as read from the socket) is the reply to probe `seq`.
fn is_reply(b: &[u8], v6: bool, raw: bool, seq: u16, nonce: u64) -> bool {
    reply_seq(b, v6, raw, nonce) == Some(seq)
}

/// The sequence number of `b` (as read from the socket) when it is an echo
/// reply to one of our requests carrying `nonce`; `None` for anything else.
/// `b` comes from the network: only bounded, checked reads.
pub fn reply_seq(b: &[u8], v6: bool, raw: bool, nonce: u64) -> Option<u16> {
    // A raw IPv4 socket hands over the IP header too.
    let b = if raw && !v6 {
        let ihl = usize::from(b.first().map_or(0, |x| x & 0x0f)) * 4;
        match b.get(ihl..) {
            Some(rest) if ihl >= 20 => rest,
            _ => return None,
        }
    } else {
        b
    };
    let want_type = if v6 { 129 } else { 0 };
    let ok = b.len() >= 24
        && b[0] == want_type
        && &b[8..16] == MAGIC
        && b[16..24] == nonce.to_be_bytes();
    ok.then(|| u16::from_be_bytes([b[6], b[7]]))
}

/// An ICMP socket for `addr`: a datagram ("ping") socket, else a raw one;
/// the flag says raw (whose IPv4 reads carry the IP header).
pub fn open(addr: IpAddr) -> Result<(Socket, bool), RttError> {
    let (domain, proto) = match addr {
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4),
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6),
    };
    match Socket::new(domain, Type::DGRAM, Some(proto)) {
        Ok(s) => Ok((s, false)),
        Err(dgram) => Socket::new(domain, Type::RAW, Some(proto))
            .map(|s| (s, true))
            .map_err(|_| RttError::Socket {
                addr,
                source: dgram,
            }),
    }
}

/// Send up to `probes` ICMP echo requests to `addr`, one after the other,
/// each waiting for its reply at most its share of what is left of
/// `deadline`; the whole call returns within `deadline` (plus scheduling).
/// Errors when no reply came.
pub fn icmp_echo(addr: IpAddr, probes: u32, deadline: Duration) -> Result<Echoes, RttError> {
    let start = Instant::now();
    let probes = probes.clamp(1, MAX_PROBES);
    let (sock, raw) = open(addr)?;
    let to = SockAddr::from(SocketAddr::new(addr, 0));
    sock.connect(&to)
        .map_err(|source| RttError::Send { addr, source })?;
    let v6 = addr.is_ipv6();
    let nonce = u64::from(std::process::id()) << 32
        ^ u64::from(start.elapsed().subsec_nanos())
        ^ (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64));
    let ident = (std::process::id() & 0xffff) as u16;
    let mut rtts = Vec::new();
    let mut sent = 0;
    let mut last = None;
    let mut buf = [0u8; 1500];
    for seq in 0..probes {
        let left = deadline.saturating_sub(start.elapsed());
        let share = left / (probes - seq);
        if share < Duration::from_millis(1) {
            break;
        }
        let seq16 = (seq & 0xffff) as u16;
        let pkt = echo_request(v6, ident, seq16, nonce);
        let t0 = Instant::now();
        if let Err(source) = sock.send(&pkt) {
            if rtts.is_empty() && sent == 0 {
                return Err(RttError::Send { addr, source });
            }
            last = Some(source);
            continue;
        }
        sent += 1;
        let until = t0 + share;
        loop {
            let now = Instant::now();
            if now >= until {
                break;
            }
            let wait = (until - now).max(Duration::from_millis(1));
            if sock.set_read_timeout(Some(wait)).is_err() {
                break;
            }
            match (&sock).read(&mut buf) {
                Ok(n) => {
                    if is_reply(&buf[..n.min(buf.len())], v6, raw, seq16, nonce) {
                        rtts.push(t0.elapsed());
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    last = Some(e);
                    // Unreachable: waiting out this probe's share keeps the pace bounded.
                    std::thread::sleep(until.saturating_duration_since(Instant::now()));
                    break;
                }
            }
        }
    }
    if rtts.is_empty() {
        return Err(RttError::NoReply {
            addr,
            sent,
            deadline,
            last,
        });
    }
    Ok(Echoes {
        addr,
        sent,
        rtts,
        socket: if raw { "icmp raw" } else { "icmp datagram" },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_is_the_middle_sample_in_microseconds() {
        let d = Duration::from_micros;
        assert_eq!(median_us(&[]), None);
        assert_eq!(median_us(&[d(30), d(10), d(20)]), Some(20));
        assert_eq!(median_us(&[d(40), d(10), d(30), d(20)]), Some(20));
        assert_eq!(median_us(&[Duration::from_nanos(300)]), Some(1));
    }

    #[test]
    fn replies_are_matched_by_type_sequence_and_nonce() {
        let mut r = echo_request(false, 7, 3, 42);
        r[0] = 0;
        assert!(is_reply(&r, false, false, 3, 42));
        assert!(!is_reply(&r, false, false, 4, 42));
        assert!(!is_reply(&r, false, false, 3, 43));
        let mut ip = vec![0x45u8; 1];
        ip.extend_from_slice(&[0; 19]);
        ip.extend_from_slice(&r);
        assert!(is_reply(&ip, false, true, 3, 42));
        assert!(!is_reply(&ip[..10], false, true, 3, 42));
        let req = echo_request(false, 7, 3, 42);
        assert!(!is_reply(&req, false, false, 3, 42), "our own request");
        assert_eq!(checksum(&req), 0, "a valid ICMP checksum sums to zero");
    }

    #[test]
    fn ip_literals_resolve_without_a_resolver() {
        assert_eq!(
            resolve("127.0.0.1", 5290).unwrap(),
            vec!["127.0.0.1:5290".parse().unwrap()]
        );
        assert_eq!(
            resolve("[::1]", 1).unwrap(),
            vec!["[::1]:1".parse().unwrap()]
        );
    }

    #[test]
    fn loopback_answers_within_the_deadline() {
        let t = Instant::now();
        match icmp_echo("127.0.0.1".parse().unwrap(), 5, Duration::from_secs(2)) {
            Ok(e) => {
                assert!(!e.rtts.is_empty() && e.sent <= 5, "{e:?}");
                assert!(e.median_us().is_some());
            }
            // Neither socket kind allowed here (no CAP_NET_RAW, ping_group_range excludes us).
            Err(RttError::Socket { .. }) => eprintln!("skipped: no ICMP socket allowed"),
            Err(e) => panic!("{e}"),
        }
        assert!(t.elapsed() < Duration::from_secs(3));
    }
}
