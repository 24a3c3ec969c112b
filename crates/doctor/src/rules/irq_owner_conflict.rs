//! `irq-owner-conflict`: two owners for the same knobs: irqbalance running
//! while a nettune plan placed IRQs (or the intent's plan would), tuned active
//! with a profile that writes knobs a nettune plan sets. Uses the snapshot
//! findings `irqbalance-running` and `tuned`, and the applied plan. irqbalance
//! running is no conflict when its environment file bans (`--banirq=N` in
//! `IRQBALANCE_ARGS`) every IRQ the plan places.

use super::{host_findings, DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;
use model::irqbalance_env;
use model::plan::{Phase, Plan, Target};
use std::collections::BTreeSet;
use tune::RuleId;

/// Competing owners of IRQ affinity and tuning knobs.
#[derive(Debug)]
pub struct IrqOwnerConflict;

impl DoctorRule for IrqOwnerConflict {
    fn id(&self) -> FindingId {
        FindingId::IrqOwnerConflict
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "two owners for IRQ affinity or tuning knobs"
    }
    fn rationale(&self) -> &'static str {
        "irqbalance rewrites smp_affinity every 10 s and tuned re-applies its profile, so placement or settings made by hand or by a plan silently drift back"
    }
    fn source(&self) -> &'static str {
        "irqbalance(1) (rewrites affinity set by hand); \"plugin_sysctl.py: sysctl configs apply order\" (tuned issue 409, 2022, https://github.com/redhat-performance/tuned/issues/409: a tuned restart rewrites sysctl.d values); Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (irqbalance vs manual affinity)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let applied = cx.input.applied.as_ref();
        let places = |p: &Plan| p.changes.iter().any(|c| c.phase == Phase::IrqAffinity);
        if let Some(hf) = host_findings(cx, FindingId::IrqbalanceRunning).next() {
            let applied_places = applied.is_some_and(places);
            let planned = cx.plan.as_ref().is_ok_and(places);
            let pinned: BTreeSet<u32> = applied
                .filter(|p| places(p))
                .or(cx.plan.as_ref().ok().filter(|p| places(p)))
                .map(|p| {
                    p.changes
                        .iter()
                        .filter_map(|c| match c.target {
                            Target::IrqAffinity { irq, .. } => Some(irq),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let banned = cx
                .snap()
                .owners
                .irqbalance_env
                .as_ref()
                .map(|e| irqbalance_env::banned_irqs(&e.content))
                .unwrap_or_default();
            let all_banned = !pinned.is_empty() && pinned.is_subset(&banned);
            if (applied_places || planned) && !all_banned {
                let mut f = crate::finding::from_rule(
                    self,
                    "irqbalance",
                    if applied_places {
                        "irqbalance is running over the IRQ placement of an applied nettune plan"
                            .to_string()
                    } else {
                        format!(
                            "irqbalance is running and the {} plan places IRQs by hand",
                            cx.plan_profile
                        )
                    },
                )
                .evidence("irqbalance", hf.title.clone(), "/proc/*/comm");
                if let Some(p) = applied {
                    f = f.evidence(
                        "applied plan",
                        format!(
                            "profile {}: {} IRQ affinity changes",
                            p.profile,
                            p.changes
                                .iter()
                                .filter(|c| c.phase == Phase::IrqAffinity)
                                .count()
                        ),
                        "/var/lib/nettune (journal)",
                    );
                }
                if !applied_places {
                    // Applying the plan bans the IRQs or stops irqbalance first: info until then.
                    f = f.severity(Severity::Info);
                }
                let fix = cx.plan_fix(
                    &[RuleId::Irqbalance],
                    None,
                    "Give IRQ placement one owner: ban the placed IRQs from irqbalance (one --banirq=N per IRQ in IRQBALANCE_ARGS of /etc/default/irqbalance or /etc/sysconfig/irqbalance, then restart it), or stop irqbalance, when affinity is set by hand or by a plan.",
                    "systemctl disable --now irqbalance",
                );
                out.push(f.fix(fix));
            }
        }
        if let Some(hf) = host_findings(cx, FindingId::Tuned).next() {
            let overlaps = |p: &Plan| {
                p.changes
                    .iter()
                    .any(|c| matches!(c.phase, Phase::Sysctls | Phase::Cpu | Phase::Coalescing))
            };
            let tuned_profile = cx
                .snap()
                .owners
                .tuned
                .as_ref()
                .and_then(|t| t.active_profile.clone());
            if tuned_profile.is_some() && applied.is_some_and(overlaps) {
                let p = applied.map_or("", |p| p.profile.as_str());
                let f = crate::finding::from_rule(
                    self,
                    "tuned",
                    format!(
                        "tuned profile {} is active over an applied nettune plan ({p}) that sets sysctls, CPU or coalescing",
                        tuned_profile.as_deref().unwrap_or("?")
                    ),
                )
                .evidence("tuned", hf.title.clone(), "/etc/tuned/active_profile")
                .fix(Fix {
                    text: "Give these knobs one owner: switch tuned off (`tuned-adm off`) or to a profile that does not set them, or drop the plan's overlapping rules with a nettune profile.".into(),
                    ..Fix::default()
                });
                out.push(f);
            }
        }
        Ok(())
    }
}
