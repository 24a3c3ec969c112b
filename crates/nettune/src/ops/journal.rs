//! The journal's documents: `verify`'s drift report, `history`'s
//! generations and `rollback`'s outcome, as the commands and the agent
//! print them.

use host::apply::{DriftStatus, Knobs, RollbackError, RollbackReport, Unrestored};
use host::journal::{format_utc, EndStatus, Record, StateDir};
use host::Root;
use serde::Serialize;
use std::path::Path;

/// Open the root and its journal: `state_dir`, else `/var/lib/nettune`
/// under the root.
pub fn open(root: &Path, state_dir: Option<&Path>) -> anyhow::Result<(Root, StateDir)> {
    let root = super::plan::open_root(root)?;
    let state = StateDir::new(host::apply::default_state_dir(&root, state_dir)?);
    Ok((root, state))
}

/// `verify --json`'s fields (after `schema_version`).
#[derive(Debug, Serialize)]
pub struct Report {
    pub generation: u32,
    pub profile: String,
    pub drift: usize,
    pub items: Vec<host::apply::DriftItem>,
    pub foreign_writers: Vec<String>,
}

/// The drift report of the last applied generation in force (`verify
/// --json` prints it versioned; `nettune agent` answers `verify` with it).
pub fn report(root: &Root, state: &StateDir) -> anyhow::Result<Report> {
    let gens = state.load_all()?;
    let Some(g) = gens.iter().rev().find(|g| g.active() && g.finished()) else {
        anyhow::bail!(
            "no applied plan in force in {} (see `nettune history`)",
            state.path().display()
        );
    };
    let k = Knobs::open(root, state);
    let items = host::apply::verify(&k, g);
    // Only the owners: a whole snapshot would read every other fact too
    // (most of an agent's `verify` time in `fleet verify`).
    let owners = host::read_owners(root);
    let mut foreign = Vec::new();
    if let Some(p) = &owners.irqbalance {
        foreign.push(format!("irqbalance (pid {}) rewrites IRQ affinity", p.pid));
    }
    if let Some(t) = &owners.tuned {
        foreign.push(format!(
            "tuned (profile {}) writes sysctls, governor and coalescing",
            t.active_profile.as_deref().unwrap_or("?")
        ));
    }
    let drift = items
        .iter()
        .filter(|i| i.status == DriftStatus::Drift)
        .count();
    Ok(Report {
        generation: g.id,
        profile: g.begin().map(|b| b.1.to_string()).unwrap_or_default(),
        drift,
        items,
        foreign_writers: foreign,
    })
}

/// The exit status of a report: [`crate::exit::DRIFT`] when a knob drifted.
pub fn exit_code(rep: &Report) -> u8 {
    if rep.drift > 0 {
        crate::exit::DRIFT
    } else {
        crate::exit::OK
    }
}
/// `history --json`: `{"schema_version": 1, "generations": [...]}`.
#[derive(Debug, Serialize)]
struct Generations<'a> {
    generations: &'a [Entry],
}

/// One generation of `history` (a row, or an element of `generations`).
#[derive(Debug, Serialize)]
pub struct Entry {
    pub generation: u32,
    pub applied_at: u64,
    pub applied_at_utc: String,
    pub profile: String,
    pub writes: usize,
    pub status: Status,
    pub rolled_back_at: Option<u64>,
    pub rolled_back_at_utc: Option<String>,
    /// Knobs `rollback --force` could not restore.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unrestored: Vec<String>,
    /// Why nettune rolled it back by itself (a confirm deadline passed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolled_back_reason: Option<String>,
}

/// How a generation's apply ended, or `incomplete` (crashed mid-apply).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Applied,
    Stopped,
    Failed,
    Incomplete,
}

impl Status {
    fn of(end: Option<EndStatus>) -> Status {
        match end {
            Some(EndStatus::Applied) => Status::Applied,
            Some(EndStatus::Stopped) => Status::Stopped,
            Some(EndStatus::Failed) => Status::Failed,
            None => Status::Incomplete,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
            Status::Incomplete => "incomplete",
        }
    }
}

/// The journal's generations, oldest first.
pub fn entries(state: &StateDir) -> anyhow::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for g in state.load_all()? {
        let (at, profile) = g
            .begin()
            .map(|(a, p)| (a, p.to_string()))
            .unwrap_or_default();
        let (rolled_back_at, unrestored, rolled_back_reason) = g
            .records
            .iter()
            .find_map(|r| match r {
                Record::RolledBack {
                    at,
                    unrestored,
                    reason,
                } => Some((Some(*at), unrestored.clone(), reason.clone())),
                _ => None,
            })
            .unwrap_or_default();
        out.push(Entry {
            generation: g.id,
            applied_at: at,
            applied_at_utc: format_utc(at),
            profile,
            writes: g
                .records
                .iter()
                .filter(|r| matches!(r, Record::Before { .. }))
                .count(),
            status: Status::of(g.ended()),
            rolled_back_at,
            rolled_back_at_utc: rolled_back_at.map(format_utc),
            unrestored,
            rolled_back_reason,
        });
    }
    Ok(out)
}

/// `history --json`'s document: `{"schema_version": 1, "generations": [...]}`
/// (`nettune agent` answers `history` with it).
pub fn history_document(entries: &[Entry]) -> impl Serialize + '_ {
    super::Versioned::new(Generations {
        generations: entries,
    })
}
/// `rollback --json`.
#[derive(Serialize)]
struct Doc<'a> {
    /// Generations rolled back now, newest first.
    rolled_back: &'a [u32],
    /// Original values restored; `null` when the rollback failed.
    restored: Option<usize>,
    /// Knobs not restored: closed without them (`--force`), or, with
    /// `error` set, keeping their generation in force.
    unrestored: &'a [Unrestored],
    /// Why the rollback failed; `null` when it did not.
    error: Option<String>,
}

/// `rollback --json`'s document for a rollback's outcome (printed also
/// when it failed, with `error` set); `nettune agent` answers `rollback` with it.
pub fn rollback_document(res: &Result<RollbackReport, RollbackError>) -> impl Serialize + '_ {
    super::Versioned::new(match res {
        Ok(rep) => Doc {
            rolled_back: &rep.rolled_back,
            restored: Some(rep.restored),
            unrestored: &rep.unrestored,
            error: None,
        },
        Err(e) => Doc {
            rolled_back: &[],
            restored: None,
            unrestored: match e {
                RollbackError::Partial { unrestored, .. } => unrestored.as_slice(),
                _ => &[],
            },
            error: Some(e.to_string()),
        },
    })
}
