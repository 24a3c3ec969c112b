//! `coalesce-mismatch`: interrupt coalescing that contradicts the goal:
//! adaptive moderation or a high `rx-usecs` under `--profile latency`, or
//! `rx-usecs 0` (an interrupt per packet) at a high packet rate.

use super::{DoctorId, DoctorRule, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use tune::planner::DRIVERS_RX_USECS_1_DYNAMIC;
use tune::profile::CoalesceIntent;
use tune::RuleId;

/// Packets per second on one NIC from which `rx-usecs 0` is a mismatch.
pub const NO_MODERATION_PPS: f64 = 100_000.0;

/// Coalescing against the intent.
#[derive(Debug)]
pub struct CoalesceMismatch;

impl DoctorRule for CoalesceMismatch {
    fn id(&self) -> DoctorId {
        DoctorId::CoalesceMismatch
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "interrupt coalescing contradicts the goal"
    }
    fn rationale(&self) -> &'static str {
        "coalescing trades latency for CPU: adaptive or long intervals hold packets tens of microseconds before the interrupt (bad for request/response), while no moderation at a high packet rate spends a CPU on interrupts"
    }
    fn source(&self) -> &'static str {
        "seed 003 (e1000 TCP_RR 6543 -> 23975/s with InterruptThrottleRate=0); seed 001 (ixgbevf dynamic ITR: 59 % softirq, fixed 1000/s: 8 %); Intel AP-450"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let latency = cx
            .input
            .profile
            .as_ref()
            .is_some_and(|p| p.settings.coalesce == CoalesceIntent::LowLatency);
        let max_us = cx
            .input
            .profile
            .as_ref()
            .map_or(0, |p| u64::from(p.settings.coalesce_usecs));
        for i in &cx.snap().interfaces {
            let Some(co) = i.ethtool.coalesce.value() else {
                continue;
            };
            let driver = i.driver.as_deref().unwrap_or("");
            let name = i.name.as_str();
            let get = |k: &str| co.get(k).copied();
            let dynamic_itr =
                DRIVERS_RX_USECS_1_DYNAMIC.contains(&driver) && get("rx-usecs") == Some(1);
            let mut why = Vec::new();
            if latency {
                if get("adaptive-rx") == Some(1) {
                    why.push("adaptive-rx on under a latency goal".to_string());
                }
                if dynamic_itr {
                    why.push(format!(
                        "rx-usecs 1 is {driver}'s dynamic ITR (adaptive) under a latency goal"
                    ));
                } else if let Some(us) = get("rx-usecs").filter(|us| *us > max_us) {
                    why.push(format!(
                        "rx-usecs {us} above the latency profile's {max_us} µs"
                    ));
                }
            }
            let pps = cx
                .window
                .as_ref()
                .and_then(|w| w.total.iface(name))
                .map(|d| d.rx_pps);
            if get("rx-usecs") == Some(0)
                && get("adaptive-rx") != Some(1)
                && pps.is_some_and(|p| p >= NO_MODERATION_PPS)
                && !latency
            {
                why.push(format!(
                    "rx-usecs 0 (an interrupt per packet) at {:.0} packets/s",
                    pps.unwrap_or(0.0)
                ));
            }
            if why.is_empty() {
                continue;
            }
            let mut f = Finding::new(self, name, format!("{name}: {}", why.join("; ")));
            for k in ["adaptive-rx", "rx-usecs", "rx-frames"] {
                if let Some(v) = get(k) {
                    f = f.evidence(
                        format!("{name} {k}"),
                        v.to_string(),
                        format!("ethtool -c {name}"),
                    );
                }
            }
            if let Some(p) = pps {
                f = f.evidence(
                    format!("{name} received"),
                    format!("{p:.0} packets/s"),
                    "/proc/net/dev",
                );
            }
            let fix = cx.plan_fix(
                &[RuleId::Coalesce, RuleId::ModuleParams],
                Some(name),
                "Set coalescing for the goal: adaptive off and a few µs for latency; adaptive or tens of µs for throughput.",
                &format!("ethtool -C {name} adaptive-rx off rx-usecs {}", max_us.max(8)),
            );
            out.push(f.fix(fix));
        }
        Ok(())
    }
}
