//! The lab driver of `nettune autotune` (issue 20): the search space of the
//! lab's hosts ([`space`]), the loop that applies each arm through the
//! journal, runs the workload and rolls back ([`drive`](mod@drive)), and the files the
//! search leaves (results.json, plan.json, profile.toml).
//!
//! The search itself is `tune::autotune` (pure); this module only touches
//! hosts through an [`Executor`](crate::exec::Executor).

pub mod drive;
pub mod recheck;
pub mod results;
pub mod space;

use std::path::{Path, PathBuf};

use model::experiment::{Knob, Level};
use model::plan::{NetnsScope, Plan, PlanNote};
use model::snapshot::HostSnapshot;
use thiserror::Error;
use tune::autotune::{AutotuneError, Outcome};

pub use drive::{
    busy_note, drive, limits_lines, runs_that_fit, two_states_note, DriveConfig, Ended, RunTrace,
};
pub use recheck::{recheck, Held, RecheckConfig, RecheckReport};
pub use results::{outcome, read_results, ReadResultsError};
pub use space::{build, probe, BuiltSpace, Excluded};

/// The result document in `--out DIR` (docs/schema/autotune-results.json).
pub const RESULTS_FILE: &str = "results.json";
/// The result document's name before results.json (`--recheck` still reads it).
pub const OLD_OUTCOME_FILE: &str = "outcome.json";
/// Version of the results.json document; a change that breaks readers bumps it.
pub const RESULTS_SCHEMA_VERSION: u32 = model::results::autotune::AUTOTUNE_SCHEMA_VERSION;
/// The `kind` of an autotune results.json (`nettune lab` and `nettune
/// experiment` write `lab` and `experiment`).
pub const RESULTS_KIND: &str = "autotune";
/// The plan file in `--out DIR`.
pub const PLAN_FILE: &str = "plan.json";
/// The profile file in `--out DIR` (`nettune apply --profile FILE`).
pub const PROFILE_FILE: &str = "profile.toml";

/// Why an autotune run failed.
#[derive(Debug, Error)]
pub enum AutotuneRunError {
    /// The search refused its input or a run's values.
    #[error(transparent)]
    Search(#[from] AutotuneError),
    /// A run failed (after its arm was rolled back).
    #[error("run {seq} ({arm}): {source}")]
    Run {
        /// 0-based run number.
        seq: usize,
        /// The arm.
        arm: String,
        /// What failed.
        #[source]
        source: crate::exec::ExecError,
    },
    /// Nothing on the host can be changed; each factor with its reason.
    #[error("nothing on this host can be changed for {objective}:\n  {}", reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    NothingToChange {
        /// The objective.
        objective: &'static str,
        /// Each factor or level left out, with why.
        reasons: Vec<Excluded>,
    },
    /// An output file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// The accepted changes of an outcome (after Ctrl-C, what the runs so far
/// proved).
pub fn accepted_changes(ended: &Ended) -> Vec<(Knob, Level)> {
    ended
        .outcome()
        .accepted
        .iter()
        .map(|a| (a.candidate.knob, a.candidate.level.clone()))
        .collect()
}

/// The accepted changes as a plan, and the bench options among them.
#[derive(Debug, Clone, PartialEq)]
pub struct AcceptedPlan {
    /// The host's changes (the `nettune plan --json` shape `apply --plan`
    /// takes); the bench options are also in its notes.
    pub plan: Plan,
    /// Bench options (busy-poll, congestion control per socket, pinning):
    /// they belong to the application, not the host.
    pub bench_args: Vec<String>,
}

impl AcceptedPlan {
    /// What the plan holds, in words: `2 host changes`, or `no host change;
    /// for the application: nettune bench --congestion cubic`.
    pub fn summary(&self) -> String {
        let host = match self.plan.changes.len() {
            0 => "no host change".to_string(),
            1 => "1 host change".to_string(),
            n => format!("{n} host changes"),
        };
        if self.bench_args.is_empty() {
            host
        } else {
            format!(
                "{host}; for the application: nettune bench {}",
                self.bench_args.join(" ")
            )
        }
    }
}

/// The plan of the accepted changes for the host of `snap`; bench options
/// go to its notes and to [`AcceptedPlan::bench_args`].
pub fn accepted_plan(
    snap: &HostSnapshot,
    scope: NetnsScope,
    changes: &[(Knob, Level)],
    objective: &str,
) -> Result<AcceptedPlan, tune::levels::NotApplicable> {
    let cp = tune::levels::cell_plan(snap, scope, changes)?;
    let mut plan = cp.plan;
    plan.profile = format!("autotune-{objective}");
    if !cp.bench_args.is_empty() {
        plan.notes.push(PlanNote {
            rule: "autotune".into(),
            message: format!(
                "also accepted, for the application (not a host setting): nettune bench {}",
                cp.bench_args.join(" ")
            ),
        });
    }
    Ok(AcceptedPlan {
        plan,
        bench_args: cp.bench_args,
    })
}

/// What the comment header of profile.toml says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProfileHeader {
    /// The objective (`max-cps`).
    pub objective: String,
    /// The objective's metric and the workload, in words.
    pub measured: String,
    /// The proven gain with its interval (the passed re-check), if any.
    pub gain: Option<String>,
    /// When the search ended (RFC 3339).
    pub date: String,
    /// The host it ran on.
    pub host: String,
}

/// A level in the TOML syntax of a `[[factor]]`'s levels (what
/// `Knob::level_of` reads back).
fn level_toml(level: &Level) -> String {
    match level {
        Level::Int(v) => v.to_string(),
        Level::Bool(v) => v.to_string(),
        Level::Name(v) => format!("{v:?}"),
        Level::Cpus(_) => format!("\"{level}\""),
        Level::Triple([a, b, c]) => format!("[{a}, {b}, {c}]"),
        Level::Range([a, b]) => format!("[{a}, {b}]"),
        // The value, as a `module_param` factor's levels write it.
        Level::ModuleParam(m) => format!("{:?}", m.value),
    }
}

/// One line of comment: control characters and newlines out.
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// DIR/profile.toml: the accepted changes as a user profile that `nettune
/// apply --profile FILE` takes. Every rule is off, so the plan is exactly
/// the `[levels]` (planned like plan.json, through
/// `tune::levels::cell_plan`); a change that is an application's socket
/// option, not a host setting (busy poll, congestion control per socket in
/// the lab, buffers), is written as a comment saying so.
pub fn profile_toml(
    snap: &HostSnapshot,
    scope: NetnsScope,
    changes: &[(Knob, Level)],
    header: &ProfileHeader,
) -> Result<String, tune::levels::NotApplicable> {
    let mut out = format!(
        "# nettune autotune: the changes proven for {}, as a profile.\n",
        comment(&header.objective)
    );
    out.push_str(&format!("# objective: {}\n", comment(&header.measured)));
    match &header.gain {
        Some(g) => out.push_str(&format!(
            "# gain: {} (95 % bootstrap interval, re-checked against fresh baseline runs)\n",
            comment(g)
        )),
        None => out.push_str("# gain: none proven; this profile changes nothing\n"),
    }
    out.push_str(&format!(
        "# date: {}  host: {}\n",
        comment(&header.date),
        comment(&header.host)
    ));
    out.push_str(
        "# Use: nettune apply --profile profile.toml --dry-run (then without --dry-run).\n\
         # Every rule is off: the plan is exactly the [levels] below, as in plan.json.\n\n",
    );
    out.push_str(&format!(
        "name = \"autotune-{}\"\ndescription = \"Changes nettune autotune proved for {}\"\ninherit = \"balanced\"\n\n[rules]\n",
        comment(&header.objective).replace(['"', '\\'], ""),
        comment(&header.objective).replace(['"', '\\'], "")
    ));
    for r in tune::profile::RULES {
        out.push_str(&format!("{} = {{ enabled = false }}\n", r.id().as_str()));
    }
    out.push_str("\n[levels]\n");
    for (knob, level) in changes {
        let cp = tune::levels::cell_plan(snap, scope, &[(*knob, level.clone())])?;
        let line = format!("{} = {}", knob.name(), level_toml(level));
        if cp.bench_args.is_empty() {
            out.push_str(&line);
            out.push('\n');
        } else {
            out.push_str(&format!(
                "# {line}\n#   a socket option of the application, not a host setting (a profile cannot carry it): nettune bench {}\n",
                comment(&cp.bench_args.join(" "))
            ));
        }
    }
    Ok(out)
}

/// Write `bytes` to `dir/name` (atomically).
pub fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, AutotuneRunError> {
    let path = dir.join(name);
    let io = |e: host::HostError| AutotuneRunError::Write {
        path: path.clone(),
        source: std::io::Error::other(e),
    };
    // A symlink planted at the directory is refused, one at the file replaced.
    host::files::create_out_dir(dir).map_err(io)?;
    host::files::write_atomic(&path, bytes).map_err(io)?;
    Ok(path)
}

/// The outcome's accepted changes as lines (`knob=level`).
pub fn describe(o: &Outcome) -> Vec<String> {
    o.accepted.iter().map(|a| a.candidate.to_string()).collect()
}

#[cfg(test)]
mod tests;
