//! CPU and kernel-counter accounting around the measured window: per-CPU
//! deltas from the host sampler, process rusage, and `/proc/net/snmp` UDP
//! counters.

use crate::report::{CpuReport, CpuUse, UdpSnmp};
use crate::sys;
use host::sampler::{Sample, Sampler};
use host::Root;
use model::parse::snmp::parse_snmp;
use std::time::Instant;

/// One reading at a window edge.
#[derive(Debug, Clone)]
pub struct CpuMark {
    at: Instant,
    sample: Result<Sample, String>,
    ru: sys::Rusage,
}

impl CpuMark {
    /// The host sample of this mark, when it could be read.
    pub fn sample(&self) -> Option<&Sample> {
        self.sample.as_ref().ok()
    }
}

/// Sample the host and rusage now.
pub fn mark(sampler: &mut Sampler) -> CpuMark {
    CpuMark {
        at: Instant::now(),
        sample: sampler.sample().map_err(|e| e.to_string()),
        ru: sys::process_rusage(),
    }
}

/// The report between two marks.
pub fn report(a: &CpuMark, b: &CpuMark) -> CpuReport {
    let seconds = b.at.duration_since(a.at).as_secs_f64();
    let mut r = CpuReport {
        seconds,
        process_user_us: b.ru.user_us.saturating_sub(a.ru.user_us),
        process_sys_us: b.ru.sys_us.saturating_sub(a.ru.sys_us),
        ..CpuReport::default()
    };
    match (&a.sample, &b.sample) {
        (Ok(sa), Ok(sb)) => {
            let d = sb.delta(sa);
            let hz = sys::clock_ticks() as f64;
            let mut busy = 0u64;
            for c in &d.cpus {
                busy += c.times.busy();
                r.cpus.push(CpuUse {
                    cpu: c.cpu.0,
                    usr: c.pct.usr,
                    sys: c.pct.sys,
                    irq: c.pct.irq,
                    softirq: c.pct.softirq,
                    idle: c.pct.idle + c.pct.iowait,
                });
            }
            r.host_busy_us = busy as f64 * 1e6 / hz;
            if !d.notes.is_empty() && r.cpus.is_empty() {
                r.note = Some(d.notes.join("; "));
            }
        }
        (Err(e), _) | (_, Err(e)) => r.note = Some(e.clone()),
    }
    r
}

/// The UDP counters of `/proc/net/snmp` text.
pub fn parse_udp_snmp(text: &str) -> Option<UdpSnmp> {
    let s = parse_snmp(text).ok()?;
    let g = |k: &str| s.get(k).map(|v| v.max(0) as u64);
    Some(UdpSnmp {
        in_datagrams: g("Udp.InDatagrams")?,
        rcvbuf_errors: g("Udp.RcvbufErrors").unwrap_or(0),
        in_errors: g("Udp.InErrors").unwrap_or(0),
        no_ports: g("Udp.NoPorts").unwrap_or(0),
        out_datagrams: g("Udp.OutDatagrams").unwrap_or(0),
    })
}

/// The UDP-over-IPv6 counters of `/proc/net/snmp6` text (`Udp6InDatagrams
/// 12` lines); missing counters are 0, no `Udp6InDatagrams` is `None`.
pub fn parse_udp_snmp6(text: &str) -> Option<UdpSnmp> {
    let mut u = UdpSnmp::default();
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

/// Read the UDP snmp counters of this network namespace: IPv4
/// (`/proc/net/snmp`) plus IPv6 (`/proc/net/snmp6`, when IPv6 is there), so
/// the cross-check holds over either family.
pub fn udp_snmp(root: &Root) -> Option<UdpSnmp> {
    let v4 = root
        .read("/proc/net/snmp")
        .ok()
        .and_then(|t| parse_udp_snmp(&t))?;
    let v6 = root
        .read_opt("/proc/net/snmp6")
        .ok()
        .flatten()
        .and_then(|t| parse_udp_snmp6(&t))
        .unwrap_or_default();
    Some(UdpSnmp {
        in_datagrams: v4.in_datagrams.saturating_add(v6.in_datagrams),
        rcvbuf_errors: v4.rcvbuf_errors.saturating_add(v6.rcvbuf_errors),
        in_errors: v4.in_errors.saturating_add(v6.in_errors),
        no_ports: v4.no_ports.saturating_add(v6.no_ports),
        out_datagrams: v4.out_datagrams.saturating_add(v6.out_datagrams),
    })
}

/// `b - a`, saturating.
pub fn snmp_delta(a: &UdpSnmp, b: &UdpSnmp) -> UdpSnmp {
    UdpSnmp {
        in_datagrams: b.in_datagrams.saturating_sub(a.in_datagrams),
        rcvbuf_errors: b.rcvbuf_errors.saturating_sub(a.rcvbuf_errors),
        in_errors: b.in_errors.saturating_sub(a.in_errors),
        no_ports: b.no_ports.saturating_sub(a.no_ports),
        out_datagrams: b.out_datagrams.saturating_sub(a.out_datagrams),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // /proc/net/snmp Udp lines, kernel 6.18 (this project's KVM guest).
    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
Udp: 1000 3 25 900 20 0 0 0 0\n\
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
UdpLite: 0 0 0 0 0 0 0 0 0\n";

    // /proc/net/snmp6 Udp6 lines, kernel 6.18 (this project's KVM guest).
    const SNMP6: &str = "Ip6InReceives                   \t4000\n\
Udp6InDatagrams                 \t349660\n\
Udp6NoPorts                     \t29\n\
Udp6InErrors                    \t4408\n\
Udp6OutDatagrams                \t354742\n\
Udp6RcvbufErrors                \t4302\n\
Udp6SndbufErrors                \t0\n\
UdpLite6InDatagrams             \t7\n";

    #[test]
    fn parses_udp6_lines_only() {
        let u = parse_udp_snmp6(SNMP6).unwrap();
        assert_eq!(u.in_datagrams, 349_660);
        assert_eq!(u.rcvbuf_errors, 4302);
        assert_eq!(u.in_errors, 4408);
        assert_eq!(u.no_ports, 29);
        assert_eq!(u.out_datagrams, 354_742);
        assert!(parse_udp_snmp6("Ip6InReceives 4\n").is_none());
    }

    #[test]
    fn parses_udp_lines_only() {
        let u = parse_udp_snmp(SNMP).unwrap();
        assert_eq!(u.in_datagrams, 1000);
        assert_eq!(u.rcvbuf_errors, 20);
        assert_eq!(u.in_errors, 25);
        assert_eq!(u.no_ports, 3);
        assert_eq!(u.out_datagrams, 900);
        assert!(parse_udp_snmp("Ip: A B\nIp: 1 2\n").is_none());
    }
}
