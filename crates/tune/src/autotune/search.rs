//! The search as a state machine: [`Search::next_step`] says which arm to
//! measure next (or that the search is done), [`Search::record`] takes the
//! run's values. The driver (the lab, or a fake host in tests) applies the
//! arm's settings, runs the workload and records; the search never touches
//! the host.
//!
//! Phases:
//! 1. Race (successive halving): the baseline and every candidate in
//!    doubt, `repeats` runs each per round, interleaved in a seeded random
//!    order. After each round every candidate is compared with the baseline
//!    (bootstrap interval of the change of medians, or of means with
//!    `SearchConfig::statistic`); a candidate is dropped
//!    when it is harmful, when even its interval's better end misses the
//!    practical threshold, when a constraint's interval lies wholly past its
//!    bound, or when another level of the same knob has an estimate past
//!    the better end of its interval; and only the better half of each
//!    knob's levels (by estimate) goes on; from round [`MIN_ROUNDS`] on,
//!    before the last round, one whose estimate stays under a futility bar
//!    (half the threshold, then the threshold) leaves as showing no sign of
//!    a practical gain. From round [`MIN_ROUNDS`] on, a
//!    candidate is settled and no longer raced when its verdict is a gain
//!    (a winner) or its estimate reaches the threshold with the worse end
//!    of its interval within the threshold of zero (promising); the others
//!    race on, for `max_rounds` rounds, and with a budget, those whose
//!    estimate reaches the threshold, on after that while the budget pays
//!    for their round and the re-check. At the end every candidate left is
//!    judged again on all its runs. A candidate is always judged against
//!    the baseline runs of the rounds it ran in, so one settled early is
//!    not undone by a drift of the host after it stopped.
//! 2. Re-check with a backward check, sequential: the best winner or
//!    promising candidate of each knob, combined, is measured against
//!    fresh baseline runs and, with several members, so is the combination
//!    without each member (leave-one-out), interleaved, in batches of
//!    `repeats` runs for each arm whose comparison is still open. A
//!    comparison decides from [`MIN_ROUNDS`] batches on, each look held to
//!    half the error rate (97.5 % intervals for 95 %). The combination
//!    passes when its interval against the baseline excludes zero on the
//!    better side, its estimate reaches the threshold and every constraint
//!    holds (open up to two re-checks' worth, `2 × confirm_repeats` runs); a
//!    member is needed when the combination beats the combination without
//!    it the same way (open up to [`RECHECK_CAP_BATCHES`] batches; its
//!    removal shows no sign of a loss, and stops early, when the estimate is
//!    at or under a bar rising from zero at two batches to the threshold at
//!    the cap). When every member is needed and the combination passes, it
//!    is kept. Otherwise the unproven members whose removal's estimate
//!    misses the threshold are dropped (riders; when that is none or all,
//!    only the one whose removal costs least), and the smaller combination
//!    is judged the same way, members proven so far staying proven (it
//!    keeps the runs it had as a leave-one-out arm, measured in the same
//!    interleaved batches). A single change is kept when it passes.
//!
//! 3. Forward passes (`forward`): after a kept gain of at least
//!    [`SearchConfig::forward_after_pct`], the levels of the knobs the
//!    kept setting leaves alone are raced and re-checked again with the
//!    kept changes applied to every arm, while the budget pays for a pass.
//!
//! [`Search::outcome_so_far`] says what a search stopped now (Ctrl-C)
//! keeps: nothing during the race, and during the re-check only what has
//! already met the acceptance rule on the runs so far.

use std::collections::VecDeque;

use model::experiment::{Knob, Level, Metric};
use model::stats::{
    BootstrapConfig, Comparison, SplitMix64, Statistic, Verdict, DEFAULT_MIN_EFFECT_PCT,
    MIN_VALUES_FOR_INTERVAL,
};

use super::objective::{Constraint, Response};
use super::space::{Candidate, SearchSpace};
use super::AutotuneError;

mod forward;
mod interim;
mod outcome;
mod race;
mod recheck;

pub use forward::Pass;
pub use outcome::{Accepted, ConstraintCheck, Effect, Outcome, Reason, Recheck, Rejected, Removal};

/// Rounds before a candidate may be called a winner.
pub const MIN_ROUNDS: u32 = 2;
/// Default rounds of the race.
pub const DEFAULT_MAX_ROUNDS: u32 = 4;
/// Default runs per arm and round.
pub const DEFAULT_REPEATS: u32 = 3;
/// A kept gain of this many % starts a forward pass (10 × the default
/// practical threshold).
pub const DEFAULT_FORWARD_AFTER_PCT: f64 = 20.0;
/// Re-check runs per arm are this many times the race's `repeats`.
pub const DEFAULT_CONFIRM_REPEATS_FACTOR: u32 = 3;
/// A re-check comparison still open stops, not proven, when its arms
/// have this many batches of `repeats` runs (12 runs with the defaults).
pub const RECHECK_CAP_BATCHES: u32 = 4;
/// A re-check's error rate per look is the level's divided by this.
const MEMBER_LEVEL_DIVISOR: f64 = 2.0;
/// Most runs per arm and round, rounds, or re-check runs.
const MAX_SETTING: u32 = 1000;
/// Arms of `confirm_repeats` runs the race keeps room for: the baseline,
/// a combination and the combination without a member.
pub const RECHECK_ARMS: usize = 3;

/// Parameters of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// The metric of the objective (from [`super::Objective::metric_for`]).
    pub objective: Metric,
    /// Constraints every accepted change must keep.
    pub constraints: Vec<Constraint>,
    /// Runs per arm and round (at least 3).
    pub repeats: u32,
    /// Rounds of the race (at least [`MIN_ROUNDS`]). With a budget, the
    /// candidates still in doubt whose estimate reaches the threshold race
    /// on after them while the budget pays (see `race_on`).
    pub max_rounds: u32,
    /// Runs per arm the race keeps room for in the re-check (at least 3):
    /// the budget left after the race pays for three arms of this many
    /// runs, and the minimum budget counts them.
    pub confirm_repeats: u32,
    /// Practical threshold, % of the baseline (`--min-effect`).
    pub min_effect_pct: f64,
    /// Most runs in all (`--budget`), if limited.
    pub budget: Option<usize>,
    /// Seed of the run order and of the bootstrap.
    pub seed: u64,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// Confidence level of the intervals.
    pub level: f64,
    /// Forward passes: after a combination is kept whose gain reaches
    /// this many % (on the better side), race the levels of the knobs it
    /// leaves alone on top of it, while the budget pays for a pass. A gain
    /// that large moves the host's operating point, so what the earlier
    /// race saw from the baseline no longer says what helps (in the lab,
    /// gro_flush_timeout costs next to bbr and gains next to cubic); a
    /// smaller one leaves those verdicts standing. `None`: one pass.
    pub forward_after_pct: Option<f64>,
    /// The statistic of the objective's runs each arm is judged on
    /// (`--statistic`; constraints are judged on medians).
    pub statistic: Statistic,
}

impl SearchConfig {
    /// Defaults: 3 runs per arm and round, 4 rounds, room for a re-check
    /// of 9 runs per arm, 2 % threshold, no budget, 95 % intervals of 1000 resamples.
    pub fn new(objective: Metric) -> SearchConfig {
        SearchConfig {
            objective,
            constraints: Vec::new(),
            repeats: DEFAULT_REPEATS,
            max_rounds: DEFAULT_MAX_ROUNDS,
            confirm_repeats: DEFAULT_REPEATS * DEFAULT_CONFIRM_REPEATS_FACTOR,
            min_effect_pct: DEFAULT_MIN_EFFECT_PCT,
            budget: None,
            seed: 0x6175_746f_7475_6e65, // "autotune"
            resamples: 1000,
            level: 0.95,
            forward_after_pct: Some(DEFAULT_FORWARD_AFTER_PCT),
            statistic: Statistic::Median,
        }
    }

    /// The fewest runs that can accept anything: a baseline and one
    /// candidate raced for [`MIN_ROUNDS`] rounds, and room for a re-check of
    /// three arms (baseline, combination, combination without a member).
    pub fn minimum_runs(&self) -> usize {
        let race = 2usize
            .saturating_mul(self.repeats as usize)
            .saturating_mul(MIN_ROUNDS as usize);
        race.saturating_add(RECHECK_ARMS.saturating_mul(self.confirm_repeats as usize))
    }

    /// Check the parameters and the budget.
    pub fn validate(&self) -> Result<(), AutotuneError> {
        let ranged = |name: &'static str, v: u32, min: u32| {
            if (min..=MAX_SETTING).contains(&v) {
                Ok(())
            } else {
                Err(AutotuneError::BadParameter {
                    name,
                    value: f64::from(v),
                    range: if min == MIN_ROUNDS {
                        "2 to 1000"
                    } else {
                        "3 to 1000"
                    },
                })
            }
        };
        ranged("repeats", self.repeats, MIN_VALUES_FOR_INTERVAL as u32)?;
        ranged("rounds", self.max_rounds, MIN_ROUNDS)?;
        ranged(
            "re-check repeats",
            self.confirm_repeats,
            MIN_VALUES_FOR_INTERVAL as u32,
        )?;
        self.bootstrap().validate()?;
        if let Some(budget) = self.budget {
            let minimum = self.minimum_runs();
            if budget < minimum {
                return Err(AutotuneError::BudgetTooSmall {
                    budget,
                    minimum,
                    repeats: self.repeats,
                });
            }
        }
        Ok(())
    }

    fn bootstrap(&self) -> BootstrapConfig {
        BootstrapConfig {
            resamples: self.resamples,
            level: self.level,
            seed: self.seed ^ 0x005E_ED0F_B007,
            min_effect_pct: self.min_effect_pct,
        }
    }
}

/// What the driver measures: the baseline, one candidate, or several
/// candidates together (indexes into [`SearchSpace::candidates`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arm {
    /// Every factor at its current level.
    Baseline,
    /// One candidate applied.
    Candidate(usize),
    /// Several candidates applied together (ascending indexes).
    Combination(Vec<usize>),
}

impl Arm {
    /// The candidates this arm applies.
    pub fn changes(&self) -> Vec<usize> {
        match self {
            Arm::Baseline => Vec::new(),
            Arm::Candidate(i) => vec![*i],
            Arm::Combination(v) => v.clone(),
        }
    }
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Apply `arm`, run the workload once, and [`Search::record`] the values.
    Measure {
        /// The arm to measure.
        arm: Arm,
        /// 0-based number of this run in the search.
        seq: usize,
    },
    /// The search is over.
    Done(Outcome),
}

/// The values of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    objective: f64,
    others: Vec<(Response, f64)>,
}

impl Observation {
    /// A run whose objective metric measured `objective`.
    pub fn new(objective: f64) -> Observation {
        Observation {
            objective,
            others: Vec::new(),
        }
    }

    /// The objective metric's value.
    pub fn objective(&self) -> f64 {
        self.objective
    }

    /// The same run, also reporting `response` (for a constraint).
    #[must_use]
    pub fn with(mut self, response: Response, value: f64) -> Observation {
        self.others.retain(|(r, _)| *r != response);
        self.others.push((response, value));
        self
    }
}

/// A candidate's state in the race.
#[derive(Debug, Clone, PartialEq)]
enum Status {
    Alive,
    Winner,
    /// Kept by an earlier pass: applied to every arm of the later ones.
    Kept,
    Out(Reason),
}

/// Objective and constraints of one arm against a baseline.
struct Judgement {
    objective: Comparison,
    constraints: Vec<ConstraintCheck>,
    broken: Option<ConstraintCheck>,
}

impl Judgement {
    fn winner(&self) -> bool {
        self.objective.verdict == Verdict::Gain && self.constraints.iter().all(|c| c.holds)
    }
}

/// A re-check comparison's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// Proven (the arm passes, or the member is needed).
    Yes,
    /// Decided against, or stopped undecided.
    No,
    /// More runs may decide it.
    Open,
}

/// Which phase the search is in.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Race,
    Recheck,
    Done,
}

/// The search (see the module doc).
#[derive(Debug, Clone)]
pub struct Search {
    space: SearchSpace,
    cfg: SearchConfig,
    rng: SplitMix64,
    /// Race values: [0] the baseline, [i + 1] candidate i.
    race: Vec<Vec<Observation>>,
    status: Vec<Status>,
    effects: Vec<Option<Effect>>,
    /// The combination under re-check (ascending), or what was kept.
    winners: Vec<usize>,
    /// Members of `winners` whose removal was proven to lose.
    proven: Vec<usize>,
    /// Re-check arms and their runs: [0] the baseline.
    recheck: Vec<(Arm, Vec<Observation>)>,
    /// The budget cannot pay for another re-check batch.
    closed: bool,
    rechecks: Vec<Recheck>,
    phase: Phase,
    queue: VecDeque<Arm>,
    pending: Option<Arm>,
    runs: usize,
    rounds: u32,
    outcome: Option<Outcome>,
    /// Kept by earlier passes (ascending): every arm applies them.
    base: Vec<usize>,
    /// The passes so far, the current one last.
    passes: Vec<forward::PassLog>,
    /// Per candidate, the pass that last judged it.
    judged_in: Vec<usize>,
    /// Per candidate, its verdict in an earlier pass, shown when a later
    /// pass could not race it.
    earlier: Vec<Option<forward::Earlier>>,
}

/// The arm that applies `changes` (ascending).
fn arm_of(changes: &[usize]) -> Arm {
    match changes {
        [] => Arm::Baseline,
        [one] => Arm::Candidate(*one),
        more => Arm::Combination(more.to_vec()),
    }
}

/// `set` without `m`.
fn without(set: &[usize], m: usize) -> Vec<usize> {
    set.iter().copied().filter(|&i| i != m).collect()
}

impl Search {
    /// A search of `space`; checks the parameters and the budget up front.
    pub fn new(space: SearchSpace, cfg: SearchConfig) -> Result<Search, AutotuneError> {
        cfg.validate()?;
        let n = space.candidates().len();
        Ok(Search {
            rng: SplitMix64::new(cfg.seed),
            race: vec![Vec::new(); n + 1],
            status: vec![Status::Alive; n],
            effects: vec![None; n],
            winners: Vec::new(),
            proven: Vec::new(),
            recheck: Vec::new(),
            closed: false,
            rechecks: Vec::new(),
            phase: Phase::Race,
            queue: VecDeque::new(),
            pending: None,
            runs: 0,
            rounds: 0,
            outcome: None,
            base: Vec::new(),
            passes: vec![forward::PassLog::first()],
            judged_in: vec![0; n],
            earlier: vec![None; n],
            space,
            cfg,
        })
    }

    /// Most runs in all, as it stands now (`None`: unlimited).
    pub fn budget(&self) -> Option<usize> {
        self.cfg.budget
    }

    /// Raise the budget to `runs` (a time budget whose runs turn out
    /// quicker than estimated). A lower value, no budget, or a search that
    /// has ended changes nothing: what is planned counts on the budget it
    /// was planned with.
    pub fn raise_budget(&mut self, runs: usize) {
        if self.outcome.is_some() {
            return;
        }
        if let Some(b) = self.cfg.budget.as_mut() {
            *b = (*b).max(runs);
        }
    }

    /// The space searched.
    pub fn space(&self) -> &SearchSpace {
        &self.space
    }

    /// The full setting of every factor for `arm`.
    pub fn settings(&self, arm: &Arm) -> Vec<(Knob, Level)> {
        self.space.settings(&arm.changes())
    }

    /// `arm` for readers (`baseline`, `rps_cpus=0-3 + channels=4`; what
    /// earlier passes kept comes first).
    pub fn label(&self, arm: &Arm) -> String {
        let changes = arm.changes();
        if changes.is_empty() {
            return "baseline".into();
        }
        // What earlier passes kept first, then what this arm adds.
        let (kept, added): (Vec<usize>, Vec<usize>) =
            changes.iter().partition(|&&i| self.is_base(i));
        let names: Vec<String> = kept
            .iter()
            .chain(&added)
            .filter_map(|&i| self.space.candidates().get(i))
            .map(ToString::to_string)
            .collect();
        names.join(" + ")
    }

    /// What to do next: the same measurement until it is recorded, then the
    /// following one, or the outcome.
    pub fn next_step(&mut self) -> Result<Step, AutotuneError> {
        loop {
            if let Some(o) = &self.outcome {
                return Ok(Step::Done(o.clone()));
            }
            if let Some(arm) = &self.pending {
                return Ok(Step::Measure {
                    arm: self.external(arm),
                    seq: self.runs,
                });
            }
            if let Some(arm) = self.queue.pop_front() {
                self.pending = Some(arm);
                continue;
            }
            self.advance()?;
        }
    }

    /// Record the values of the run [`Search::next_step`] asked for.
    pub fn record(&mut self, arm: &Arm, obs: Observation) -> Result<(), AutotuneError> {
        let Some(due) = self.pending.clone() else {
            return Err(AutotuneError::NothingDue {
                got: self.label(arm),
            });
        };
        let due_ext = self.external(&due);
        if due_ext != *arm {
            return Err(AutotuneError::WrongArm {
                due: self.label(&due_ext),
                got: self.label(arm),
            });
        }
        let arm = &due;
        let check = |key: &'static str, v: Option<f64>| match v {
            Some(v) if v.is_finite() => Ok(()),
            Some(v) => Err(AutotuneError::BadValue {
                seq: self.runs,
                key,
                value: v.to_string(),
            }),
            None => Err(AutotuneError::BadValue {
                seq: self.runs,
                key,
                value: "missing".into(),
            }),
        };
        check(self.cfg.objective.key(), Some(obs.objective))?;
        for c in &self.cfg.constraints {
            check(c.response.key(), self.value(&obs, c.response))?;
        }
        match (&self.phase, arm) {
            (Phase::Race, Arm::Baseline) => self.race[0].push(obs),
            (Phase::Race, Arm::Candidate(i)) => {
                if let Some(v) = self.race.get_mut(i + 1) {
                    v.push(obs);
                }
            }
            _ => {
                if let Some((_, v)) = self.recheck.iter_mut().find(|(a, _)| a == arm) {
                    v.push(obs);
                }
            }
        }
        self.pending = None;
        self.runs = self.runs.saturating_add(1);
        Ok(())
    }
}
