//! `module-params`: `InterruptThrottleRate` of the e1000/e1000e/ixgbe/ixgbevf
//! family as a modprobe.d snippet to review, one value per port, checked
//! against what the driver's code takes ([`crate::drivers`]).

use super::{Rule, RuleId};
use crate::context::Ctx;
use crate::drivers::{self, ItrVerdict};
use crate::profile::CoalesceIntent;
use model::plan::{Phase, Target};
use model::snapshot::Interface;

/// Plans a module parameter per driver (once per module, one value per port).
#[derive(Debug)]
pub struct ModuleParams;

/// The e1000 field notes' measurement (after Intel's PRO/1000 guide), said wherever ITR 0 is planned: it takes both ends.
pub const SEED_003_BOTH_ENDS: &str = "a 2007 Korean blog post on e1000 tuning by 엘레노아 (netperf TCP_RR; title and URL not preserved; it cites Intel's PRO/1000 Linux driver guide and AP-450): e1000 with InterruptThrottleRate=0 on both ends raised TCP_RR from 6,543 to 23,975 transactions/s, one end alone stayed near 8,000: run this plan on both hosts";

/// Why a reload matters, said in every planned change.
const RELOAD: &str = "takes effect only when the module is reloaded, which drops the link of every port it drives (y_uuki's ixgbevf test on EC2 lost connectivity and needed a reboot): reload from a console or reboot";

impl Rule for ModuleParams {
    fn id(&self) -> RuleId {
        RuleId::ModuleParams
    }

    fn rationale(&self) -> &'static str {
        "InterruptThrottleRate is a per-port module parameter: one value per port, checked against the driver's code, written as a modprobe.d snippet to review; a module reload drops the link"
    }

    fn source(&self) -> &'static str {
        "y_uuki's ixgbevf test on EC2 (\"EC2でSR-IOVを使うときのNICドライバパラメータ検証\", blog.yuuk.io, 2014-03-20, http://blog.yuuk.io/entry/2014/03/20/085600) (ixgbevf modes vs softirq %, reload needed a reboot); Documentation/networking/device_drivers/ethernet/intel/e1000.rst (modes, the 82547 caution); e1000_param.c, ixgbevf_param.c (ranges)"
    }

    fn plan_host(&self, cx: &mut Ctx<'_>, ifaces: &[&Interface]) {
        let mut seen: Vec<&str> = Vec::new();
        for iface in ifaces {
            let driver = iface.driver.as_deref().unwrap_or("");
            // Once per module: the first selected port plans for all of them.
            if seen.contains(&driver) {
                continue;
            }
            seen.push(driver);
            plan_driver(self.id(), cx, iface, driver);
        }
    }
}

/// The change (or the note) for `driver`, first seen on `iface`.
fn plan_driver(id: RuleId, cx: &mut Ctx<'_>, iface: &Interface, driver: &str) {
    let name = iface.name.as_str();
    let Some(spec) = drivers::itr_spec(driver) else {
        return;
    };
    if !spec.in_tree {
        let version = iface
            .ethtool
            .driver
            .value()
            .map(|d| d.version.as_deref().unwrap_or(""));
        if !drivers::out_of_tree(version, cx.snap.source.kernel.as_deref()) {
            cx.note(
                id,
                format!("{driver}: {name}'s driver ({}) is the in-tree one, which has no InterruptThrottleRate; coalescing goes through ethtool rx-usecs instead", version.unwrap_or("version unknown")),
            );
            return;
        }
    }
    let mut wanted = cx.profile.settings.interrupt_throttle_rate;
    let mut follows = None;
    if let Some(us) = ethtool_usecs(cx, driver) {
        // The plan sets rx-usecs now; the parameter is what the driver
        // starts with at the next reload, so it must say the same (else the
        // reload undoes the change, and boot-override flags the plan's own).
        wanted = 1_000_000u32.checked_div(us).unwrap_or(0);
        follows = Some(us);
    }
    let ids: Vec<_> = cx
        .snap
        .interfaces
        .iter()
        .filter(|i| i.driver.as_deref() == Some(driver))
        .map(|i| i.pci_id)
        .collect();
    let (value, clamp) = match drivers::check_itr_on(spec, wanted, &ids) {
        ItrVerdict::Ok(v) => (v, None),
        ItrVerdict::Clamped { value, why } => (value, Some(why)),
        ItrVerdict::Refused(why) => {
            cx.note(id, why);
            return;
        }
    };
    if spec.default == Some(value) {
        cx.note(
            id,
            format!(
                "{driver}: InterruptThrottleRate {} is already the default of the driver's code (DEFAULT_ITR): no snippet written",
                drivers::describe_itr(value)
            ),
        );
        return;
    }
    let ports: Vec<&str> = cx
        .snap
        .interfaces
        .iter()
        .filter(|i| i.driver.as_deref() == Some(driver))
        .map(|i| i.name.as_str())
        .collect();
    let after = drivers::per_port(spec, value, ports.len());
    let mut count = format!(
        "{} port{} = the interfaces bound to {driver} in this snapshot ({}; ports in other network namespaces are not seen)",
        ports.len(),
        if ports.len() == 1 { "" } else { "s" },
        ports.join(", ")
    );
    if ports.len() > spec.max_ports {
        count.push_str(&format!(
            "; the parameter array has {} entries, the other ports keep the default",
            spec.max_ports
        ));
    }
    let mut why = format!(
        "{driver}: InterruptThrottleRate={after}: {} on each of {count}",
        drivers::describe_itr(value)
    );
    if let Some(us) = follows {
        why.push_str(&format!(
            "; the rate of the rx-usecs {us} this plan sets through ethtool now (the profile's interrupt_throttle_rate gives way), so a reload keeps it"
        ));
    }
    if let Some(c) = clamp {
        why.push_str(&format!("; {c}"));
    }
    if value == 0 {
        why.push_str(&format!("; {SEED_003_BOTH_ENDS}"));
    }
    why.push_str(&format!("; {RELOAD}"));
    cx.push(
        Phase::Modules,
        id,
        "InterruptThrottleRate",
        Target::ModuleParam {
            module: driver.into(),
            param: "InterruptThrottleRate".into(),
        },
        None,
        after,
        why,
        true,
    );
}

/// The `rx-usecs` the coalesce rule plans under the latency intent for
/// `driver`, when that driver reads
/// `rx-usecs` and `InterruptThrottleRate` as the same interval (ixgbe,
/// ixgbevf: `rx-usecs` R means at most 1,000,000 / R interrupts/s, 0 none).
fn ethtool_usecs(cx: &Ctx<'_>, driver: &str) -> Option<u32> {
    if !super::coalesce::DRIVERS_RX_USECS_1_DYNAMIC.contains(&driver)
        || !cx.profile.enabled(RuleId::Coalesce)
    {
        return None;
    }
    let f = crate::coalesce_family::family(driver)?;
    let us = cx.profile.settings.coalesce_usecs;
    // Only the latency intent: there the parameter would otherwise be 0
    // (no throttling) while ethtool sets a fixed interval. The adaptive
    // intent's interval has no parameter planned beside it by the built-in
    // profiles (ixgbe(vf) refuse their 3), and a custom rate is the user's.
    match cx.profile.settings.coalesce {
        CoalesceIntent::LowLatency => Some(f.latency_value(us, true)),
        CoalesceIntent::Adaptive | CoalesceIntent::Keep => None,
    }
}
