//! What the experiment runner needs from the hosts it runs on, as one trait,
//! so the runner can be tested against a fake (as trippy tests its tracer)
//! and run for real in a lab of namespaces (`NetnsExecutor`, which runs the
//! `nettune` binary inside each namespace) or on a fleet's agents
//! (`fleet::executor::FleetExecutor`, one agent session per host).
//!
//! Every call is bounded by a deadline and returns a typed value: each
//! executor reads the hostile text it receives (a child's stdout, an agent's
//! answer) into the type once, and a text that is not that type is
//! [`ExecError::Malformed`] naming the call and the host.

use model::bench::result::BenchResult;
use model::drops::run::RunDrops;
use model::findings::Report;
use model::plan::Plan;
use model::snapshot::HostSnapshot;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

/// A host of the experiment: an index into the executor's hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostId(pub usize);

impl fmt::Display for HostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "h{}", self.0)
    }
}

/// An executor call that failed.
#[derive(Debug, Error)]
pub enum ExecError {
    /// No such host.
    #[error("no host {0}")]
    NoHost(HostId),
    /// The command ran and failed; `what` names it (`bench on h0 to h1`).
    #[error("{what} failed (exit {code:?}): {stderr}")]
    Failed {
        /// Which call, on which host.
        what: String,
        /// Exit code, `None` when killed.
        code: Option<i32>,
        /// Its stderr, trimmed and bounded.
        stderr: String,
    },
    /// The call's answer is not the type it promises (`what` names the call
    /// and the host: `doctor on h1`).
    #[error("{what}: its JSON did not parse: {source}")]
    Malformed {
        /// Which call, on which host.
        what: String,
        /// Where and why it did not parse.
        #[source]
        source: serde_json::Error,
    },
    /// The command was refused for want of privileges: `nettune apply`
    /// exited with [`EXIT_NOT_ROOT`] (or the agent answered its kind).
    #[error("{what}: needs root: {reason}")]
    NotRoot {
        /// Which call, on which host.
        what: String,
        /// What the command said.
        reason: String,
    },
    /// The deadline passed; the command was killed.
    #[error("{what} did not finish within {after:?}")]
    Timeout {
        /// Which call.
        what: String,
        /// The deadline.
        after: Duration,
    },
    /// The host cannot take the change (a knob it lacks, a congestion control
    /// not available); the cell becomes n/a with this reason.
    #[error("{reason}")]
    NotApplicable {
        /// Why, as a kind.
        kind: NotApplicableKind,
        /// Why, in words (the command's stderr, or a sentence naming the host).
        reason: String,
    },
    /// The run was cancelled (Ctrl-C).
    #[error("cancelled")]
    Cancelled,
    /// A host's agent went away mid-run (its pipe closed, its process was
    /// killed): the run cannot go on, and whatever the current cell applied
    /// on that host stays applied there (the runner stops with
    /// [`RunError::HostLost`](crate::RunError::HostLost)).
    #[error("host {host} was lost: {reason}")]
    HostLost {
        /// The host's name ([`Executor::host_name`]).
        host: String,
        /// What was seen (the closed pipe and the agent's last words).
        reason: String,
    },
    /// Starting the command or reading its output failed.
    #[error("{what}: {source}")]
    Io {
        /// Which call.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Setting up or tearing down the hosts failed (a lab's namespaces).
    #[error(transparent)]
    Setup(Box<dyn std::error::Error + Send + Sync>),
}

/// Why a host cannot take a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotApplicableKind {
    /// A knob the change writes is absent on the host (`nettune apply`
    /// found no such sysctl or `/sys` file).
    KnobAbsent,
    /// The host is only measured (the loopback benchmark): nothing is
    /// applied there.
    MeasureOnly,
    /// A level of the experiment's cell cannot be made on the host (a
    /// congestion control it lacks, a queue count it does not have).
    Level,
}

/// What an [`ExecError`] is, for callers that act on the kind rather than
/// the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A knob the change writes is absent on the host.
    KnobAbsent,
    /// The command was refused for want of privileges (`Permission denied`,
    /// `Operation not permitted`, "needs root").
    NotRoot,
    /// The deadline passed and the command was killed.
    TimedOut,
    /// Ctrl-C.
    Cancelled,
    /// A host's agent went away mid-run.
    HostLost,
    /// The host cannot take the change for another reason.
    NotApplicable,
    /// Anything else.
    Other,
}

impl ExecError {
    /// The [`NotApplicable`](ExecError::NotApplicable) error of `kind`.
    pub fn not_applicable(kind: NotApplicableKind, reason: impl Into<String>) -> ExecError {
        ExecError::NotApplicable {
            kind,
            reason: reason.into(),
        }
    }

    /// What this error is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ExecError::NotApplicable {
                kind: NotApplicableKind::KnobAbsent,
                ..
            } => ErrorKind::KnobAbsent,
            ExecError::NotApplicable { .. } => ErrorKind::NotApplicable,
            ExecError::Timeout { .. } => ErrorKind::TimedOut,
            ExecError::Cancelled => ErrorKind::Cancelled,
            ExecError::HostLost { .. } => ErrorKind::HostLost,
            ExecError::NotRoot { .. } => ErrorKind::NotRoot,
            ExecError::Io { source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                ErrorKind::NotRoot
            }
            _ => ErrorKind::Other,
        }
    }
}

/// `nettune apply`'s exit status when a knob the plan writes is absent on
/// the host (no such sysctl, `/sys` file or module parameter); nothing of
/// the plan stays applied. Documented in `nettune apply`'s EXIT STATUS.
pub const EXIT_KNOB_ABSENT: u8 = host::apply::EXIT_KNOB_ABSENT;

/// `nettune apply`'s exit status when a write was refused for want of
/// privileges (not root, `Permission denied`, `Operation not permitted`).
pub const EXIT_NOT_ROOT: u8 = host::apply::EXIT_NOT_ROOT;

/// The error of a `nettune apply` that exited with `code`: the typed kinds
/// of [`EXIT_KNOB_ABSENT`] and [`EXIT_NOT_ROOT`], else
/// [`ExecError::Failed`]. `what` names the call and host, `stderr` is what
/// the command said (kept as the reason, never read for the kind).
pub fn apply_failed(what: String, code: Option<i32>, stderr: String) -> ExecError {
    match code {
        Some(c) if c == i32::from(EXIT_KNOB_ABSENT) => {
            ExecError::not_applicable(NotApplicableKind::KnobAbsent, stderr)
        }
        Some(c) if c == i32::from(EXIT_NOT_ROOT) => ExecError::NotRoot {
            what,
            reason: stderr,
        },
        code => ExecError::Failed { what, code, stderr },
    }
}

/// `text` read as a `T`; [`ExecError::Malformed`] naming `what` (the call
/// and host) when it is not one.
pub fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, ExecError> {
    serde_json::from_str(text).map_err(|source| ExecError::Malformed {
        what: what.to_string(),
        source,
    })
}

/// A bench result as `nettune bench --json` prints it (pretty, a newline
/// at the end): the text of the runner's raw run files.
pub fn bench_text(b: &BenchResult) -> String {
    let mut s = serde_json::to_string_pretty(b).unwrap_or_default();
    s.push('\n');
    s
}

/// The operations the runner performs on hosts.
pub trait Executor {
    /// Number of hosts.
    fn hosts(&self) -> usize;

    /// Name of a host for messages and results (its namespace name).
    fn host_name(&self, host: HostId) -> String;

    /// `nettune bench ARGS --json` run on `client` against the server on
    /// `server` (the executor adds the address and `--json`); returns the
    /// bench result.
    fn bench(
        &mut self,
        client: HostId,
        server: HostId,
        args: &[String],
        deadline: Duration,
    ) -> Result<BenchResult, ExecError>;

    /// `nettune inspect --json` on `host`: its snapshot.
    fn inspect(&mut self, host: HostId) -> Result<HostSnapshot, ExecError>;

    /// `nettune doctor ARGS --json` on `host`: its report (doctor's
    /// severity exit codes 0..=2 are not failures).
    fn doctor(&mut self, host: HostId, args: &[String]) -> Result<Report, ExecError>;

    /// `nettune plan ARGS --json` on `host`: the plan.
    fn plan(&mut self, host: HostId, args: &[String]) -> Result<Plan, ExecError>;

    /// Apply `plan` on `host` through the journal of that host's state
    /// directory. A change the host refuses because it lacks the knob is
    /// [`ExecError::NotApplicable`] of kind [`NotApplicableKind::KnobAbsent`];
    /// one refused for want of privileges is [`ExecError::NotRoot`].
    fn apply(&mut self, host: HostId, plan: &Plan) -> Result<(), ExecError>;

    /// Roll back, on `host`, everything applied since the last rollback.
    fn rollback(&mut self, host: HostId) -> Result<(), ExecError>;

    /// Start recording drops by reason for one run of `client` against
    /// `server`, once per kernel the two use; [`DropsWatch::finish`] ends
    /// it when the run ends. A host that cannot be watched gives its line
    /// (by default every host's is [`NOT_RECORDED`]): the run goes on.
    fn watch_drops(&mut self, client: HostId, server: HostId) -> Box<dyn DropsWatch> {
        let mut hosts = vec![self.host_name(client)];
        if server != client {
            hosts.push(self.host_name(server));
        }
        Box::new(NotRecorded(hosts))
    }
}

/// One run's drops recording, from [`Executor::watch_drops`].
pub trait DropsWatch {
    /// Stop: per kernel, the run's drops by reason or why none.
    fn finish(self: Box<Self>) -> Vec<RunDrops>;
}

/// The reason of an executor that records no drops.
pub const NOT_RECORDED: &str =
    "drops by reason: not recorded on this host (its executor does not watch them)";

/// No recording: each host's entry says [`NOT_RECORDED`].
#[derive(Debug)]
pub struct NotRecorded(pub Vec<String>);

impl DropsWatch for NotRecorded {
    fn finish(self: Box<Self>) -> Vec<RunDrops> {
        self.0
            .into_iter()
            .map(|h| RunDrops::unavailable(h, NOT_RECORDED))
            .collect()
    }
}

/// The `host` of drops counted by this machine's kernel for hosts that
/// share it (a lab's namespaces).
pub const THIS_MACHINE: &str = "this machine";

/// The live host's watcher ([`host::drops_run`]), for executors whose
/// hosts share this machine's kernel (a lab's namespaces): one entry,
/// named `host`.
#[derive(Debug)]
pub struct LocalDrops {
    host: String,
    watch: host::drops_run::RunWatch,
}

impl LocalDrops {
    /// Start watching this machine's kernel.
    pub fn start(host: impl Into<String>) -> LocalDrops {
        LocalDrops {
            host: host.into(),
            watch: host::drops_run::watch_run(&host::Root::live()),
        }
    }
}

impl DropsWatch for LocalDrops {
    fn finish(self: Box<Self>) -> Vec<RunDrops> {
        vec![RunDrops::of(self.host, &self.watch.finish())]
    }
}

/// `nettune doctor --json` of `host`, typed. Text that is not a report is
/// [`ExecError::Malformed`] naming the host.
pub fn parse_report(host: HostId, text: &str) -> Result<Report, ExecError> {
    parse(&format!("doctor on {host}"), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds() {
        let failed = |stderr: &str| ExecError::Failed {
            what: "apply on h1".into(),
            code: Some(1),
            stderr: stderr.into(),
        };
        assert_eq!(
            ExecError::not_applicable(NotApplicableKind::KnobAbsent, "x").kind(),
            ErrorKind::KnobAbsent
        );
        assert_eq!(
            ExecError::not_applicable(NotApplicableKind::Level, "x").kind(),
            ErrorKind::NotApplicable
        );
        // The kind comes from the exit code, never from the words.
        assert_eq!(
            failed("nettune: /proc/sys/net/core/rmem_max: Permission denied").kind(),
            ErrorKind::Other
        );
        let by_code = |code: u8| apply_failed("apply on h1".into(), Some(code.into()), "x".into());
        assert_eq!(by_code(EXIT_NOT_ROOT).kind(), ErrorKind::NotRoot);
        assert_eq!(by_code(EXIT_KNOB_ABSENT).kind(), ErrorKind::KnobAbsent);
        assert_eq!(by_code(1).kind(), ErrorKind::Other);
        assert_eq!(
            apply_failed("apply on h1".into(), None, "killed".into()).kind(),
            ErrorKind::Other
        );
        assert_eq!(
            failed("nettune: the plan is refused").kind(),
            ErrorKind::Other
        );
        let t = ExecError::Timeout {
            what: "bench".into(),
            after: Duration::from_secs(1),
        };
        assert_eq!(t.kind(), ErrorKind::TimedOut);
        assert_eq!(ExecError::Cancelled.kind(), ErrorKind::Cancelled);
        let lost = ExecError::HostLost {
            host: "web1".into(),
            reason: "the agent pipe closed".into(),
        };
        assert_eq!(lost.kind(), ErrorKind::HostLost);
        assert_eq!(
            lost.to_string(),
            "host web1 was lost: the agent pipe closed"
        );
        // The message stays the reason alone, as the n/a cells print it.
        assert_eq!(
            ExecError::not_applicable(NotApplicableKind::KnobAbsent, "tcp_nosuch: not found")
                .to_string(),
            "tcp_nosuch: not found"
        );
        let m = parse_report(HostId(1), "null").unwrap_err().to_string();
        assert!(m.starts_with("doctor on h1: its JSON did not parse"), "{m}");
    }
}
