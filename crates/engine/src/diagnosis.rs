//! `nettune bench --doctor`: each end samples the host over the measured
//! window, and the server's report is read back with the same care as the
//! rest of its final message.
//!
//! Each end samples the host (the same sampler as its per-CPU accounting) at
//! the window's start, at every step and at its end; after the window it
//! hands the samples to a [`DoctorHook`] that its caller provided (the CLI:
//! it reads the host's snapshot, extras, sockstat and applied plan through
//! `host` and lets `doctor` decide). The hook may carry a
//! [`DropsRecorder`], which the end starts at `go` and finishes after the
//! window: drops by reason over the run, for the `drops-by-reason` rule and
//! the result's `doctor.drops`. The engine neither reads those facts
//! nor runs the rules; it only carries the [`Report`] (whose type is the
//! `doctor` crate's, the one dependency left on it).

use host::sampler::Sample;
use host::Root;
use model::drops::{DropInterval, Unavailable};
use model::findings::Report;

use std::sync::Arc;
use std::time::Duration;

/// The doctor rules over one measured window: from the root the end reads
/// its host under, the window's samples (time order, possibly fewer than
/// two) and the drops by reason over the run (or why none) to a report.
/// Given by the caller of the engine (`bench --doctor`, `serve`), so the
/// engine depends on neither the rules nor what they read.
#[derive(Clone)]
pub struct DoctorHook {
    diagnose: Arc<DiagnoseFn>,
    drops: Option<Arc<dyn DropsRecorder>>,
}

/// What a [`DoctorHook`] calls.
pub type DiagnoseFn = dyn Fn(&Root, Vec<Sample>, RunDropsResult) -> Report + Send + Sync;

/// Drops by reason over a run, or why the watcher could not give them.
pub type RunDropsResult = Result<DropInterval, Unavailable>;

/// Records drops by reason over one run: started when the run starts
/// (`go`), finished at its end. Given by the caller (the CLI: the
/// `skb:kfree_skb` watcher of `host`), so the engine neither opens nor
/// knows the watcher.
pub trait DropsRecorder: Send + Sync {
    /// Start watching the host under `root` (the watcher's errors are kept
    /// for [`DropsRun::finish`], never raised: the run goes on).
    fn start(&self, root: &Root) -> Box<dyn DropsRun>;
}

/// One run's recording, from [`DropsRecorder::start`].
pub trait DropsRun: Send {
    /// Stop and give the run's drops, or why there are none.
    fn finish(self: Box<Self>) -> RunDropsResult;
}

impl DoctorHook {
    /// A hook from a function, recording no drops (its reports say
    /// [`Unavailable::NotRead`]).
    pub fn new(
        f: impl Fn(&Root, Vec<Sample>, RunDropsResult) -> Report + Send + Sync + 'static,
    ) -> DoctorHook {
        DoctorHook {
            diagnose: Arc::new(f),
            drops: None,
        }
    }

    /// The hook recording drops by reason over each run with `recorder`.
    pub fn with_drops(mut self, recorder: impl DropsRecorder + 'static) -> DoctorHook {
        self.drops = Some(Arc::new(recorder));
        self
    }

    /// Start the drops recording of a run (when the hook has a recorder).
    pub fn start(&self, root: &Root) -> Option<Box<dyn DropsRun>> {
        self.drops.as_ref().map(|d| d.start(root))
    }

    /// Run the hook over the window's `samples` and the run's `drops`
    /// (from [`DoctorHook::start`]); returns the report and the drops.
    pub fn diagnose(
        &self,
        root: &Root,
        samples: Vec<Sample>,
        drops: Option<Box<dyn DropsRun>>,
    ) -> (Report, RunDropsResult) {
        let drops = drops.map_or(Err(Unavailable::NotRead), |d| d.finish());
        ((self.diagnose)(root, samples, drops.clone()), drops)
    }
}

impl std::fmt::Debug for DoctorHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DoctorHook")
    }
}

/// The `host` of the drops a bench records (`doctor.drops`): the end that
/// printed the result.
pub const DROPS_HOST: &str = "client";
/// Capability a server offers when it runs the doctor rules on request.
pub const CAP: &str = "doctor";
/// Shortest time between two doctor samples inside the window (the
/// sampler reads a dozen `/proc` files: once a second costs nothing
/// measurable; a shorter `--interval` does not sample faster).
pub const MIN_STEP: Duration = Duration::from_secs(1);
/// Most samples one window keeps (a long window samples less often).
pub const MAX_SAMPLES: u32 = 120;
/// Skip reason of the rate rules when the window ended before a second sample.
pub const SHORT_WINDOW: &str = "the measured window ended before a second sample";

pub use model::bench::peer_doctor::*;

/// Time between doctor samples for a window of `duration` with intervals of
/// `interval`: the interval, at least [`MIN_STEP`], and long enough that the
/// window holds at most [`MAX_SAMPLES`].
pub fn step(duration: Duration, interval: Duration) -> Duration {
    interval.max(MIN_STEP).max(duration / MAX_SAMPLES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_at_least_a_second_and_at_most_max_samples_per_window() {
        let s = |d: u64, i: u64| step(Duration::from_millis(d), Duration::from_millis(i));
        assert_eq!(s(10_000, 1000), Duration::from_secs(1));
        assert_eq!(s(10_000, 100), Duration::from_secs(1));
        assert_eq!(s(10_000, 2000), Duration::from_secs(2));
        assert_eq!(s(3_600_000, 1000), Duration::from_secs(30));
    }
}
