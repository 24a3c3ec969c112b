//! What a search found: the [`Outcome`] with its accepted and rejected
//! candidates and re-checks, each change's [`Effect`], and their text.

use std::fmt;

use model::experiment::{Knob, Level};
use model::stats::{Comparison, Interval, Verdict};

use super::super::objective::Constraint;
use super::super::space::Candidate;
use super::Pass;

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
