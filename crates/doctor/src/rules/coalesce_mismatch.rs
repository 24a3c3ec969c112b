//! `coalesce-mismatch`: interrupt coalescing that contradicts the goal:
//! adaptive moderation or a high `rx-usecs` under `--profile latency`, or
//! `rx-usecs 0` (an interrupt per packet) at a high packet rate; an
//! `InterruptThrottleRate` in `modprobe.d` for a NIC's ixgbe/ixgbevf/e1000
//! family driver that is dynamic under a latency goal or that the driver
//! rejects (its ranges in `tune::drivers`).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use model::doctor_facts::BootConfig;
use tune::coalesce_family::{family, zero_allowed, E1000_82547_MIN_USECS};
use tune::drivers::{itr_spec, ItrSpec};
use tune::profile::CoalesceIntent;
use tune::RuleId;

/// Module parameter of the Intel drivers that sets interrupt moderation at load.
pub const ITR_PARAM: &str = "InterruptThrottleRate";

/// `InterruptThrottleRate` values of the dynamic modes (1 dynamic, 3 dynamic
/// conservative, 4 simplified on e1000/e1000e): adaptive moderation, like
/// `adaptive-rx on`.
pub const ITR_DYNAMIC: &[u32] = &[1, 3, 4];

/// One `InterruptThrottleRate` setting of `driver` in `modprobe.d` that
/// contradicts the goal: (reason, the value as written, file:line).
fn modprobe_itr(
    boot: &BootConfig,
    driver: &str,
    spec: &ItrSpec,
    latency: bool,
) -> Vec<(String, String, String)> {
    let module = driver.replace('-', "_");
    let mut out = Vec::new();
    for o in boot.modprobe.iter().filter(|o| o.module == module) {
        for (_, v) in o.params.iter().filter(|(k, _)| k == ITR_PARAM) {
            let at = format!("{}:{}", o.file, o.line);
            let mut why = Vec::new();
            // One entry per port, in probe order; any of them can bite.
            for entry in v.trim().trim_matches('"').split(',') {
                let e = entry.trim();
                match e.parse::<u32>() {
                    Ok(n) if spec.modes.contains(&n) || (spec.min..=spec.max).contains(&n) => {
                        if latency && ITR_DYNAMIC.contains(&n) {
                            why.push(format!(
                                "{ITR_PARAM}={n} ({at}) is {driver}'s dynamic moderation under a latency goal"
                            ));
                        }
                    }
                    _ => {
                        let modes: Vec<String> = spec.modes.iter().map(u32::to_string).collect();
                        why.push(format!(
                            "{ITR_PARAM}={e} ({at}) is a value {driver} rejects (it takes {} or {}-{}; anything else becomes its default)",
                            modes.join(", "),
                            spec.min,
                            spec.max
                        ));
                    }
                }
            }
            why.dedup();
            for w in why {
                out.push((w, v.clone(), at.clone()));
            }
        }
    }
    out
}

/// Packets per second on one NIC from which `rx-usecs 0` is a mismatch.
pub const NO_MODERATION_PPS: f64 = 100_000.0;

/// Coalescing against the intent.
#[derive(Debug)]
pub struct CoalesceMismatch;

impl DoctorRule for CoalesceMismatch {
    fn id(&self) -> FindingId {
        FindingId::CoalesceMismatch
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
        "a 2007 Korean blog post on e1000 tuning by 엘레노아 (netperf TCP_RR; title and URL not preserved; it cites Intel's PRO/1000 Linux driver guide and AP-450) (e1000 TCP_RR 6543 -> 23975/s with InterruptThrottleRate=0 on both ends); y_uuki's ixgbevf test on EC2 (\"EC2でSR-IOVを使うときのNICドライバパラメータ検証\", blog.yuuk.io, 2014-03-20, http://blog.yuuk.io/entry/2014/03/20/085600) (ixgbevf dynamic ITR: 59 % softirq, fixed 1000/s: 8 %); Intel application note AP-450, \"Interrupt Moderation Using Intel Gigabit Ethernet Controllers\" (https://www.intel.com/content/www/us/en/embedded/products/networking/gbe-controllers-interrupt-moderation-appl-note.html); Documentation/networking/device_drivers/ethernet/intel/e1000.rst"
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
        let empty = std::collections::BTreeMap::new();
        for i in &cx.snap().interfaces {
            let driver = i.driver.as_deref().unwrap_or("");
            let name = i.name.as_str();
            // modprobe.d of the NIC's driver (only drivers a NIC here uses:
            // options of an absent module change nothing).
            let itr = itr_spec(driver)
                .map(|spec| modprobe_itr(&cx.input.facts.boot, driver, spec, latency))
                .unwrap_or_default();
            let co = match i.ethtool.coalesce.value() {
                Some(co) => co,
                None if itr.is_empty() => continue,
                None => &empty,
            };
            let get = |k: &str| co.get(k).copied();
            let fam = family(driver);
            // rx-usecs values that select a dynamic mode (ixgbe's 1, igb's
            // and e1000's 1 and 3, e1000's 4), said in both units.
            let dynamic_itr = fam
                .zip(get("rx-usecs"))
                .filter(|(f, v)| f.is_dynamic(*v))
                .map(|(f, v)| f.describe(v));
            let mut why = Vec::new();
            if latency {
                if get("adaptive-rx") == Some(1) {
                    why.push("adaptive-rx on under a latency goal".to_string());
                }
                if let Some(d) = &dynamic_itr {
                    why.push(format!(
                        "rx-usecs {d} is {driver}'s adaptive moderation under a latency goal"
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
                .and_then(|w| w.iface(name))
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
            let in_tree_note = itr_spec(driver).filter(|s| !s.in_tree).and_then(|_| {
                let version = i.ethtool.driver.value().and_then(|d| d.version.as_deref());
                let kernel = cx.snap().source.kernel.as_deref();
                (!tune::drivers::out_of_tree(version, kernel)).then(|| {
                    format!(
                        "{driver} {}: the in-tree driver ignores {ITR_PARAM}; it takes effect once Intel's out-of-tree {driver} is installed",
                        version.unwrap_or("(version unknown)")
                    )
                })
            });
            for (w, _, _) in &itr {
                why.push(w.clone());
            }
            if why.is_empty() {
                continue;
            }
            let mut f =
                crate::finding::from_rule(self, name, format!("{name}: {}", why.join("; ")));
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
            let mut seen = Vec::new();
            for (_, v, at) in &itr {
                if !seen.contains(&at) {
                    seen.push(at);
                    f = f.evidence(format!("{driver} {ITR_PARAM}"), v.clone(), at.clone());
                }
            }
            if let (Some(note), false) = (&in_tree_note, itr.is_empty()) {
                f = f.evidence(
                    format!("{driver} version"),
                    note.clone(),
                    format!("ethtool -i {name}"),
                );
            }
            let text = if itr.is_empty() {
                "Set coalescing for the goal: adaptive off and a few µs for latency; adaptive or tens of µs for throughput.".to_string()
            } else {
                format!(
                    "Set coalescing for the goal: adaptive off and a few µs for latency; adaptive or tens of µs for throughput. In modprobe.d, give {driver} an {ITR_PARAM} it takes that fits the goal (0 or a fixed rate for latency), or remove it and set coalescing with ethtool -C; it applies when the module loads."
                )
            };
            let fix = cx.plan_fix(
                &[RuleId::Coalesce, RuleId::ModuleParams],
                Some(name),
                &text,
                &fallback_command(name, driver, i.pci_id, co, max_us),
            );
            out.push(f.fix(fix));
        }
        Ok(())
    }
}

/// The `ethtool -C` command the fix offers when the plan has no change for
/// the port: a value the driver takes (e1000e refuses 8, EINVAL for 5-9: the
/// family's latency value, 0 where allowed), offered only when the driver
/// takes it on this port's coalescing (virtio_net without notification
/// coalescing refuses any rx-usecs); else why none is offered.
fn fallback_command(
    name: &str,
    driver: &str,
    pci_id: Option<model::snapshot::PciId>,
    co: &std::collections::BTreeMap<String, u64>,
    max_us: u64,
) -> String {
    let fam = family(driver);
    let us = u32::try_from(max_us.max(8)).unwrap_or(u32::MAX);
    let ok0 = zero_allowed(driver, pci_id);
    let us = match fam {
        Some(f) if ok0 => f.latency_value(us, true),
        Some(f) => f.latency_value(us, false).max(E1000_82547_MIN_USECS),
        None => us,
    };
    let mut after = co.clone();
    if let Some(a) = after.get_mut("adaptive-rx") {
        *a = 0;
    }
    let refused = fam.and_then(|f| f.accepts_on("rx-usecs", u64::from(us), false, &after).err());
    match refused {
        Some(e) => format!(
            "No ethtool -C command is offered: {driver} refuses rx-usecs {us} on {name} ({e})."
        ),
        None if co.contains_key("adaptive-rx") => {
            format!("ethtool -C {name} adaptive-rx off rx-usecs {us}")
        }
        None => format!("ethtool -C {name} rx-usecs {us}"),
    }
}
