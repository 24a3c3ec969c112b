//! `softnet-drops`: softnet backlog drops or time_squeeze growing over the
//! window (`/proc/net/softnet_stat`).

use super::{DoctorId, DoctorRule, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use tune::RuleId;

/// Squeezes per second (all CPUs) from which a squeeze alone is a warning;
/// below it a squeeze seen in most intervals is info.
pub const SQUEEZE_WARN_PER_S: f64 = 10.0;

/// Backlog drops or budget run-outs.
#[derive(Debug)]
pub struct SoftnetDrops;

impl DoctorRule for SoftnetDrops {
    fn id(&self) -> DoctorId {
        DoctorId::SoftnetDrops
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "softnet backlog drops or budget run-outs"
    }
    fn rationale(&self) -> &'static str {
        "a full per-CPU backlog (netdev_max_backlog) drops packets after the NIC delivered them; a squeeze means net_rx_action ran out of budget (netdev_budget, netdev_budget_usecs) with packets left, which delays them and fills rings"
    }
    fn source(&self) -> &'static str {
        "Documentation/admin-guide/sysctl/net.rst (netdev_max_backlog, netdev_budget); netdata softnet alarms"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        let rows: Vec<_> = w
            .total
            .cpus
            .iter()
            .filter_map(|c| c.softnet.map(|s| (c.cpu.0, s)))
            .collect();
        if rows.is_empty() {
            return Err(Skip::because("/proc/net/softnet_stat: not in the samples"));
        }
        let dropped: u64 = rows.iter().map(|(_, s)| s.dropped).sum();
        let squeeze: u64 = rows.iter().map(|(_, s)| s.time_squeeze).sum();
        let flow: u64 = rows.iter().filter_map(|(_, s)| s.flow_limit).sum();
        let squeeze_rate = squeeze as f64 / w.seconds;
        let squeeze_intervals = w
            .intervals
            .iter()
            .filter(|d| {
                d.cpus
                    .iter()
                    .any(|c| c.softnet.is_some_and(|s| s.time_squeeze > 0))
            })
            .count();
        let severity = if dropped > 0 || flow > 0 || squeeze_rate >= SQUEEZE_WARN_PER_S {
            Severity::Warning
        } else if squeeze > 0 && squeeze_intervals * 2 > w.intervals.len() {
            Severity::Info
        } else {
            return Ok(());
        };
        let sysctl = |k: &str| {
            cx.snap()
                .sysctls
                .get(k)
                .cloned()
                .unwrap_or_else(|| "?".into())
        };
        let mut f = Finding::new(
            self,
            "host",
            format!(
                "softnet: {dropped} backlog drops, {squeeze} squeezes in {:.1} s",
                w.seconds
            ),
        )
        .severity(severity);
        for (cpu, s) in rows
            .iter()
            .filter(|(_, s)| s.dropped > 0 || s.time_squeeze > 0 || s.flow_limit.unwrap_or(0) > 0)
        {
            f = f.evidence(
                format!("CPU {cpu} dropped / squeezed / flow-limited"),
                format!(
                    "{} / {} / {}",
                    s.dropped,
                    s.time_squeeze,
                    s.flow_limit.unwrap_or(0)
                ),
                "/proc/net/softnet_stat",
            );
        }
        f = f
            .evidence(
                "net.core.netdev_max_backlog",
                sysctl("net.core.netdev_max_backlog"),
                "/proc/sys/net/core/netdev_max_backlog",
            )
            .evidence(
                "net.core.netdev_budget / budget_usecs",
                format!(
                    "{} / {}",
                    sysctl("net.core.netdev_budget"),
                    sysctl("net.core.netdev_budget_usecs")
                ),
                "/proc/sys/net/core/netdev_budget",
            );
        let fix = cx.plan_fix(
            &[RuleId::Backlog],
            None,
            "Raise net.core.netdev_max_backlog for drops, netdev_budget and netdev_budget_usecs for squeezes; if one CPU takes all of it, spread the work first (softirq-concentrated).",
            "sysctl -w net.core.netdev_max_backlog=5000 net.core.netdev_budget=600 net.core.netdev_budget_usecs=8000 (global knobs).",
        );
        out.push(f.fix(fix));
        Ok(())
    }
}
