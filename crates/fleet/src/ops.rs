//! The fleet commands on one host and on all of them: each host's outcome,
//! its document, and the summary columns (findings by severity, drifted
//! knobs). `apply` rolls back a host whose apply failed, on that host only.

use crate::fanout::{fan_out, Failure, Options, Session};
use crate::proto::Request;
use model::inventory::Transport as InvTransport;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;

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

/// A fleet command.
#[derive(Debug, Clone)]
pub enum Op {
    /// `inspect`.
    Inspect,
    /// `doctor` (`--sample` only without a root).
    Doctor {
        /// `--sample` seconds.
        seconds: Option<f64>,
        /// `--profile`.
        profile: Option<String>,
        /// `--bdp`.
        bdp: Option<String>,
    },
    /// `plan`.
    Plan {
        /// `--profile`.
        profile: String,
        /// `--bdp`.
        bdp: Option<String>,
    },
    /// `apply` (a failed host is rolled back).
    Apply {
        /// The plan.
        plan: PlanFrom,
        /// `--force`.
        force: bool,
    },
    /// `rollback [--to GEN]`.
    Rollback {
        /// The generation to roll back to.
        to: Option<u32>,
        /// `--force`.
        force: bool,
    },
    /// `verify`.
    Verify,
    /// `history`.
    History,
}

/// One host to reach: its name, transport and per-host `--root`/`--state-dir`.
#[derive(Debug, Clone)]
pub struct Job {
    /// Inventory name.
    pub host: String,
    /// How to reach it.
    pub transport: InvTransport,
    /// `--root` on that host.
    pub root: Option<PathBuf>,
    /// `--state-dir` on that host.
    pub state_dir: Option<PathBuf>,
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
}

impl Outcome {
    /// Whether the host counts as failed.
    pub fn failed(self) -> bool {
        !matches!(self, Outcome::Ok | Outcome::Drift)
    }
    /// The word in the table.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Drift => "drift",
            Outcome::Failed => "failed",
            Outcome::RolledBack => "failed, rolled back",
            Outcome::RollbackFailed => "failed, rollback failed",
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
}

/// Run `op` on every job (at most `opts.parallel` at once); reports in job order.
pub fn run(jobs: &[Job], op: &Op, opts: &Options) -> Vec<HostReport> {
    fan_out(jobs, opts.parallel, |j| run_host(j, op, opts))
}

/// Run `op` on one host.
pub fn run_host(job: &Job, op: &Op, opts: &Options) -> HostReport {
    let mut rep = HostReport {
        host: job.host.clone(),
        transport: crate::fanout::transport_of(&job.transport, &opts.exe).describe(),
        outcome: Outcome::Failed,
        code: None,
        findings: None,
        drifted: None,
        error: None,
        result: None,
        rollback: None,
    };
    let mut s = match Session::connect(&job.transport, opts) {
        Ok(s) => s,
        Err(f) => {
            rep.error = Some(f);
            return rep;
        }
    };
    let res = match op {
        Op::Apply { plan, force } => return apply(s, job, plan, *force, opts, rep),
        _ => s.json(&request(op, job)),
    };
    match res {
        Ok((v, code)) => {
            rep.code = Some(code);
            rep.outcome = Outcome::Ok;
            if let Op::Doctor { .. } = op {
                rep.findings = Some(findings(&v));
            }
            if let Op::Verify = op {
                let d = drifted(&v);
                if !d.is_empty() {
                    rep.outcome = Outcome::Drift;
                }
                rep.drifted = Some(d);
            }
            if let Op::Rollback { .. } = op {
                if code != 0 {
                    rep.outcome = Outcome::Failed;
                    rep.error = Some(remote(&s, "rollback", doc_error(&v)));
                }
            }
            rep.result = Some(v);
        }
        Err(f) => rep.error = Some(f),
    }
    rep
}

/// The request of a command other than `apply`.
fn request(op: &Op, job: &Job) -> Request {
    let (root, state_dir) = (job.root.clone(), job.state_dir.clone());
    match op {
        Op::Inspect => Request::Inspect {
            root,
            iface: Vec::new(),
        },
        Op::Doctor {
            seconds,
            profile,
            bdp,
        } => Request::Doctor {
            seconds: if root.is_some() { None } else { *seconds },
            root,
            profile: profile.clone(),
            bdp: bdp.clone(),
            allowance: None,
        },
        Op::Plan { profile, bdp }
        | Op::Apply {
            plan: PlanFrom::Profile { profile, bdp },
            ..
        } => Request::Plan {
            profile: profile.clone(),
            root,
            iface: Vec::new(),
            cpus: None,
            exclude_cpus: None,
            bdp: bdp.clone(),
        },
        Op::Apply {
            plan: PlanFrom::Document(_),
            ..
        }
        | Op::History => Request::History { root, state_dir },
        Op::Rollback { to, force } => Request::Rollback {
            root,
            state_dir,
            id: *to,
            force: *force,
        },
        Op::Verify => Request::Verify { root, state_dir },
    }
}

fn remote(s: &Session, what: &str, why: String) -> Failure {
    Failure {
        kind: "remote",
        message: format!("{}: {what}: {why}", s.name()),
    }
}

fn doc_error(v: &Value) -> String {
    v.get("error")
        .and_then(Value::as_str)
        .unwrap_or("failed")
        .to_string()
}

/// The newest generation of a `history` document and whether it was rolled back.
fn newest(history: &Value) -> Option<(u64, bool)> {
    history
        .get("generations")?
        .as_array()?
        .iter()
        .filter_map(|g| {
            let id = g.get("generation")?.as_u64()?;
            let back = g.get("rolled_back_at").is_some_and(|r| !r.is_null());
            Some((id, back))
        })
        .max_by_key(|(id, _)| *id)
}

/// Plan (when by profile), apply; on failure roll back this apply's
/// generation if the apply itself did not.
fn apply(
    mut s: Session,
    job: &Job,
    from: &PlanFrom,
    force: bool,
    opts: &Options,
    mut rep: HostReport,
) -> HostReport {
    let plan = match from {
        PlanFrom::Document(v) => v.clone(),
        PlanFrom::Profile { .. } => {
            let q = request(
                &Op::Apply {
                    plan: from.clone(),
                    force,
                },
                job,
            );
            match s.json(&q) {
                Ok((v, _)) => v,
                Err(f) => {
                    rep.error = Some(f);
                    return rep;
                }
            }
        }
    };
    let hist = Request::History {
        root: job.root.clone(),
        state_dir: job.state_dir.clone(),
    };
    // The newest generation before: a failed apply's is newer.
    let before = match s.json(&hist) {
        Ok((v, _)) => newest(&v).map(|(id, _)| id),
        Err(f) => {
            rep.error = Some(f);
            return rep;
        }
    };
    let q = Request::Apply {
        plan,
        root: job.root.clone(),
        state_dir: job.state_dir.clone(),
        force,
        replan: false,
    };
    let failure = match s.json(&q) {
        Ok((v, 0)) => {
            rep.code = Some(0);
            rep.outcome = Outcome::Ok;
            rep.result = Some(v);
            return rep;
        }
        Ok((v, code)) => {
            rep.code = Some(code);
            let f = remote(&s, "apply", "stopped after a channel change".into());
            rep.result = Some(v);
            f
        }
        Err(f) => f,
    };
    rep.error = Some(failure);
    // A fresh session (the old one may have timed out) with a fresh deadline.
    drop(s);
    let mut s = match Session::connect(&job.transport, opts) {
        Ok(s) => s,
        Err(_) => {
            rep.outcome = Outcome::RollbackFailed;
            return rep;
        }
    };
    let now = match s.json(&hist) {
        Ok((v, _)) => newest(&v),
        Err(_) => {
            rep.outcome = Outcome::RollbackFailed;
            return rep;
        }
    };
    match now {
        // No new generation: nothing was written.
        Some((id, _)) if Some(id) == before => rep.outcome = Outcome::Failed,
        None => rep.outcome = Outcome::Failed,
        // The apply rolled itself back.
        Some((_, true)) => rep.outcome = Outcome::RolledBack,
        Some((id, false)) => {
            let q = Request::Rollback {
                root: job.root.clone(),
                state_dir: job.state_dir.clone(),
                id: u32::try_from(id).ok(),
                force: false,
            };
            rep.outcome = match s.json(&q) {
                Ok((v, 0)) => {
                    rep.rollback = Some(v);
                    Outcome::RolledBack
                }
                Ok((v, _)) => {
                    rep.rollback = Some(v);
                    Outcome::RollbackFailed
                }
                Err(_) => Outcome::RollbackFailed,
            };
        }
    }
    rep
}

/// A doctor report's findings by severity.
pub fn findings(v: &Value) -> Findings {
    let mut f = Findings::default();
    for x in v
        .get("findings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let c = match x.get("severity").and_then(Value::as_str) {
            Some("critical") => &mut f.critical,
            Some("warning") => &mut f.warning,
            _ => &mut f.info,
        };
        *c = c.saturating_add(1);
    }
    f
}

/// A verify report's drifted knobs, `knob target`.
pub fn drifted(v: &Value) -> Vec<String> {
    v.get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|i| i.get("status").and_then(Value::as_str) == Some("drift"))
        .map(|i| {
            let s = |k| i.get(k).and_then(Value::as_str).unwrap_or("?");
            format!("{} {}", s("knob"), s("target"))
        })
        .collect()
}
