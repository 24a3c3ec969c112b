//! `governor`: the performance cpufreq governor.

use super::{Rule, RuleId};
use crate::context::Ctx;
use model::knobpath;
use model::plan::{Phase, Target, ValueFormat};
use model::snapshot::Interface;

/// Sets `scaling_governor` of each online CPU that has one.
#[derive(Debug)]
pub struct Governor;

impl Rule for Governor {
    fn id(&self) -> RuleId {
        RuleId::Governor
    }

    fn rationale(&self) -> &'static str {
        "the performance governor keeps cores at full clock, as tuned's latency- and throughput-performance profiles do"
    }

    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (tuned profile table: CPU governor performance)"
    }

    fn plan_host(&self, cx: &mut Ctx<'_>, _ifaces: &[&Interface]) {
        let (snap, profile) = (cx.snap, cx.profile);
        let want = &profile.settings.governor;
        let with: Vec<_> = snap
            .cpus
            .iter()
            .filter(|c| c.online && c.governor.is_some())
            .collect();
        if with.is_empty() {
            cx.note(
                self.id(),
                "no cpufreq scaling_governor (typical of VMs): governor skipped".into(),
            );
        }
        for c in with {
            let cur = c.governor.clone().unwrap_or_default();
            if &cur == want {
                continue;
            }
            cx.push(
                Phase::Cpu,
                self.id(),
                "scaling_governor",
                Target::File {
                    path: knobpath::scaling_governor_path(c.id.0),
                    format: ValueFormat::Text,
                },
                Some(cur),
                want.clone(),
                format!("cpu{}: full clock, no ramp-up delay", c.id.0),
                true,
            );
        }
    }
}
