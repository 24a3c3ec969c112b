//! What a search stopped now keeps (Ctrl-C, a progress line's "best
//! proven"): the search is judged as if no more runs could be added.

use super::{Outcome, Phase, Reason, Search, Status};
use crate::autotune::AutotuneError;

impl Search {
    /// The outcome if the search were stopped now, without another run.
    ///
    /// During the race nothing is proven, so nothing is kept: the
    /// candidates still racing are rejected as [`Reason::Interrupted`] with
    /// their last race interval. During the re-check every comparison still
    /// open counts as not proven, so what is kept has met the acceptance
    /// rule on the runs so far: its interval against the fresh baseline
    /// runs shows a practical gain and, in a combination, every member was
    /// proven needed. A candidate the search had not decided is rejected as
    /// [`Reason::Interrupted`]. After the search ended, its outcome.
    pub fn outcome_so_far(&self) -> Result<Outcome, AutotuneError> {
        if let Some(o) = &self.outcome {
            return Ok(o.clone());
        }
        let mut s = self.clone();
        s.pending = None;
        s.queue.clear();
        s.closed = true;
        let mut o = match s.phase {
            Phase::Race => {
                s.winners.clear();
                s.outcome_now()
            }
            Phase::Recheck => {
                s.step_recheck()?;
                s.outcome.take().unwrap_or_else(|| s.outcome_now())
            }
            Phase::Done => s.outcome_now(),
        };
        let cands = self.space.candidates();
        for r in &mut o.rejected {
            let open = cands
                .iter()
                .position(|c| *c == r.candidate)
                .and_then(|i| self.status.get(i))
                .is_some_and(|st| matches!(st, Status::Alive | Status::Winner));
            if open {
                r.reason = Reason::Interrupted;
            }
        }
        Ok(o)
    }
}
