//! `coalesce`: interrupt coalescing by the profile's intent, through ethtool.
//!
//! ixgbe/ixgbevf: `rx-usecs 1` is dynamic ITR, which seed 001 measured the
//! worst for CPU under small-packet load (CPU0 softirq 59 % in dynamic mode,
//! 40 % in conservative mode, 8 % at a fixed 1,000 interrupts/s, RTT the
//! same), so the adaptive intent gives them a fixed interval, not 1. Their
//! `set_coalesce` refuses `tx-usecs` when RX and TX share a vector (TxRx
//! IRQs, -EINVAL) and anything above `IXGBE_MAX_EITR >> 2` = 1022 µs.

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use crate::profile::CoalesceIntent;
use model::plan::{EthtoolGroup, Phase, Target};
use std::collections::BTreeMap;

/// Drivers whose `rx-usecs 1` means dynamic ITR (their adaptive mode; 0 = off,
/// 2 and up = a fixed interval in µs).
pub const DRIVERS_RX_USECS_1_DYNAMIC: [&str; 2] = ["ixgbe", "ixgbevf"];

/// The longest interval ixgbe/ixgbevf take, µs (`IXGBE_MAX_EITR >> 2`).
pub const ITR_MAX_USECS: u32 = 1022;

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
        "seed 001 (ixgbevf: dynamic ITR CPU0 softirq 59 %, conservative 40 %, fixed 1000/s 8 %, RTT unchanged), seed 003 (e1000 ITR, AP-450); ixgbevf_set_coalesce; Documentation/networking/ethtool-netlink.rst (COALESCE_SET)"
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
        let mut us = settings.coalesce_usecs;
        if itr_driver(driver) && us > ITR_MAX_USECS {
            cx.note(
                self.id(),
                format!("{name} ({driver}): coalesce_usecs {us} lowered to {ITR_MAX_USECS} µs, the most the driver takes"),
            );
            us = ITR_MAX_USECS;
        }
        let shared = itr_driver(driver) && shares_vectors(cx, nic);
        let want = match settings.coalesce {
            CoalesceIntent::LowLatency => low_latency(co, name, driver, us, shared),
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

/// Whether some queue IRQ of the NIC serves RX and TX (`eth0-TxRx-0`).
fn shares_vectors(cx: &Ctx<'_>, nic: &Nic<'_>) -> bool {
    nic.qirqs.iter().any(|(_, irqs)| {
        irqs.iter().any(|n| {
            cx.snap.irqs.iter().any(|i| {
                i.number.0 == *n
                    && i.queue
                        .is_some_and(|q| q.kind == model::snapshot::QueueKind::Combined)
            })
        })
    })
}

/// Adaptive off; `rx/tx-usecs` down to `us`. `shared`: ixgbe(vf) with TxRx
/// vectors, which refuse `tx-usecs`.
fn low_latency(
    co: &BTreeMap<String, u64>,
    name: &str,
    driver: &str,
    us: u32,
    shared: bool,
) -> Vec<Want> {
    let itr = itr_driver(driver);
    // 1 would be dynamic ITR: the nearest fixed interval is 2.
    let us = if itr && us == 1 { 2 } else { us };
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
        if a == "tx-usecs" && shared {
            // ixgbevf_set_coalesce: -EINVAL on tx-usecs with TxRx vectors;
            // rx-usecs sets the shared vector.
            continue;
        }
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
            let cur = co.get("rx-usecs").copied().unwrap_or(0);
            // 0 = off and 1 = dynamic: both cost the most CPU (seed 001).
            let us = us.max(2);
            if cur <= 1 || cur < u64::from(us) {
                want.push(("rx-usecs", u64::from(us), itr_reason(name, driver, us)));
            }
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

/// Why ixgbe(vf) get a fixed interval under the adaptive intent, with the
/// interval shown both ways (AP-450).
fn itr_reason(name: &str, driver: &str, us: u32) -> String {
    let rate = model::moderation::rate_for_timer_us(u64::from(us)).unwrap_or(0);
    format!(
        "{name} ({driver}): fixed {us} µs interval = at most {} interrupts/s per queue, not rx-usecs 1 (dynamic ITR): seed 001 measured dynamic ITR the worst for CPU under small packets (CPU0 softirq 59 %, against 40 % conservative and 8 % at a fixed 1,000/s, RTT unchanged)",
        model::moderation::thousands(rate)
    )
}
