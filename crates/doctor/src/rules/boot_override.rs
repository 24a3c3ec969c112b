//! `boot-override`: a knob the applied (else the recommended) plan sets is also set, to
//! another value, by boot-time configuration (`/etc/sysctl.conf`,
//! `sysctl.d`, `modprobe.d`, a udev rule or the active tuned profile), so
//! whichever runs later at boot wins.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;
use model::doctor_facts::BootConfig;
use model::plan::{fold_ws, Change, EthtoolGroup, Target};

/// Module parameters that set what an ethtool group sets (Intel's drivers).
const MODULE_PARAMS_FOR: &[(EthtoolGroup, &str)] = &[
    (EthtoolGroup::Coalesce, "InterruptThrottleRate"),
    (EthtoolGroup::Rings, "RxDescriptors"),
    (EthtoolGroup::Rings, "TxDescriptors"),
    (EthtoolGroup::Channels, "RSS"),
];

/// `ethtool` flags that set each group in a udev `RUN`.
fn ethtool_flag(g: EthtoolGroup) -> &'static str {
    match g {
        EthtoolGroup::Channels => "ethtool -L",
        EthtoolGroup::Rings => "ethtool -G",
        EthtoolGroup::Coalesce => "ethtool -C",
        EthtoolGroup::Features => "ethtool -K",
    }
}

/// A value as written in a config file: whitespace folded, quotes dropped.
fn plain(v: &str) -> String {
    fold_ws(v.trim().trim_matches('"').trim_matches('\''))
}

/// The boot-time settings that fight `c`: (what, value at boot, file:line).
fn conflicts(c: &Change, boot: &BootConfig, driver: Option<&str>) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    match &c.target {
        Target::File { path, .. } => {
            if let Some(rest) = path.strip_prefix("/proc/sys/") {
                let key = rest.replace('/', ".");
                if let Some(s) = boot
                    .sysctl_at_boot(&key)
                    .filter(|s| plain(&s.value) != plain(&c.after))
                {
                    out.push((
                        format!("{key} at boot"),
                        s.value.clone(),
                        format!("{}:{}", s.file, s.line),
                    ));
                }
                if let Some(t) = &boot.tuned {
                    if let Some(s) = t
                        .sysctl
                        .iter()
                        .rev()
                        .find(|s| s.key == key)
                        .filter(|s| plain(&s.value) != plain(&c.after))
                    {
                        out.push((
                            format!("{key} in tuned profile {}", t.name),
                            s.value.clone(),
                            format!("{}:{}", s.file, s.line),
                        ));
                    }
                }
            } else if path.ends_with("/cpufreq/scaling_governor") {
                if let Some(t) = &boot.tuned {
                    if let Some(s) = t
                        .cpu
                        .iter()
                        .rev()
                        .find(|s| s.key == "governor")
                        .filter(|s| plain(&s.value) != plain(&c.after))
                    {
                        out.push((
                            format!("governor in tuned profile {}", t.name),
                            s.value.clone(),
                            format!("{}:{}", s.file, s.line),
                        ));
                    }
                }
            } else if let Some(knob) = path.rsplit('/').next() {
                for l in boot
                    .udev
                    .iter()
                    .filter(|l| l.knobs.iter().any(|k| k == knob))
                {
                    out.push((
                        format!("{knob} in a udev rule"),
                        l.text.clone(),
                        format!("{}:{}", l.file, l.line),
                    ));
                }
            }
        }
        Target::Ethtool { group, .. } => {
            let flag = ethtool_flag(*group);
            for l in boot
                .udev
                .iter()
                .filter(|l| l.knobs.iter().any(|k| k == flag))
            {
                out.push((
                    format!("`{flag}` in a udev rule"),
                    l.text.clone(),
                    format!("{}:{}", l.file, l.line),
                ));
            }
            if let Some(d) = driver {
                let d = d.replace('-', "_");
                for o in boot.modprobe.iter().filter(|o| o.module == d) {
                    for (k, v) in &o.params {
                        if MODULE_PARAMS_FOR.iter().any(|(g, p)| g == group && p == k) {
                            out.push((
                                format!("{d} module parameter {k}"),
                                v.clone(),
                                format!("{}:{}", o.file, o.line),
                            ));
                        }
                    }
                }
            }
        }
        Target::ModuleParam { module, param } => {
            for o in boot.modprobe.iter().filter(|o| &o.module == module) {
                for (k, v) in o.params.iter().filter(|(k, _)| k == param) {
                    if plain(v) != plain(&c.after) {
                        out.push((
                            format!("{module} {k}"),
                            v.clone(),
                            format!("{}:{}", o.file, o.line),
                        ));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// Boot-time configuration that overrides the plan.
#[derive(Debug)]
pub struct BootOverride;

impl DoctorRule for BootOverride {
    fn id(&self) -> FindingId {
        FindingId::BootOverride
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "boot-time configuration sets a knob the plan sets, to another value"
    }
    fn rationale(&self) -> &'static str {
        "sysctl.d, sysctl.conf, modprobe.d, udev rules and tuned all run at boot; a value the plan writes is silently replaced by whichever of them runs later, so the tuning is gone after a reboot or a driver reload"
    }
    fn source(&self) -> &'static str {
        "\"Inform users about reapplied sysctls\" (tuned pull request 492, 2023, https://github.com/redhat-performance/tuned/pull/492: with reapply_sysctl=1, the default, /etc/sysctl.d values are set after the profile's); sysctl.d(5), modprobe.d(5), udev(7)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        // The plan in force (the journal's newest generation) if any, else the recommended one.
        let (plan, which) = match &cx.input.applied {
            Some(p) => (p, "applied plan".to_string()),
            None => (
                cx.plan
                    .as_ref()
                    .map_err(|e| Skip(format!("no plan to compare: {e}")))?,
                format!("{} plan", cx.plan_profile),
            ),
        };
        let boot = &cx.input.facts.boot;
        for c in &plan.changes {
            let driver = match &c.target {
                Target::Ethtool { iface, .. } => {
                    cx.snap().interface(iface).and_then(|i| i.driver.as_deref())
                }
                _ => None,
            };
            let found = conflicts(c, boot, driver);
            if found.is_empty() {
                continue;
            }
            let mut f = crate::finding::from_rule(
                self,
                &c.knob,
                format!(
                    "{}: the plan sets {}, boot-time configuration sets it too",
                    c.knob, c.after
                ),
            )
            .evidence(
                format!("{} in the {which}", c.knob),
                c.after.clone(),
                format!("nettune plan (rule {})", c.rule),
            );
            for (what, v, at) in &found {
                f = f.evidence(what.clone(), v.clone(), at.clone());
            }
            let files: Vec<&str> = found.iter().map(|(_, _, at)| at.as_str()).collect();
            out.push(f.fix(Fix {
                text: format!(
                    "Make one owner: remove or align the boot-time setting ({}), or persist the plan with `nettune apply --persist` so it is reapplied after them.",
                    files.join(", ")
                ),
                changes: vec![c.clone()],
                command: Some(cx.plan_command(None)),
                app: None,
                bench: None,
            }));
        }
        Ok(())
    }
}
