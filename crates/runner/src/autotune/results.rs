//! The one builder of autotune's results.json ([`outcome`]) and its one
//! reader ([`read_results`]): the CLI adds the run's header to what
//! [`outcome`] builds; `--from`, `--recheck` read it back typed.

use std::path::{Path, PathBuf};

use model::results::autotune::{
    AcceptedChange, AutotuneKind, AutotuneResults, AutotuneResultsError, ConstraintRecord,
    EffectRecord, EffectUnit, ExcludedLevel, PassRecord, RecheckRecord, RejectedChange,
    SpaceFactor, TraceRun, WithoutRecord, AUTOTUNE_SCHEMA_VERSION,
};
use thiserror::Error;
use tune::autotune::{Candidate, Effect};

use super::{BuiltSpace, Ended, RunTrace, OLD_OUTCOME_FILE, RESULTS_FILE};

/// Largest results file read back, bytes (as the experiment's results).
pub const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// An effect as results.json writes it.
pub fn effect(e: &Effect) -> EffectRecord {
    EffectRecord {
        estimate: e.change.estimate,
        lo: e.change.lo,
        hi: e.change.hi,
        level: e.change.level,
        unit: if e.relative {
            EffectUnit::Percent
        } else {
            EffectUnit::Difference
        },
        verdict: format!("{:?}", e.verdict).to_lowercase(),
        runs: e.runs,
        baseline_runs: e.baseline_runs,
    }
}

/// Changes as `knob=level` text.
fn names(cs: &[Candidate]) -> Vec<String> {
    cs.iter().map(ToString::to_string).collect()
}

/// A run as the trace lists it.
pub fn trace_run(r: &RunTrace) -> TraceRun {
    TraceRun {
        seq: r.seq,
        arm: r.arm.clone(),
        value: r.value,
        values: r.values.clone(),
        limited_by: r.limited_by.clone(),
        drops: r.drops.clone(),
    }
}

/// The results.json document (`kind` "autotune"): the objective, the space
/// and what was left out, accepted and rejected changes with their intervals
/// and reasons, the re-checks, runs used, and the trace of every run. The
/// run's header (workload, machine, times) is the caller's to add.
pub fn outcome(
    objective: &str,
    built: &BuiltSpace,
    ended: &Ended,
    trace: &[RunTrace],
) -> AutotuneResults {
    let o = ended.outcome();
    AutotuneResults {
        schema_version: AUTOTUNE_SCHEMA_VERSION,
        kind: AutotuneKind::Autotune,
        objective: Some(objective.to_string()),
        space: built
            .factors
            .iter()
            .map(|f| SpaceFactor {
                knob: f.knob.name().to_string(),
                current: f.levels.first().map(ToString::to_string),
                levels: f.levels.iter().skip(1).map(ToString::to_string).collect(),
                source: built
                    .sources
                    .iter()
                    .find(|(k, _)| *k == f.knob)
                    .map(|(_, s)| s.to_string()),
            })
            .collect(),
        excluded: built
            .excluded
            .iter()
            .map(|e| ExcludedLevel {
                knob: e.knob.name().to_string(),
                level: e.level.clone(),
                reason: e.reason.clone(),
            })
            .collect(),
        trace: trace.iter().map(trace_run).collect(),
        runs_used: trace.len(),
        interrupted: ended.interrupted(),
        rounds: o.rounds,
        accepted: o
            .accepted
            .iter()
            .map(|a| AcceptedChange {
                knob: a.candidate.knob.name().to_string(),
                level: a.candidate.level.to_string(),
                race: Some(effect(&a.race)),
                on_top_of: names(&a.on_top_of),
            })
            .collect(),
        rejected: o
            .rejected
            .iter()
            .map(|r| RejectedChange {
                knob: r.candidate.knob.name().to_string(),
                level: r.candidate.level.to_string(),
                race: r.race.as_ref().map(effect),
                reason: r.reason.to_string(),
                on_top_of: names(&r.on_top_of),
            })
            .collect(),
        rechecks: o
            .rechecks
            .iter()
            .map(|r| RecheckRecord {
                changes: names(&r.changes),
                effect: effect(&r.effect),
                versus_best: r.versus_best.as_ref().map(effect),
                without: r
                    .without
                    .iter()
                    .map(|w| WithoutRecord {
                        change: w.candidate.to_string(),
                        effect: effect(&w.effect),
                        needed: w.needed,
                    })
                    .collect(),
                constraints: r
                    .constraints
                    .iter()
                    .map(|c| ConstraintRecord {
                        constraint: c.constraint.clone(),
                        effect: effect(&c.effect),
                        holds: c.holds,
                    })
                    .collect(),
                passed: r.passed,
                on_top_of: names(&r.on_top_of),
            })
            .collect(),
        passes: o
            .passes
            .iter()
            .map(|p| PassRecord {
                on_top_of: names(&p.on_top_of),
                first_run: p.first_run,
                race_end: p.race_end,
                rounds: p.rounds,
            })
            .collect(),
        summary: o.render(),
        ..AutotuneResults::default()
    }
}

/// Why a results directory could not be read back.
#[derive(Debug, Error)]
pub enum ReadResultsError {
    /// The file is missing, not a regular file, or too large.
    #[error("{}: cannot read it: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: host::HostError,
    },
    /// Not JSON, or a field of the wrong shape.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: AutotuneResultsError,
    },
}

/// The results file of `dir`: results.json, or outcome.json (its name
/// before) when only that is there.
pub fn results_path(dir: &Path) -> PathBuf {
    let path = dir.join(RESULTS_FILE);
    let old = dir.join(OLD_OUTCOME_FILE);
    if !path.exists() && old.exists() {
        old
    } else {
        path
    }
}

/// Read the results of `dir` ([`results_path`]): a regular file of at
/// most [`MAX_RESULTS_BYTES`] (a FIFO or /dev/zero is refused, not read),
/// its lists bounded.
pub fn read_results(dir: &Path) -> Result<(PathBuf, AutotuneResults), ReadResultsError> {
    let path = results_path(dir);
    let text = match host::files::read_bounded_text(&path, MAX_RESULTS_BYTES) {
        Ok(t) => t,
        Err(source) => return Err(ReadResultsError::Read { path, source }),
    };
    match AutotuneResults::from_json(&text) {
        Ok(r) => Ok((path, r)),
        Err(source) => Err(ReadResultsError::Parse { path, source }),
    }
}
