//! The search as a state machine: [`Search::next_step`] says which arm to
//! measure next (or that the search is done), [`Search::record`] takes the
//! run's values. The driver (the lab, or a fake host in tests) applies the
//! arm's settings, runs the workload and records; the search never touches
//! the host.
//!
//! Phases:
//! 1. Race: the baseline and every candidate, `repeats` runs each per
//!    round, interleaved in a seeded random order. After each round every
//!    candidate is compared with the baseline (bootstrap interval of the
//!    change of medians); a candidate is dropped when it is harmful, when
//!    even its interval's better end misses the practical threshold, when a
//!    constraint's interval lies wholly past its bound, or when a winner of
//!    the same knob beats its interval (sequential elimination). Racing
//!    stops after `max_rounds`, when every candidate left is a winner (after
//!    [`MIN_ROUNDS`]), or when the budget left only pays for the re-check.
//! 2. Re-check: the winners (the best level per knob) combined, measured
//!    again with fresh baseline runs, interleaved; with several winners the
//!    best single winner is measured in the same interleaved batches. An arm
//!    passes when its interval excludes zero on the better side, its
//!    estimate reaches the practical threshold and every constraint holds
//!    on its interval. The combination is kept only when it passes and is
//!    not worse than its best member: it must beat the single winner
//!    (compared directly on the re-check's runs) beyond the threshold, or
//!    the single winner must fail on its own; otherwise the simpler single
//!    winner is kept when it passes. A re-check that accepts nothing and is
//!    still open (an interval reaching the threshold on the better side)
//!    runs one more batch.

use std::collections::VecDeque;
use std::fmt;

use model::experiment::{Knob, Level, Metric};
use model::stats::{
    compare, BootstrapConfig, Comparison, Direction, Interval, SplitMix64, Verdict,
    DEFAULT_MIN_EFFECT_PCT, MIN_VALUES_FOR_INTERVAL,
};

use super::objective::{Constraint, Response};
use super::space::{Candidate, SearchSpace};
use super::AutotuneError;

/// Rounds before a candidate may be called a winner.
pub const MIN_ROUNDS: u32 = 2;
/// Default rounds of the race.
pub const DEFAULT_MAX_ROUNDS: u32 = 4;
/// Default runs per arm and round.
pub const DEFAULT_REPEATS: u32 = 3;
/// Re-check runs per arm are this many times the race's `repeats`.
pub const DEFAULT_CONFIRM_REPEATS_FACTOR: u32 = 3;
/// Extra batches a re-check may run when its interval is still open.
pub const MAX_RECHECK_EXTENSIONS: u32 = 1;
/// Most runs per arm and round, rounds, or re-check runs.
const MAX_SETTING: u32 = 1000;
/// Arms of a re-check of several winners: the baseline, the combination
/// and the best single winner.
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
    /// Most rounds of the race (at least [`MIN_ROUNDS`]).
    pub max_rounds: u32,
    /// Runs per arm of a re-check (at least 3).
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
}

impl SearchConfig {
    /// Defaults: 3 runs per arm and round, 4 rounds, re-check of 9 runs
    /// per arm, 2 % threshold, no budget, 95 % intervals of 1000 resamples.
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
        }
    }

    /// The fewest runs that can accept anything: a baseline and one
    /// candidate raced for [`MIN_ROUNDS`] rounds, and one re-check of three
    /// arms (baseline, combination, best single winner).
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

/// A change's effect on one response, against the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    /// Change of the median: in % of the baseline when `relative`, else the
    /// difference in the response's unit (zero baseline median).
    pub change: Interval,
    /// Whether `change` is in %.
    pub relative: bool,
    /// The comparison's verdict (with the practical threshold).
    pub verdict: Verdict,
    /// Runs of the change.
    pub runs: usize,
    /// Runs of the baseline.
    pub baseline_runs: usize,
}

impl Effect {
    /// The effect a comparison shows (in % when the baseline median is not zero).
    pub fn of(c: &Comparison) -> Effect {
        let (change, relative) = Constraint::interval(c);
        Effect {
            change,
            relative,
            verdict: c.verdict,
            runs: c.cell.n,
            baseline_runs: c.baseline.n,
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.change;
        if self.relative {
            write!(f, "{:+.1} % [{:+.1}, {:+.1}]", c.estimate, c.lo, c.hi)
        } else {
            write!(
                f,
                "{:+} [{:+}, {:+}] (zero baseline)",
                c.estimate, c.lo, c.hi
            )
        }
    }
}

/// One constraint judged on its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ConstraintCheck {
    /// The constraint as written.
    pub constraint: String,
    /// The constrained response's change.
    pub effect: Effect,
    /// Whether the whole interval keeps the bound.
    pub holds: bool,
}

/// Why a candidate was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// Its interval excludes zero on the worse side.
    Harmful,
    /// Even the better end of its interval misses the practical threshold.
    NoPracticalGain,
    /// The race ended with its interval still including zero or its
    /// estimate under the threshold.
    Undecided,
    /// A constraint's interval does not keep its bound.
    Constraint(ConstraintCheck),
    /// A better level of the same knob won.
    BeatenBy(Candidate),
    /// It won the race but its re-check failed (see the outcome's rechecks).
    NotConfirmed,
    /// It won the race, but the combination with it was not proven better
    /// than this single winner alone, which is kept.
    NoGainOverBest(Candidate),
    /// The budget ran out before it was decided.
    Budget,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Harmful => f.write_str("harmful: the interval excludes zero on the worse side"),
            Reason::NoPracticalGain => {
                f.write_str("no practical gain: the interval's better end misses the threshold")
            }
            Reason::Undecided => f.write_str(
                "undecided: the interval includes zero or the gain is under the threshold",
            ),
            Reason::Constraint(c) => write!(f, "breaks {}: {}", c.constraint, c.effect),
            Reason::BeatenBy(c) => write!(f, "beaten by {c}"),
            Reason::NotConfirmed => f.write_str("won the race, failed the re-check"),
            Reason::NoGainOverBest(c) => write!(
                f,
                "won the race, but the combination was not proven better than {c} alone"
            ),
            Reason::Budget => f.write_str("budget spent before it was decided"),
        }
    }
}

/// A candidate the search accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The change.
    pub candidate: Candidate,
    /// Its effect in the race.
    pub race: Effect,
}

/// A candidate the search rejects.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The change.
    pub candidate: Candidate,
    /// Its last effect in the race, if it was raced.
    pub race: Option<Effect>,
    /// Why.
    pub reason: Reason,
}

/// A re-check of winners against fresh baseline runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Recheck {
    /// The changes applied together.
    pub changes: Vec<Candidate>,
    /// Their effect on the objective.
    pub effect: Effect,
    /// A combination's effect against its best member alone, on the same
    /// re-check's runs (`None` for a single change).
    pub versus_best: Option<Effect>,
    /// Each constraint on its interval.
    pub constraints: Vec<ConstraintCheck>,
    /// Whether these changes were accepted.
    pub passed: bool,
}

/// The result of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Accepted changes (applied together; the last recheck passed).
    pub accepted: Vec<Accepted>,
    /// Every other candidate, with its interval and reason.
    pub rejected: Vec<Rejected>,
    /// The re-checks, in order.
    pub rechecks: Vec<Recheck>,
    /// The full setting the search ends with (the baseline's when nothing
    /// is accepted).
    pub settings: Vec<(Knob, Level)>,
    /// Runs used.
    pub runs: usize,
    /// Rounds raced.
    pub rounds: u32,
}

impl Outcome {
    /// The outcome as lines for a terminal or a report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for a in &self.accepted {
            out.push_str(&format!("accepted  {}  {}\n", a.candidate, a.race));
        }
        for r in &self.rechecks {
            let names: Vec<String> = r.changes.iter().map(ToString::to_string).collect();
            out.push_str(&format!(
                "re-check  {}  {}  {}\n",
                names.join(" + "),
                r.effect,
                if r.passed { "passed" } else { "failed" }
            ));
            if let Some(v) = &r.versus_best {
                out.push_str(&format!("          against the best alone  {v}\n"));
            }
            for c in &r.constraints {
                out.push_str(&format!(
                    "          {}  {}  {}\n",
                    c.constraint,
                    c.effect,
                    if c.holds { "holds" } else { "broken" }
                ));
            }
        }
        for r in &self.rejected {
            let effect = r
                .race
                .map_or_else(|| "not raced".to_string(), |e| e.to_string());
            out.push_str(&format!(
                "rejected  {}  {}  {}\n",
                r.candidate, effect, r.reason
            ));
        }
        out.push_str(&format!(
            "runs      {} in {} rounds\n",
            self.runs, self.rounds
        ));
        out
    }
}

/// A candidate's state in the race.
#[derive(Debug, Clone, PartialEq)]
enum Status {
    Alive,
    Winner,
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

/// Which phase the search is in.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Race,
    Recheck(Arm),
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
    /// Winners, best first.
    winners: Vec<usize>,
    recheck_base: Vec<Observation>,
    recheck_arm: Vec<Observation>,
    /// Re-check runs of the best single winner (with a combination).
    recheck_single: Vec<Observation>,
    /// Extra batches run in the current re-check.
    extended: u32,
    rechecks: Vec<Recheck>,
    phase: Phase,
    queue: VecDeque<Arm>,
    pending: Option<Arm>,
    runs: usize,
    rounds: u32,
    outcome: Option<Outcome>,
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
            recheck_base: Vec::new(),
            recheck_arm: Vec::new(),
            recheck_single: Vec::new(),
            extended: 0,
            rechecks: Vec::new(),
            phase: Phase::Race,
            queue: VecDeque::new(),
            pending: None,
            runs: 0,
            rounds: 0,
            outcome: None,
            space,
            cfg,
        })
    }

    /// The space searched.
    pub fn space(&self) -> &SearchSpace {
        &self.space
    }

    /// The full setting of every factor for `arm`.
    pub fn settings(&self, arm: &Arm) -> Vec<(Knob, Level)> {
        self.space.settings(&arm.changes())
    }

    /// `arm` for readers (`baseline`, `rps_cpus=0-3 + channels=4`).
    pub fn label(&self, arm: &Arm) -> String {
        let changes = arm.changes();
        if changes.is_empty() {
            return "baseline".into();
        }
        let names: Vec<String> = changes
            .iter()
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
                    arm: arm.clone(),
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
        let Some(due) = &self.pending else {
            return Err(AutotuneError::NothingDue {
                got: self.label(arm),
            });
        };
        if due != arm {
            return Err(AutotuneError::WrongArm {
                due: self.label(due),
                got: self.label(arm),
            });
        }
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
        let arm = arm.clone();
        match (&self.phase, &arm) {
            (Phase::Race, Arm::Baseline) => self.race[0].push(obs),
            (Phase::Race, Arm::Candidate(i)) => {
                if let Some(v) = self.race.get_mut(i + 1) {
                    v.push(obs);
                }
            }
            (Phase::Recheck(_), Arm::Baseline) => self.recheck_base.push(obs),
            (Phase::Recheck(Arm::Combination(_)), Arm::Candidate(_)) => {
                self.recheck_single.push(obs);
            }
            _ => self.recheck_arm.push(obs),
        }
        self.pending = None;
        self.runs = self.runs.saturating_add(1);
        Ok(())
    }

    fn value(&self, obs: &Observation, r: Response) -> Option<f64> {
        if r == Response::Metric(self.cfg.objective) {
            return Some(obs.objective);
        }
        obs.others.iter().find(|(k, _)| *k == r).map(|(_, v)| *v)
    }

    fn direction(&self) -> Direction {
        self.cfg.objective.direction()
    }

    /// How far `e` is on the better side (the estimate, signed so that
    /// more is better).
    fn score(&self, e: &Effect) -> f64 {
        match self.direction() {
            // An objective always has a better side (Objective::direction).
            Direction::HigherIsBetter | Direction::Neither => e.change.estimate,
            Direction::LowerIsBetter => -e.change.estimate,
        }
    }

    /// The better end of `e`'s interval, signed so that more is better.
    fn best_case(&self, e: &Effect) -> f64 {
        match self.direction() {
            Direction::HigherIsBetter | Direction::Neither => e.change.hi,
            Direction::LowerIsBetter => -e.change.lo,
        }
    }

    fn judge(&self, arm: &[Observation], base: &[Observation]) -> Result<Judgement, AutotuneError> {
        let boot = self.cfg.bootstrap();
        let objective = compare(
            &arm.iter().map(|o| o.objective).collect::<Vec<_>>(),
            &base.iter().map(|o| o.objective).collect::<Vec<_>>(),
            self.direction(),
            &boot,
        )?;
        let mut constraints = Vec::new();
        let mut broken = None;
        for c in &self.cfg.constraints {
            let vals = |s: &[Observation]| -> Vec<f64> {
                s.iter()
                    .map(|o| self.value(o, c.response).unwrap_or(f64::NAN))
                    .collect()
            };
            let cmp = compare(&vals(arm), &vals(base), c.response.direction(), &boot)?;
            let check = ConstraintCheck {
                constraint: c.text.clone(),
                effect: Effect::of(&cmp),
                holds: c.holds(&cmp),
            };
            if broken.is_none() && c.broken(&cmp) {
                broken = Some(check.clone());
            }
            constraints.push(check);
        }
        Ok(Judgement {
            objective,
            constraints,
            broken,
        })
    }

    fn alive(&self) -> Vec<usize> {
        (0..self.status.len())
            .filter(|&i| matches!(self.status[i], Status::Alive | Status::Winner))
            .collect()
    }

    fn remaining(&self) -> usize {
        self.cfg
            .budget
            .map_or(usize::MAX, |b| b.saturating_sub(self.runs))
    }

    /// Runs of one re-check batch of `arms` arms (the baseline included).
    fn recheck_cost(&self, arms: usize) -> usize {
        arms.saturating_mul(self.cfg.confirm_repeats as usize)
    }

    /// Runs the race keeps for the re-check: three arms when winners of
    /// two knobs could be combined, else two.
    fn recheck_reserve(&self) -> usize {
        if self.space.factors().len() > 1 {
            self.recheck_cost(RECHECK_ARMS)
        } else {
            self.recheck_cost(2)
        }
    }

    /// Called when no run is due: judge what was measured, plan the next.
    fn advance(&mut self) -> Result<(), AutotuneError> {
        match self.phase.clone() {
            Phase::Race => {
                if self.rounds > 0 {
                    self.eliminate()?;
                }
                if !self.plan_round() {
                    self.finish_race()?;
                }
                Ok(())
            }
            Phase::Recheck(arm) => self.finish_recheck(&arm),
            Phase::Done => {
                self.finish();
                Ok(())
            }
        }
    }

    /// Sequential elimination after a round.
    fn eliminate(&mut self) -> Result<(), AutotuneError> {
        for i in self.alive() {
            let j = self.judge(&self.race[i + 1], &self.race[0])?;
            let effect = Effect::of(&j.objective);
            self.effects[i] = Some(effect);
            self.status[i] = if j.objective.verdict == Verdict::Regression {
                Status::Out(Reason::Harmful)
            } else if self.best_case(&effect) < self.cfg.min_effect_pct {
                Status::Out(Reason::NoPracticalGain)
            } else if let Some(b) = j.broken {
                Status::Out(Reason::Constraint(b))
            } else if self.rounds >= MIN_ROUNDS && j.winner() {
                Status::Winner
            } else {
                Status::Alive
            };
        }
        // A winner whose estimate lies past another level's whole interval
        // (same knob) beats that level.
        let cands = self.space.candidates().to_vec();
        for i in self.alive() {
            let Some(ei) = self.effects[i] else { continue };
            let beaten_by = self.alive().into_iter().find(|&w| {
                w != i
                    && cands[w].knob == cands[i].knob
                    && self.status[w] == Status::Winner
                    && self.effects[w].is_some_and(|ew| self.score(&ew) > self.best_case(&ei))
            });
            if let Some(w) = beaten_by {
                self.status[i] = Status::Out(Reason::BeatenBy(cands[w].clone()));
            }
        }
        Ok(())
    }

    /// Queue the next round; `false` when the race is over.
    fn plan_round(&mut self) -> bool {
        let mut alive = self.alive();
        if alive.is_empty() || self.rounds >= self.cfg.max_rounds {
            return false;
        }
        let all_won = alive.iter().all(|&i| self.status[i] == Status::Winner);
        let cands = self.space.candidates();
        let one_per_knob = alive.iter().all(|&i| {
            alive
                .iter()
                .filter(|&&j| cands[j].knob == cands[i].knob)
                .count()
                == 1
        });
        if self.rounds >= MIN_ROUNDS && all_won && one_per_knob {
            return false;
        }
        // Arms the budget pays for, through the rounds a winner needs
        // (at least this one) and one re-check.
        let r = self.cfg.repeats as usize;
        let rounds_needed = MIN_ROUNDS.saturating_sub(self.rounds).max(1) as usize;
        let fit = self
            .remaining()
            .saturating_sub(self.recheck_reserve())
            .checked_div(r.saturating_mul(rounds_needed))
            .unwrap_or(0)
            .saturating_sub(1);
        if fit == 0 {
            return false;
        }
        if fit < alive.len() {
            // Keep the most promising (the best estimates; in the first
            // round, space order) and drop the rest for the budget.
            if self.rounds > 0 {
                alive.sort_by(|&a, &b| {
                    let s =
                        |i: usize| self.effects[i].map_or(f64::NEG_INFINITY, |e| self.score(&e));
                    s(b).total_cmp(&s(a)).then(a.cmp(&b))
                });
            }
            for &i in &alive[fit..] {
                self.status[i] = Status::Out(Reason::Budget);
            }
            alive.truncate(fit);
            alive.sort_unstable();
        }
        let mut order: Vec<Arm> = Vec::with_capacity((alive.len() + 1) * r);
        for _ in 0..r {
            order.push(Arm::Baseline);
            order.extend(alive.iter().map(|&i| Arm::Candidate(i)));
        }
        self.rng.shuffle(&mut order);
        self.queue = order.into();
        self.rounds += 1;
        true
    }

    /// Pick the winners (best level per knob) and start their re-check.
    fn finish_race(&mut self) -> Result<(), AutotuneError> {
        let mut winners = Vec::new();
        for i in self.alive() {
            if self.race[i + 1].len() < MIN_VALUES_FOR_INTERVAL {
                self.status[i] = Status::Out(Reason::Budget);
                continue;
            }
            let j = self.judge(&self.race[i + 1], &self.race[0])?;
            self.effects[i] = Some(Effect::of(&j.objective));
            if j.winner() {
                winners.push(i);
            } else if let Some(c) = j.constraints.iter().find(|c| !c.holds) {
                self.status[i] = Status::Out(Reason::Constraint(c.clone()));
            } else {
                self.status[i] = Status::Out(Reason::Undecided);
            }
        }
        let score = |i: usize| self.effects[i].map_or(f64::NEG_INFINITY, |e| self.score(&e));
        winners.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
        let cands = self.space.candidates().to_vec();
        let mut kept: Vec<usize> = Vec::new();
        for i in winners {
            if let Some(&w) = kept.iter().find(|&&w| cands[w].knob == cands[i].knob) {
                self.status[i] = Status::Out(Reason::BeatenBy(cands[w].clone()));
            } else {
                self.status[i] = Status::Winner;
                kept.push(i);
            }
        }
        self.winners = kept;
        match self.winners.len() {
            0 => {
                self.phase = Phase::Done;
                self.finish();
            }
            1 => self.start_recheck(Arm::Candidate(self.winners[0])),
            _ => {
                let mut all = self.winners.clone();
                all.sort_unstable();
                self.start_recheck(Arm::Combination(all));
            }
        }
        Ok(())
    }

    fn start_recheck(&mut self, arm: Arm) {
        // A combination with its best member needs three arms; when the
        // budget pays only for two, the simpler best single is re-checked.
        let arm = match (&arm, self.winners.first()) {
            (Arm::Combination(_), Some(&best))
                if self.remaining() < self.recheck_cost(RECHECK_ARMS) =>
            {
                for &w in &self.winners {
                    if w != best {
                        self.status[w] = Status::Out(Reason::Budget);
                    }
                }
                Arm::Candidate(best)
            }
            _ => arm,
        };
        if self.remaining() < self.recheck_cost(self.recheck_arms(&arm)) {
            for &w in &self.winners {
                self.status[w] = Status::Out(Reason::Budget);
            }
            self.phase = Phase::Done;
            self.finish();
            return;
        }
        self.recheck_base.clear();
        self.recheck_arm.clear();
        self.recheck_single.clear();
        self.extended = 0;
        self.queue_recheck(&arm);
        self.phase = Phase::Recheck(arm);
    }

    /// Arms of a re-check of `arm`, the baseline included.
    fn recheck_arms(&self, arm: &Arm) -> usize {
        match arm {
            Arm::Combination(_) => RECHECK_ARMS,
            _ => 2,
        }
    }

    /// Queue one batch of a re-check: baseline, `arm` and, for a
    /// combination, its best single winner, interleaved.
    fn queue_recheck(&mut self, arm: &Arm) {
        let c = self.cfg.confirm_repeats as usize;
        let single = match arm {
            Arm::Combination(_) => self.winners.first().copied(),
            _ => None,
        };
        let mut order: Vec<Arm> = Vec::with_capacity(RECHECK_ARMS.saturating_mul(c));
        for _ in 0..c {
            order.push(Arm::Baseline);
            order.push(arm.clone());
            if let Some(b) = single {
                order.push(Arm::Candidate(b));
            }
        }
        self.rng.shuffle(&mut order);
        self.queue = order.into();
    }

    /// Whether a failed re-check of one arm is still open: its interval
    /// reaches the threshold on the better side, no constraint broken.
    fn open(&self, j: &Judgement) -> bool {
        !j.winner()
            && j.objective.verdict != Verdict::Regression
            && self.best_case(&Effect::of(&j.objective)) >= self.cfg.min_effect_pct
            && j.broken.is_none()
    }

    fn recheck_of(&self, changes: &[usize], j: Judgement, passed: bool) -> Recheck {
        Recheck {
            changes: changes
                .iter()
                .filter_map(|&i| self.space.candidates().get(i).cloned())
                .collect(),
            effect: Effect::of(&j.objective),
            versus_best: None,
            constraints: j.constraints,
            passed,
        }
    }

    fn finish_recheck(&mut self, arm: &Arm) -> Result<(), AutotuneError> {
        let j = self.judge(&self.recheck_arm, &self.recheck_base)?;
        let changes = arm.changes();
        // A combination measured with its best single winner: the
        // acceptance rule (docs/autotune.md) between the two.
        let single = match (arm, self.winners.first()) {
            (Arm::Combination(_), Some(&best))
                if self.recheck_single.len() >= MIN_VALUES_FOR_INTERVAL =>
            {
                let js = self.judge(&self.recheck_single, &self.recheck_base)?;
                let objective =
                    |v: &[Observation]| v.iter().map(|o| o.objective).collect::<Vec<_>>();
                let versus = compare(
                    &objective(&self.recheck_arm),
                    &objective(&self.recheck_single),
                    self.direction(),
                    &self.cfg.bootstrap(),
                )?;
                Some((best, js, versus))
            }
            _ => None,
        };
        let combo_pass = j.winner();
        let (keep_combo, keep_single) = match &single {
            Some((_, js, versus)) => {
                let single_pass = js.winner();
                let keep_combo = combo_pass
                    && (versus.verdict == Verdict::Gain
                        || (!single_pass && versus.verdict != Verdict::Regression));
                (keep_combo, !keep_combo && single_pass)
            }
            None => (combo_pass, false),
        };
        // Sequential testing: a re-check that accepts nothing but is still
        // open gets one more batch, budget permitting.
        let open = !keep_combo
            && !keep_single
            && (self.open(&j) || single.as_ref().is_some_and(|(_, js, _)| self.open(js)));
        if open
            && self.extended < MAX_RECHECK_EXTENSIONS
            && self.remaining() >= self.recheck_cost(self.recheck_arms(arm))
        {
            self.extended += 1;
            self.queue_recheck(arm);
            return Ok(());
        }
        let mut rc = self.recheck_of(&changes, j, keep_combo);
        let kept = match single {
            Some((best, js, versus)) => {
                rc.versus_best = Some(Effect::of(&versus));
                self.rechecks.push(rc);
                let rs = self.recheck_of(&[best], js, keep_single);
                self.rechecks.push(rs);
                if keep_combo {
                    Some(changes)
                } else if keep_single {
                    let best_c = self.space.candidates().get(best).cloned();
                    for &w in &self.winners {
                        if w != best {
                            self.status[w] = match (&best_c, combo_pass) {
                                (Some(c), true) => Status::Out(Reason::NoGainOverBest(c.clone())),
                                _ => Status::Out(Reason::NotConfirmed),
                            };
                        }
                    }
                    Some(vec![best])
                } else {
                    None
                }
            }
            None => {
                self.rechecks.push(rc);
                keep_combo.then_some(changes)
            }
        };
        match kept {
            Some(kept) => {
                for &w in &self.winners {
                    if !kept.contains(&w) && self.status[w] == Status::Winner {
                        self.status[w] = Status::Out(Reason::NotConfirmed);
                    }
                }
                self.winners = kept;
            }
            None => {
                for &w in &self.winners {
                    if self.status[w] == Status::Winner {
                        self.status[w] = Status::Out(Reason::NotConfirmed);
                    }
                }
                self.winners.clear();
            }
        }
        self.phase = Phase::Done;
        self.finish();
        Ok(())
    }

    fn finish(&mut self) {
        let cands = self.space.candidates();
        let mut accepted = Vec::new();
        let mut rejected = Vec::new();
        for (i, c) in cands.iter().enumerate() {
            match (&self.status[i], self.effects[i]) {
                (Status::Winner, Some(e)) if self.winners.contains(&i) => accepted.push(Accepted {
                    candidate: c.clone(),
                    race: e,
                }),
                (Status::Out(reason), e) => rejected.push(Rejected {
                    candidate: c.clone(),
                    race: e,
                    reason: reason.clone(),
                }),
                (_, e) => rejected.push(Rejected {
                    candidate: c.clone(),
                    race: e,
                    reason: Reason::Undecided,
                }),
            }
        }
        let mut applied: Vec<usize> = accepted
            .iter()
            .filter_map(|a| cands.iter().position(|c| *c == a.candidate))
            .collect();
        applied.sort_unstable();
        self.outcome = Some(Outcome {
            accepted,
            rejected,
            rechecks: self.rechecks.clone(),
            settings: self.space.settings(&applied),
            runs: self.runs,
            rounds: self.rounds,
        });
    }
}
