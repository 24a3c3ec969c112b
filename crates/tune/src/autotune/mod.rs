//! The search core of `nettune autotune` (issue 20), pure: no OS, no
//! traffic. A driver (the lab, or a fake host in tests) asks
//! [`Search::next_step`] which arm to measure, applies its settings, runs the
//! workload and hands the values to [`Search::record`]; the search races
//! candidates against the baseline on bootstrap intervals, combines the
//! winners and re-checks the combination (docs/autotune.md).
//!
//! * [`objective`]: [`Objective`], the responses a run reports and the
//!   [`Constraint`]s (`p99<=+5%`).
//! * [`space`]: [`Candidate`]s and the [`SearchSpace`] they come from.
//! * [`search`]: the [`Search`] state machine and its [`Outcome`].

pub mod objective;
pub mod search;
pub mod space;

use thiserror::Error;

pub use objective::{Bound, Constraint, Objective, Response};
pub use search::{
    Accepted, Arm, ConstraintCheck, Effect, Observation, Outcome, Pass, Reason, Recheck, Rejected,
    Removal, Search, SearchConfig, Step,
};
pub use space::{Candidate, SearchSpace};

/// Why a search could not start, or a run's values were refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AutotuneError {
    /// `--objective` names no objective.
    #[error("unknown objective `{text}` (known: max-throughput, max-pps, min-p99, max-cps)")]
    UnknownObjective {
        /// The text given.
        text: String,
    },
    /// The workload cannot measure the objective or a constraint.
    #[error("{what} cannot be measured by a {test} workload: it needs {needs}")]
    Unmeasurable {
        /// The objective's name, or `constraint `TEXT``.
        what: String,
        /// The workload's test.
        test: &'static str,
        /// What would measure it.
        needs: String,
    },
    /// A `--constraint` could not be parsed.
    #[error("constraint `{text}`: {reason}")]
    BadConstraint {
        /// The constraint as written.
        text: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A factor of the space is unusable.
    #[error("factor `{knob}` {reason}")]
    BadFactor {
        /// The knob.
        knob: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// Every factor has only its current level.
    #[error("nothing to search: every factor has only its current level")]
    NoCandidate,
    /// More candidates than the search races.
    #[error("{count} candidates, more than the limit of {max}")]
    TooManyCandidates {
        /// How many.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// The budget cannot pay for a baseline and one candidate.
    #[error("a budget of {budget} runs is too small: a baseline and one candidate, {repeats} runs each per round, and a re-check (baseline, combination, combination without a member) need at least {minimum} runs")]
    BudgetTooSmall {
        /// The budget given.
        budget: usize,
        /// The fewest runs that can accept a change.
        minimum: usize,
        /// Runs per arm and round.
        repeats: u32,
    },
    /// A search parameter is out of range.
    #[error("{name} = {value} is out of range ({range})")]
    BadParameter {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
        /// The accepted range.
        range: &'static str,
    },
    /// A run was recorded while none was due.
    #[error("a run of {got} was recorded, but no run is due")]
    NothingDue {
        /// The arm recorded.
        got: String,
    },
    /// A run of another arm than the one due was recorded.
    #[error("a run of {got} was recorded, but a run of {due} is due")]
    WrongArm {
        /// The arm due.
        due: String,
        /// The arm recorded.
        got: String,
    },
    /// A run's value is missing or not finite.
    #[error("run {seq}: {key} is {value}, not a finite number")]
    BadValue {
        /// 0-based run number.
        seq: usize,
        /// The response's key.
        key: &'static str,
        /// The value, or `missing`.
        value: String,
    },
    /// A statistic failed (bad bootstrap parameters).
    #[error(transparent)]
    Stats(#[from] model::stats::StatsError),
}
