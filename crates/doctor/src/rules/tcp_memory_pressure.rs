//! `tcp-memory-pressure`: TCP socket memory near `tcp_mem`'s pressure or
//! hard limit, or orphaned sockets near `tcp_max_orphans`.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Share of the pressure threshold that counts as "near" (info).
pub const NEAR_PRESSURE: f64 = 0.90;
/// Share of tcp_mem's hard limit from which it is critical (netdata's
/// `tcp_memory` critical: 90 %).
pub const CRITICAL_OF_HIGH: f64 = 0.90;

/// The kernel resets an orphan when `orphans << shift > tcp_max_orphans`,
/// `shift` 0 to 2: +1 when the peer has sent nothing or kept its window
/// closed for over 2 x TCP_RTO_MAX (240 s), or when the timer runs without
/// a reset to send; +1 more after a soft error (an ICMP error). The limit
/// that already bites for the most penalised orphans is a quarter of
/// `tcp_max_orphans` (warning), for idle ones half (critical).
/// (`tcp_out_of_resources` in net/ipv4/tcp_timer.c, `tcp_too_many_orphans`
/// in net/ipv4/tcp.c.)
pub const ORPHAN_SHIFT_WARN: u32 = 2;
/// See [`ORPHAN_SHIFT_WARN`]: orphans over half the maximum (shift 1) is critical.
pub const ORPHAN_SHIFT_CRIT: u32 = 1;

/// TCP memory or orphans near their limits.
#[derive(Debug)]
pub struct TcpMemoryPressure;

impl DoctorRule for TcpMemoryPressure {
    fn id(&self) -> FindingId {
        FindingId::TcpMemoryPressure
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "TCP memory near tcp_mem's limits or orphans near tcp_max_orphans"
    }
    fn rationale(&self) -> &'static str {
        "above tcp_mem's pressure value the kernel shrinks every socket's buffers (throughput falls); at the hard limit it refuses allocations and drops; and it resets orphaned connections (\"too many orphaned sockets\") once the orphans, counted twice or four times for idle peers and soft errors, exceed tcp_max_orphans, i.e. from a quarter of the limit"
    }
    fn source(&self) -> &'static str {
        "Documentation/networking/ip-sysctl.rst (tcp_mem, tcp_max_orphans); net/ipv4/tcp.c tcp_too_many_orphans, net/ipv4/tcp_timer.c tcp_out_of_resources (the x2/x4 orphan penalty); netdata src/health/health.d/tcp_mem.conf (tcp_memory: critical at 90 % of the hard limit) and tcp_orphans.conf (tcp_orphans: warning 25 %, critical 50 %)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let m = cx.input.facts.tcp_memory.get()?;
        let used = m.sockstat.get("TCP", "mem");
        let page = m.page_size;
        if let (Some(used), Some([low, pressure, high])) = (used, m.tcp_mem) {
            let near_high = used as f64 >= high as f64 * CRITICAL_OF_HIGH;
            let sev = if near_high {
                Some(Severity::Critical)
            } else if used >= pressure {
                Some(Severity::Warning)
            } else if pressure > 0 && used as f64 >= pressure as f64 * NEAR_PRESSURE {
                Some(Severity::Info)
            } else {
                None
            };
            if let Some(sev) = sev {
                let mib = |p: u64| p.saturating_mul(page) as f64 / (1u64 << 20) as f64;
                let state = match sev {
                    Severity::Critical if used >= high => "at the hard limit",
                    Severity::Critical => "near the hard limit",
                    Severity::Warning => "in memory pressure",
                    Severity::Info => "near memory pressure",
                };
                let f = crate::finding::from_rule(
                    self,
                    "tcp",
                    format!("TCP memory {state}: {used} pages ({:.0} MiB) against pressure {pressure} and limit {high}", mib(used)),
                )
                .severity(sev)
                .evidence("TCP mem (pages)", format!("{used} ({:.0} MiB at {page} B/page)", mib(used)), "/proc/net/sockstat")
                .evidence("tcp_mem low pressure high (pages)", format!("{low} {pressure} {high}"), "/proc/sys/net/ipv4/tcp_mem");
                let want_p = used.saturating_mul(2).max(pressure);
                let want_h = want_p.saturating_add(want_p / 2).max(high);
                out.push(f.fix(Fix {
                    text: format!(
                        "Find what holds the memory (`ss -tm`: large receive queues of slow readers); if the load is legitimate raise the limits, e.g. `sysctl -w net.ipv4.tcp_mem=\"{low} {want_p} {want_h}\"` (twice the use at pressure), persisted in /etc/sysctl.d."
                    ),
                    app: Some("read sockets promptly; a reader that falls behind holds its receive buffer full".into()),
                    ..Fix::default()
                }));
            }
        }
        if let (Some(orphans), Some(max)) = (m.sockstat.get("TCP", "orphan"), m.max_orphans) {
            // The kernel's test: orphans << shift > max.
            let over = |shift: u32| orphans.checked_shl(shift).is_none_or(|o| o > max);
            let sev = if over(0) || over(ORPHAN_SHIFT_CRIT) {
                Some(Severity::Critical)
            } else if over(ORPHAN_SHIFT_WARN) {
                Some(Severity::Warning)
            } else {
                None
            };
            if let Some(sev) = sev {
                let applied = if over(0) {
                    format!("every orphan is reset (over tcp_max_orphans {max})")
                } else if over(ORPHAN_SHIFT_CRIT) {
                    format!(
                        "orphans of idle peers are reset (counted twice: over {max} / 2 = {})",
                        max / 2
                    )
                } else {
                    format!(
                        "orphans of idle peers with a soft error are reset (counted four times: over {max} / 4 = {})",
                        max / 4
                    )
                };
                let f = crate::finding::from_rule(
                    self,
                    "tcp",
                    format!("{orphans} orphaned TCP sockets of a maximum {max}: {applied}"),
                )
                .severity(sev)
                .evidence("TCP orphan", orphans.to_string(), "/proc/net/sockstat")
                .evidence(
                    "tcp_max_orphans",
                    max.to_string(),
                    "/proc/sys/net/ipv4/tcp_max_orphans",
                )
                .evidence(
                    "limits the kernel applies (x1, x2, x4 penalty)",
                    format!("{max} / {} / {}", max / 2, max / 4),
                    "net/ipv4/tcp_timer.c tcp_out_of_resources",
                );
                out.push(f.fix(Fix {
                    text: format!(
                        "Orphans are sockets closed by the application with data still to send or FIN_WAIT to finish: lower net.ipv4.tcp_fin_timeout and tcp_orphan_retries, or raise `net.ipv4.tcp_max_orphans` to at least {} (four times the orphans, so even the x4 penalty stays under it) if memory allows (each orphan may hold up to 64 KB).",
                        orphans.saturating_mul(4)
                    ),
                    app: Some("close connections after reading the peer's data; do not abort with unsent data".into()),
                    ..Fix::default()
                }));
            }
        }
        Ok(())
    }
}
