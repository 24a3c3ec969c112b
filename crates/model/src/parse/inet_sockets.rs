//! `/proc/net/{tcp,tcp6,udp,udp6}`: one socket per line. Doctor takes the
//! inode (to tell which processes hold network sockets), the state and the
//! addresses (to leave loopback out).
//!
//! Addresses are printed as the raw 32-bit words of the network-order
//! address in host byte order (`0100007F` is 127.0.0.1 on little-endian);
//! this parser assumes a little-endian host, as every host nettune targets is.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One socket line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InetSocket {
    /// Local address.
    pub local: IpAddr,
    /// Local port.
    pub local_port: u16,
    /// Remote address.
    pub remote: IpAddr,
    /// Remote port.
    pub remote_port: u16,
    /// TCP state number (`01` ESTABLISHED, `0A` LISTEN; UDP uses 07/01).
    pub state: u8,
    /// Socket inode (0 for TIME_WAIT and orphans).
    pub inode: u64,
}

/// Most lines parsed from one file (each is about 150 bytes, so this is the
/// 16 MiB read cap).
const MAX_LINES: usize = 120_000;

fn addr(tok: &str, ln: usize) -> Result<(IpAddr, u16), ParseError> {
    let (a, p) = tok
        .split_once(':')
        .ok_or_else(|| ParseError::invalid(ln, "address:port", tok))?;
    let port = u16::from_str_radix(p, 16).map_err(|_| ParseError::invalid(ln, "port", p))?;
    let word =
        |s: &str| u32::from_str_radix(s, 16).map_err(|_| ParseError::invalid(ln, "address", tok));
    let ip = match a.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(a)?.to_le_bytes())),
        32 => {
            let mut b = [0u8; 16];
            for (i, chunk) in b.chunks_mut(4).enumerate() {
                let w = a
                    .get(i * 8..i * 8 + 8)
                    .ok_or_else(|| ParseError::invalid(ln, "address", tok))?;
                chunk.copy_from_slice(&word(w)?.to_le_bytes());
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return Err(ParseError::invalid(ln, "address", tok)),
    };
    Ok((ip, port))
}

/// Parse `/proc/net/tcp` (or `tcp6`, `udp`, `udp6`).
pub fn parse_inet_sockets(text: &str) -> Result<Vec<InetSocket>, ParseError> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, h)) if h.trim_start().starts_with("sl") => {}
        Some((_, h)) => return Err(ParseError::invalid(1, "header", h)),
        None => return Err(ParseError::Empty),
    }
    for (i, line) in lines {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if out.len() == MAX_LINES {
            return Err(ParseError::format(ln, "more than 120000 sockets"));
        }
        let t: Vec<&str> = line.split_whitespace().take(10).collect();
        if t.len() < 10 {
            return Err(ParseError::format(ln, "fewer than 10 columns"));
        }
        let (local, local_port) = addr(t[1], ln)?;
        let (remote, remote_port) = addr(t[2], ln)?;
        let state =
            u8::from_str_radix(t[3], 16).map_err(|_| ParseError::invalid(ln, "state", t[3]))?;
        let inode = t[9]
            .parse()
            .map_err(|_| ParseError::invalid(ln, "inode", t[9]))?;
        out.push(InetSocket {
            local,
            local_port,
            remote,
            remote_port,
            state,
            inode,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18.
    const TCP_6_18: &str = "\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode                                                     
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1461 1 00000000f1e24d18 100 0 0 10 0                      
   1: 020200C0:9DAE 507100CB:01BB 01 00000000:00000000 00:00000000 00000000     0        0 3842010 2 00000000877e90e3 20 4 1 80 -1                   
";

    // Kernel 6.18 tcp6 layout; a listener on ::1 port 6379.
    const TCP6_6_18: &str = "\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:18EB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5555 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn parses_tcp_6_18() {
        let s = parse_inet_sockets(TCP_6_18).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].local_port, 2024);
        assert_eq!(s[0].state, 0x0a);
        assert_eq!(s[1].local, "192.0.2.2".parse::<IpAddr>().unwrap());
        assert_eq!(s[1].remote, "203.0.113.80".parse::<IpAddr>().unwrap());
        assert_eq!(s[1].remote_port, 443);
        assert_eq!(s[1].inode, 3842010);
    }

    #[test]
    fn parses_tcp6() {
        let s = parse_inet_sockets(TCP6_6_18).unwrap();
        assert_eq!(s[0].local, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(s[0].local_port, 6379);
    }

    #[test]
    fn garbage() {
        assert_eq!(parse_inet_sockets(""), Err(ParseError::Empty));
        assert!(parse_inet_sockets("junk\n").is_err());
        assert!(parse_inet_sockets(&TCP_6_18.replace("0A", "ZZ")).is_err());
        assert!(parse_inet_sockets(&TCP_6_18[..200]).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "sl[0-9A-F: \\n]{0,300}") {
            let _ = parse_inet_sockets(&s);
        }
    }
}
