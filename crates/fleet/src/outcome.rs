//! What a fleet command reports per host ([`HostReport`], [`Outcome`]),
//! where `apply`'s plan comes from, and the helpers the commands share to
//! name a host's failure. Apart from `ops` so that `apply` and `ops` do not
//! use each other.

use crate::fanout::{Failure, Job, Options, Session};
use crate::proto::Request;
use serde::Serialize;
use serde_json::Value;

/// Where a plan for `apply` comes from.
#[derive(Debug, Clone)]
pub enum PlanFrom {
    /// Each host plans `profile` (`--bdp`) on itself, then applies that plan.
    Profile {
        /// The profile.
        profile: String,
        /// `--bdp`.
        bdp: Option<String>,
    },
    /// One `plan --json` document for every host.
    Document(Value),
}

/// A host's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The command ran (doctor's findings are not failures).
    Ok,
    /// `verify`: some knob drifted.
    Drift,
    /// The host failed (unreachable, refused, the command failed).
    Failed,
    /// `apply` failed and this host's generation was rolled back.
    RolledBack,
    /// `apply` failed and its rollback failed too: the host needs a look.
    RollbackFailed,
    /// `apply --dry-run`, or an apply not confirmed: this host's changes were
    /// shown and nothing was written.
    NotApplied,
}

impl Outcome {
    /// Whether the host counts as failed.
    pub fn failed(self) -> bool {
        !matches!(self, Outcome::Ok | Outcome::Drift | Outcome::NotApplied)
    }
    /// The word in the table.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Drift => "drift",
            Outcome::Failed => "failed",
            Outcome::RolledBack => "failed, rolled back",
            Outcome::RollbackFailed => "failed, rollback failed",
            Outcome::NotApplied => "not applied",
        }
    }
}

/// Findings of a doctor report by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Findings {
    /// `critical`.
    pub critical: u32,
    /// `warning`.
    pub warning: u32,
    /// `info`.
    pub info: u32,
}

/// What happened on one host.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    /// Inventory name.
    pub host: String,
    /// The transport ([`crate::Transport::describe`]).
    pub transport: String,
    /// The outcome.
    pub outcome: Outcome,
    /// The exit status the command gave on the host (absent when it did not answer).
    pub code: Option<u8>,
    /// `doctor`: findings by severity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<Findings>,
    /// `verify`: the drifted knobs (`knob target`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drifted: Option<Vec<String>>,
    /// Why it failed.
    pub error: Option<Failure>,
    /// The command's document (`--json` of the single-host command).
    pub result: Option<Value>,
    /// `apply` on a failed host: the rollback document, when one was requested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollback: Option<Value>,
    /// `apply`: the plan's changes for this host, checked before it was
    /// sent (`KNOB TARGET: BEFORE -> AFTER`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<String>>,
}

impl HostReport {
    /// A report of `job` that failed until something says otherwise.
    pub(crate) fn new(job: &Job, opts: &Options) -> HostReport {
        HostReport {
            host: job.host.clone(),
            transport: crate::fanout::transport_of(&job.transport, &opts.exe, None).describe(),
            outcome: Outcome::Failed,
            code: None,
            findings: None,
            drifted: None,
            error: None,
            result: None,
            rollback: None,
            changes: None,
        }
    }

    /// The host as its errors name it: the inventory name, then the
    /// transport ([`crate::transport::host_label`]).
    pub fn label(&self) -> String {
        crate::transport::host_label(&self.host, &self.transport)
    }

    /// `message` without a leading `LABEL: ` of this host, for a failure
    /// quoted inside another that names the host already.
    pub(crate) fn detail<'a>(&self, message: &'a str) -> &'a str {
        message
            .strip_prefix(&self.label())
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(message)
    }

    /// The one line that says why this host failed: its label (name and
    /// transport) once, the outcome, then the error without the label it
    /// starts with (printable, capped).
    pub fn failure_line(&self) -> String {
        let why = self.error.as_ref().map_or("", |e| self.detail(&e.message));
        format!(
            "{} {}: {}",
            model::text::printable_capped(&self.label(), 200),
            self.outcome.word(),
            model::text::printable_capped(why, 2000)
        )
    }

    /// A report of `host` on a local pipe with `outcome` and exit status
    /// `code`, nothing else (tests).
    #[cfg(test)]
    pub(crate) fn local(host: &str, outcome: Outcome, code: u8) -> HostReport {
        HostReport {
            host: host.into(),
            transport: "local".into(),
            outcome,
            code: Some(code),
            findings: None,
            drifted: None,
            error: None,
            result: None,
            rollback: None,
            changes: None,
        }
    }
}

/// `plan --profile PROFILE [--bdp]` on the job's root.
pub(crate) fn plan_request(profile: &str, bdp: Option<&String>, job: &Job) -> Request {
    Request::Plan {
        profile: profile.to_string(),
        root: job.root.clone(),
        iface: Vec::new(),
        cpus: None,
        exclude_cpus: None,
        bdp: bdp.cloned(),
    }
}

pub(crate) fn remote(s: &Session, what: &str, why: String) -> Failure {
    Failure {
        kind: "remote",
        message: format!("{}: {what}: {why}", s.name()),
    }
}

pub(crate) fn doc_error(v: &Value) -> String {
    v.get("error")
        .and_then(Value::as_str)
        .unwrap_or("failed")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::{HostReport, Outcome};
    use crate::fanout::Failure;

    fn failed(message: &str) -> HostReport {
        let mut r = HostReport::local("server", Outcome::Failed, 1);
        r.transport = "guest /tmp/g/agent.sock".into();
        r.error = Some(Failure {
            kind: "transport",
            message: message.into(),
        });
        r
    }

    #[test]
    fn a_failed_host_is_named_once_on_its_line() {
        let r = failed("server (guest /tmp/g/agent.sock): cannot reach the guest's agent");
        assert_eq!(
            r.failure_line(),
            "server (guest /tmp/g/agent.sock) failed: cannot reach the guest's agent"
        );
        // a message that does not start with the label is kept whole
        let r = failed("the agent's version 0.1 is not this controller's");
        assert_eq!(
            r.failure_line(),
            "server (guest /tmp/g/agent.sock) failed: the agent's version 0.1 is not this controller's"
        );
    }
}
