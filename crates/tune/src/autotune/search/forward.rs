//! Forward passes: once a combination is kept, the levels of the knobs it
//! leaves alone are raced again, on top of it, while the budget pays for a
//! pass. A change that does nothing from the baseline can help next to
//! another (in the lab, gro_flush_timeout costs next to bbr and gains next
//! to cubic), and the first pass, racing from the baseline, cannot see it.
//!
//! A later pass is the same race and re-check with the kept changes
//! applied to every arm: its baseline is the kept setting, so each change
//! it keeps proved its own gain over what was kept before.

use model::experiment::Knob;

use super::{arm_of, Arm, Candidate, Effect, Phase, Search, Status, MIN_ROUNDS};

/// Arms of the re-check of `winners` winners: the baseline, the
/// combination and, with several, the combination without each.
pub(super) fn recheck_arms(winners: usize) -> usize {
    if winners > 1 {
        winners.saturating_add(2)
    } else {
        2
    }
}

/// One pass of a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    /// The changes kept by earlier passes, applied to every arm of this one
    /// (empty for the first pass, which starts from the baseline).
    pub on_top_of: Vec<Candidate>,
    /// The number (0-based) of the pass's first run.
    pub first_run: usize,
    /// The number of the first run after its race (its re-check starts
    /// there).
    pub race_end: usize,
    /// Rounds of its race.
    pub rounds: u32,
}

/// A pass as the search keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct PassLog {
    base: Vec<usize>,
    first_run: usize,
    race_end: Option<usize>,
    rounds: u32,
}

impl PassLog {
    /// The first pass: from the baseline, from run 0.
    pub(super) fn first() -> PassLog {
        PassLog {
            base: Vec::new(),
            first_run: 0,
            race_end: None,
            rounds: 0,
        }
    }
}

/// A candidate's verdict in an earlier pass.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Earlier {
    status: Status,
    effect: Option<Effect>,
    pass: usize,
}

impl Search {
    /// The arm the host measures: `arm` with the kept changes applied.
    pub(super) fn external(&self, arm: &Arm) -> Arm {
        if self.base.is_empty() {
            return arm.clone();
        }
        let mut v = self.base.clone();
        v.extend(arm.changes());
        v.sort_unstable();
        v.dedup();
        arm_of(&v)
    }

    /// Whether `i` is kept by an earlier pass.
    pub(super) fn is_base(&self, i: usize) -> bool {
        self.base.contains(&i)
    }

    /// The fewest runs with which a pass can keep anything: a baseline and
    /// one candidate for [`MIN_ROUNDS`] rounds, and the re-check of the two
    /// at its earliest decision ([`MIN_ROUNDS`] batches each). A pass that
    /// runs out of budget before its re-check decides keeps nothing, and
    /// what earlier passes kept stands.
    fn pass_minimum(&self) -> usize {
        self.earliest_recheck(2).saturating_mul(2)
    }

    /// Runs of a re-check of `arms` arms that decides at its first chance:
    /// [`MIN_ROUNDS`] batches of `repeats` runs an arm.
    pub(super) fn earliest_recheck(&self, arms: usize) -> usize {
        (self.cfg.repeats as usize)
            .saturating_mul(MIN_ROUNDS as usize)
            .saturating_mul(arms)
    }

    fn knobs(&self, set: &[usize]) -> Vec<Knob> {
        set.iter()
            .filter_map(|&i| self.space.candidates().get(i))
            .map(|c| c.knob)
            .collect()
    }

    /// Whether the race ends now for a forward pass: from round
    /// [`MIN_ROUNDS`] on, some knob has a winner, one of them with a gain
    /// that would start a forward pass, the budget left pays for the
    /// winners' re-check and a pass (each at its earliest decision), and
    /// every candidate still in `doubt` is of a knob without one. Those
    /// would be raced again on top of the winners, so racing them further
    /// from here is wasted.
    pub(super) fn hand_over(&self, doubt: &[usize]) -> bool {
        let Some(shift) = self.cfg.forward_after_pct else {
            return false;
        };
        if self.rounds < MIN_ROUNDS {
            return false;
        }
        let winners: Vec<usize> = self
            .alive()
            .into_iter()
            .filter(|&i| self.status[i] == Status::Winner)
            .collect();
        let won = self.knobs(&winners);
        let moves = winners
            .iter()
            .any(|&i| self.effects[i].is_some_and(|e| e.relative && self.score(&e) >= shift));
        moves
            && !won.is_empty()
            && self.remaining()
                >= self
                    .pass_minimum()
                    .saturating_add(self.earliest_recheck(recheck_arms(winners.len())))
            && self.knobs(doubt).iter().all(|k| !won.contains(k))
    }

    /// Note where the current pass's race ended.
    pub(super) fn end_race_log(&mut self) {
        let (runs, rounds) = (self.runs, self.rounds);
        if let Some(p) = self.passes.last_mut() {
            p.race_end.get_or_insert(runs);
            p.rounds = rounds;
        }
    }

    /// After a combination was kept: start the next pass over the knobs it
    /// leaves alone, if there are any and the budget pays for one;
    /// `false` when the search is over.
    pub(super) fn next_pass(&mut self) -> bool {
        let Some(shift) = self.cfg.forward_after_pct else {
            return false;
        };
        // A stopped search (Ctrl-C's outcome_so_far) or a spent budget
        // starts nothing.
        let moved = self
            .rechecks
            .last()
            .is_some_and(|r| r.passed && r.effect.relative && self.score(&r.effect) >= shift);
        if !moved || self.winners.is_empty() || self.closed {
            return false;
        }
        let mut base = self.base.clone();
        base.extend(&self.winners);
        base.sort_unstable();
        let kept = self.knobs(&base);
        let open: Vec<usize> = (0..self.space.candidates().len())
            .filter(|&i| !kept.contains(&self.space.candidates()[i].knob))
            .collect();
        if open.is_empty() || self.remaining() < self.pass_minimum() {
            return false;
        }
        for &w in &self.winners {
            self.status[w] = Status::Kept;
        }
        let pass = self.passes.len();
        for &i in &open {
            self.earlier[i] = Some(Earlier {
                status: self.status[i].clone(),
                effect: self.effects[i],
                pass: self.judged_in[i],
            });
            self.status[i] = Status::Alive;
            self.effects[i] = None;
            self.judged_in[i] = pass;
        }
        self.base = base;
        self.passes.push(PassLog {
            base: self.base.clone(),
            first_run: self.runs,
            race_end: None,
            rounds: 0,
        });
        self.race = vec![Vec::new(); self.space.candidates().len() + 1];
        self.rounds = 0;
        self.winners.clear();
        self.proven.clear();
        self.recheck.clear();
        self.queue.clear();
        self.closed = false;
        self.phase = Phase::Race;
        true
    }

    /// Candidate `i`'s status, effect and pass as the outcome shows them:
    /// a candidate a later pass could not race keeps its earlier verdict.
    pub(super) fn shown(&self, i: usize) -> (&Status, Option<Effect>, usize) {
        let now = (&self.status[i], self.effects[i], self.judged_in[i]);
        match (&self.earlier[i], now) {
            (Some(e), (Status::Out(super::Reason::Budget), None, _)) => {
                (&e.status, e.effect, e.pass)
            }
            _ => now,
        }
    }

    /// The changes kept before pass `pass`.
    pub(super) fn pass_base(&self, pass: usize) -> Vec<Candidate> {
        self.passes
            .get(pass)
            .map(|p| {
                p.base
                    .iter()
                    .filter_map(|&i| self.space.candidates().get(i).cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Rounds raced over every pass.
    pub(super) fn total_rounds(&self) -> u32 {
        let n = self.passes.len().saturating_sub(1);
        self.passes
            .iter()
            .take(n)
            .fold(self.rounds, |acc, p| acc.saturating_add(p.rounds))
    }

    /// The passes for the outcome.
    pub(super) fn pass_list(&self) -> Vec<Pass> {
        let last = self.passes.len().saturating_sub(1);
        self.passes
            .iter()
            .enumerate()
            .map(|(k, p)| Pass {
                on_top_of: self.pass_base(k),
                first_run: p.first_run,
                race_end: p.race_end.unwrap_or(self.runs),
                rounds: if k == last { self.rounds } else { p.rounds },
            })
            .collect()
    }
}
