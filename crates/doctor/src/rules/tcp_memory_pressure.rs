//! `tcp-memory-pressure`: TCP socket memory near `tcp_mem`'s pressure or
//! hard limit, or orphaned sockets near `tcp_max_orphans`.

use super::{DoctorId, DoctorRule, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Share of the pressure threshold that counts as "near" (info).
pub const NEAR_PRESSURE: f64 = 0.90;
/// Share of tcp_max_orphans that counts as "near" (warning).
pub const NEAR_ORPHANS: f64 = 0.80;

/// TCP memory or orphans near their limits.
#[derive(Debug)]
pub struct TcpMemoryPressure;

impl DoctorRule for TcpMemoryPressure {
    fn id(&self) -> DoctorId {
        DoctorId::TcpMemoryPressure
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "TCP memory near tcp_mem's limits or orphans near tcp_max_orphans"
    }
    fn rationale(&self) -> &'static str {
        "above tcp_mem's pressure value the kernel shrinks every socket's buffers (throughput falls); at the hard limit it refuses allocations and drops; past tcp_max_orphans it resets connections (\"too many orphaned sockets\")"
    }
    fn source(&self) -> &'static str {
        "Documentation/networking/ip-sysctl.rst (tcp_mem, tcp_max_orphans)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let m = cx.input.facts.tcp_memory.get().map_err(Skip)?;
        let used = m.sockstat.get("TCP", "mem");
        let page = m.page_size;
        if let (Some(used), Some([low, pressure, high])) = (used, m.tcp_mem) {
            let sev = if used >= high {
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
                    Severity::Critical => "at the hard limit",
                    Severity::Warning => "in memory pressure",
                    Severity::Info => "near memory pressure",
                };
                let f = Finding::new(
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
            if max > 0 && orphans as f64 >= max as f64 * NEAR_ORPHANS {
                let f = Finding::new(
                    self,
                    "tcp",
                    format!("{orphans} orphaned TCP sockets of a maximum {max}"),
                )
                .severity(if orphans >= max {
                    Severity::Critical
                } else {
                    Severity::Warning
                })
                .evidence("TCP orphan", orphans.to_string(), "/proc/net/sockstat")
                .evidence(
                    "tcp_max_orphans",
                    max.to_string(),
                    "/proc/sys/net/ipv4/tcp_max_orphans",
                );
                out.push(f.fix(Fix {
                    text: format!(
                        "Orphans are sockets closed by the application with data still to send or FIN_WAIT to finish: lower net.ipv4.tcp_fin_timeout and tcp_orphan_retries, or raise `net.ipv4.tcp_max_orphans` above {} if memory allows (each orphan may hold up to 64 KB).",
                        orphans.saturating_mul(2)
                    ),
                    app: Some("close connections after reading the peer's data; do not abort with unsent data".into()),
                    ..Fix::default()
                }));
            }
        }
        Ok(())
    }
}
