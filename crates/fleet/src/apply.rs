//! `fleet apply` on one host: plan (by profile) and apply through the
//! host's journal; when the apply fails, roll back the generation it left
//! in force, if the apply did not roll itself back.

use crate::fanout::{Failure, Options, Session};
use crate::ops::{doc_error, plan_request, remote, HostReport, Job, Outcome, PlanFrom};
use crate::proto::Request;
use serde_json::Value;

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
pub(crate) fn apply(
    mut s: Session,
    job: &Job,
    from: &PlanFrom,
    force: bool,
    opts: &Options,
    mut rep: HostReport,
) -> HostReport {
    let plan = match from {
        PlanFrom::Document(v) => v.clone(),
        PlanFrom::Profile { profile, bdp } => {
            match s.json(&plan_request(profile, bdp.as_ref(), job)) {
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
    let after = Session::connect(&job.transport, opts).and_then(|mut s| {
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
    if let Some(e) = &mut rep.error {
        e.message = format!("{}; then the rollback failed: {}", e.message, why.message);
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
