//! What the experiment runner needs from the hosts it runs on, as one trait,
//! so the runner can be tested against a fake (as trippy tests its tracer)
//! and run for real in a lab of namespaces (`NetnsExecutor`, which runs the
//! `nettune` binary inside each namespace) or on a fleet's agents
//! (`fleet::executor::FleetExecutor`, one agent session per host).
//!
//! Every call is bounded by a deadline; texts returned are the JSON the
//! corresponding `nettune ... --json` command prints, treated as hostile
//! input by the caller.

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
            ExecError::Failed { stderr, .. } if refused_for_privileges(stderr) => {
                ErrorKind::NotRoot
            }
            ExecError::Io { source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                ErrorKind::NotRoot
            }
            _ => ErrorKind::Other,
        }
    }
}

/// Whether a `nettune` command's stderr says a knob it writes is absent
/// (the one place the lab reads that from text: `nettune apply` has no
/// exit code of its own for it).
pub fn knob_absent(stderr: &str) -> bool {
    stderr.contains("not found") || stderr.contains("No such file or directory")
}

/// Whether a command's stderr says it was refused for want of privileges.
pub fn refused_for_privileges(stderr: &str) -> bool {
    ["Permission denied", "Operation not permitted", "needs root"]
        .iter()
        .any(|p| stderr.contains(p))
}

/// The operations the runner performs on hosts.
pub trait Executor {
    /// Number of hosts.
    fn hosts(&self) -> usize;

    /// Name of a host for messages and results (its namespace name).
    fn host_name(&self, host: HostId) -> String;

    /// `nettune bench ARGS --json` run on `client` against the server on
    /// `server` (the executor adds the address and `--json`); returns the
    /// bench JSON text.
    fn bench(
        &mut self,
        client: HostId,
        server: HostId,
        args: &[String],
        deadline: Duration,
    ) -> Result<String, ExecError>;

    /// `nettune inspect --json` on `host`: the host snapshot JSON text.
    fn inspect(&mut self, host: HostId) -> Result<String, ExecError>;

    /// `nettune doctor ARGS --json` on `host`; returns its JSON text (doctor's
    /// severity exit codes 0..=2 are not failures).
    fn doctor(&mut self, host: HostId, args: &[String]) -> Result<String, ExecError>;

    /// [`Executor::doctor`] read into doctor's typed report; text that is
    /// not a report is [`ExecError::Failed`] naming the host.
    fn doctor_report(
        &mut self,
        host: HostId,
        args: &[String],
    ) -> Result<model::findings::Report, ExecError> {
        let text = self.doctor(host, args)?;
        parse_report(host, &text)
    }

    /// `nettune plan ARGS --json` on `host`; returns the plan JSON text.
    fn plan(&mut self, host: HostId, args: &[String]) -> Result<String, ExecError>;

    /// Apply a plan (the `nettune plan --json` shape) on `host` through the
    /// journal of that host's state directory. A change the host refuses
    /// because it lacks the knob is [`ExecError::NotApplicable`] of kind
    /// [`NotApplicableKind::KnobAbsent`].
    fn apply(&mut self, host: HostId, plan_json: &str) -> Result<(), ExecError>;

    /// Roll back, on `host`, everything applied since the last rollback.
    fn rollback(&mut self, host: HostId) -> Result<(), ExecError>;
}

/// `nettune doctor --json` of `host`, typed. Text that is not a report is
/// [`ExecError::Failed`] naming the host.
pub fn parse_report(host: HostId, text: &str) -> Result<model::findings::Report, ExecError> {
    serde_json::from_str(text).map_err(|e| ExecError::Failed {
        what: format!("doctor on {host}"),
        code: None,
        stderr: format!("its JSON did not parse: {e}"),
    })
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
        assert_eq!(
            failed("nettune: /proc/sys/net/core/rmem_max: Permission denied").kind(),
            ErrorKind::NotRoot
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
        assert!(knob_absent("open /proc/sys/x: No such file or directory"));
        assert!(!knob_absent("Permission denied"));
    }
}
