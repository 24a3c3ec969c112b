//! `fleet apply` on one host: plan (by profile) and apply through the
//! host's journal; when the apply fails, roll back the generation it left
//! in force, if the apply did not roll itself back.

use crate::fanout::{Failure, Job, Options, Session};
use crate::outcome::{doc_error, plan_request, remote, HostReport, Outcome, PlanFrom};
use crate::proto::Request;
use model::inventory::Transport as InvTransport;
use model::plan::{Plan, Target};
use serde_json::Value;

/// How a host applies.
#[derive(Debug, Clone, Copy)]
pub struct How {
    /// `--force`.
    pub force: bool,
    /// The confirm deadline for a plan that can cut the path.
    pub confirm_within: Option<u32>,
    /// `--allow-reload`: set the plan's `options.reload_modules` when it
    /// changes a module parameter.
    pub allow_reload: bool,
}

/// With `--allow-reload`, a plan that sets a module parameter reloads its
/// module on the host (`PlanOptions::reload_modules`).
fn allow_reload(plan: &mut Value) {
    let sets_param = Plan::from_json_slice(&serde_json::to_vec(plan).unwrap_or_default())
        .is_ok_and(|p| {
            p.changes
                .iter()
                .any(|c| matches!(c.target, Target::ModuleParam { .. }))
        });
    if let (true, Some(o)) = (
        sets_param,
        plan.get_mut("options").and_then(Value::as_object_mut),
    ) {
        o.insert("reload_modules".into(), Value::Bool(true));
    }
}

/// The confirm deadline `plan` gets on a host reached by `t`: `within` when
/// some change can cut the path (`tune::risk`). The controller does not know
/// which interface its ssh or kubectl connection crosses, so there every
/// interface the plan touches counts as the path; a local or netns pipe
/// crosses none, and only channels, rings and module parameters count.
pub(crate) fn confirm_deadline(plan: &Value, t: &InvTransport, within: Option<u32>) -> Option<u32> {
    let within = within?;
    let plan = Plan::from_json_slice(&serde_json::to_vec(plan).ok()?).ok()?;
    let path: Vec<String> = match t {
        InvTransport::Ssh { .. } | InvTransport::Kubectl { .. } => touched_ifaces(&plan),
        // A guest's agent port is a virtio-serial device: no NIC on its path.
        InvTransport::Local | InvTransport::Netns { .. } | InvTransport::Guest { .. } => Vec::new(),
    };
    (!tune::risk::risky_changes(&plan, &path).is_empty()).then_some(within)
}

/// Why a plan document is not sent to any host.
#[derive(Debug, thiserror::Error)]
pub enum PlanCheckError {
    /// Not a `plan --json` document.
    #[error("not a plan: {0}")]
    NotAPlan(#[from] model::plan::PlanReadError),
    /// A target or value nettune does not plan (the error names it).
    #[error("plan refused: {0}")]
    Refused(#[from] host::HostError),
}

/// The changes of `plan` as `KNOB TARGET: BEFORE -> AFTER` lines, after
/// checking every target and value against what nettune plans
/// ([`host::apply::targets`]); the refusal names the target.
pub fn checked_changes(plan: &Value) -> Result<Vec<String>, PlanCheckError> {
    let plan = Plan::from_json_slice(plan.to_string().as_bytes())?;
    let mut out = Vec::with_capacity(plan.changes.len());
    for c in &plan.changes {
        host::apply::targets::check_target(&c.target)
            .and_then(|()| host::apply::targets::check_value(&c.target, &c.after))?;
        out.push(format!(
            "{} {}: {} -> {}",
            c.knob,
            c.target.describe(),
            c.before.as_deref().unwrap_or("(absent)"),
            c.after
        ));
    }
    Ok(out)
}

/// Every interface a plan's changes name.
fn touched_ifaces(plan: &Plan) -> Vec<String> {
    let mut out: Vec<String> = plan
        .changes
        .iter()
        .filter_map(|c| match &c.target {
            Target::Ethtool { iface, .. } | Target::IrqAffinity { iface, .. } => {
                Some(iface.clone())
            }
            Target::File { path, .. } => tune::risk::sysfs_iface(path).map(str::to_string),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Confirm `generation` over a fresh connection; the failure when that
/// cannot be done (the host then rolls back by itself at its deadline).
fn confirm(job: &Job, opts: &Options, generation: u32) -> Result<Value, Failure> {
    let mut s = Session::connect(job, opts)?;
    let q = Request::Confirm {
        root: job.root.clone(),
        state_dir: job.state_dir.clone(),
        generation,
    };
    match s.json(&q)? {
        (v, 0) => Ok(v),
        (v, _) => Err(remote(&s, "confirm", doc_error(&v))),
    }
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

/// The generation an `apply` document names (its confirm's, else its own).
pub(crate) fn generation(v: &Value) -> Option<u32> {
    v.get("confirm")
        .and_then(|c| c.get("generation"))
        .or_else(|| v.get("generation"))
        .and_then(Value::as_u64)
        .and_then(|g| u32::try_from(g).ok())
}

/// The plan `job` applies: `from` itself, or the one the host makes for the
/// profile; with `--allow-reload` marked to reload; checked against what
/// nettune plans (the host checks again), with its lines.
fn plan_for(
    s: &mut Session,
    job: &Job,
    from: &PlanFrom,
    how: How,
) -> Result<(Value, Vec<String>), Failure> {
    let mut plan = match from {
        PlanFrom::Document(v) => v.clone(),
        PlanFrom::Profile { profile, bdp } => s.json(&plan_request(profile, bdp.as_ref(), job))?.0,
    };
    if how.allow_reload {
        allow_reload(&mut plan);
    }
    // Checked here, before the host is asked to apply anything: a target
    // nettune does not plan is refused naming it (the host checks again).
    let lines = checked_changes(&plan).map_err(|e| Failure {
        kind: "refused",
        message: format!("{}: {e}", s.name()),
    })?;
    Ok((plan, lines))
}

/// The suffix of a preview line whose value the host already holds.
const ALREADY: &str = " (already)";

/// Whether a line of [`HostReport::changes`] would change nothing.
pub fn is_already(line: &str) -> bool {
    line.ends_with(ALREADY)
}

/// `fleet apply`'s first pass on one host, which writes nothing: its plan,
/// and each change against the value the host has now
/// (`KNOB TARGET: NOW -> AFTER`, [`ALREADY`] when it holds it) in
/// `rep.changes`. The plan comes back for the second pass, so a host applies
/// what was shown. The outcome stays [`Outcome::NotApplied`] until then.
pub(crate) fn preview(
    job: &Job,
    from: &PlanFrom,
    how: How,
    opts: &Options,
) -> (HostReport, Option<Value>) {
    let mut rep = HostReport::new(job, opts);
    let res = Session::connect(job, opts).and_then(|mut s| {
        let (plan, _) = plan_for(&mut s, job, from, how)?;
        let q = Request::Apply {
            plan: plan.clone(),
            root: job.root.clone(),
            state_dir: job.state_dir.clone(),
            force: how.force,
            replan: false,
            confirm_within: None,
            dry_run: true,
        };
        match s.json(&q)? {
            (v, 0) => {
                let lines: Vec<host::apply::PreviewLine> = v
                    .get("changes")
                    .cloned()
                    .and_then(|c| serde_json::from_value(c).ok())
                    .ok_or_else(|| {
                        remote(&s, "apply --dry-run", "no changes in the answer".into())
                    })?;
                Ok((plan, lines))
            }
            (v, _) => Err(remote(&s, "apply --dry-run", doc_error(&v))),
        }
    });
    match res {
        Ok((plan, lines)) => {
            rep.code = Some(0);
            rep.outcome = Outcome::NotApplied;
            rep.changes = Some(lines.iter().map(|l| l.line()).collect());
            (rep, Some(plan))
        }
        Err(f) => {
            rep.error = Some(f);
            (rep, None)
        }
    }
}

/// `fleet apply`'s second pass: apply `plan` (the one [`preview`] showed)
/// on a fresh session; `rep` keeps the preview's lines.
pub(crate) fn apply_previewed(
    job: &Job,
    plan: Value,
    how: How,
    opts: &Options,
    mut rep: HostReport,
) -> HostReport {
    rep.outcome = Outcome::Failed;
    rep.code = None;
    match Session::connect(job, opts) {
        Ok(s) => commit(s, job, plan, how, opts, rep),
        Err(f) => {
            rep.error = Some(f);
            rep
        }
    }
}

/// Plan (when by profile), apply; on failure roll back this apply's
/// generation if the apply itself did not.
pub(crate) fn apply(
    mut s: Session,
    job: &Job,
    from: &PlanFrom,
    how: How,
    opts: &Options,
    mut rep: HostReport,
) -> HostReport {
    match plan_for(&mut s, job, from, how) {
        Ok((plan, lines)) => {
            rep.changes = Some(lines);
            commit(s, job, plan, how, opts, rep)
        }
        Err(f) => {
            rep.error = Some(f);
            rep
        }
    }
}

/// Apply `plan` through the host's journal; on failure roll back this
/// apply's generation if the apply itself did not.
fn commit(
    mut s: Session,
    job: &Job,
    plan: Value,
    how: How,
    opts: &Options,
    mut rep: HostReport,
) -> HostReport {
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
    let confirm_within = confirm_deadline(&plan, &job.transport, how.confirm_within);
    let q = Request::Apply {
        plan,
        root: job.root.clone(),
        state_dir: job.state_dir.clone(),
        force: how.force,
        replan: false,
        confirm_within,
        dry_run: false,
    };
    let failure = match s.json(&q) {
        Ok((v, 0)) => {
            rep.code = Some(0);
            let generation = generation(&v);
            rep.result = Some(v);
            rep.outcome = Outcome::Ok;
            if let (Some(_), Some(g)) = (confirm_within, generation) {
                // Over a fresh connection: the one the change could cut is
                // not proof that the host is still reachable.
                drop(s);
                if let Err(f) = confirm(job, opts, g) {
                    rep.outcome = Outcome::Failed;
                    rep.error = Some(Failure {
                        kind: f.kind,
                        message: format!(
                            "{}: not confirmed ({}): the host rolls generation {g} back by itself at its deadline",
                            rep.label(),
                            rep.detail(&f.message)
                        ),
                    });
                }
            }
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
    let after = Session::connect(job, opts).and_then(|mut s| {
        let h = s.json(&hist)?;
        Ok((s, h))
    });
    let (mut s, now) = match after {
        Ok((s, (v, _))) => (s, newest(&v)),
        Err(f) => return rollback_failed(rep, &f),
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
                    let f = remote(&s, "rollback", doc_error(&v));
                    rep.rollback = Some(v);
                    return rollback_failed(rep, &f);
                }
                Err(f) => return rollback_failed(rep, &f),
            };
        }
    }
    rep
}

/// `rep` (whose error is the apply's) as a host whose rollback failed too, saying why.
fn rollback_failed(mut rep: HostReport, why: &Failure) -> HostReport {
    rep.outcome = Outcome::RollbackFailed;
    let why = rep.detail(&why.message).to_string();
    if let Some(e) = &mut rep.error {
        e.message = format!("{}; then the rollback failed: {why}", e.message);
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Response;
    use serde_json::json;

    /// A real plan (c4-8xlarge, throughput: IRQs of eth0 moved, sysctls).
    const PLAN: &str = include_str!("../../model/tests/data/plan-c4-8xlarge-throughput.json");

    fn ssh() -> InvTransport {
        InvTransport::Ssh {
            address: "10.0.0.5".into(),
            user: None,
            port: None,
            jump: None,
            identity_file: None,
            ssh_args: Vec::new(),
        }
    }

    #[test]
    fn a_deadline_only_where_the_plan_can_cut_the_path() {
        let plan: Value = serde_json::from_str(PLAN).unwrap_or_default();
        // Over ssh eth0 may carry the controller: its IRQ moves are a risk.
        assert_eq!(confirm_deadline(&plan, &ssh(), Some(60)), Some(60));
        assert_eq!(confirm_deadline(&plan, &ssh(), None), None);
        // A local pipe crosses no interface; IRQ moves cannot cut it.
        assert_eq!(
            confirm_deadline(&plan, &InvTransport::Local, Some(60)),
            None
        );
        // A channel change rebuilds queues whatever the transport.
        let mut chan = plan.clone();
        if let Some(c) = chan.get_mut("changes").and_then(Value::as_array_mut) {
            c.truncate(1);
            c[0]["phase"] = json!("channels");
            c[0]["knob"] = json!("combined");
            c[0]["target"] = json!({"kind": "ethtool", "iface": "eth0", "group": "channels", "attr": "combined"});
            c[0]["before"] = json!("8");
            c[0]["after"] = json!("4");
        }
        let netns = InvTransport::Netns { name: "h1".into() };
        assert_eq!(confirm_deadline(&chan, &netns, Some(30)), Some(30));
        // A guest's agent port is virtio-serial: IRQ moves cannot cut it,
        // a channel change still gets its deadline.
        let guest = InvTransport::Guest {
            socket: "/run/g1.sock".into(),
        };
        assert_eq!(confirm_deadline(&plan, &guest, Some(60)), None);
        assert_eq!(confirm_deadline(&chan, &guest, Some(30)), Some(30));
        // Not a plan: no deadline is invented (the apply refuses it).
        assert_eq!(confirm_deadline(&json!({"x": 1}), &ssh(), Some(60)), None);
    }

    /// A guest's agent socket in `dir` serving one session per entry of
    /// `sessions`, in order: each answers a request with `Some(answer)`,
    /// or closes the connection at it with `None` (a guest killed then).
    /// After the last session the socket refuses connections. The thread
    /// gives back every request it saw, by session.
    type Answer = Box<dyn Fn(&Request) -> Option<Response> + Send>;

    fn fake_guest(
        dir: &std::path::Path,
        sessions: Vec<Answer>,
    ) -> (InvTransport, std::thread::JoinHandle<Vec<Vec<Request>>>) {
        use crate::proto::{self as p, MAX_REQUEST, MAX_RESPONSE, PROTO_VERSION};
        use std::io::Read;
        let path = dir.join("agent.sock");
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let t = std::thread::spawn(move || {
            let mut seen = Vec::new();
            let last = sessions.len();
            let mut l = Some(l);
            for (i, answer) in sessions.into_iter().enumerate() {
                let Some((mut c, _)) = l.as_ref().map(|l| l.accept().unwrap()) else {
                    break;
                };
                let mut wake = [0u8; 1];
                c.read_exact(&mut wake).unwrap();
                p::write_preamble(&mut c).unwrap();
                let mut got = Vec::new();
                if p::read_preamble(&mut c).is_ok() {
                    while let Ok(body) = p::read_frame(&mut c, MAX_REQUEST) {
                        let q: Request = serde_json::from_slice(&body).unwrap();
                        let r = match &q {
                            Request::Shutdown => None,
                            Request::Hello => Some(Response::Hello {
                                version: PROTO_VERSION,
                                nettune_version: "0.1.0".into(),
                                caps: Vec::new(),
                            }),
                            q => answer(q),
                        };
                        got.push(q);
                        match r {
                            Some(r) => p::write_frame(&mut c, &r, MAX_RESPONSE).unwrap(),
                            None => break,
                        }
                    }
                }
                seen.push(got);
                if i + 1 == last {
                    // Refusing before the close is seen: a reconnection
                    // finds no guest.
                    l = None;
                }
                drop(c);
            }
            drop(l);
            seen
        });
        let socket = path.display().to_string();
        (InvTransport::Guest { socket }, t)
    }

    fn json(v: Value) -> Option<Response> {
        Some(Response::Json { value: v, code: 0 })
    }

    /// The PLAN with one change: `eth0`'s channels, which gets a confirm
    /// deadline on a guest.
    fn channel_plan() -> Value {
        let mut plan: Value = serde_json::from_str(PLAN).unwrap_or_default();
        let c = plan["changes"].as_array_mut().unwrap();
        c.truncate(1);
        c[0]["phase"] = json!("channels");
        c[0]["knob"] = json!("combined");
        c[0]["target"] =
            json!({"kind": "ethtool", "iface": "eth0", "group": "channels", "attr": "combined"});
        c[0]["before"] = json!("8");
        c[0]["after"] = json!("4");
        plan
    }

    /// Host `g1` over `transport`, its options and `how` with a confirm
    /// deadline of `confirm_within` seconds.
    fn guest_job(transport: InvTransport, confirm_within: Option<u32>) -> (Job, Options, How) {
        let job = Job {
            host: "g1".into(),
            transport,
            root: None,
            state_dir: None,
            remote_exe: None,
        };
        let opts = Options {
            parallel: 1,
            deadline: std::time::Duration::from_secs(20),
            copy: false,
            version: "0.1.0".into(),
            exe: "/nonexistent/nettune".into(),
        };
        let how = How {
            force: false,
            confirm_within,
            allow_reload: false,
        };
        (job, opts, how)
    }

    fn run_apply(transport: InvTransport, plan: Value) -> HostReport {
        let (job, opts, how) = guest_job(transport, Some(30));
        let rep = HostReport::new(&job, &opts);
        apply_previewed(&job, plan, how, &opts, rep)
    }

    fn history(q: &Request) -> Option<Response> {
        match q {
            Request::History { .. } => json(json!({"generations": []})),
            _ => None,
        }
    }

    /// Issue 37: a guest killed in the middle of an apply (its socket
    /// closes, then refuses the rollback's connection) fails naming the
    /// guest by its inventory name first, its socket after.
    #[test]
    fn a_guest_killed_mid_apply_is_named_first() {
        let d = tempfile::tempdir().unwrap();
        let killed: Answer = Box::new(|q| match q {
            Request::Apply { .. } => None,
            q => history(q),
        });
        let (t, server) = fake_guest(d.path(), vec![killed]);
        let rep = run_apply(t, channel_plan());
        let seen = server.join().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(rep.outcome, Outcome::RollbackFailed, "{rep:?}");
        let sock = d.path().join("agent.sock");
        let m = &rep.error.as_ref().unwrap().message;
        let label = format!("g1 (guest {})", sock.display());
        assert_eq!(rep.label(), label);
        assert!(m.starts_with(&format!("{label}: ")), "{m}");
        // The rollback's reason is not named a second time.
        assert!(
            m.contains("; then the rollback failed: cannot reach the guest's agent at"),
            "{m}"
        );
        assert!(!m.contains("failed: g1 ("), "{m}");
    }

    /// A plan nettune does not plan, refused before the guest is asked
    /// anything, names the guest too.
    #[test]
    fn a_refused_plan_names_the_guest() {
        let d = tempfile::tempdir().unwrap();
        let (t, server) = fake_guest(d.path(), vec![Box::new(|_| None)]);
        let mut bad = channel_plan();
        bad["changes"][0]["target"] =
            json!({"kind": "file", "path": "/proc/sys/kernel/core_pattern", "format": "text"});
        let (job, opts, how) = guest_job(t, None);
        let (rep, plan) = preview(&job, &PlanFrom::Document(bad), how, &opts);
        assert!(plan.is_none());
        let f = rep.error.unwrap();
        assert_eq!(f.kind, "refused");
        assert!(f.message.starts_with("g1 (guest "), "{}", f.message);
        assert!(f.message.contains("core_pattern"), "{}", f.message);
        assert_eq!(server.join().unwrap().len(), 1);
    }

    /// docs/fleet.md "Confirm deadline" on a guest: a channel change is
    /// applied with the deadline on one session, then confirmed on a fresh
    /// one, after the first has ended (a guest serves one at a time).
    #[test]
    fn a_guest_confirms_on_a_second_session() {
        let d = tempfile::tempdir().unwrap();
        let applied: Answer = Box::new(|q| match q {
            Request::Apply { .. } => json(json!({"confirm": {"generation": 7}})),
            q => history(q),
        });
        let confirmed: Answer = Box::new(|q| match q {
            Request::Confirm { generation: 7, .. } => json(json!({"status": "confirmed"})),
            _ => None,
        });
        let (t, server) = fake_guest(d.path(), vec![applied, confirmed]);
        let rep = run_apply(t.clone(), channel_plan());
        assert_eq!(rep.outcome, Outcome::Ok, "{rep:?}");
        let seen = server.join().unwrap();
        assert!(matches!(
            seen[0].get(2),
            Some(Request::Apply {
                confirm_within: Some(30),
                ..
            })
        ));
        assert!(matches!(seen[0].last(), Some(Request::Shutdown)));
        assert!(matches!(seen[1].get(1), Some(Request::Confirm { .. })));

        // No second session: not confirmed, named, and the guest's own
        // deadline is said to roll it back.
        let d = tempfile::tempdir().unwrap();
        let applied: Answer = Box::new(|q| match q {
            Request::Apply { .. } => json(json!({"confirm": {"generation": 7}})),
            q => history(q),
        });
        let (t, server) = fake_guest(d.path(), vec![applied]);
        let rep = run_apply(t, channel_plan());
        server.join().unwrap();
        assert_eq!(rep.outcome, Outcome::Failed);
        let m = rep.error.unwrap().message;
        assert!(m.starts_with("g1 (guest "), "{m}");
        // (Its reason, the refused connection or a connection reset by a
        // guest going away, quoted without the guest's name again.)
        assert!(m.contains(": not confirmed ("), "{m}");
        assert!(!m.contains("not confirmed (g1"), "{m}");
        assert!(
            m.ends_with("rolls generation 7 back by itself at its deadline"),
            "{m}"
        );
    }

    #[test]
    fn the_newest_generation_and_whether_it_was_rolled_back() {
        let h = json!({"generations": [
            {"generation": 2, "rolled_back_at": null},
            {"generation": 3, "rolled_back_at": 17},
            {"generation": 1, "rolled_back_at": null}
        ]});
        assert_eq!(newest(&h), Some((3, true)));
        assert_eq!(newest(&json!({"generations": []})), None);
    }

    /// Issue 35: a plan whose change writes core_pattern (or loads any
    /// module) is refused on the controller, naming it; a real plan passes
    /// and its changes are listed.
    #[test]
    fn plans_naming_what_nettune_does_not_plan_are_refused() {
        let plan: Value = serde_json::from_str(PLAN).unwrap_or_default();
        let lines = checked_changes(&plan).unwrap();
        assert!(!lines.is_empty());
        assert!(lines.iter().all(|l| l.contains(" -> ")), "{lines:?}");
        for target in [
            json!({"kind": "file", "path": "/proc/sys/kernel/core_pattern", "format": "text"}),
            json!({"kind": "file", "path": "/proc/sys/kernel/modprobe", "format": "text"}),
            json!({"kind": "file", "path": "/sys/kernel/uevent_helper", "format": "text"}),
            json!({"kind": "module_param", "module": "nf_conntrack", "param": "hashsize"}),
        ] {
            let mut bad = plan.clone();
            bad["changes"][0]["target"] = target.clone();
            bad["changes"][0]["after"] = json!("1");
            let e = checked_changes(&bad).unwrap_err().to_string();
            let named = target["path"]
                .as_str()
                .or(target["module"].as_str())
                .unwrap_or("?");
            assert!(e.contains(named), "{e}");
        }
    }
}
