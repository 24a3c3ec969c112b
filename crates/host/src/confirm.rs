//! Confirm deadlines (docs/fleet.md, "Confirm deadline"): an apply that can
//! cut the controller off stays in force only if the controller confirms it
//! in time, as a router's `commit confirmed`.
//!
//! ```text
//! STATE/confirm/000007.json   # {"generation":7,"within":60,"deadline":T,"status":"pending"}
//! ```
//!
//! The file is replaced atomically (written under a temporary name, fsynced,
//! renamed) and only under the state directory's lock, so a confirmation and
//! the deadline's rollback never both win: [`confirm`] turns `pending` into
//! `confirmed`, [`expire`] (the watchdog at the deadline, or the next agent
//! request after a reboot killed it) rolls the generation back and turns it
//! into `rolled_back`.

use crate::apply::{rollback_locked, Knobs, RollbackError};
use crate::journal::{io, now, sync_dir, write_durable, JournalError, StateDir};
use crate::root::read_regular;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::PathBuf;
use thiserror::Error;

/// Where a confirmation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Applied, waiting for the controller.
    Pending,
    /// The controller confirmed in time: the generation stays.
    Confirmed,
    /// The deadline passed: the generation was rolled back (or had been
    /// already).
    RolledBack,
}

/// One pending confirmation (`STATE/confirm/GGGGGG.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    /// The generation applied.
    pub generation: u32,
    /// Seconds the controller was given.
    pub within: u32,
    /// Unix time the deadline falls at.
    pub deadline: u64,
    /// Where it stands.
    pub status: Status,
}

/// A confirmation problem.
#[derive(Debug, Error)]
pub enum ConfirmError {
    /// The journal or the confirm file.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// No apply with a deadline made this generation.
    #[error("generation {0} has no pending confirmation (it was applied without a confirm deadline, or not at all)")]
    NotPending(u32),
    /// Too late: the generation was rolled back.
    #[error("generation {0} was not confirmed before its deadline and was rolled back")]
    RolledBack(u32),
    /// The confirm file does not parse.
    #[error("{path}: not a confirm file: {why}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parse error.
        why: String,
    },
    /// Rolling back at the deadline failed (it stays pending; the next try
    /// is the next agent request or `nettune rollback`).
    #[error("generation {generation}: rolling back at the confirm deadline failed: {error}")]
    Rollback {
        /// The generation.
        generation: u32,
        /// Why.
        error: RollbackError,
    },
}

fn path(state: &StateDir, generation: u32) -> PathBuf {
    state.confirm_dir().join(format!("{generation:06}.json"))
}

fn store(state: &StateDir, p: &Pending) -> Result<(), JournalError> {
    let dir = state.confirm_dir();
    fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    let file = path(state, p.generation);
    let text = serde_json::to_string(p).unwrap_or_default();
    // A new temporary file renamed into place (never a fixed temporary name).
    write_durable(&file, text.as_bytes())?;
    sync_dir(&dir)
}

/// The confirmation of `generation`, if an apply with a deadline made it.
pub fn load(state: &StateDir, generation: u32) -> Result<Option<Pending>, ConfirmError> {
    let p = path(state, generation);
    let bytes = match read_regular(&p, &p, 4096) {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(JournalError::Read(e).into()),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ConfirmError::Corrupt {
            path: p,
            why: e.to_string(),
        })
}

/// Every confirmation in the state directory, by generation.
pub fn load_all(state: &StateDir) -> Result<Vec<Pending>, ConfirmError> {
    let dir = state.confirm_dir();
    let rd = match fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(&dir, e).into()),
    };
    let mut ids: Vec<u32> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_str()?.strip_suffix(".json")?.to_string();
            (n.len() == 6 && n.bytes().all(|b| b.is_ascii_digit()))
                .then(|| n.parse().ok())
                .flatten()
        })
        .collect();
    ids.sort_unstable();
    let mut out = Vec::new();
    for id in ids {
        if let Some(p) = load(state, id)? {
            out.push(p);
        }
    }
    Ok(out)
}

/// Record that `generation` (just applied) must be confirmed within
/// `within` seconds; returns the deadline (Unix time).
pub fn start(state: &StateDir, generation: u32, within: u32) -> Result<Pending, ConfirmError> {
    let p = Pending {
        generation,
        within,
        deadline: now().saturating_add(u64::from(within)),
        status: Status::Pending,
    };
    store(state, &p)?;
    Ok(p)
}

/// The controller confirms `generation`: it stays in force. Confirming
/// twice is harmless; after the deadline's rollback it is an error. A
/// deadline that passed with nobody rolling back yet (the watchdog died) is
/// rolled back now and reported as too late.
pub fn confirm(knobs: &Knobs, state: &StateDir, generation: u32) -> Result<Pending, ConfirmError> {
    let lock = state.lock()?;
    let mut p = load(state, generation)?.ok_or(ConfirmError::NotPending(generation))?;
    match p.status {
        Status::Confirmed => Ok(p),
        Status::RolledBack => Err(ConfirmError::RolledBack(generation)),
        Status::Pending if now() > p.deadline => {
            expire_locked(knobs, state, &lock, p)?;
            Err(ConfirmError::RolledBack(generation))
        }
        Status::Pending => {
            p.status = Status::Confirmed;
            store(state, &p)?;
            Ok(p)
        }
    }
}

/// Why a generation was rolled back at its deadline (the journal's
/// `rolled_back` record and `history` say it).
pub fn reason(p: &Pending) -> String {
    format!(
        "not confirmed within {} s: the confirm deadline {} passed",
        p.within,
        crate::journal::format_utc(p.deadline)
    )
}

fn expire_locked(
    knobs: &Knobs,
    state: &StateDir,
    lock: &crate::journal::StateLock,
    p: Pending,
) -> Result<Pending, ConfirmError> {
    let why = reason(&p);
    close_locked(knobs, state, lock, p, &why)
}

fn close_locked(
    knobs: &Knobs,
    state: &StateDir,
    lock: &crate::journal::StateLock,
    mut p: Pending,
    why: &str,
) -> Result<Pending, ConfirmError> {
    let g = state.load(p.generation)?;
    if g.active() {
        rollback_locked(knobs, state, lock, Some(p.generation), false, Some(why)).map_err(
            |error| ConfirmError::Rollback {
                generation: p.generation,
                error,
            },
        )?;
    }
    p.status = Status::RolledBack;
    store(state, &p)?;
    Ok(p)
}

/// At the deadline: roll `generation` back (and every generation applied
/// after it) unless it was confirmed. `Ok(None)` when there is nothing to
/// do (confirmed, already rolled back, not due yet, or no confirmation).
pub fn expire(
    knobs: &Knobs,
    state: &StateDir,
    generation: u32,
) -> Result<Option<Pending>, ConfirmError> {
    let lock = state.lock()?;
    match load(state, generation)? {
        Some(p) if p.status == Status::Pending && now() >= p.deadline => {
            expire_locked(knobs, state, &lock, p).map(Some)
        }
        _ => Ok(None),
    }
}

/// Roll a pending `generation` back now, before its deadline, recording
/// `why` (its watchdog could not be started: nothing would roll it back).
pub fn abandon(
    knobs: &Knobs,
    state: &StateDir,
    generation: u32,
    why: &str,
) -> Result<Pending, ConfirmError> {
    let lock = state.lock()?;
    let p = load(state, generation)?.ok_or(ConfirmError::NotPending(generation))?;
    close_locked(knobs, state, &lock, p, why)
}

/// Roll back every pending confirmation whose deadline has passed (its
/// watchdog died: a reboot, a killed session): run by the agent before each
/// request that names the journal. Returns the generations rolled back.
pub fn expire_overdue(knobs: &Knobs, state: &StateDir) -> Result<Vec<u32>, ConfirmError> {
    let due: Vec<u32> = load_all(state)?
        .into_iter()
        .filter(|p| p.status == Status::Pending && now() >= p.deadline)
        .map(|p| p.generation)
        .collect();
    let mut out = Vec::new();
    // Newest first: rolling back an older one takes the newer ones with it.
    for id in due.into_iter().rev() {
        if expire(knobs, state, id)?.is_some() {
            out.push(id);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::{apply, ApplyOptions};
    use crate::journal::Record;
    use crate::root::Root;
    use model::plan::{Change, NetnsScope, Origin, Phase, Plan, PlanOptions, Target, ValueFormat};

    fn setup(t: &std::path::Path) -> (Knobs, StateDir, PathBuf) {
        let r = t.join("root");
        fs::create_dir_all(r.join("proc/sys/net")).unwrap();
        fs::write(r.join("proc/sys/net/k"), "0\n").unwrap();
        let state = StateDir::new(t.join("state"));
        let k = Knobs::fixture(&Root::new(&r), t.join("state/modprobe.d"));
        let plan = Plan {
            schema_version: 1,
            profile: "t".into(),
            profile_toml: None,
            fingerprint: "f".into(),
            hostname: None,
            options: PlanOptions::default(),
            scope: NetnsScope::Init,
            changes: vec![Change {
                phase: Phase::Sysctls,
                knob: "k".into(),
                target: Target::File {
                    path: "/proc/sys/net/k".into(),
                    format: ValueFormat::Text,
                },
                before: None,
                after: "1".into(),
                rule: Origin::Experiment,
                reason: "test".into(),
                source: "test".into(),
            }],
            notes: vec![],
        };
        apply(&k, &state, &plan, ApplyOptions::default()).unwrap();
        (k, state, r.join("proc/sys/net/k"))
    }

    #[test]
    fn a_confirmed_generation_stays_and_an_unconfirmed_one_rolls_back_with_why() {
        let t = tempfile::tempdir().unwrap();
        let (k, state, file) = setup(t.path());
        assert!(matches!(
            confirm(&k, &state, 1),
            Err(ConfirmError::NotPending(1))
        ));
        start(&state, 1, 3600).unwrap();
        assert!(expire(&k, &state, 1).unwrap().is_none(), "not due yet");
        assert_eq!(confirm(&k, &state, 1).unwrap().status, Status::Confirmed);
        assert_eq!(confirm(&k, &state, 1).unwrap().status, Status::Confirmed);
        assert_eq!(fs::read_to_string(&file).unwrap(), "1\n");

        // Due at once and never confirmed: the next check rolls it back.
        let mut p = start(&state, 1, 0).unwrap();
        p.deadline = p.deadline.saturating_sub(1);
        store(&state, &p).unwrap();
        assert_eq!(expire_overdue(&k, &state).unwrap(), vec![1]);
        assert_eq!(fs::read_to_string(&file).unwrap(), "0\n");
        let g = state.load(1).unwrap();
        assert!(g.records.iter().any(|r| matches!(
            r,
            Record::RolledBack { reason: Some(w), .. } if w.starts_with("not confirmed within 0 s")
        )));
        assert!(matches!(
            confirm(&k, &state, 1),
            Err(ConfirmError::RolledBack(1))
        ));
        assert!(expire_overdue(&k, &state).unwrap().is_empty());
    }
}
