//! The race (phase 1 of the module's doc): judging arms against the
//! baseline, eliminating and settling candidates, planning each round.

use model::stats::{compare, compare_by, BootstrapConfig, Direction, Verdict};

use super::super::objective::Response;
use super::super::AutotuneError;
use super::{
    forward, Arm, ConstraintCheck, Effect, Judgement, Observation, Phase, Reason, Search, Status,
    MIN_ROUNDS, RECHECK_ARMS,
};

impl Search {
    pub(super) fn value(&self, obs: &Observation, r: Response) -> Option<f64> {
        if r == Response::Metric(self.cfg.objective) {
            return Some(obs.objective);
        }
        obs.others.iter().find(|(k, _)| *k == r).map(|(_, v)| *v)
    }

    pub(super) fn direction(&self) -> Direction {
        self.cfg.objective.direction()
    }

    /// How far `e` is on the better side (the estimate, signed so that
    /// more is better).
    pub(super) fn score(&self, e: &Effect) -> f64 {
        match self.direction() {
            // An objective always has a better side (Objective::direction).
            Direction::HigherIsBetter | Direction::Neither => e.change.estimate,
            Direction::LowerIsBetter => -e.change.estimate,
        }
    }

    /// The better end of `e`'s interval, signed so that more is better.
    pub(super) fn best_case(&self, e: &Effect) -> f64 {
        match self.direction() {
            Direction::HigherIsBetter | Direction::Neither => e.change.hi,
            Direction::LowerIsBetter => -e.change.lo,
        }
    }

    /// The worse end of `e`'s interval, signed so that more is better.
    pub(super) fn worst_case(&self, e: &Effect) -> f64 {
        match self.direction() {
            Direction::HigherIsBetter | Direction::Neither => e.change.lo,
            Direction::LowerIsBetter => -e.change.hi,
        }
    }

    /// The race score of candidate `i` (its estimate; −∞ when not judged).
    pub(super) fn race_score(&self, i: usize) -> f64 {
        self.effects
            .get(i)
            .copied()
            .flatten()
            .map_or(f64::NEG_INFINITY, |e| self.score(&e))
    }

    pub(super) fn judge(
        &self,
        arm: &[Observation],
        base: &[Observation],
    ) -> Result<Judgement, AutotuneError> {
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
    pub(super) fn judge_race(&self, i: usize) -> Result<Judgement, AutotuneError> {
        let arm = &self.race[i + 1];
        let base = &self.race[0][..arm.len().min(self.race[0].len())];
        self.judge(arm, base)
    }

    /// [`Search::judge`] with the bootstrap `boot`.
    pub(super) fn judge_at(
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

    pub(super) fn alive(&self) -> Vec<usize> {
        (0..self.status.len())
            .filter(|&i| matches!(self.status[i], Status::Alive | Status::Winner))
            .collect()
    }

    pub(super) fn remaining(&self) -> usize {
        self.cfg
            .budget
            .map_or(usize::MAX, |b| b.saturating_sub(self.runs))
    }

    /// Runs of one re-check batch of `arms` arms (the baseline included).
    pub(super) fn recheck_cost(&self, arms: usize) -> usize {
        arms.saturating_mul(self.cfg.confirm_repeats as usize)
    }

    /// Runs the race keeps for the re-check: three arms when winners of
    /// two knobs could be combined in the first pass, else two. A later
    /// pass looks for the next change on what is left of the budget, and
    /// keeps only room for the re-check's earliest decision: if the budget
    /// runs out before it decides, what earlier passes kept stands.
    pub(super) fn recheck_reserve(&self) -> usize {
        if !self.base.is_empty() {
            self.earliest_recheck(2)
        } else if self.space.factors().len() > 1 {
            self.recheck_cost(RECHECK_ARMS)
        } else {
            self.recheck_cost(2)
        }
    }

    /// Called when no run is due: judge what was measured, plan the next.
    pub(super) fn advance(&mut self) -> Result<(), AutotuneError> {
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
    pub(super) fn eliminate(&mut self) -> Result<(), AutotuneError> {
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
    pub(super) fn race_bar(&self) -> Option<f64> {
        if self.rounds < MIN_ROUNDS || self.rounds >= self.cfg.max_rounds {
            return None;
        }
        let steps = f64::from(self.rounds - MIN_ROUNDS + 1).min(2.0);
        Some(self.cfg.min_effect_pct * steps / 2.0)
    }

    /// Whether candidate `i` is settled: a winner, or from round
    /// [`MIN_ROUNDS`] on an estimate reaching the threshold.
    pub(super) fn settled(&self, i: usize) -> bool {
        self.status[i] == Status::Winner
            || (self.status[i] == Status::Alive
                && self.rounds >= MIN_ROUNDS
                && self.race_score(i) >= self.cfg.min_effect_pct
                && self.effects[i].is_some_and(|e| self.worst_case(&e) > -self.cfg.min_effect_pct))
    }

    /// Whether candidate `i` still needs race runs: alive and not settled.
    pub(super) fn in_doubt(&self, i: usize) -> bool {
        self.status[i] == Status::Alive && !self.settled(i)
    }

    /// Queue the next round; `false` when the race is over.
    pub(super) fn plan_round(&mut self) -> bool {
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
    pub(super) fn race_on(&mut self, doubt: &mut Vec<usize>) -> bool {
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
    pub(super) fn finish_race(&mut self) -> Result<(), AutotuneError> {
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
}
