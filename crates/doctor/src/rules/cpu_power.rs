//! `cpu-power`: under a latency goal, a CPU frequency governor other than
//! `performance`, or idle states deeper than [`DEEP_STATE_US`] still allowed
//! (no PM QoS limit keeps the CPU out of them).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use tune::RuleId;

/// Idle states whose exit latency exceeds this many µs count as deep.
pub const DEEP_STATE_US: u64 = 20;

/// Power management against a latency goal.
#[derive(Debug)]
pub struct CpuPower;

impl DoctorRule for CpuPower {
    fn id(&self) -> FindingId {
        FindingId::CpuPower
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "power saving on CPUs under a latency goal"
    }
    fn rationale(&self) -> &'static str {
        "a CPU waking from a deep C-state takes tens to hundreds of µs before it runs the interrupt, and a governor other than performance runs it slower; both add to every request's latency"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (C-states locked at C0, performance governor, tuned latency-performance); Documentation/admin-guide/pm/cpuidle.rst, cpufreq.rst"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        if cx.intent() != Some("latency") {
            // Power saving is a fair trade without a latency goal.
            return Ok(());
        }
        let p = cx.input.facts.power.get()?;
        let slow: Vec<(u32, &str)> = p
            .governors
            .iter()
            .filter(|(_, g)| g.as_str() != "performance")
            .map(|(c, g)| (*c, g.as_str()))
            .collect();
        let pm_qos = &cx.input.extras.pm_qos;
        // A PM QoS resume latency in (0, DEEP_STATE_US] keeps the CPU out of deep states.
        let guarded = |cpu: u32| {
            pm_qos
                .get(&cpu)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .is_some_and(|v| v > 0 && v <= DEEP_STATE_US)
        };
        let deep: Vec<(u32, &model::doctor_facts::IdleState)> = p
            .deep_states_allowed(DEEP_STATE_US)
            .into_iter()
            .filter(|(c, _)| !guarded(*c))
            .collect();
        if slow.is_empty() && deep.is_empty() {
            return Ok(());
        }
        let mut parts = Vec::new();
        if !slow.is_empty() {
            parts.push(format!(
                "{} on governor {}",
                super::plural(slow.len(), "CPU"),
                slow[0].1
            ));
        }
        let deep_cpus: std::collections::BTreeSet<u32> = deep.iter().map(|(c, _)| *c).collect();
        if !deep_cpus.is_empty() {
            parts.push(format!(
                "deep C-states allowed on {}",
                super::plural(deep_cpus.len(), "CPU")
            ));
        }
        let mut f = crate::finding::from_rule(
            self,
            "cpus",
            format!("latency goal, but {}", parts.join(" and ")),
        );
        if let Some((c, g)) = slow.first() {
            let list: model::CpuSet = slow.iter().map(|(c, _)| *c).collect();
            f = f.evidence(
                format!("scaling_governor of CPUs {}", list.to_list()),
                format!(
                    "{g} (driver {})",
                    p.scaling_driver.as_deref().unwrap_or("unknown")
                ),
                format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"),
            );
        }
        let mut names: Vec<(&str, u64, u32, u32)> = Vec::new();
        for (c, s) in &deep {
            if !names.iter().any(|n| n.0 == s.name) {
                names.push((&s.name, s.latency_us, *c, s.index));
            }
        }
        for (name, lat, c, k) in names {
            f = f.evidence(
                format!("idle state {name} enabled"),
                format!("exit latency {lat} µs"),
                format!("/sys/devices/system/cpu/cpu{c}/cpuidle/state{k}/{{latency,disable}}"),
            );
        }
        let fix = cx.plan_fix(
            &[RuleId::Governor, RuleId::PmQos],
            None,
            "Set the performance governor and a PM QoS resume latency that keeps CPUs out of deep C-states.",
            "Write `performance` to each cpufreq/scaling_governor and a small value (e.g. 10) to each cpuN/power/pm_qos_resume_latency_us, or hold /dev/cpu_dma_latency open (tuned latency-performance does).",
        );
        out.push(f.fix(fix));
        Ok(())
    }
}
