//! The re-check (phase 2 of the module's doc): the combination of the
//! winners and the combination without each member, measured in batches
//! until each comparison decides, then what the search keeps.

use model::stats::{compare_by, BootstrapConfig, Verdict, MIN_VALUES_FOR_INTERVAL};

use super::super::AutotuneError;
use super::{
    arm_of, without, Accepted, Arm, Call, Effect, Judgement, Observation, Outcome, Phase, Reason,
    Recheck, Rejected, Removal, Search, Status, MEMBER_LEVEL_DIVISOR, MIN_ROUNDS,
    RECHECK_CAP_BATCHES,
};

impl Search {
    /// Make sure the combination and, for each member not yet proven, the
    /// combination without it are re-check arms.
    pub(super) fn add_recheck_arms(&mut self) {
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

    pub(super) fn recheck_runs(&self, arm: &Arm) -> &[Observation] {
        self.recheck
            .iter()
            .find(|(a, _)| a == arm)
            .map_or(&[], |(_, v)| v.as_slice())
    }

    /// Runs per arm before a re-check comparison decides.
    pub(super) fn min_decide(&self) -> usize {
        (self.cfg.repeats as usize).saturating_mul(MIN_ROUNDS as usize)
    }

    /// Runs per arm at which an open comparison of a member stops.
    pub(super) fn cap(&self) -> usize {
        (self.cfg.repeats as usize).saturating_mul(RECHECK_CAP_BATCHES as usize)
    }

    /// Runs per arm at which an open comparison with the baseline stops:
    /// two re-checks' worth.
    pub(super) fn pass_cap(&self) -> usize {
        (self.cfg.confirm_repeats as usize)
            .saturating_mul(2)
            .max(self.cap())
    }

    /// Whether a comparison of `a` and `b` (run counts) can still get runs.
    pub(super) fn can_grow(&self, a: usize, b: usize, cap: usize) -> bool {
        !self.closed && (a < cap || b < cap)
    }

    /// The combination against the baseline.
    pub(super) fn pass_call(&self) -> Result<(Call, Option<Judgement>), AutotuneError> {
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
    pub(super) fn member_call(&self, m: usize) -> Result<(Call, Option<Effect>), AutotuneError> {
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
    pub(super) fn look_bootstrap(&self) -> BootstrapConfig {
        let mut b = self.cfg.bootstrap();
        b.level = 1.0 - (1.0 - b.level) / MEMBER_LEVEL_DIVISOR;
        b
    }

    /// The futility bar of a member's removal after `n` runs per arm: an
    /// estimate at or under it shows no sign of a practical loss. It rises
    /// from zero at [`MIN_ROUNDS`] batches to the threshold at the cap.
    pub(super) fn futility_bar(&self, n: usize) -> f64 {
        let (lo, hi) = (self.min_decide(), self.cap());
        if hi <= lo {
            return 0.0;
        }
        let done = n.saturating_sub(lo).min(hi - lo) as f64 / (hi - lo) as f64;
        self.cfg.min_effect_pct * done
    }

    /// Members of the combination not proven yet.
    pub(super) fn unproven(&self) -> Vec<usize> {
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
    pub(super) fn step_recheck(&mut self) -> Result<(), AutotuneError> {
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
    pub(super) fn resolve(&mut self) -> Result<bool, AutotuneError> {
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

    pub(super) fn finish(&mut self) {
        self.outcome = Some(self.outcome_now());
    }

    /// The outcome of the statuses as they are.
    pub(super) fn outcome_now(&self) -> Outcome {
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
