//! The UDP counters of `/proc/net/snmp` (`Udp:` header and value lines) and
//! `/proc/net/snmp6` (`Udp6InDatagrams 12` lines), summed over both families
//! by callers that cross-check a UDP test against the kernel. `UdpLite`
//! lines are not UDP and are ignored.

use crate::parse::snmp::parse_snmp;

/// UDP counters of one network namespace (or a difference of two readings).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UdpCounters {
    /// InDatagrams: delivered to sockets.
    pub in_datagrams: u64,
    /// RcvbufErrors: dropped because a socket's receive buffer was full.
    pub rcvbuf_errors: u64,
    /// InErrors (includes RcvbufErrors).
    pub in_errors: u64,
    /// NoPorts.
    pub no_ports: u64,
    /// OutDatagrams.
    pub out_datagrams: u64,
}

impl UdpCounters {
    /// The `Udp` section of `/proc/net/snmp` text; `None` when the text does
    /// not parse or has no `Udp.InDatagrams`. Other missing counters are 0,
    /// negative values 0.
    pub fn from_snmp(text: &str) -> Option<UdpCounters> {
        let s = parse_snmp(text).ok()?;
        let g = |k: &str| s.get(k).map(|v| v.max(0) as u64);
        Some(UdpCounters {
            in_datagrams: g("Udp.InDatagrams")?,
            rcvbuf_errors: g("Udp.RcvbufErrors").unwrap_or(0),
            in_errors: g("Udp.InErrors").unwrap_or(0),
            no_ports: g("Udp.NoPorts").unwrap_or(0),
            out_datagrams: g("Udp.OutDatagrams").unwrap_or(0),
        })
    }

    /// The `Udp6*` lines of `/proc/net/snmp6` text; missing counters are 0,
    /// no `Udp6InDatagrams` is `None`. Lines that do not read as a name and
    /// a number are skipped.
    pub fn from_snmp6(text: &str) -> Option<UdpCounters> {
        let mut u = UdpCounters::default();
        let mut seen = false;
        for l in text.lines() {
            let mut f = l.split_whitespace();
            let (Some(k), Some(v)) = (f.next(), f.next()) else {
                continue;
            };
            let Ok(v) = v.parse::<u64>() else { continue };
            match k {
                "Udp6InDatagrams" => {
                    u.in_datagrams = v;
                    seen = true;
                }
                "Udp6RcvbufErrors" => u.rcvbuf_errors = v,
                "Udp6InErrors" => u.in_errors = v,
                "Udp6NoPorts" => u.no_ports = v,
                "Udp6OutDatagrams" => u.out_datagrams = v,
                _ => {}
            }
        }
        seen.then_some(u)
    }

    /// Field-wise sum, saturating.
    pub fn plus(&self, o: &UdpCounters) -> UdpCounters {
        UdpCounters {
            in_datagrams: self.in_datagrams.saturating_add(o.in_datagrams),
            rcvbuf_errors: self.rcvbuf_errors.saturating_add(o.rcvbuf_errors),
            in_errors: self.in_errors.saturating_add(o.in_errors),
            no_ports: self.no_ports.saturating_add(o.no_ports),
            out_datagrams: self.out_datagrams.saturating_add(o.out_datagrams),
        }
    }

    /// Field-wise `self - earlier`, saturating (a counter that went back
    /// counts 0).
    pub fn since(&self, earlier: &UdpCounters) -> UdpCounters {
        UdpCounters {
            in_datagrams: self.in_datagrams.saturating_sub(earlier.in_datagrams),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
            no_ports: self.no_ports.saturating_sub(earlier.no_ports),
            out_datagrams: self.out_datagrams.saturating_sub(earlier.out_datagrams),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // /proc/net/snmp, kernel 6.18.44 (this project's KVM guest), Ip lines cut.
    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
Udp: 43568166 7 761130 44303149 760993 0 0 0 0\n\
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
UdpLite: 5 0 0 0 0 0 0 0 0\n";

    // /proc/net/snmp6 Udp6 lines, kernel 6.18.44 (this project's KVM guest),
    // plus an Ip6 and a UdpLite6 line that must not count.
    const SNMP6: &str = "Ip6InReceives                   \t4000\n\
Udp6InDatagrams                 \t745018\n\
Udp6NoPorts                     \t57\n\
Udp6InErrors                    \t4444\n\
Udp6OutDatagrams                \t750167\n\
Udp6RcvbufErrors                \t4302\n\
Udp6SndbufErrors                \t0\n\
Udp6InCsumErrors                \t0\n\
Udp6IgnoredMulti                \t0\n\
Udp6MemErrors                   \t0\n\
UdpLite6InDatagrams             \t7\n";

    #[test]
    fn reads_the_udp_section_only() {
        let u = UdpCounters::from_snmp(SNMP).unwrap();
        assert_eq!(
            u,
            UdpCounters {
                in_datagrams: 43_568_166,
                rcvbuf_errors: 760_993,
                in_errors: 761_130,
                no_ports: 7,
                out_datagrams: 44_303_149,
            }
        );
        assert!(UdpCounters::from_snmp("Ip: A B\nIp: 1 2\n").is_none());
        assert!(UdpCounters::from_snmp("Udp: InDatagrams\n").is_none());
    }

    #[test]
    fn reads_udp6_lines_only() {
        let u = UdpCounters::from_snmp6(SNMP6).unwrap();
        assert_eq!(
            u,
            UdpCounters {
                in_datagrams: 745_018,
                rcvbuf_errors: 4302,
                in_errors: 4444,
                no_ports: 57,
                out_datagrams: 750_167,
            }
        );
        assert!(UdpCounters::from_snmp6("Ip6InReceives 4\n").is_none());
        assert!(UdpCounters::from_snmp6("Udp6InDatagrams x\nUdp6InDatagrams\n").is_none());
    }

    #[test]
    fn sums_and_differences_saturate() {
        let a = UdpCounters::from_snmp(SNMP).unwrap();
        let b = UdpCounters::from_snmp6(SNMP6).unwrap();
        let s = a.plus(&b);
        assert_eq!(s.in_datagrams, 43_568_166 + 745_018);
        assert_eq!(s.since(&a), b);
        assert_eq!(a.since(&s), UdpCounters::default());
        let max = UdpCounters {
            in_datagrams: u64::MAX,
            ..UdpCounters::default()
        };
        assert_eq!(max.plus(&max).in_datagrams, u64::MAX);
    }
}
