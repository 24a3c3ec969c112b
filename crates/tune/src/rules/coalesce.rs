//! `coalesce`: interrupt coalescing by the profile's intent, through ethtool.

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use crate::profile::CoalesceIntent;
use model::plan::{EthtoolGroup, Phase, Target};
use std::collections::BTreeMap;

/// Drivers whose `rx-usecs 1` means dynamic ITR (their adaptive mode; 0 = off,
/// 2 and up = a fixed interval in µs).
pub const DRIVERS_RX_USECS_1_DYNAMIC: [&str; 2] = ["ixgbe", "ixgbevf"];

/// Sets `adaptive-rx/tx` and `rx/tx-usecs`, only attributes the driver reports.
#[derive(Debug)]
pub struct Coalesce;

/// One wanted attribute value, with the reason.
type Want = (&'static str, u64, String);

impl Rule for Coalesce {
    fn id(&self) -> RuleId {
        RuleId::Coalesce
    }

    fn rationale(&self) -> &'static str {
        "interrupt coalescing trades latency for CPU: off and low µs for latency, adaptive or higher µs for throughput"
    }

    fn source(&self) -> &'static str {
        "seeds 001, 003 (InterruptThrottleRate); Documentation/networking/ethtool-netlink.rst (COALESCE_SET)"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let profile = cx.profile;
        let settings = &profile.settings;
        if settings.coalesce == CoalesceIntent::Keep {
            return;
        }
        let (iface, name) = (nic.iface, nic.name);
        let Some(co) = iface.ethtool.coalesce.value() else {
            if iface.driver.is_some() {
                cx.note(
                    self.id(),
                    format!("{name}: coalescing not reported by the driver; left alone"),
                );
            }
            return;
        };
        let driver = iface.driver.as_deref().unwrap_or("");
        let us = settings.coalesce_usecs;
        let want = match settings.coalesce {
            CoalesceIntent::LowLatency => low_latency(co, name, driver, us),
            CoalesceIntent::Adaptive => adaptive(co, name, driver, us),
            CoalesceIntent::Keep => Vec::new(),
        };
        for (attr, v, why) in want {
            let cur = co.get(attr).copied();
            if cur == Some(v) {
                continue;
            }
            cx.push(
                Phase::Coalescing,
                self.id(),
                attr,
                Target::Ethtool {
                    iface: name.into(),
                    group: EthtoolGroup::Coalesce,
                    attr: attr.into(),
                },
                cur.map(|c| c.to_string()),
                v.to_string(),
                why,
                false,
            );
        }
    }
}

fn itr_driver(driver: &str) -> bool {
    DRIVERS_RX_USECS_1_DYNAMIC.contains(&driver)
}

/// Adaptive off; `rx/tx-usecs` down to `us`.
fn low_latency(co: &BTreeMap<String, u64>, name: &str, driver: &str, us: u32) -> Vec<Want> {
    let itr = itr_driver(driver);
    let mut want = Vec::new();
    for a in ["adaptive-rx", "adaptive-tx"] {
        if co.contains_key(a) {
            want.push((
                a,
                0,
                format!("{name}: adaptive moderation off for steady low latency"),
            ));
        }
    }
    for a in ["rx-usecs", "tx-usecs"] {
        let Some(&cur) = co.get(a) else {
            continue;
        };
        // Already at or below the target: lower is lower latency,
        // except ixgbe(vf)'s 1, which means dynamic ITR.
        let dynamic = itr && cur == 1;
        if cur <= u64::from(us) && !dynamic {
            continue;
        }
        let why = if itr {
            format!("{name} ({driver}): fixed {us} µs interval; for {driver} rx-usecs 0 = no throttling and 1 = dynamic ITR")
        } else {
            format!("{name}: low fixed {us} µs interrupt delay")
        };
        want.push((a, u64::from(us), why));
    }
    want
}

/// Adaptive on where the driver has it; else dynamic ITR or `rx-usecs` up to `us`.
fn adaptive(co: &BTreeMap<String, u64>, name: &str, driver: &str, us: u32) -> Vec<Want> {
    let mut want = Vec::new();
    let mut adaptive = false;
    for a in ["adaptive-rx", "adaptive-tx"] {
        if co.contains_key(a) {
            adaptive = true;
            want.push((
                a,
                1,
                format!("{name}: adaptive moderation follows the load"),
            ));
        }
    }
    if !adaptive && co.contains_key("rx-usecs") {
        if itr_driver(driver) {
            want.push((
                "rx-usecs",
                1,
                format!("{name} ({driver}): rx-usecs 1 selects dynamic ITR (the driver's adaptive mode; 0 = off, 2+ = fixed µs)"),
            ));
        } else {
            let cur = co.get("rx-usecs").copied().unwrap_or(0);
            if cur < u64::from(us) {
                want.push((
                    "rx-usecs",
                    u64::from(us),
                    format!("{name}: no adaptive mode; {us} µs batches interrupts under load"),
                ));
            }
        }
    }
    want
}
