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
use std::fmt;

use model::experiment::{Knob, Level, Metric};
use model::stats::{
    compare, compare_by, BootstrapConfig, Comparison, Direction, Interval, SplitMix64, Statistic,
    Verdict, DEFAULT_MIN_EFFECT_PCT, MIN_VALUES_FOR_INTERVAL,
};

use super::objective::{Constraint, Response};
use super::space::{Candidate, SearchSpace};
use super::AutotuneError;

mod forward;
mod interim;

pub use forward::Pass;

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
    /// It won the race, but the combination without it was not proven
    /// worse (the backward check): with it, this effect against without.
    Rider(Effect),
    /// The budget ran out before it was decided.
    Budget,
    /// The race's futility bar: after `round` its estimate was still under
    /// `bar` % (a bar rising to the threshold), so no sign of a practical
    /// gain; the runs go to the others.
    NoSign {
        /// The round after which it left.
        round: u32,
        /// The bar, % of the baseline, signed so that more is better.
        bar: f64,
    },
    /// The search was stopped (Ctrl-C) before this was decided.
    Interrupted,
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
            Reason::Rider(e) => write!(
                f,
                "won the race, but the combination without it was not proven worse: with it {e}"
            ),
            Reason::Budget => f.write_str("budget spent before it was decided"),
            Reason::NoSign { round, bar } => write!(
                f,
                "no sign of a practical gain: the estimate was under {bar:+.1} % after round {round}"
            ),
            Reason::Interrupted => f.write_str("interrupted before it was decided"),
        }
    }
}

/// A candidate the search accepts.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The change.
    pub candidate: Candidate,
    /// Its effect in the race (against `on_top_of`).
    pub race: Effect,
    /// The changes kept by earlier passes it was raced on top of (empty in
    /// the first pass: raced against the baseline).
    pub on_top_of: Vec<Candidate>,
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
    /// The changes kept by earlier passes it was last raced on top of.
    pub on_top_of: Vec<Candidate>,
}

/// A re-check of winners against fresh baseline runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Recheck {
    /// The changes applied together.
    pub changes: Vec<Candidate>,
    /// Their effect on the objective.
    pub effect: Effect,
    /// A combination of two: its effect against its best member alone, on
    /// the same re-check's runs (`None` otherwise).
    pub versus_best: Option<Effect>,
    /// The backward check: for each member measured without, the
    /// combination against the combination without it.
    pub without: Vec<Removal>,
    /// Each constraint on its interval.
    pub constraints: Vec<ConstraintCheck>,
    /// Whether these changes were accepted.
    pub passed: bool,
    /// The changes kept by earlier passes, applied to every arm of this
    /// re-check (its baseline too).
    pub on_top_of: Vec<Candidate>,
}

/// One member of a combination in the backward check.
#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    /// The member.
    pub candidate: Candidate,
    /// The combination against the combination without this member.
    pub effect: Effect,
    /// Whether the loss without it is proven (it is needed).
    pub needed: bool,
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
    /// Rounds raced, over every pass.
    pub rounds: u32,
    /// The passes: the first from the baseline, each later one on top of
    /// what the earlier ones kept.
    pub passes: Vec<Pass>,
}

impl Outcome {
    /// The outcome as lines for a terminal or a report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for a in &self.accepted {
            out.push_str(&format!(
                "accepted  {}  {}{}\n",
                a.candidate,
                a.race,
                on_top(&a.on_top_of)
            ));
        }
        for r in &self.rechecks {
            let names: Vec<String> = r.changes.iter().map(ToString::to_string).collect();
            out.push_str(&format!(
                "re-check  {}{}  {}  {}\n",
                names.join(" + "),
                on_top(&r.on_top_of),
                r.effect,
                if r.passed { "passed" } else { "failed" }
            ));
            if let Some(v) = &r.versus_best {
                out.push_str(&format!("          against the best alone  {v}\n"));
            }
            for m in &r.without {
                out.push_str(&format!(
                    "          with against without {}  {}  {}\n",
                    m.candidate,
                    m.effect,
                    if m.needed { "needed" } else { "not proven" }
                ));
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
                "rejected  {}  {}  {}{}\n",
                r.candidate,
                effect,
                r.reason,
                on_top(&r.on_top_of)
            ));
        }
        let passes = if self.passes.len() > 1 {
            format!(" and {} passes", self.passes.len())
        } else {
            String::new()
        };
        out.push_str(&format!(
            "runs      {} in {} rounds{passes}\n",
            self.runs, self.rounds
        ));
        out
    }
}

impl Outcome {
    /// The passed re-checks behind the accepted changes, one per pass that
    /// kept something, in order.
    pub fn proven_steps(&self) -> Vec<&Recheck> {
        if self.accepted.is_empty() {
            return Vec::new();
        }
        self.rechecks.iter().filter(|r| r.passed).collect()
    }

    /// What the accepted changes proved, for a line: `a + b +12.0 % [+8.1,
    /// +15.9]`, and after a forward pass `a +80.0 % [..], then c +20.1 %
    /// [..] on top`; `None` when nothing is accepted.
    pub fn proven_text(&self) -> Option<String> {
        let steps = self.proven_steps();
        let parts: Vec<String> = steps
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let names: Vec<String> = r.changes.iter().map(ToString::to_string).collect();
                let on_top = if k > 0 { " on top" } else { "" };
                format!("{} {}{on_top}", names.join(" + "), r.effect)
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(", then "))
    }
}

/// ` (on top of a + b)`, or nothing for the first pass.
fn on_top(base: &[Candidate]) -> String {
    if base.is_empty() {
        return String::new();
    }
    let names: Vec<String> = base.iter().map(ToString::to_string).collect();
    format!("  (on top of {})", names.join(" + "))
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

    /// The worse end of `e`'s interval, signed so that more is better.
    fn worst_case(&self, e: &Effect) -> f64 {
        match self.direction() {
            Direction::HigherIsBetter | Direction::Neither => e.change.lo,
            Direction::LowerIsBetter => -e.change.hi,
        }
    }

    /// The race score of candidate `i` (its estimate; −∞ when not judged).
    fn race_score(&self, i: usize) -> f64 {
        self.effects
            .get(i)
            .copied()
            .flatten()
            .map_or(f64::NEG_INFINITY, |e| self.score(&e))
    }

    fn judge(&self, arm: &[Observation], base: &[Observation]) -> Result<Judgement, AutotuneError> {
        self.judge_at(arm, base, &self.cfg.bootstrap())
    }

    /// Candidate `i`'s race runs against the baseline runs of the rounds it
    /// ran in: its concurrent control. A candidate settled early is not
    /// judged again on baseline runs from after it stopped, when the host
    /// may have drifted (the lab's unpinned TCP runs switch between two
    /// modes within minutes); the re-check measures it afresh. Every round
    /// gives the baseline and each candidate in it `repeats` runs, and a
    /// candidate races from round 1 until it leaves, so those are the
    /// baseline's first runs, as many as the candidate's.
    fn judge_race(&self, i: usize) -> Result<Judgement, AutotuneError> {
        let arm = &self.race[i + 1];
        let base = &self.race[0][..arm.len().min(self.race[0].len())];
        self.judge(arm, base)
    }

    /// [`Search::judge`] with the bootstrap `boot`.
    fn judge_at(
        &self,
        arm: &[Observation],
        base: &[Observation],
        boot: &BootstrapConfig,
    ) -> Result<Judgement, AutotuneError> {
        let objective = compare_by(
            &arm.iter().map(|o| o.objective).collect::<Vec<_>>(),
            &base.iter().map(|o| o.objective).collect::<Vec<_>>(),
            self.direction(),
            boot,
            self.cfg.statistic,
        )?;
        let mut constraints = Vec::new();
        let mut broken = None;
        for c in &self.cfg.constraints {
            let vals = |s: &[Observation]| -> Vec<f64> {
                s.iter()
                    .map(|o| self.value(o, c.response).unwrap_or(f64::NAN))
                    .collect()
            };
            let cmp = compare(&vals(arm), &vals(base), c.response.direction(), boot)?;
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
    /// two knobs could be combined in the first pass, else two. A later
    /// pass looks for the next change on what is left of the budget, and
    /// keeps only room for the re-check's earliest decision: if the budget
    /// runs out before it decides, what earlier passes kept stands.
    fn recheck_reserve(&self) -> usize {
        if !self.base.is_empty() {
            self.earliest_recheck(2)
        } else if self.space.factors().len() > 1 {
            self.recheck_cost(RECHECK_ARMS)
        } else {
            self.recheck_cost(2)
        }
    }

    /// Called when no run is due: judge what was measured, plan the next.
    fn advance(&mut self) -> Result<(), AutotuneError> {
        match self.phase {
            Phase::Race => {
                if self.rounds > 0 {
                    self.eliminate()?;
                }
                if !self.plan_round() {
                    self.finish_race()?;
                }
                Ok(())
            }
            Phase::Recheck => self.step_recheck(),
            Phase::Done => {
                self.finish();
                Ok(())
            }
        }
    }

    /// Sequential elimination after a round.
    fn eliminate(&mut self) -> Result<(), AutotuneError> {
        for i in self.alive() {
            let j = self.judge_race(i)?;
            let effect = Effect::of(&j.objective);
            self.effects[i] = Some(effect);
            if self.status[i] == Status::Winner {
                // A winner is no longer raced; the re-check decides.
                continue;
            }
            self.status[i] = if j.objective.verdict == Verdict::Regression {
                Status::Out(Reason::Harmful)
            } else if self.best_case(&effect) < self.cfg.min_effect_pct {
                Status::Out(Reason::NoPracticalGain)
            } else if let Some(b) = j.broken {
                Status::Out(Reason::Constraint(b))
            } else if self.rounds >= MIN_ROUNDS && j.winner() {
                Status::Winner
            } else if let Some(bar) = self.race_bar().filter(|&bar| self.score(&effect) < bar) {
                Status::Out(Reason::NoSign {
                    round: self.rounds,
                    bar,
                })
            } else {
                Status::Alive
            };
        }
        // A level whose interval's better end lies under another level's
        // estimate (same knob) is beaten by it.
        let cands = self.space.candidates().to_vec();
        let alive = self.alive();
        for &i in &alive {
            let Some(ei) = self.effects[i] else { continue };
            let beaten_by = alive
                .iter()
                .copied()
                .filter(|&w| {
                    w != i
                        && cands[w].knob == cands[i].knob
                        && self.effects[w].is_some_and(|ew| self.score(&ew) > self.best_case(&ei))
                })
                .max_by(|&a, &b| self.race_score(a).total_cmp(&self.race_score(b)));
            if let Some(w) = beaten_by {
                self.status[i] = Status::Out(Reason::BeatenBy(cands[w].clone()));
            }
        }
        Ok(())
    }

    /// The race's futility bar after the round just run: from round
    /// [`MIN_ROUNDS`] on, and before the last round, a candidate whose
    /// estimate stays under it leaves the race. It rises from half the
    /// threshold after round [`MIN_ROUNDS`] to the threshold a round later
    /// (1 % then 2 % with the defaults); the last round judges everyone
    /// on all their runs instead.
    fn race_bar(&self) -> Option<f64> {
        if self.rounds < MIN_ROUNDS || self.rounds >= self.cfg.max_rounds {
            return None;
        }
        let steps = f64::from(self.rounds - MIN_ROUNDS + 1).min(2.0);
        Some(self.cfg.min_effect_pct * steps / 2.0)
    }

    /// Whether candidate `i` is settled: a winner, or from round
    /// [`MIN_ROUNDS`] on an estimate reaching the threshold.
    fn settled(&self, i: usize) -> bool {
        self.status[i] == Status::Winner
            || (self.status[i] == Status::Alive
                && self.rounds >= MIN_ROUNDS
                && self.race_score(i) >= self.cfg.min_effect_pct
                && self.effects[i].is_some_and(|e| self.worst_case(&e) > -self.cfg.min_effect_pct))
    }

    /// Whether candidate `i` still needs race runs: alive and not settled.
    fn in_doubt(&self, i: usize) -> bool {
        self.status[i] == Status::Alive && !self.settled(i)
    }

    /// Queue the next round; `false` when the race is over.
    fn plan_round(&mut self) -> bool {
        // Successive halving per knob (only one level of a knob can be
        // combined): after each round the better half of a knob's levels
        // (by estimate) goes on, the rest are beaten by the best.
        let cands = self.space.candidates().to_vec();
        if self.rounds > 0 {
            let mut knobs: Vec<_> = self.alive().iter().map(|&i| cands[i].knob).collect();
            knobs.dedup();
            for knob in knobs {
                let mut levels: Vec<usize> = self
                    .alive()
                    .into_iter()
                    .filter(|&i| cands[i].knob == knob)
                    .collect();
                levels.sort_by(|&a, &b| {
                    self.race_score(b)
                        .total_cmp(&self.race_score(a))
                        .then(a.cmp(&b))
                });
                let keep = levels.len().div_ceil(2);
                if let Some(&best) = levels.first() {
                    for &i in &levels[keep..] {
                        self.status[i] = Status::Out(Reason::BeatenBy(cands[best].clone()));
                    }
                }
            }
        }
        // A level in doubt whose knob has a settled level with a better
        // estimate is not raced further.
        let alive = self.alive();
        for &i in &alive {
            if !self.in_doubt(i) || self.rounds < MIN_ROUNDS {
                continue;
            }
            let better = alive.iter().copied().find(|&w| {
                w != i
                    && cands[w].knob == cands[i].knob
                    && self.settled(w)
                    && self.race_score(w) > self.race_score(i)
            });
            if let Some(w) = better {
                self.status[i] = Status::Out(Reason::BeatenBy(cands[w].clone()));
            }
        }
        let mut doubt: Vec<usize> = self
            .alive()
            .into_iter()
            .filter(|&i| self.in_doubt(i))
            .collect();
        if doubt.is_empty() || self.hand_over(&doubt) {
            return false;
        }
        if self.rounds >= self.cfg.max_rounds && !self.race_on(&mut doubt) {
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
        if fit < doubt.len() {
            // Keep the most promising (the best estimates; in the first
            // round, space order) and drop the rest for the budget.
            if self.rounds > 0 {
                doubt.sort_by(|&a, &b| {
                    self.race_score(b)
                        .total_cmp(&self.race_score(a))
                        .then(a.cmp(&b))
                });
            }
            for &i in &doubt[fit..] {
                self.status[i] = Status::Out(Reason::Budget);
            }
            doubt.truncate(fit);
            doubt.sort_unstable();
        }
        let mut order: Vec<Arm> = Vec::with_capacity((doubt.len() + 1) * r);
        for _ in 0..r {
            order.push(Arm::Baseline);
            order.extend(doubt.iter().map(|&i| Arm::Candidate(i)));
        }
        self.rng.shuffle(&mut order);
        self.queue = order.into();
        self.rounds += 1;
        true
    }

    /// After `max_rounds` rounds, with a budget: the candidates in `doubt`
    /// whose estimate reaches the threshold race on, a round at a time,
    /// while the budget pays for a round of all of them and keeps the
    /// re-check's room; the others leave (no sign of a practical gain at the
    /// threshold). A budget the user gave is spent on narrowing what may
    /// still win rather than left unused with it undecided. Without a budget
    /// the race ends at `max_rounds`. `false`: the race ends.
    fn race_on(&mut self, doubt: &mut Vec<usize>) -> bool {
        if self.cfg.budget.is_none() {
            return false;
        }
        let bar = self.cfg.min_effect_pct;
        let (keep, drop): (Vec<usize>, Vec<usize>) =
            doubt.iter().partition(|&&i| self.race_score(i) >= bar);
        let cost = keep
            .len()
            .saturating_add(1)
            .saturating_mul(self.cfg.repeats as usize);
        if keep.is_empty() || self.remaining().saturating_sub(self.recheck_reserve()) < cost {
            return false;
        }
        let round = self.rounds;
        for i in drop {
            self.status[i] = Status::Out(Reason::NoSign { round, bar });
        }
        *doubt = keep;
        true
    }

    /// Pick the best winner or promising candidate of each knob and start
    /// their re-check.
    fn finish_race(&mut self) -> Result<(), AutotuneError> {
        self.end_race_log();
        let min_runs = (self.cfg.repeats as usize).saturating_mul(MIN_ROUNDS as usize);
        let mut picked = Vec::new();
        for i in self.alive() {
            if self.race[i + 1].len() < min_runs {
                self.status[i] = Status::Out(Reason::Budget);
                continue;
            }
            let j = self.judge_race(i)?;
            let effect = Effect::of(&j.objective);
            self.effects[i] = Some(effect);
            let promising = j.objective.verdict != Verdict::Regression
                && self.score(&effect) >= self.cfg.min_effect_pct
                && self.worst_case(&effect) > -self.cfg.min_effect_pct
                && j.broken.is_none();
            if j.winner() || promising {
                picked.push(i);
            } else if let Some(c) = j.constraints.iter().find(|c| !c.holds) {
                self.status[i] = Status::Out(Reason::Constraint(c.clone()));
            } else {
                self.status[i] = Status::Out(Reason::Undecided);
            }
        }
        picked.sort_by(|&a, &b| {
            self.race_score(b)
                .total_cmp(&self.race_score(a))
                .then(a.cmp(&b))
        });
        let cands = self.space.candidates().to_vec();
        let mut kept: Vec<usize> = Vec::new();
        for i in picked {
            if let Some(&w) = kept.iter().find(|&&w| cands[w].knob == cands[i].knob) {
                self.status[i] = Status::Out(Reason::BeatenBy(cands[w].clone()));
            } else {
                self.status[i] = Status::Winner;
                kept.push(i);
            }
        }
        // The budget pays for the re-check's earliest decision; else the
        // weakest go.
        while !kept.is_empty()
            && self.remaining() < self.earliest_recheck(forward::recheck_arms(kept.len()))
        {
            if let Some(w) = kept.pop() {
                self.status[w] = Status::Out(Reason::Budget);
            }
        }
        kept.sort_unstable();
        self.winners = kept;
        self.proven.clear();
        if self.winners.is_empty() {
            self.phase = Phase::Done;
            self.finish();
            return Ok(());
        }
        self.recheck = vec![(Arm::Baseline, Vec::new())];
        self.closed = false;
        self.add_recheck_arms();
        self.phase = Phase::Recheck;
        Ok(())
    }

    /// Make sure the combination and, for each member not yet proven, the
    /// combination without it are re-check arms.
    fn add_recheck_arms(&mut self) {
        let mut arms = vec![arm_of(&self.winners)];
        if self.winners.len() > 1 {
            for &m in &self.winners {
                if !self.proven.contains(&m) {
                    arms.push(arm_of(&without(&self.winners, m)));
                }
            }
        }
        for a in arms {
            if !self.recheck.iter().any(|(b, _)| *b == a) {
                self.recheck.push((a, Vec::new()));
            }
        }
    }

    fn recheck_runs(&self, arm: &Arm) -> &[Observation] {
        self.recheck
            .iter()
            .find(|(a, _)| a == arm)
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// Runs per arm before a re-check comparison decides.
    fn min_decide(&self) -> usize {
        (self.cfg.repeats as usize).saturating_mul(MIN_ROUNDS as usize)
    }

    /// Runs per arm at which an open comparison of a member stops.
    fn cap(&self) -> usize {
        (self.cfg.repeats as usize).saturating_mul(RECHECK_CAP_BATCHES as usize)
    }

    /// Runs per arm at which an open comparison with the baseline stops:
    /// two re-checks' worth.
    fn pass_cap(&self) -> usize {
        (self.cfg.confirm_repeats as usize)
            .saturating_mul(2)
            .max(self.cap())
    }

    /// Whether a comparison of `a` and `b` (run counts) can still get runs.
    fn can_grow(&self, a: usize, b: usize, cap: usize) -> bool {
        !self.closed && (a < cap || b < cap)
    }

    /// The combination against the baseline.
    fn pass_call(&self) -> Result<(Call, Option<Judgement>), AutotuneError> {
        let arm = self.recheck_runs(&arm_of(&self.winners));
        let base = self.recheck_runs(&Arm::Baseline);
        let open = if self.can_grow(arm.len(), base.len(), self.pass_cap()) {
            Call::Open
        } else {
            Call::No
        };
        if arm.len().min(base.len()) < MIN_VALUES_FOR_INTERVAL {
            return Ok((open, None));
        }
        let j = self.judge_at(arm, base, &self.look_bootstrap())?;
        if arm.len().min(base.len()) < self.min_decide() {
            return Ok((open, Some(j)));
        }
        let call = if j.winner() {
            Call::Yes
        } else if j.objective.verdict == Verdict::Regression
            || j.broken.is_some()
            || self.best_case(&Effect::of(&j.objective)) < self.cfg.min_effect_pct
        {
            Call::No
        } else {
            open
        };
        Ok((call, Some(j)))
    }

    /// The combination against the combination without member `m`.
    fn member_call(&self, m: usize) -> Result<(Call, Option<Effect>), AutotuneError> {
        let with = self.recheck_runs(&arm_of(&self.winners));
        let rest = self.recheck_runs(&arm_of(&without(&self.winners, m)));
        let open = if self.can_grow(with.len(), rest.len(), self.cap()) {
            Call::Open
        } else {
            Call::No
        };
        if with.len().min(rest.len()) < MIN_VALUES_FOR_INTERVAL {
            return Ok((open, None));
        }
        let objective = |v: &[Observation]| v.iter().map(|o| o.objective).collect::<Vec<_>>();
        let c = compare_by(
            &objective(with),
            &objective(rest),
            self.direction(),
            &self.look_bootstrap(),
            self.cfg.statistic,
        )?;
        let effect = Effect::of(&c);
        if with.len().min(rest.len()) < self.min_decide() {
            return Ok((open, Some(effect)));
        }
        let call = if c.verdict == Verdict::Gain {
            Call::Yes
        } else if c.verdict == Verdict::Regression
            || self.score(&effect) <= self.futility_bar(with.len().min(rest.len()))
            || self.best_case(&effect) < self.cfg.min_effect_pct
        {
            Call::No
        } else {
            open
        };
        Ok((call, Some(effect)))
    }

    /// The bootstrap of the re-check: its comparisons are looked at after
    /// every batch, so each look is held to a stricter level (half the
    /// error rate of `level`: 97.5 % for 95 %).
    fn look_bootstrap(&self) -> BootstrapConfig {
        let mut b = self.cfg.bootstrap();
        b.level = 1.0 - (1.0 - b.level) / MEMBER_LEVEL_DIVISOR;
        b
    }

    /// The futility bar of a member's removal after `n` runs per arm: an
    /// estimate at or under it shows no sign of a practical loss. It rises
    /// from zero at [`MIN_ROUNDS`] batches to the threshold at the cap.
    fn futility_bar(&self, n: usize) -> f64 {
        let (lo, hi) = (self.min_decide(), self.cap());
        if hi <= lo {
            return 0.0;
        }
        let done = n.saturating_sub(lo).min(hi - lo) as f64 / (hi - lo) as f64;
        self.cfg.min_effect_pct * done
    }

    /// Members of the combination not proven yet.
    fn unproven(&self) -> Vec<usize> {
        if self.winners.len() < 2 {
            return Vec::new();
        }
        self.winners
            .iter()
            .copied()
            .filter(|m| !self.proven.contains(m))
            .collect()
    }

    /// Queue a batch of the re-check arms still in doubt, or judge the
    /// combination when none is.
    fn step_recheck(&mut self) -> Result<(), AutotuneError> {
        // Each pass either queues runs or shrinks the combination.
        for _ in 0..self.space.candidates().len().saturating_add(2) {
            let set = arm_of(&self.winners);
            let mut need: Vec<Arm> = Vec::new();
            let mut want = |arm: Arm, runs: usize, cap: usize| {
                if runs < cap && !need.contains(&arm) {
                    need.push(arm);
                }
            };
            if self.pass_call()?.0 == Call::Open {
                let cap = self.pass_cap();
                want(Arm::Baseline, self.recheck_runs(&Arm::Baseline).len(), cap);
                want(set.clone(), self.recheck_runs(&set).len(), cap);
            }
            for m in self.unproven() {
                match self.member_call(m)?.0 {
                    Call::Yes | Call::No => {}
                    Call::Open => {
                        let rest = arm_of(&without(&self.winners, m));
                        let cap = self.cap();
                        want(set.clone(), self.recheck_runs(&set).len(), cap);
                        let n = self.recheck_runs(&rest).len();
                        want(rest, n, cap);
                    }
                }
            }
            if !need.is_empty() {
                let r = self.cfg.repeats as usize;
                if self.remaining() >= need.len().saturating_mul(r) {
                    let mut order = Vec::with_capacity(need.len().saturating_mul(r));
                    for _ in 0..r {
                        order.extend(need.iter().cloned());
                    }
                    self.rng.shuffle(&mut order);
                    self.queue = order.into();
                    return Ok(());
                }
                // The budget is spent: what is open is not proven.
                self.closed = true;
                continue;
            }
            if self.resolve()? {
                if !self.next_pass() {
                    self.phase = Phase::Done;
                    self.finish();
                }
                return Ok(());
            }
        }
        self.phase = Phase::Done;
        self.finish();
        Ok(())
    }

    /// Judge the combination when nothing is in doubt; `true` when the
    /// re-check is over, `false` when a smaller combination is next.
    fn resolve(&mut self) -> Result<bool, AutotuneError> {
        let (pass, judgement) = self.pass_call()?;
        let cands = self.space.candidates().to_vec();
        let mut removals = Vec::new();
        let mut needed = Vec::new();
        if self.winners.len() > 1 {
            for &m in &self.winners {
                let (call, effect) = self.member_call(m)?;
                if let Some(effect) = effect {
                    removals.push((m, effect));
                }
                if call == Call::Yes && !self.proven.contains(&m) {
                    needed.push(m);
                }
            }
        }
        self.proven.extend(needed);
        let unproven = self.unproven();
        let accept = pass == Call::Yes && unproven.is_empty();
        if let Some(j) = judgement {
            let versus_best = match self.winners.as_slice() {
                [a, b] => {
                    // Against the better member alone: without the other.
                    let other = if self.race_score(*a) >= self.race_score(*b) {
                        *b
                    } else {
                        *a
                    };
                    removals.iter().find(|(m, _)| *m == other).map(|(_, e)| *e)
                }
                _ => None,
            };
            self.rechecks.push(Recheck {
                changes: self
                    .winners
                    .iter()
                    .filter_map(|&i| cands.get(i).cloned())
                    .collect(),
                effect: Effect::of(&j.objective),
                versus_best,
                without: removals
                    .iter()
                    .filter_map(|(m, e)| {
                        Some(Removal {
                            candidate: cands.get(*m)?.clone(),
                            effect: *e,
                            needed: self.proven.contains(m),
                        })
                    })
                    .collect(),
                constraints: j.constraints,
                passed: accept,
                on_top_of: self.pass_base(self.passes.len().saturating_sub(1)),
            });
        }
        if accept {
            return Ok(true);
        }
        if self.winners.len() < 2 {
            for &w in &self.winners {
                self.status[w] = Status::Out(Reason::NotConfirmed);
            }
            self.winners.clear();
            return Ok(true);
        }
        let effect_of = |m: usize| removals.iter().find(|(r, _)| *r == m).map(|(_, e)| *e);
        // Drop the unproven members whose removal's estimate misses the
        // threshold, all at once; when that is none of them or every
        // member, only the member whose removal costs least (among the
        // unproven; when every member is needed but the combination fails,
        // among all); then judge the rest again.
        let cost = |m: usize| effect_of(m).map_or(f64::NEG_INFINITY, |e| self.score(&e));
        let mut drops: Vec<usize> = unproven
            .iter()
            .copied()
            .filter(|&m| cost(m) < self.cfg.min_effect_pct)
            .collect();
        if drops.is_empty() || drops.len() == self.winners.len() {
            let pool = if unproven.is_empty() {
                self.winners.clone()
            } else {
                unproven
            };
            drops = pool
                .into_iter()
                .min_by(|&a, &b| {
                    cost(a)
                        .total_cmp(&cost(b))
                        .then(self.race_score(a).total_cmp(&self.race_score(b)))
                })
                .into_iter()
                .collect();
        }
        if drops.is_empty() {
            return Ok(true);
        }
        for &d in &drops {
            self.status[d] = match effect_of(d) {
                Some(e) => Status::Out(Reason::Rider(e)),
                None => Status::Out(Reason::NotConfirmed),
            };
        }
        self.winners.retain(|w| !drops.contains(w));
        // The smaller combination keeps the runs it had as a leave-one-out
        // arm: they were measured in the same interleaved batches as the
        // baseline's, so they are not the race's selected values.
        self.add_recheck_arms();
        Ok(false)
    }

    fn finish(&mut self) {
        self.outcome = Some(self.outcome_now());
    }

    /// The outcome of the statuses as they are.
    fn outcome_now(&self) -> Outcome {
        let cands = self.space.candidates();
        let mut accepted = Vec::new();
        let mut rejected = Vec::new();
        for (i, c) in cands.iter().enumerate() {
            let (status, effect, pass) = self.shown(i);
            let on_top_of = self.pass_base(pass);
            match (status, effect) {
                (Status::Winner, Some(e)) if self.winners.contains(&i) => accepted.push(Accepted {
                    candidate: c.clone(),
                    race: e,
                    on_top_of,
                }),
                (Status::Kept, Some(e)) => accepted.push(Accepted {
                    candidate: c.clone(),
                    race: e,
                    on_top_of,
                }),
                (Status::Out(reason), e) => rejected.push(Rejected {
                    candidate: c.clone(),
                    race: e,
                    reason: reason.clone(),
                    on_top_of,
                }),
                (_, e) => rejected.push(Rejected {
                    candidate: c.clone(),
                    race: e,
                    reason: Reason::Undecided,
                    on_top_of,
                }),
            }
        }
        let mut applied: Vec<usize> = accepted
            .iter()
            .filter_map(|a| cands.iter().position(|c| *c == a.candidate))
            .collect();
        applied.sort_unstable();
        Outcome {
            accepted,
            rejected,
            rechecks: self.rechecks.clone(),
            settings: self.space.settings(&applied),
            runs: self.runs,
            rounds: self.total_rounds(),
            passes: self.pass_list(),
        }
    }
}
