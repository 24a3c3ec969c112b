//! Which worker thread of each end was busiest, and whether it limited the run.

use super::Role;
use super::SideReport;
use super::{BOUND_MARGIN_PCT, SHARED_CPU_PCT, THREAD_BOUND_PCT};
use crate::bench::config::{End, FlowDir};
use serde::{Deserialize, Serialize};

/// The busiest worker thread of each end in one direction over the measured
/// window. A thread near 100 % limits the direction: e.g. a stream receiver
/// that runs the kernel's TCP receive path in its own context (the socket
/// backlog) while the sender's thread waits, or a sender whose CPU also runs
/// the receive softirq. Threads pinned to one CPU share it, so neither
/// reaches the mark: then no thread alone limits the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadLoad {
    /// The client's busiest thread of the direction.
    pub client: Option<ThreadBusy>,
    /// The server's busiest thread of the direction.
    pub server: Option<ThreadBusy>,
    /// The end (`client` or `server`) whose thread was at least
    /// [`THREAD_BOUND_PCT`] busy and [`BOUND_MARGIN_PCT`] points busier than
    /// the other end's; never when both ends' threads share one pinned CPU.
    pub bound: Option<End>,
}

/// What limited a direction, read from its busiest threads
/// ([`ThreadLoad::verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadVerdict {
    /// One end's thread: `end`'s thread doing `role`.
    Thread {
        /// The end whose thread limits.
        end: End,
        /// What that thread does.
        role: Role,
    },
    /// Both ends' threads pinned to this CPU, kept busy together.
    SharedCpu(u32),
    /// No thread alone limits the direction.
    NoSingleThread,
}

impl std::fmt::Display for ThreadVerdict {
    /// `the server's recv thread`, `CPU 0, shared by both threads`,
    /// `no single thread`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThreadVerdict::Thread { end, role } => {
                write!(f, "the {}'s {} thread", end.name(), role.name())
            }
            ThreadVerdict::SharedCpu(cpu) => write!(f, "CPU {cpu}, shared by both threads"),
            ThreadVerdict::NoSingleThread => f.write_str("no single thread"),
        }
    }
}

/// One worker thread's share of the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThreadBusy {
    /// What the thread does (`send`, `recv`, `request`, `respond`).
    pub role: Role,
    /// Its user + system CPU time over the window's length, %.
    pub busy_pct: f64,
    /// The CPU it was pinned to (`--cpus`), if any.
    #[serde(default)]
    pub cpu: Option<u32>,
}

impl ThreadLoad {
    /// The busiest thread of `dir` on each end, from both ends' worker
    /// reports over a window of `seconds`; `None` without a window or
    /// without a worker of the direction on either end.
    pub fn of(
        dir: FlowDir,
        client: &SideReport,
        server: &SideReport,
        seconds: f64,
    ) -> Option<Self> {
        if !(seconds.is_finite() && seconds > 0.0) {
            return None;
        }
        let busiest = |r: &SideReport| {
            r.workers
                .iter()
                .filter(|w| w.dir == Some(dir))
                .filter_map(|w| {
                    let cpu_us = w.user_us.saturating_add(w.sys_us);
                    (cpu_us > 0).then_some(())?;
                    Some(ThreadBusy {
                        role: w.role?,
                        busy_pct: cpu_us as f64 / (seconds * 1e6) * 100.0,
                        cpu: w.cpu,
                    })
                })
                .max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct))
        };
        let (client, server) = (busiest(client), busiest(server));
        if client.is_none() && server.is_none() {
            return None;
        }
        let pct = |t: Option<ThreadBusy>| t.map_or(0.0, |t| t.busy_pct);
        let (c, s) = (pct(client), pct(server));
        let mut load = ThreadLoad {
            client,
            server,
            bound: None,
        };
        let limits = |a: f64, b: f64| a >= THREAD_BOUND_PCT && a - b >= BOUND_MARGIN_PCT;
        if load.shared_cpu().is_none() {
            if limits(c, s) {
                load.bound = Some(End::Client);
            } else if limits(s, c) {
                load.bound = Some(End::Server);
            }
        }
        Some(load)
    }

    /// What limited the direction: the bound end's thread, else a CPU both
    /// ends' threads shared, else no single thread.
    pub fn verdict(&self) -> ThreadVerdict {
        let thread = self.bound.and_then(|end| {
            match end {
                End::Client => self.client,
                End::Server => self.server,
            }
            .map(|t| ThreadVerdict::Thread { end, role: t.role })
        });
        thread
            .or_else(|| self.shared_cpu().map(ThreadVerdict::SharedCpu))
            .unwrap_or(ThreadVerdict::NoSingleThread)
    }

    /// The CPU both ends' threads were pinned to, when it is one and they
    /// kept it at least [`SHARED_CPU_PCT`] busy together.
    pub fn shared_cpu(&self) -> Option<u32> {
        let (c, s) = (self.client?, self.server?);
        let cpu = c.cpu.filter(|cpu| s.cpu == Some(*cpu))?;
        (c.busy_pct + s.busy_pct >= SHARED_CPU_PCT).then_some(cpu)
    }
}
