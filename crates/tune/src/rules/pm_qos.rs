//! `pm-qos`: a per-CPU resume latency limit that keeps deep C-states away.

use super::{Rule, RuleId};
use crate::context::Ctx;
use model::knobpath;
use model::plan::{Phase, Target, ValueFormat};
use model::snapshot::Interface;

/// Sets `pm_qos_resume_latency_us` of each online CPU that has the file.
#[derive(Debug)]
pub struct PmQos;

impl Rule for PmQos {
    fn id(&self) -> RuleId {
        RuleId::PmQos
    }

    fn rationale(&self) -> &'static str {
        "a per-CPU resume latency limit keeps cpuidle out of deep C-states whose exit costs tens of µs"
    }

    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (C-states, processor.max_cstate); Documentation/ABI/testing/sysfs-devices-power"
    }

    fn plan_host(&self, cx: &mut Ctx<'_>, _ifaces: &[&Interface]) {
        let (snap, extras) = (cx.snap, cx.extras);
        let v = cx.profile.settings.pm_qos_resume_latency_us.to_string();
        if extras.pm_qos.is_empty() {
            cx.note(
                self.id(),
                "no pm_qos_resume_latency_us files (no cpuidle driver, typical of VMs): PM QoS skipped".into(),
            );
        }
        for (&cpu, cur) in &extras.pm_qos {
            if !snap.cpu.online.contains(cpu) || *cur == v {
                continue;
            }
            cx.push(
                Phase::Cpu,
                self.id(),
                "pm_qos_resume_latency_us",
                Target::File {
                    path: knobpath::pm_qos_resume_latency_path(cpu),
                    format: ValueFormat::Text,
                },
                Some(cur.clone()),
                v.clone(),
                format!("cpu{cpu}: idle states slower than {v} µs to exit are avoided"),
                true,
            );
        }
    }
}
