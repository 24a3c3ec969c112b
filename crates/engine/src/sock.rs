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

/// Where a client's data and control sockets come from: `--bind ADDR`
/// (source address) and `--bind-dev IF` (SO_BINDTODEVICE).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// Source address (port 0 unless a flow has `--cport`).
    pub addr: Option<IpAddr>,
    /// Interface the sockets are bound to.
    pub dev: Option<String>,
}

impl Source {
    /// Bind `s` to the device, and to the source address and `port` when
    /// either is set (the unspecified address of `to`'s family otherwise).
    pub(crate) fn apply(
        &self,
        s: &socket2::Socket,
        to: SocketAddr,
        port: u16,
    ) -> std::io::Result<()> {
        if let Some(d) = &self.dev {
            s.bind_device(Some(d.as_bytes()))
                .map_err(|e| std::io::Error::new(e.kind(), format!("--bind-dev {d}: {e}")))?;
        }
        if self.addr.is_some() || port != 0 {
            let ip = self.addr.unwrap_or(match to {
                SocketAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                SocketAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
            });
            let a = SocketAddr::new(ip, port);
            // A fixed TCP port (--cport) may still have TIME_WAIT sockets
            // from an earlier run; SO_REUSEADDR lets the bind pass those
            // (a socket that still listens or is connected on it refuses).
            let stream = s.r#type().is_ok_and(|t| t == socket2::Type::STREAM);
            if port != 0 && stream {
                s.set_reuse_address(true)?;
            }
            // Port 0: let connect() pick the port for the whole 4-tuple
            // (IP_BIND_ADDRESS_NO_PORT) rather than bind() for the address
            // alone, whose search walks every port's owners, TIME_WAIT
            // sockets of other source addresses included (tcp-crr from a
            // fresh source address would otherwise slow down with the
            // TIME_WAIT of earlier runs). Best effort: an older kernel
            // binds the port as before.
            if port == 0 && stream {
                let _ = sys::set_int_opt(
                    std::os::fd::AsFd::as_fd(s),
                    libc::IPPROTO_IP,
                    libc::IP_BIND_ADDRESS_NO_PORT,
                    1,
                );
            }
            s.bind(&a.into()).map_err(|e| {
                let what = if e.kind() == std::io::ErrorKind::AddrInUse {
                    "is already in use"
                } else {
                    "cannot be bound"
                };
                std::io::Error::new(e.kind(), format!("source address {a} {what}: {e}"))
            })?;
        }
        Ok(())
    }
}

/// A socket option the test asked for that this host refused.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {value}: {source}")]
pub struct OptError {
    /// The flag (`--congestion`).
    pub flag: &'static str,
    /// Its value as given.
    pub value: String,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// Socket options that set a buffer: SO_SNDBUFFORCE/SO_RCVBUFFORCE only
/// when `force` (`--force-buffers`, and on a server a token), else
/// SO_SNDBUF/SO_RCVBUF, as an application without privilege would, which
/// the kernel caps at `net.core.{w,r}mem_max` and doubles. Returns
/// `(send option, receive option)`.
pub(crate) fn buffer_opts(force: bool) -> (libc::c_int, libc::c_int) {
    use sys::opt::*;
    if force {
        (SO_SNDBUFFORCE, SO_RCVBUFFORCE)
    } else {
        (SO_SNDBUF, SO_RCVBUF)
    }
}

/// The buffers a socket has now (getsockopt SO_RCVBUF and SO_SNDBUF);
/// `forced` is recorded as given.
pub(crate) fn effective_buffers(
    fd: std::os::fd::BorrowedFd<'_>,
    forced: bool,
) -> Option<crate::report::SocketBuffers> {
    let s = socket2::SockRef::from(&fd);
    Some(crate::report::SocketBuffers {
        rcvbuf: s.recv_buffer_size().ok()? as u64,
        sndbuf: s.send_buffer_size().ok()? as u64,
        forced,
    })
}

/// Apply the configuration's socket options to a data socket. Buffer sizes,
/// busy polling and TCP_NODELAY are best effort; `--congestion`, `--tos`
/// and `--mss` were asked for by name, so a refusal is an error. With
/// `force`, buffer sizes go past `net.core.{r,w}mem_max` where the process
/// may (`SO_RCVBUFFORCE`, CAP_NET_ADMIN); without, the kernel caps them
/// there (`SO_RCVBUF`).
pub(crate) fn apply_opts(
    fd: std::os::fd::BorrowedFd<'_>,
    cfg: &TestConfig,
    tcp: bool,
    force: bool,
) -> Result<(), OptError> {
    use sys::opt::*;
    let (snd, rcv) = buffer_opts(force);
    for (size, opt, plain) in [(cfg.sndbuf, snd, SO_SNDBUF), (cfg.rcvbuf, rcv, SO_RCVBUF)] {
        let Some(b) = size else { continue };
        let b = i32::try_from(b).unwrap_or(i32::MAX);
        // Forcing without CAP_NET_ADMIN fails: fall back to the plain option.
        if sys::set_int_opt(fd, SOL_SOCKET, opt, b).is_err() && opt != plain {
            let _ = sys::set_int_opt(fd, SOL_SOCKET, plain, b);
        }
    }
    if cfg.busy_poll_us > 0 {
        let _ = sys::set_int_opt(fd, SOL_SOCKET, SO_BUSY_POLL, cfg.busy_poll_us as i32);
    }
    if tcp && cfg.nodelay {
        let _ = sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    }
    let s = socket2::SockRef::from(&fd);
    if let Some(t) = cfg.tos {
        let r = match s.domain() {
            Ok(d) if d == socket2::Domain::IPV6 => s.set_tclass_v6(u32::from(t)),
            _ => s.set_tos(u32::from(t)),
        };
        r.map_err(|source| OptError {
            flag: "--tos",
            value: t.to_string(),
            source,
        })?;
    }
    if tcp {
        if let Some(c) = &cfg.congestion {
            s.set_tcp_congestion(c.as_bytes())
                .map_err(|source| OptError {
                    flag: "--congestion",
                    value: c.clone(),
                    source,
                })?;
        }
        if let Some(m) = cfg.mss {
            s.set_mss(m).map_err(|source| OptError {
                flag: "--mss",
                value: m.to_string(),
                source,
            })?;
        }
    }
    Ok(())
}

/// The host's caps on `SO_RCVBUF` and `SO_SNDBUF` without CAP_NET_ADMIN:
/// `net.core.rmem_max` and `net.core.wmem_max` read under `root` (`None`
/// when unreadable).
pub fn mem_max(root: &host::Root) -> (Option<u64>, Option<u64>) {
    let read = |p: &str| {
        root.read_opt(p)
            .ok()
            .flatten()
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    (
        read("/proc/sys/net/core/rmem_max"),
        read("/proc/sys/net/core/wmem_max"),
    )
}

/// Clamp the buffers a test asks for (`--rcvbuf`, `--sndbuf`) to the
/// host's `rmem_max` and `wmem_max`, as a server without a token does: an
/// unauthenticated client must not make it pin more socket memory than the
/// host allows unprivileged sockets. Returns one note per clamped size.
pub fn clamp_buffers(
    cfg: &mut TestConfig,
    rmem_max: Option<u64>,
    wmem_max: Option<u64>,
) -> Vec<String> {
    let mut notes = Vec::new();
    for (v, max, flag, knob) in [
        (&mut cfg.rcvbuf, rmem_max, "--rcvbuf", "net.core.rmem_max"),
        (&mut cfg.sndbuf, wmem_max, "--sndbuf", "net.core.wmem_max"),
    ] {
        let (Some(b), Some(max)) = (*v, max) else {
            continue;
        };
        if u64::from(b) > max {
            let to = u32::try_from(max).unwrap_or(u32::MAX);
            *v = Some(to);
            notes.push(format!(
                "{flag} {} was clamped to {knob} ({} bytes) on the server: it forces larger buffers only for clients with its token that ask with --force-buffers",
                crate::config::human_bytes(u64::from(b)),
                to
            ));
        }
    }
    notes
}

/// Why `--congestion ALGO` cannot be used on this host, in one line naming
/// it and listing `net.ipv4.tcp_available_congestion_control` (read from
/// `root`); `None` when a scratch TCP socket takes it.
pub(crate) fn congestion_refused(algo: &str, root: &host::Root) -> Option<String> {
    let probe = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .or_else(|_| socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::STREAM, None));
    let e = match probe.and_then(|s| s.set_tcp_congestion(algo.as_bytes())) {
        Ok(()) => return None,
        Err(e) => e,
    };
    let avail = root
        .read_opt("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .ok()
        .flatten()
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unreadable".into());
    let why = match e.raw_os_error() {
        Some(libc::ENOENT) => "unknown congestion control algorithm".to_string(),
        Some(libc::EPERM) => {
            "congestion control algorithm not allowed here (net.ipv4.tcp_allowed_congestion_control)"
                .to_string()
        }
        _ => format!("congestion control algorithm refused ({e})"),
    };
    Some(format!(
        "{why} `{}` (available: {avail})",
        model::text::printable_capped(algo, 40)
    ))
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
        congestion: socket2::SockRef::from(s).tcp_congestion().ok().map(|n| {
            String::from_utf8_lossy(n.split(|b| *b == 0).next().unwrap_or(&[])).into_owned()
        }),
    })
}

impl From<OptError> for std::io::Error {
    fn from(e: OptError) -> std::io::Error {
        std::io::Error::new(e.source.kind(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// Without `--force-buffers` a data socket uses SO_RCVBUF/SO_SNDBUF as
    /// an application would (it used to force on the client always).
    #[test]
    fn buffers_are_forced_only_when_asked() {
        use crate::sys::opt::*;
        assert_eq!(buffer_opts(false), (SO_SNDBUF, SO_RCVBUF));
        assert_eq!(buffer_opts(true), (SO_SNDBUFFORCE, SO_RCVBUFFORCE));
        assert!(!TestConfig::default().force_buffers);
    }

    #[test]
    fn buffers_over_the_hosts_maximum_are_clamped_with_a_note() {
        let mut cfg = TestConfig {
            rcvbuf: Some(64 << 20),
            sndbuf: Some(1 << 20),
            ..TestConfig::default()
        };
        let notes = clamp_buffers(&mut cfg, Some(212_992), Some(4 << 20));
        assert_eq!(cfg.rcvbuf, Some(212_992));
        assert_eq!(cfg.sndbuf, Some(1 << 20));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("--rcvbuf 64 MiB was clamped to net.core.rmem_max (212992 bytes)"),
            "{notes:?}"
        );
        // An unreadable maximum leaves the size to the kernel's own cap.
        let mut cfg = TestConfig {
            sndbuf: Some(64 << 20),
            ..TestConfig::default()
        };
        assert!(clamp_buffers(&mut cfg, None, None).is_empty());
        assert_eq!(cfg.sndbuf, Some(64 << 20));
    }

    #[test]
    fn unforced_buffers_stay_under_rmem_max_and_forced_ones_do_not() {
        let (Some(rmem), _) = mem_max(&host::Root::new("/")) else {
            eprintln!("skipped: net.core.rmem_max unreadable");
            return;
        };
        if rmem >= 32 << 20 {
            eprintln!("skipped: net.core.rmem_max is {rmem}, not below the 64 MiB asked for");
            return;
        }
        let cfg = TestConfig {
            rcvbuf: Some(64 << 20),
            ..TestConfig::default()
        };
        let size = |force: bool| {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            apply_opts(s.as_fd(), &cfg, false, force).unwrap();
            socket2::SockRef::from(&s).recv_buffer_size().unwrap() as u64
        };
        // The kernel doubles the value for its bookkeeping.
        assert!(size(false) <= 2 * rmem, "{} > 2 × {rmem}", size(false));
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let privileged =
            sys::set_int_opt(probe.as_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 4096).is_ok();
        if privileged {
            assert_eq!(size(true), 128 << 20);
        }
    }
}
