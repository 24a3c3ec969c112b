//! The search space: the factors the host supports, each with its current
//! level first and the levels worth trying after it.

use std::collections::BTreeSet;
use std::fmt;

use model::experiment::{Factor, Knob, Level};

use super::search::{DEFAULT_MAX_ROUNDS, MIN_ROUNDS, RECHECK_CAP_BATCHES};
use super::AutotuneError;

/// Most candidates (levels other than the current one, over all factors).
pub const MAX_CANDIDATES: usize = 64;

/// One change the search may make: a knob (or bench option) at a level.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Candidate {
    /// The knob or bench option.
    pub knob: Knob,
    /// The level it is set to.
    pub level: Level,
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.knob.name(), self.level)
    }
}

/// The factors of a search. Each factor's first level is its current
/// (baseline) level, as cell 0 of an experiment is its baseline; the other
/// levels are the candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSpace {
    factors: Vec<Factor>,
    candidates: Vec<Candidate>,
}

impl SearchSpace {
    /// A space from factors with distinct knobs and distinct levels, at
    /// least one candidate and at most [`MAX_CANDIDATES`].
    pub fn new(factors: Vec<Factor>) -> Result<SearchSpace, AutotuneError> {
        let mut knobs = BTreeSet::new();
        let mut candidates = Vec::new();
        for f in &factors {
            if !knobs.insert(f.knob) {
                return Err(AutotuneError::BadFactor {
                    knob: f.knob.name(),
                    reason: "appears twice",
                });
            }
            if f.levels.is_empty() {
                return Err(AutotuneError::BadFactor {
                    knob: f.knob.name(),
                    reason: "has no level (its current level comes first)",
                });
            }
            let distinct: BTreeSet<&Level> = f.levels.iter().collect();
            if distinct.len() != f.levels.len() {
                return Err(AutotuneError::BadFactor {
                    knob: f.knob.name(),
                    reason: "has a level twice",
                });
            }
            candidates.extend(f.levels.iter().skip(1).map(|l| Candidate {
                knob: f.knob,
                level: l.clone(),
            }));
        }
        if candidates.is_empty() {
            return Err(AutotuneError::NoCandidate);
        }
        if candidates.len() > MAX_CANDIDATES {
            return Err(AutotuneError::TooManyCandidates {
                count: candidates.len(),
                max: MAX_CANDIDATES,
            });
        }
        Ok(SearchSpace {
            factors,
            candidates,
        })
    }

    /// The factors, current level first.
    pub fn factors(&self) -> &[Factor] {
        &self.factors
    }

    /// Every candidate, in factor then level order.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// The full setting of every factor with the candidates `changes`
    /// (indexes into [`SearchSpace::candidates`]) applied; unknown indexes
    /// are ignored.
    pub fn settings(&self, changes: &[usize]) -> Vec<(Knob, Level)> {
        self.factors
            .iter()
            .map(|f| {
                let level = changes
                    .iter()
                    .filter_map(|&i| self.candidates.get(i))
                    .find(|c| c.knob == f.knob)
                    .map_or_else(|| f.levels[0].clone(), |c| c.level.clone());
                (f.knob, level)
            })
            .collect()
    }

    /// Cells of the exhaustive grid over the same levels (saturating).
    pub fn grid_cells(&self) -> usize {
        self.factors
            .iter()
            .try_fold(1usize, |acc, f| acc.checked_mul(f.levels.len()))
            .unwrap_or(usize::MAX)
    }

    /// Runs of the exhaustive grid with `repeats` runs per cell (saturating).
    pub fn grid_runs(&self, repeats: u32) -> usize {
        self.grid_cells().saturating_mul(repeats as usize)
    }

    /// The most runs a search with `repeats` runs per arm and round (and
    /// the default rounds and re-check) can use: every candidate raced for
    /// every round, and every re-check arm (the baseline, the combination of
    /// one level per factor, and the combinations without one member as
    /// the backward check drops members one by one) taken to its cap.
    pub fn estimate_runs(&self, repeats: u32) -> usize {
        pass_runs(self.candidates.len(), self.factors.len(), repeats)
    }

    /// [`SearchSpace::estimate_runs`] with forward passes: each pass keeps
    /// at least one knob and races the others again, so at worst every pass
    /// keeps the knob with the fewest levels and the next one races all
    /// the rest.
    pub fn estimate_runs_in_passes(&self, repeats: u32) -> usize {
        let mut sizes: Vec<usize> = self
            .factors
            .iter()
            .map(|f| f.levels.len().saturating_sub(1))
            .collect();
        sizes.sort_unstable();
        (0..sizes.len())
            .map(|k| pass_runs(sizes[k..].iter().sum(), sizes.len() - k, repeats))
            .fold(0usize, usize::saturating_add)
    }
}

/// The most runs of one pass over `candidates` levels of `factors` knobs
/// (see [`SearchSpace::estimate_runs`]).
fn pass_runs(candidates: usize, factors: usize, repeats: u32) -> usize {
    let r = repeats as usize;
    let race = candidates
        .saturating_add(1)
        .saturating_mul(r)
        .saturating_mul(DEFAULT_MAX_ROUNDS.max(MIN_ROUNDS) as usize);
    let recheck_arms = factors.saturating_mul(factors.saturating_add(1)) / 2 + 1;
    let cap = r.saturating_mul(RECHECK_CAP_BATCHES as usize);
    race.saturating_add(recheck_arms.saturating_mul(cap))
}
