//! The fleet commands on one host and on all of them: each host's outcome,
//! its document, and the summary columns (findings by severity, drifted
//! knobs). `apply` rolls back a host whose apply failed, on that host only.

pub use crate::fanout::Job;
use crate::fanout::{fan_out, Failure, Options, Session};
pub(crate) use crate::outcome::{doc_error, plan_request, remote};
pub use crate::outcome::{Findings, HostReport, Outcome, PlanFrom};
use crate::proto::Request;
use serde_json::Value;

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
        /// `--confirm-timeout`: seconds the host waits for the controller's
        /// confirm of a plan that can cut the path (`tune::risk`) before it
        /// rolls back by itself; `None`: no deadline.
        confirm_within: Option<u32>,
        /// `--allow-reload`: a plan setting a module parameter reloads the
        /// module on the host (under the confirm deadline).
        allow_reload: bool,
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

/// Run `op` on every job (at most `opts.parallel` at once); reports in job order.
pub fn run(jobs: &[Job], op: &Op, opts: &Options) -> Vec<HostReport> {
    let kept = Kept::new(MAX_KEPT);
    fan_out(jobs, opts.parallel, |j| {
        let mut rep = run_host(j, op, opts);
        kept.keep(&mut rep);
        rep
    })
}

/// The most of the hosts' answer documents one fleet command keeps until it
/// prints them, in [`value_bytes`] (about 20,000 hosts' `inspect` of 50 KB).
pub const MAX_KEPT: usize = 1 << 30;

/// The answers a fleet command keeps, counted as they arrive.
#[derive(Debug)]
pub struct Kept {
    max: usize,
    held: std::sync::atomic::AtomicUsize,
}

impl Kept {
    /// At most `max` bytes kept.
    pub fn new(max: usize) -> Kept {
        Kept {
            max,
            held: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Count `rep`'s documents; past the limit they are dropped and the
    /// host fails, saying so.
    pub fn keep(&self, rep: &mut HostReport) {
        use std::sync::atomic::Ordering;
        let n = [&rep.result, &rep.rollback]
            .into_iter()
            .flatten()
            .map(value_bytes)
            .fold(0usize, usize::saturating_add);
        let before = self.held.fetch_add(n, Ordering::SeqCst);
        if before.saturating_add(n) > self.max {
            self.held.fetch_sub(n, Ordering::SeqCst);
            rep.result = None;
            rep.rollback = None;
            if !rep.outcome.failed() {
                rep.outcome = Outcome::Failed;
            }
            rep.error = Some(Failure {
                kind: "limit",
                message: format!(
                    "{}: its answer ({n} bytes) was dropped: the hosts' answers kept by this command passed {} bytes",
                    rep.label(),
                    self.max
                ),
            });
        }
    }
}

/// About the memory `v` takes once decoded: each value's own size plus
/// its strings' and keys' bytes.
pub fn value_bytes(v: &Value) -> usize {
    let node = std::mem::size_of::<Value>();
    let mut n = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n = n.saturating_add(node);
        match v {
            Value::String(t) => n = n.saturating_add(t.len()),
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => {
                for (k, x) in o {
                    n = n.saturating_add(k.len()).saturating_add(node);
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    n
}

/// `fleet apply` in two passes. First every host (at most `opts.parallel`
/// at once) makes or checks its plan and answers each change with the value
/// it has now, writing nothing; then `go` sees those reports (the CLI prints
/// each host's changes and asks) and says whether to go on. Only then do the
/// hosts whose first pass succeeded apply the plan they showed; the others
/// keep their failure, and with `go` false every host stays
/// [`Outcome::NotApplied`].
pub fn apply_all(
    jobs: &[Job],
    from: &PlanFrom,
    how: crate::apply::How,
    opts: &Options,
    go: impl FnOnce(&[HostReport]) -> bool,
) -> Vec<HostReport> {
    let kept = Kept::new(MAX_KEPT);
    let first = fan_out(jobs, opts.parallel, |j| {
        crate::apply::preview(j, from, how, opts)
    });
    let (reports, plans): (Vec<HostReport>, Vec<Option<Value>>) = first.into_iter().unzip();
    if !go(&reports) {
        return reports;
    }
    let work: Vec<(&Job, Option<Value>, HostReport)> = jobs
        .iter()
        .zip(plans)
        .zip(reports)
        .map(|((j, p), r)| (j, p, r))
        .collect();
    fan_out(&work, opts.parallel, |(job, plan, rep)| match plan {
        Some(p) => {
            let mut rep = crate::apply::apply_previewed(job, p.clone(), how, opts, rep.clone());
            kept.keep(&mut rep);
            rep
        }
        None => rep.clone(),
    })
}

/// Run `op` on one host.
pub fn run_host(job: &Job, op: &Op, opts: &Options) -> HostReport {
    let mut rep = HostReport::new(job, opts);
    let mut s = match Session::connect(job, opts) {
        Ok(s) => s,
        Err(f) => {
            rep.error = Some(f);
            return rep;
        }
    };
    let res = match op {
        Op::Apply {
            plan,
            force,
            confirm_within,
            allow_reload,
        } => {
            let how = crate::apply::How {
                force: *force,
                confirm_within: *confirm_within,
                allow_reload: *allow_reload,
            };
            return crate::apply::apply(s, job, plan, how, opts, rep);
        }
        _ => s.json(&request(op, job)),
    };
    match res {
        Ok((v, code)) => {
            rep.code = Some(code);
            rep.outcome = Outcome::Ok;
            if let Op::Doctor { .. } = op {
                rep.findings = Some(findings(&v));
                doctor_code(&mut rep, code);
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

/// doctor's documented exit statuses are 0, 1 and 2 (its worst finding);
/// any other (a host's 255) makes the host failed, so it never becomes
/// `fleet doctor`'s own exit status.
fn doctor_code(rep: &mut HostReport, code: u8) {
    if code > 2 {
        rep.outcome = Outcome::Failed;
        rep.error = Some(Failure {
            kind: "remote",
            message: format!(
                "{}: doctor ended with exit status {code}, not 0, 1 or 2",
                rep.label()
            ),
        });
    }
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
        Op::Plan { profile, bdp } => plan_request(profile, bdp.as_ref(), job),
        // `apply` is several requests (crate::apply); never sent from here.
        Op::Apply { .. } | Op::History => Request::History { root, state_dir },
        Op::Rollback { to, force } => Request::Rollback {
            root,
            state_dir,
            id: *to,
            force: *force,
        },
        Op::Verify => Request::Verify { root, state_dir },
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_columns_from_the_documents() {
        let d = json!({"findings": [
            {"severity": "critical"}, {"severity": "info"},
            {"severity": "warning"}, {"severity": "info"}
        ]});
        let f = Findings {
            critical: 1,
            warning: 1,
            info: 2,
        };
        assert_eq!(findings(&d), f);
        let v = json!({"items": [
            {"knob": "rps_cpus", "target": "eth0 rx-0", "status": "drift"},
            {"knob": "net.core.rmem_max", "target": "/proc/sys/net/core/rmem_max", "status": "ok"}
        ]});
        assert_eq!(drifted(&v), vec!["rps_cpus eth0 rx-0".to_string()]);
        assert!(drifted(&json!({})).is_empty());
    }

    /// Issue 35: the documents a fleet command keeps are counted across
    /// hosts; past the limit a host's are dropped and it fails, naming it.
    #[test]
    fn kept_answers_stop_at_the_limit_for_all_hosts() {
        let doc = json!({"x": "y".repeat(1000), "a": [1, 2, 3]});
        let one = value_bytes(&doc);
        assert!(one > 1000 && one < 1400, "{one}");
        let kept = Kept::new(2 * one + 10);
        let mut reps: Vec<HostReport> = (0..3)
            .map(|i| HostReport {
                result: Some(doc.clone()),
                ..HostReport::local(&format!("h{i}"), Outcome::Ok, 0)
            })
            .collect();
        for r in &mut reps {
            kept.keep(r);
        }
        assert!(reps[0].result.is_some() && reps[1].result.is_some());
        assert_eq!(reps[2].outcome, Outcome::Failed);
        assert!(reps[2].result.is_none());
        let e = reps[2].error.as_ref().unwrap();
        assert_eq!(e.kind, "limit");
        assert!(e.message.contains("passed"), "{}", e.message);
    }

    /// Issue 35: a host's doctor exit 255 fails that host; the fleet's
    /// worst code stays one of doctor's.
    #[test]
    fn an_undocumented_doctor_status_fails_the_host() {
        let rep = |host: &str, code: u8| {
            let mut r = HostReport::local(host, Outcome::Ok, code);
            doctor_code(&mut r, code);
            r
        };
        let reports = [rep("a", 1), rep("b", 255), rep("c", 2)];
        assert_eq!(reports[1].outcome, Outcome::Failed);
        assert!(reports[1]
            .error
            .as_ref()
            .is_some_and(|e| e.message.contains("255")));
        let v = crate::summary::verdict(&reports);
        assert_eq!(v.worst_code, 2);
        assert_eq!(v.failed, ["b"]);
    }
}
