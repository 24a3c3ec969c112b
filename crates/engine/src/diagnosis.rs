//! `nettune bench --doctor`: each end samples the host over the measured
//! window, and the server's report is read back with the same care as the
//! rest of its final message.
//!
//! Each end samples the host (the same sampler as its per-CPU accounting) at
//! the window's start, at every step and at its end; after the window it
//! hands the samples to a [`DoctorHook`] that its caller provided (the CLI:
//! it reads the host's snapshot, extras, sockstat and applied plan through
//! `host` and lets `doctor` decide). The engine neither reads those facts
//! nor runs the rules; it only carries the [`Report`] (whose type is the
//! `doctor` crate's, the one dependency left on it).

use host::sampler::Sample;
use host::Root;
use model::findings::Report;

use std::sync::Arc;
use std::time::Duration;

/// The doctor rules over one measured window: from the root the end reads
/// its host under and the window's samples (time order, possibly fewer than
/// two) to a report. Given by the caller of the engine (`bench --doctor`,
/// `serve`), so the engine depends on neither the rules nor what they read.
#[derive(Clone)]
pub struct DoctorHook(Arc<DiagnoseFn>);

/// What a [`DoctorHook`] calls.
pub type DiagnoseFn = dyn Fn(&Root, Vec<Sample>) -> Report + Send + Sync;

impl DoctorHook {
    /// A hook from a function.
    pub fn new(f: impl Fn(&Root, Vec<Sample>) -> Report + Send + Sync + 'static) -> DoctorHook {
        DoctorHook(Arc::new(f))
    }

    /// Run the hook.
    pub fn diagnose(&self, root: &Root, samples: Vec<Sample>) -> Report {
        (self.0)(root, samples)
    }
}

impl std::fmt::Debug for DoctorHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DoctorHook")
    }
}

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
