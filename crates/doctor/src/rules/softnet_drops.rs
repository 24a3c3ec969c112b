//! `softnet-drops`: softnet backlog drops or time_squeeze growing over the
//! window (`/proc/net/softnet_stat`).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use tune::RuleId;

/// Squeezes per second (all CPUs) from which a squeeze alone is a warning;
/// below it a squeeze seen in most intervals is info.
pub const SQUEEZE_WARN_PER_S: f64 = tune::rules::SQUEEZE_PER_S;

/// Backlog drops or budget run-outs.
#[derive(Debug)]
pub struct SoftnetDrops;

impl DoctorRule for SoftnetDrops {
    fn id(&self) -> FindingId {
        FindingId::SoftnetDrops
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
        "Documentation/admin-guide/sysctl/net.rst (netdev_max_backlog, netdev_budget); netdata src/health/health.d/softnet.conf (1min_netdev_backlog_exceeded, 1min_netdev_budget_ran_outs)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = match cx.need_window() {
            Ok(w) => w,
            Err(skip) => return since_boot(self, cx, out).unwrap_or(Err(skip)),
        };
        let rows: Vec<_> = w
            .total
            .cpus
            .iter()
            .filter_map(|c| c.softnet.map(|s| (c.cpu.0, s)))
            .collect();
        if rows.is_empty() {
            return Err(Skip::because("/proc/net/softnet_stat: not in the samples"));
        }
        let dropped = super::sat_sum(rows.iter().map(|(_, s)| s.dropped));
        let squeeze = super::sat_sum(rows.iter().map(|(_, s)| s.time_squeeze));
        let flow = super::sat_sum(rows.iter().filter_map(|(_, s)| s.flow_limit));
        let squeeze_rate = squeeze as f64 / w.seconds;
        let squeeze_intervals = w.intervals.iter().filter(|d| d.squeezed).count();
        // softnet counters that went backwards: read as resets (counted 0),
        // never as a 32-bit wrap of ~4 billion drops.
        let resets: Vec<_> = w
            .resets
            .iter()
            .filter(|r| r.counter.starts_with("softnet_stat."))
            .collect();
        let severity = if dropped > 0 || flow > 0 || squeeze_rate >= SQUEEZE_WARN_PER_S {
            Severity::Warning
        } else if (squeeze > 0 && squeeze_intervals * 2 > w.intervals.len()) || !resets.is_empty() {
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
        let mut f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "softnet: {dropped} backlog drops, {squeeze} squeezes in {:.1} s{}",
                w.seconds,
                if resets.is_empty() {
                    ""
                } else {
                    " (some counters went backwards: reset, counted as 0)"
                }
            ),
        )
        .severity(severity);
        for r in &resets {
            f = f.evidence(
                format!(
                    "CPU {} {} went backwards (counter reset, counted as 0)",
                    r.cpu.map_or_else(|| "?".to_string(), |c| c.0.to_string()),
                    r.counter.trim_start_matches("softnet_stat.")
                ),
                format!("{:#x} -> {:#x}", r.before, r.after),
                "/proc/net/softnet_stat",
            );
        }
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
        let fix = fix(cx);
        out.push(f.fix(fix));
        Ok(())
    }
}

/// Without samples: the totals since boot per CPU, at info.
fn since_boot(
    rule: &SoftnetDrops,
    cx: &Cx<'_>,
    out: &mut Vec<Finding>,
) -> Option<Result<(), Skip>> {
    let sb = cx.since_boot()?;
    let sn = sb.sample.softnet.as_ref()?;
    let dropped = super::sat_sum(sn.rows.iter().map(|r| u64::from(r.dropped)));
    let squeeze = super::sat_sum(sn.rows.iter().map(|r| u64::from(r.time_squeeze)));
    if dropped == 0 && squeeze == 0 {
        return Some(Ok(()));
    }
    let mut f = crate::finding::from_rule(
        rule,
        "host",
        format!(
            "softnet: {dropped} backlog drops, {squeeze} squeezes {} (no samples: not a rate)",
            sb.span()
        ),
    )
    .severity(Severity::Info);
    for (k, r) in sn
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.dropped > 0 || r.time_squeeze > 0)
    {
        let cpu = r.cpu.map_or(u32::try_from(k).unwrap_or(u32::MAX), |c| c.0);
        f = f.evidence(
            format!("CPU {cpu} dropped / squeezed since boot"),
            format!("{} / {}", r.dropped, r.time_squeeze),
            "/proc/net/softnet_stat",
        );
    }
    out.push(f.fix(fix(cx)));
    Some(Ok(()))
}

/// Raise the backlog and the budget.
fn fix(cx: &Cx<'_>) -> crate::finding::Fix {
    cx.plan_fix(
        &[RuleId::Backlog],
        None,
        "Raise net.core.netdev_max_backlog for drops, netdev_budget and netdev_budget_usecs for squeezes; if one CPU takes all of it, spread the work first (softirq-concentrated).",
        "sysctl -w net.core.netdev_max_backlog=5000 net.core.netdev_budget=600 net.core.netdev_budget_usecs=8000 (global knobs).",
    )
}
