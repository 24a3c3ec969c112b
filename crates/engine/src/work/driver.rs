//! The one poll loop every workload runs in.
//!
//! A workload implements [`Workload::pass`]: one walk over its sockets
//! (send what is due, read what is there, count). [`drive`] calls it until
//! the worker's deadline or stop flag, takes interval marks, and when a pass
//! made no progress waits the way the pass asks: poll the sockets, sleep
//! for pacing, or wait precisely for an open-loop send time. It is generic,
//! so each workload gets its own copy with `pass` inlined: no dynamic
//! dispatch, allocation or atomic operation per packet.

use super::{SPIN_BELOW, TICK};
use crate::sys;
use crate::worker::Ctx;
use std::io;
use std::time::{Duration, Instant};

/// How to wait after a pass that made no progress.
#[derive(Debug, Clone, Copy)]
pub(super) enum Idle {
    /// Go again at once (the workload blocks in its own syscalls).
    Again,
    /// Poll the workload's sockets until one is ready or the next mark
    /// (not for a lone blocking socket: its syscall already waited).
    Poll,
    /// Sleep this long (pacing), but not past the next mark.
    Sleep(Duration),
    /// Poll precisely until the next open-loop send time, if any, or the
    /// next mark; spin for the last [`SPIN_BELOW`].
    Due(Option<Instant>),
}

/// What one pass did.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pass {
    /// Something was sent or received.
    pub progressed: bool,
    /// How to wait when nothing was.
    pub idle: Idle,
}

impl Pass {
    /// Progress, or else wait as `idle` says.
    pub fn new(progressed: bool, idle: Idle) -> Pass {
        Pass { progressed, idle }
    }
}

/// The loop's bounds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// Stop at this instant.
    pub until: Instant,
    /// One socket in blocking mode: never poll.
    pub single: bool,
    /// Spin (`--busy-poll`) this long before waiting.
    pub busy: Duration,
}

/// A workload's hot path.
pub(super) trait Workload {
    /// One walk over the sockets.
    fn pass(&mut self, ctx: &mut Ctx, now: Instant) -> io::Result<Pass>;
    /// Whether every flow has ended (the loop stops).
    fn done(&self) -> bool {
        false
    }
    /// The sockets to poll, with the events wanted.
    fn pollfds(&mut self) -> &mut [libc::pollfd] {
        &mut []
    }
    /// After the loop: gather TCP_INFO, shut sockets down.
    fn finish(&mut self, _ctx: &mut Ctx) {}
}

/// Run `w` until its bounds, the stop flag, or the end of its flows.
pub(super) fn drive<W: Workload>(w: &mut W, ctx: &mut Ctx, b: Bounds) -> io::Result<()> {
    // The workload and its buffers exist: now wait for a scheduled start.
    ctx.await_start();
    let mut idle_since: Option<Instant> = None;
    loop {
        let now = Instant::now();
        ctx.tick(now);
        if now >= b.until || ctx.stopped() || w.done() {
            break;
        }
        let pass = w.pass(ctx, now)?;
        if pass.progressed || w.done() {
            idle_since = None;
            continue;
        }
        if !b.busy.is_zero() {
            let since = *idle_since.get_or_insert(now);
            if now.duration_since(since) < b.busy {
                continue;
            }
        }
        match pass.idle {
            Idle::Again => {}
            Idle::Sleep(d) => std::thread::sleep(ctx.until_mark(now, d)),
            Idle::Poll if !b.single => {
                let tmo = ctx.until_mark(now, TICK);
                let ms = tmo.as_micros().div_ceil(1000).min(100) as i32;
                sys::poll(w.pollfds(), ms)?;
            }
            Idle::Due(due) if !b.single => {
                let mut tmo = ctx.until_mark(now, TICK);
                if let Some(d) = due {
                    tmo = tmo.min(d.saturating_duration_since(now));
                }
                if tmo >= SPIN_BELOW {
                    sys::ppoll(w.pollfds(), tmo - SPIN_BELOW / 2)?;
                }
            }
            Idle::Poll | Idle::Due(_) => {}
        }
    }
    w.finish(ctx);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FlowDir, TestConfig};
    use crate::report::Role;
    use crate::worker::Timing;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// Records the thread's policy when it is built (its buffers
    /// allocated) and at each pass.
    struct Probe {
        built_fifo: bool,
        passes: Vec<bool>,
    }

    impl Workload for Probe {
        fn pass(&mut self, _ctx: &mut Ctx, _now: Instant) -> io::Result<Pass> {
            self.passes.push(sys::sched::is_fifo().unwrap_or(false));
            Ok(Pass::new(true, Idle::Again))
        }
        fn done(&self) -> bool {
            self.passes.len() >= 3
        }
    }

    /// Issue 35: a scheduled start runs under SCHED_FIFO only for the wait
    /// and the first send, never while the workload allocates.
    #[test]
    fn fifo_only_for_the_wait_and_the_first_send() {
        let probe_thread = std::thread::spawn(|| {
            if sys::sched::set_fifo(1).is_err() {
                return None;
            }
            let _ = sys::sched::set_normal();
            let at = Instant::now() + Duration::from_millis(50);
            let cfg = TestConfig::default();
            let (tx, _rx) = std::sync::mpsc::channel();
            let mut ctx = Ctx::new(
                (0, Role::Send, FlowDir::Forward, None),
                Timing::new(&cfg, at),
                Arc::new(AtomicBool::new(false)),
                tx,
            )
            .scheduled_start(at, Arc::default());
            let mut w = Probe {
                built_fifo: sys::sched::is_fifo().unwrap_or(true),
                passes: Vec::new(),
            };
            let b = Bounds {
                until: at + Duration::from_secs(60),
                single: true,
                busy: Duration::ZERO,
            };
            drive(&mut w, &mut ctx, b).unwrap();
            Some((w, ctx.realtime()))
        });
        let Some((w, still)) = probe_thread.join().unwrap() else {
            eprintln!("skipped: SCHED_FIFO needs CAP_SYS_NICE");
            return;
        };
        assert!(!w.built_fifo, "allocated under SCHED_FIFO");
        assert_eq!(w.passes, [true, false, false]);
        assert!(!still);
    }
}
