//! The agent's drops watch: what `drops_start` and `drops_finish`
//! (docs/fleet.md) hold between them. An agent process is one session, so
//! one [`DropsSlot`] per process holds at most one watch, and nothing
//! outlives what bounds it: a second `drops_start` stops the running watch
//! before it opens another, `lifetime` stops it on a timer of the slot's
//! own, and the session's end stops it ([`DropsSlot::stop`], which the
//! agent calls when its loop returns). The watcher itself is the caller's
//! (the CLI opens `host::drops_run` on the live host): this module reads
//! nothing.

use crate::proto::DROPS_LIFETIME_MAX;
use model::drops::run::RunDrops;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use thiserror::Error;

/// A running watcher's end: stop it and give its drops, named for the
/// host passed in. Every watcher the slot takes is ended through this,
/// also when its counts are dropped (a watcher merely dropped could keep
/// its drain thread and kernel events).
pub type Finish = Box<dyn FnOnce(&str) -> RunDrops + Send>;

/// Why `drops_finish` has nothing to give.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DropsError {
    /// No `drops_start` opened a watch in this session.
    #[error("drops_finish: no drops watch runs in this session (drops_start first; a watch ends with its session)")]
    NotStarted,
}

#[derive(Debug)]
struct Running {
    finish: FinishBox,
    until: Instant,
    lifetime: u64,
}

/// [`Finish`] with a Debug impl.
struct FinishBox(Finish);

impl std::fmt::Debug for FinishBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Finish")
    }
}

#[derive(Debug)]
struct State {
    running: Option<Running>,
    /// Why the last watch ended before `drops_finish` (its lifetime).
    ended: Option<String>,
    timer: bool,
}

/// The one drops watch of an agent session.
#[derive(Debug)]
pub struct DropsSlot {
    state: Mutex<State>,
    changed: Condvar,
}

impl Default for DropsSlot {
    fn default() -> Self {
        DropsSlot::new()
    }
}

/// The host name a watch ended on its own is finished under (its counts
/// are dropped).
const DROPPED: &str = "dropped";

impl DropsSlot {
    /// An empty slot.
    pub const fn new() -> DropsSlot {
        DropsSlot {
            state: Mutex::new(State {
                running: None,
                ended: None,
                timer: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `drops_start`: stop a running watch (its counts dropped), then
    /// `open` a new one, kept for at most `lifetime` seconds (absent or
    /// above [`DROPS_LIFETIME_MAX`]: that). `open` gives the watcher's
    /// end, or the line saying why it cannot watch. The answer's document.
    pub fn start(
        &'static self,
        lifetime: Option<u64>,
        open: impl FnOnce() -> Result<Finish, String>,
    ) -> serde_json::Value {
        let mut g = self.lock();
        let replaced = match g.running.take() {
            Some(r) => {
                drop((r.finish.0)(DROPPED));
                true
            }
            None => false,
        };
        g.ended = None;
        let lifetime = lifetime
            .unwrap_or(DROPS_LIFETIME_MAX)
            .min(DROPS_LIFETIME_MAX);
        let finish = match open() {
            Ok(f) => f,
            Err(why) => {
                return serde_json::json!({
                    "watching": false,
                    "unavailable": model::text::printable_capped(&why, 300),
                    "replaced": replaced,
                })
            }
        };
        g.running = Some(Running {
            finish: FinishBox(finish),
            until: Instant::now() + Duration::from_secs(lifetime),
            lifetime,
        });
        if !g.timer {
            let spawned = std::thread::Builder::new()
                .name("nt-drops-lifetime".into())
                .spawn(move || self.timer());
            g.timer = spawned.is_ok();
        }
        drop(g);
        self.changed.notify_all();
        serde_json::json!({ "watching": true, "replaced": replaced })
    }

    /// `drops_finish`: stop the watch and give its drops on `host` (or why
    /// none: it passed its lifetime).
    pub fn finish(&self, host: &str) -> Result<RunDrops, DropsError> {
        let mut g = self.lock();
        let r = match (g.running.take(), g.ended.take()) {
            (Some(r), _) => (r.finish.0)(host),
            (None, Some(why)) => RunDrops::unavailable(host, why),
            (None, None) => return Err(DropsError::NotStarted),
        };
        drop(g);
        self.changed.notify_all();
        Ok(r)
    }

    /// The session ended: stop the watch, if any (its counts dropped);
    /// whether one ran.
    pub fn stop(&self) -> bool {
        let mut g = self.lock();
        g.ended = None;
        let r = g.running.take();
        drop(g);
        self.changed.notify_all();
        match r {
            Some(r) => {
                drop((r.finish.0)(DROPPED));
                true
            }
            None => false,
        }
    }

    /// Whether a watch runs.
    pub fn running(&self) -> bool {
        self.lock().running.is_some()
    }

    /// The lifetime timer: one thread per slot, waking when a watch starts
    /// or ends and at the running one's end of life.
    fn timer(&self) {
        let mut g = self.lock();
        loop {
            let now = Instant::now();
            let wait = match g.running.as_ref().map(|r| r.until) {
                Some(until) if until <= now => {
                    if let Some(r) = g.running.take() {
                        drop((r.finish.0)(DROPPED));
                        g.ended = Some(format!(
                            "drops by reason: the agent stopped the watch at its lifetime of {} s, before the run ended",
                            r.lifetime
                        ));
                    }
                    continue;
                }
                Some(until) => until - now,
                None => Duration::from_secs(3600),
            };
            g = match self.changed.wait_timeout(g, wait) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A watcher whose end counts itself and gives `total` drops.
    fn watcher(ended: &Arc<AtomicUsize>, total: u64) -> impl FnOnce() -> Result<Finish, String> {
        let ended = ended.clone();
        move || {
            Ok(Box::new(move |host: &str| {
                ended.fetch_add(1, Ordering::SeqCst);
                let mut a = model::drops::DropCounts::new();
                a.total = total;
                let i =
                    model::drops::DropInterval::between(&model::drops::DropCounts::new(), &a, 1.0);
                RunDrops::seen(host, &i)
            }) as Finish)
        }
    }

    fn slot() -> &'static DropsSlot {
        Box::leak(Box::new(DropsSlot::new()))
    }

    #[test]
    fn a_watch_runs_from_start_to_finish_and_a_second_start_ends_the_first() {
        let s = slot();
        let ended = Arc::new(AtomicUsize::new(0));
        assert_eq!(s.finish("h"), Err(DropsError::NotStarted));
        let a = s.start(Some(60), watcher(&ended, 3));
        assert_eq!(a, serde_json::json!({"watching": true, "replaced": false}));
        // A second start (a controller that lost track) ends the first
        // watcher before it opens another: never two.
        let b = s.start(None, watcher(&ended, 5));
        assert_eq!(b["replaced"], true);
        assert_eq!(ended.load(Ordering::SeqCst), 1);
        let d = s.finish("web1").unwrap();
        assert_eq!(d.host, "web1");
        assert_eq!(d.counts().map(|c| c.total), Some(5));
        assert_eq!(ended.load(Ordering::SeqCst), 2);
        assert!(!s.running());
        assert_eq!(s.finish("h"), Err(DropsError::NotStarted));
        // One that cannot open says why, and holds nothing.
        let c = s.start(None, || Err("drops by reason: needs root".into()));
        assert_eq!(c["watching"], false);
        assert_eq!(c["unavailable"], "drops by reason: needs root");
        assert!(!s.running());
    }

    #[test]
    fn the_sessions_end_and_the_lifetime_stop_the_watch() {
        let s = slot();
        let ended = Arc::new(AtomicUsize::new(0));
        s.start(Some(3600), watcher(&ended, 1));
        assert!(s.stop());
        assert_eq!(ended.load(Ordering::SeqCst), 1);
        assert!(!s.stop());
        // Lifetime 0: the timer ends it; drops_finish says why.
        s.start(Some(0), watcher(&ended, 1));
        let until = Instant::now() + Duration::from_secs(60);
        while s.running() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!s.running());
        assert_eq!(ended.load(Ordering::SeqCst), 2);
        let d = s.finish("h").unwrap();
        assert!(
            d.why_not().is_some_and(|w| w.contains("lifetime of 0 s")),
            "{d:?}"
        );
    }
}
