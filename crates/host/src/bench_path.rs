//! Which interface a `bench` test's traffic used on this host: from the
//! control connection's addresses, this host's addresses and its routes
//! (`/proc/net/if_inet6`, `/proc/net/fib_trie`, `/proc/net/route`), chosen
//! by [`model::bench_facts::path_interface`].

use crate::Root;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// This host's addresses and directly connected IPv4 routes, as `/proc`
/// shows them (whatever cannot be read is empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddrTable {
    /// IPv6 addresses and the interface holding each (`/proc/net/if_inet6`).
    pub v6: Vec<(Ipv6Addr, String)>,
    /// Local IPv4 addresses (`/32 host LOCAL` in `/proc/net/fib_trie`).
    pub v4_local: Vec<Ipv4Addr>,
    /// Directly connected IPv4 routes: destination, mask and interface
    /// (`/proc/net/route` rows without a gateway).
    pub v4_routes: Vec<(Ipv4Addr, Ipv4Addr, String)>,
}

impl AddrTable {
    /// The table of the host at `root`.
    pub fn read(root: &Root) -> AddrTable {
        let text = |p: &str| root.read_opt(p).ok().flatten().unwrap_or_default();
        AddrTable {
            v6: parse_if_inet6(&text("/proc/net/if_inet6")),
            v4_local: parse_fib_trie_local(&text("/proc/net/fib_trie")),
            v4_routes: parse_route(&text("/proc/net/route")),
        }
    }

    /// `a` is one of this host's addresses.
    pub fn is_own(&self, a: IpAddr) -> bool {
        match a.to_canonical() {
            IpAddr::V4(a) => self.v4_local.contains(&a),
            IpAddr::V6(a) => self.v6.iter().any(|(x, _)| *x == a),
        }
    }

    /// The interface holding `a`: for IPv6 the one `if_inet6` lists it
    /// under; for IPv4 the most specific connected route containing it.
    pub fn holder(&self, a: IpAddr) -> Option<String> {
        match a.to_canonical() {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                self.v4_routes
                    .iter()
                    .filter(|(d, m, _)| a & u32::from(*m) == u32::from(*d))
                    .max_by_key(|(_, m, _)| u32::from(*m).count_ones())
                    .map(|(_, _, n)| n.clone())
            }
            IpAddr::V6(a) => self
                .v6
                .iter()
                .find(|(x, _)| *x == a)
                .map(|(_, n)| n.clone()),
        }
    }
}

/// The interface the traffic between `local` (this host's end of the
/// control connection) and `peer` used on the host at `root`.
pub fn path_interface(root: &Root, local: IpAddr, peer: IpAddr) -> Option<String> {
    let t = AddrTable::read(root);
    model::bench_facts::path_interface(local, peer, |a| t.is_own(a), |a| t.holder(a))
}

/// `/proc/net/if_inet6`: `address ifindex prefixlen scope flags name`.
pub fn parse_if_inet6(text: &str) -> Vec<(Ipv6Addr, String)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (hex, name) = (f.first()?, f.get(5)?);
            let v = u128::from_str_radix(hex, 16)
                .ok()
                .filter(|_| hex.len() == 32)?;
            Some((Ipv6Addr::from(v), (*name).to_string()))
        })
        .collect()
}

/// The local addresses of `/proc/net/fib_trie`: an address line (`|--
/// 10.0.0.5`) followed by `/32 host LOCAL`.
pub fn parse_fib_trie_local(text: &str) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for l in text.lines() {
        let t = l.trim();
        if let Some(a) = t.strip_prefix("|--") {
            last = a.trim().parse().ok();
        } else if t.starts_with("/32 host LOCAL") {
            if let Some(a) = last.filter(|a| !out.contains(a)) {
                out.push(a);
            }
        }
    }
    out
}

/// The connected routes of `/proc/net/route` (no gateway flag): hex
/// fields in the kernel's byte order, which is the host's.
pub fn parse_route(text: &str) -> Vec<(Ipv4Addr, Ipv4Addr, String)> {
    const RTF_GATEWAY: u32 = 0x2;
    let hex = |s: &str| {
        u32::from_str_radix(s, 16)
            .ok()
            .map(|v| Ipv4Addr::from(v.to_ne_bytes()))
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let flags = u32::from_str_radix(f.get(3)?, 16).ok()?;
            if flags & RTF_GATEWAY != 0 {
                return None;
            }
            Some((hex(f.get(1)?)?, hex(f.get(7)?)?, (*f.first()?).to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn hex(a: [u8; 4]) -> String {
        format!("{:08X}", u32::from_ne_bytes(a))
    }

    fn table() -> AddrTable {
        let route = format!(
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
             eth0\t00000000\t{gw}\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
             eth0\t{net}\t00000000\t0001\t0\t0\t0\t{mask}\t0\t0\t0\n\
             eth1\t{net2}\t00000000\t0001\t0\t0\t0\t{mask2}\t0\t0\t0\n",
            gw = hex([192, 0, 2, 1]),
            net = hex([192, 0, 2, 0]),
            mask = hex([255, 255, 255, 0]),
            net2 = hex([192, 0, 2, 128]),
            mask2 = hex([255, 255, 255, 128]),
        );
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n\
                    Local:\n     |-- 127.0.0.1\n        /32 host LOCAL\n     |-- 192.0.2.2\n        /32 host LOCAL\n     |-- 192.0.2.255\n        /32 link BROADCAST\n";
        let inet6 = "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n\
                     fd000000000000000000000000000002 04 40 00 82     eth0\n\
                     00000000000000000000000000000001 01 80 10 80       lo\n";
        AddrTable {
            v6: parse_if_inet6(inet6),
            v4_local: parse_fib_trie_local(trie),
            v4_routes: parse_route(&route),
        }
    }

    #[test]
    fn parses_proc_tables() {
        let t = table();
        assert_eq!(
            t.v4_local,
            [Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(192, 0, 2, 2)]
        );
        assert_eq!(t.v4_routes.len(), 2, "the gateway route is left out");
        assert_eq!(t.v6.len(), 3);
        assert_eq!(t.v6[1], ("fd00::2".parse().unwrap(), "eth0".into()));
        assert!(parse_route("garbage\n1 2 3").is_empty());
        assert!(parse_if_inet6("zz 1 2\n").is_empty());
    }

    #[test]
    fn chooses_the_interface_from_the_addresses() {
        let t = table();
        let path = |l: &str, p: &str| {
            model::bench_facts::path_interface(ip(l), ip(p), |a| t.is_own(a), |a| t.holder(a))
        };
        assert_eq!(path("127.0.0.1", "127.0.0.1").as_deref(), Some("lo"));
        assert_eq!(path("192.0.2.2", "192.0.2.2").as_deref(), Some("lo"));
        assert_eq!(path("192.0.2.9", "192.0.2.2").as_deref(), Some("lo"));
        assert_eq!(path("192.0.2.2", "192.0.2.7").as_deref(), Some("eth0"));
        // The more specific connected route wins.
        assert_eq!(path("192.0.2.130", "192.0.2.7").as_deref(), Some("eth1"));
        assert_eq!(path("fd00::2", "fd00::9").as_deref(), Some("eth0"));
        assert_eq!(path("fd00::9", "fd00::2").as_deref(), Some("lo"));
        assert_eq!(path("10.1.1.1", "10.2.2.2"), None);
    }

    /// The live host: a connection over 127.0.0.1 is on lo.
    #[test]
    fn loopback_on_the_live_host() {
        let r = Root::live();
        assert_eq!(
            path_interface(&r, ip("127.0.0.1"), ip("127.0.0.1")).as_deref(),
            Some("lo")
        );
    }
}
