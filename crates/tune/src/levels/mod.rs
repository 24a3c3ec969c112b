//! Factor levels of `nettune experiment` turned into plan changes or bench
//! options: pure, from the host snapshot (`nettune inspect --json` of the
//! host the cell runs on).
//!
//! A knob kind is one implementation of one trait, [`KnobKind`], in its own
//! file; [`KINDS`] lists them. [`cell_plan`] asks each level's kind for its
//! [`Effect`] and gathers the changes into one [`Plan`] (fingerprinted for
//! the snapshot's host, so `apply --plan` takes it) and the bench arguments.
//! A host that cannot take a level gives [`NotApplicable`] naming the knob,
//! the level and why; the runner marks the cell n/a with it.

use std::fmt;

use model::experiment::{Knob, Level};
use model::plan::{Change, NetnsScope, Phase, Plan, PlanOptions, Target, PLAN_SCHEMA_VERSION};
use model::snapshot::{HostSnapshot, Interface};
use model::CpuSet;
use thiserror::Error;

mod bench;
mod congestion;
mod ethtool;
mod module_param;
mod napi;
mod profile;
mod steering;
mod sysctl;

pub use bench::BenchOption;
pub use congestion::CongestionKnob;
pub use ethtool::EthtoolKnob;
pub use module_param::ModuleParamKnob;
pub use napi::NapiKnob;
pub use profile::ProfileKnob;
pub use steering::QueueSteering;
pub use sysctl::SysctlKnob;

/// Origin recorded on every change made from an experiment level.
pub const RULE: model::plan::Origin = model::plan::Origin::Experiment;
/// Source recorded on every change made from an experiment level.
pub const SOURCE: &str = "experiment file";

/// A level the host cannot take.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{knob}={level}: {reason}")]
pub struct NotApplicable {
    /// Knob name.
    pub knob: &'static str,
    /// Level as written.
    pub level: String,
    /// Why, naming the interface or file.
    pub reason: String,
}

/// What one level does.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Changes to apply through the journal (in phase order).
    Changes(Vec<Change>),
    /// Arguments added to every bench run of the cell.
    BenchArgs(Vec<String>),
    /// Nothing to change (the level is the host's own state, or `untuned`).
    Nothing,
}

/// One kind of knob: which knobs it takes and what a level means on a host.
pub trait KnobKind: fmt::Debug + Sync {
    /// Whether this kind handles `knob`.
    fn handles(&self, knob: Knob) -> bool;

    /// The effect of `level` of `knob` on the host of `snap`.
    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable>;
}

/// Every knob kind.
pub static KINDS: &[&dyn KnobKind] = &[
    &SysctlKnob,
    &QueueSteering,
    &NapiKnob,
    &EthtoolKnob,
    &ProfileKnob,
    &BenchOption,
    &CongestionKnob,
    &ModuleParamKnob,
];

/// The changes and bench arguments of one cell on one host.
#[derive(Debug, Clone, PartialEq)]
pub struct CellPlan {
    /// The plan (empty `changes` when the cell changes nothing on this host).
    pub plan: Plan,
    /// Bench arguments.
    pub bench_args: Vec<String>,
}

/// The plan of a cell's levels on the host of `snap`, or why it cannot run.
pub fn cell_plan(
    snap: &HostSnapshot,
    scope: NetnsScope,
    levels: &[(Knob, Level)],
) -> Result<CellPlan, NotApplicable> {
    let mut changes = Vec::new();
    let mut bench_args = Vec::new();
    let mut profile = String::from("experiment");
    for (knob, level) in levels {
        let Some(kind) = KINDS.iter().find(|k| k.handles(*knob)) else {
            return Err(na(*knob, level, "no knob kind handles it".into()));
        };
        if *knob == Knob::Profile {
            profile = level.to_string();
        }
        match kind.effect(snap, *knob, level)? {
            Effect::Changes(c) => changes.extend(c),
            Effect::BenchArgs(a) => bench_args.extend(a),
            Effect::Nothing => {}
        }
    }
    changes.sort_by_key(|c| c.phase);
    // A module parameter change is made only from a level that allows the
    // reload (module_param.rs), so the plan reloads its module.
    let options = PlanOptions {
        reload_modules: changes
            .iter()
            .any(|c| matches!(c.target, Target::ModuleParam { .. })),
        ..PlanOptions::default()
    };
    Ok(CellPlan {
        plan: Plan {
            schema_version: PLAN_SCHEMA_VERSION,
            profile,
            profile_toml: None,
            fingerprint: snap.fingerprint(),
            hostname: snap.source.hostname.clone(),
            options,
            scope,
            changes,
            notes: Vec::new(),
        },
        bench_args,
    })
}

pub(crate) fn na(knob: Knob, level: &Level, reason: String) -> NotApplicable {
    NotApplicable {
        knob: knob.name(),
        level: level.to_string(),
        reason,
    }
}

/// A change made from a level.
pub(crate) fn change(
    phase: Phase,
    knob: &str,
    target: Target,
    before: Option<String>,
    after: String,
    level_text: &str,
) -> Change {
    Change {
        phase,
        knob: knob.into(),
        target,
        before,
        after,
        rule: RULE,
        reason: format!("experiment level {level_text}"),
        source: SOURCE.into(),
    }
}

/// Interfaces a per-device knob applies to: every interface but loopback.
pub(crate) fn devices(snap: &HostSnapshot) -> impl Iterator<Item = &Interface> {
    snap.interfaces.iter().filter(|i| i.name != "lo")
}

/// The level's CPUs as a set, refused when a CPU is not online.
pub(crate) fn online_cpus(
    snap: &HostSnapshot,
    knob: Knob,
    level: &Level,
    cpus: &[u32],
) -> Result<CpuSet, NotApplicable> {
    let mut set = CpuSet::new();
    for &c in cpus {
        if !snap.cpu.online.contains(c) {
            return Err(na(
                knob,
                level,
                format!(
                    "CPU {c} is not online here (online: {})",
                    snap.cpu.online.to_list()
                ),
            ));
        }
        set.insert(c);
    }
    Ok(set)
}

#[cfg(test)]
mod tests;
