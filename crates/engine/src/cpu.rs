//! CPU and kernel-counter accounting around the measured window: per-CPU
//! `/proc/stat` deltas, process rusage, and `/proc/net/snmp` UDP counters.

use crate::report::{CpuReport, CpuUse, UdpSnmp};
use crate::sys;
use host::Root;
use model::parse::stat::{parse_proc_stat, ProcStat};
use std::time::Instant;

/// One reading at a window edge.
#[derive(Debug, Clone)]
pub struct CpuMark {
    at: Instant,
    stat: Result<ProcStat, String>,
    ru: sys::Rusage,
}

/// Read `/proc/stat` and rusage now.
pub fn mark(root: &Root) -> CpuMark {
    CpuMark {
        at: Instant::now(),
        stat: root
            .parse("/proc/stat", parse_proc_stat)
            .map_err(|e| e.to_string()),
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
    match (&a.stat, &b.stat) {
        (Ok(sa), Ok(sb)) => {
            let hz = sys::clock_ticks() as f64;
            let mut busy = 0u64;
            for (id, tb) in &sb.cpus {
                let Some((_, ta)) = sa.cpus.iter().find(|(i, _)| i == id) else {
                    continue;
                };
                let d = tb.delta(ta);
                busy += d.busy();
                let p = d.percent();
                r.cpus.push(CpuUse {
                    cpu: id.0,
                    usr: p.usr,
                    sys: p.sys,
                    irq: p.irq,
                    softirq: p.softirq,
                    idle: p.idle + p.iowait,
                });
            }
            r.host_busy_us = busy as f64 * 1e6 / hz;
        }
        (Err(e), _) | (_, Err(e)) => r.note = Some(e.clone()),
    }
    r
}

/// Parse the `Udp:` lines of `/proc/net/snmp` (header line, then values).
pub fn parse_udp_snmp(text: &str) -> Option<UdpSnmp> {
    let mut lines = text.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = lines.next()?.split_whitespace().skip(1).collect();
    let vals: Vec<&str> = lines.next()?.split_whitespace().skip(1).collect();
    if names.len() != vals.len() {
        return None;
    }
    let get = |k: &str| -> Option<u64> {
        names
            .iter()
            .position(|n| *n == k)
            .and_then(|i| vals[i].parse().ok())
    };
    Some(UdpSnmp {
        in_datagrams: get("InDatagrams")?,
        rcvbuf_errors: get("RcvbufErrors").unwrap_or(0),
        in_errors: get("InErrors").unwrap_or(0),
        no_ports: get("NoPorts").unwrap_or(0),
        out_datagrams: get("OutDatagrams").unwrap_or(0),
    })
}

/// Read the UDP snmp counters of this network namespace.
pub fn udp_snmp(root: &Root) -> Option<UdpSnmp> {
    root.read("/proc/net/snmp")
        .ok()
        .and_then(|t| parse_udp_snmp(&t))
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

    #[test]
    fn parses_udp_lines_only() {
        let u = parse_udp_snmp(SNMP).unwrap();
        assert_eq!(u.in_datagrams, 1000);
        assert_eq!(u.rcvbuf_errors, 20);
        assert_eq!(u.in_errors, 25);
        assert_eq!(u.no_ports, 3);
        assert_eq!(u.out_datagrams, 900);
        assert!(parse_udp_snmp("Udp: A B\n").is_none());
        assert!(parse_udp_snmp("").is_none());
    }
}
