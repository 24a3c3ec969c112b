//! Drops by reason over one run: the `skb:kfree_skb` watcher of
//! [`crate::drops`] opened when a run starts, its rings drained on a thread
//! of its own every [`DRAIN_EVERY`] while the run goes, and read once more
//! when it ends. What `bench --doctor` and the experiment runner record per
//! run; the watcher's reason when it cannot open (not root, no tracefs, a
//! captured root), never an error.

use crate::drops::{DropWatcher, Sampling, DRAIN_EVERY};
use crate::Root;
use model::drops::{DropCounts, DropInterval, Unavailable};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// A run's watch, from [`watch_run`].
#[derive(Debug)]
pub struct RunWatch(Result<Running, Unavailable>);

#[derive(Debug)]
struct Running {
    first: DropCounts,
    at: Instant,
    stop: Arc<AtomicBool>,
    drainer: JoinHandle<Box<DropWatcher>>,
}

/// Start watching the drops of the host under `root` (live only).
pub fn watch_run(root: &Root) -> RunWatch {
    let mut watcher = match DropWatcher::open(root, Sampling::Adaptive) {
        Ok(w) => Box::new(w),
        Err(why) => return RunWatch(Err(why)),
    };
    let first = watcher.counts();
    let at = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let drainer = std::thread::Builder::new()
        .name("nt-drops".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::park_timeout(DRAIN_EVERY);
                watcher.drain();
            }
            watcher
        });
    match drainer {
        Ok(drainer) => RunWatch(Ok(Running {
            first,
            at,
            stop,
            drainer,
        })),
        Err(e) => RunWatch(Err(Unavailable::NoDrainThread {
            errno: model::drops::Errno::of(&e),
        })),
    }
}

impl RunWatch {
    /// Whether the watcher opened (or why not).
    pub fn opened(&self) -> Result<(), &Unavailable> {
        self.0.as_ref().map(|_| ())
    }

    /// Stop watching: the drops since [`watch_run`], or why none.
    pub fn finish(self) -> Result<DropInterval, Unavailable> {
        let r = self.0?;
        r.stop.store(true, Ordering::Relaxed);
        r.drainer.thread().unpark();
        let mut watcher = r.drainer.join().map_err(|_| Unavailable::DrainPanicked)?;
        let last = watcher.counts();
        Ok(DropInterval::between(
            &r.first,
            &last,
            r.at.elapsed().as_secs_f64(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_root_gives_the_watchers_reason_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let w = watch_run(&Root::new(dir.path()));
        assert_eq!(w.opened(), Err(&Unavailable::NotCaptured));
        assert_eq!(w.finish(), Err(Unavailable::NotCaptured));
    }
}
