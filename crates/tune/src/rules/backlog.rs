//! `backlog`: larger backlog on softnet drops, larger budget on time_squeeze.

use super::{Rule, RuleId};
use crate::context::Ctx;
use model::plan::Phase;
use model::snapshot::Interface;

/// Squeezes per second (all CPUs) from which the budget is raised: the rate
/// from which doctor's `softnet-drops` calls a squeeze alone a warning.
pub const SQUEEZE_PER_S: f64 = 10.0;

/// Raises `netdev_max_backlog`, `netdev_budget` and `netdev_budget_usecs`.
#[derive(Debug)]
pub struct Backlog;

impl Rule for Backlog {
    fn id(&self) -> RuleId {
        RuleId::Backlog
    }

    fn rationale(&self) -> &'static str {
        "softnet drops mean the per-CPU backlog overflowed; time_squeeze means the NAPI budget ran out with work left"
    }

    fn source(&self) -> &'static str {
        "Documentation/admin-guide/sysctl/net.rst (netdev_max_backlog, netdev_budget)"
    }

    fn plan_host(&self, cx: &mut Ctx<'_>, _ifaces: &[&Interface]) {
        let Some(sn) = cx.extras.softnet else {
            cx.note(
                self.id(),
                "softnet counters not read: backlog and budget left alone".into(),
            );
            return;
        };
        let profile = cx.profile;
        let st = &profile.settings;
        if sn.dropped > 0 {
            let key = "net.core.netdev_max_backlog";
            if cx
                .sysctl_u64(key)
                .is_some_and(|c| c < u64::from(st.netdev_max_backlog))
            {
                cx.sysctl(
                    Phase::Sysctls,
                    self.id(),
                    key,
                    st.netdev_max_backlog.to_string(),
                    format!("{} softnet drops (backlog full)", sn.dropped),
                );
            }
        }
        let squeeze_rate = cx.extras.uptime_s.map(|u| sn.time_squeeze as f64 / u);
        if sn.time_squeeze > 0 && squeeze_rate.is_none() {
            cx.note(
                self.id(),
                format!(
                    "{} time_squeeze events since boot, uptime unknown: not a rate, budget left alone",
                    sn.time_squeeze
                ),
            );
        }
        if let Some(rate) = squeeze_rate.filter(|r| sn.time_squeeze > 0 && *r < SQUEEZE_PER_S) {
            cx.note(
                self.id(),
                format!(
                    "{} time_squeeze events since boot, {rate:.3}/s: below {SQUEEZE_PER_S}/s, budget left alone",
                    sn.time_squeeze
                ),
            );
        }
        if let Some(rate) = squeeze_rate.filter(|r| *r >= SQUEEZE_PER_S) {
            for (key, v) in [
                ("net.core.netdev_budget", st.netdev_budget),
                ("net.core.netdev_budget_usecs", st.netdev_budget_usecs),
            ] {
                if cx.sysctl_u64(key).is_some_and(|c| c < u64::from(v)) {
                    cx.sysctl(
                        Phase::Sysctls,
                        self.id(),
                        key,
                        v.to_string(),
                        format!(
                            "{} time_squeeze events since boot, {rate:.1}/s (budget ran out)",
                            sn.time_squeeze
                        ),
                    );
                }
            }
        }
        if sn.dropped == 0 && sn.time_squeeze == 0 {
            cx.note(
                self.id(),
                "no softnet drops or time_squeeze: backlog and budget left alone".into(),
            );
        }
    }
}
