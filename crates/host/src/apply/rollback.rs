//! Rolling generations back from the journal, newest first.

use super::irqmap::IrqMap;
use super::knob::{retry, Knobs};
use super::targets;
use crate::error::HostError;
use crate::journal::{now, Generation, JournalError, Record, StateDir, StateLock};
use model::plan::{EthtoolGroup, Target};
use model::snapshot::QueueRef;
use serde::Serialize;
use std::collections::BTreeSet;
use thiserror::Error;

/// A knob rollback could not restore (it vanished, or the kernel refused).
#[derive(Debug, Serialize)]
pub struct Unrestored {
    /// Generation.
    pub generation: u32,
    /// Knob name.
    pub knob: String,
    /// Target description.
    pub target: String,
    /// What went wrong.
    #[serde(serialize_with = "display")]
    pub error: HostError,
}

impl std::fmt::Display for Unrestored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.error.to_string();
        let prefix = format!("{}: ", self.target);
        let e = e.strip_prefix(&prefix).unwrap_or(&e);
        write!(f, "{} ({}): {e}", self.knob, self.target)
    }
}

impl std::error::Error for Unrestored {}

fn display<S: serde::Serializer, T: std::fmt::Display>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// `a; b; c`.
pub(crate) fn list(u: &[Unrestored]) -> String {
    u.iter()
        .map(|u| u.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Restore every `before` record of `g` in reverse, going on past failures;
/// returns what could not be restored. Writes the kernel refused are skipped
/// (they changed nothing), and so are knobs this host does not manage.
pub(crate) fn restore_records(knobs: &Knobs, g: &Generation) -> Vec<Unrestored> {
    let untouched: BTreeSet<u32> = g
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Unchangeable { seq, .. } | Record::WriteFailed { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    let mut failures = Vec::new();
    let mut irqs = IrqResolver::new(knobs);
    // Module parameters first, each module reloaded once when the plan
    // reloaded it: a reload gives the driver's interfaces their defaults
    // (and may renumber their IRQs), so the other knobs are restored after
    // it, or it would undo them.
    let is_module = |r: &&Record| {
        matches!(
            r,
            Record::Before {
                target: Target::ModuleParam { .. },
                ..
            }
        )
    };
    let (module_records, rest): (Vec<&Record>, Vec<&Record>) =
        g.records.iter().rev().partition(|r| is_module(r));
    let mut modules: BTreeSet<String> = BTreeSet::new();
    for r in module_records {
        let done = restore_one(knobs, &mut irqs, &untouched, r, g.id, &mut failures);
        if let Some((Target::ModuleParam { module, .. }, true)) = done {
            modules.insert(module.clone());
        }
    }
    if !modules.is_empty() && g.plan().is_some_and(|p| p.options.reload_modules) {
        for module in modules {
            if let Err(error) = knobs.reload_module(&module) {
                failures.push(Unrestored {
                    generation: g.id,
                    knob: format!("reload {module}"),
                    target: format!("module {module}"),
                    error,
                });
            }
        }
        irqs.forget();
    }
    for r in rest {
        restore_one(knobs, &mut irqs, &untouched, r, g.id, &mut failures);
    }
    failures
}

/// Restore one `before` record (others are skipped: `None`), a failure
/// added to `failures`: the journaled target and whether it was restored.
fn restore_one<'r>(
    knobs: &Knobs,
    irqs: &mut IrqResolver<'_>,
    untouched: &BTreeSet<u32>,
    r: &'r Record,
    generation: u32,
    failures: &mut Vec<Unrestored>,
) -> Option<(&'r Target, bool)> {
    let Record::Before {
        seq,
        target: journaled,
        original,
        knob: name,
        queue,
        ..
    } = r
    else {
        return None;
    };
    if untouched.contains(seq) {
        return None;
    }
    let restored = irqs.resolve(journaled, *queue).and_then(|target| {
        let knob = knobs.knob(&target)?;
        if knob.unmanaged().is_some() {
            return Ok(());
        }
        match retry(|| knob.restore(original.as_deref())) {
            Err(e) if knob.unchangeable(&e) => Ok(()),
            r => r,
        }
    });
    irqs.after_restore(journaled);
    match restored {
        Ok(()) => Some((journaled, true)),
        Err(error) => {
            failures.push(Unrestored {
                generation,
                knob: name.clone(),
                target: journaled.describe(),
                error,
            });
            Some((journaled, false))
        }
    }
}

/// Journaled IRQs found by interface and queue on the host as it is now;
/// the host's IRQs are read once, and again after a channel count was
/// restored (that renumbers them).
pub(crate) struct IrqResolver<'k> {
    knobs: &'k Knobs,
    map: Option<IrqMap>,
}

impl<'k> IrqResolver<'k> {
    pub(crate) fn new(knobs: &'k Knobs) -> Self {
        IrqResolver { knobs, map: None }
    }

    /// `t`, with the IRQ serving `queue` now in place of a journaled IRQ
    /// number (unchanged for other targets, or without a queue).
    pub(crate) fn resolve(
        &mut self,
        t: &Target,
        queue: Option<QueueRef>,
    ) -> Result<Target, HostError> {
        match (t, queue) {
            (Target::IrqAffinity { irq, iface }, Some(q)) => {
                let root = self.knobs.root();
                let m = self.map.get_or_insert_with(|| IrqMap::read(root));
                Ok(Target::IrqAffinity {
                    irq: m.resolve(iface, *irq, q)?,
                    iface: iface.clone(),
                })
            }
            _ => Ok(t.clone()),
        }
    }

    /// Forget the IRQs read (a module reload may have renumbered them).
    pub(crate) fn forget(&mut self) {
        self.map = None;
    }

    /// Forget the IRQs read when `t` (just written) renumbers them.
    pub(crate) fn after_restore(&mut self, t: &Target) {
        if matches!(
            t,
            Target::Ethtool {
                group: EthtoolGroup::Channels,
                ..
            }
        ) {
            self.map = None;
        }
    }
}

/// Check every target and original a generation's journal names, before
/// anything is restored from it.
fn check_generation(g: &Generation) -> Result<(), RollbackError> {
    for r in &g.records {
        if let Record::Before {
            seq,
            target,
            original,
            intended,
            ..
        } = r
        {
            let checked = targets::check_target(target)
                .and_then(|()| targets::check_value(target, intended))
                .and_then(|()| match original {
                    Some(o) => targets::check_value(target, o),
                    None => Ok(()),
                });
            if let Err(error) = checked {
                return Err(RollbackError::Refused {
                    generation: g.id,
                    seq: *seq,
                    error,
                });
            }
        }
    }
    Ok(())
}

/// Rollback problems.
#[derive(Debug, Error)]
pub enum RollbackError {
    /// The journal is corrupt or unreadable, or the state directory is
    /// locked: nothing was touched.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The journal names a target or value nettune refuses to touch (it was
    /// edited): nothing was touched.
    #[error("generation {generation}, record {seq}: {error}; the journal was edited, refusing to roll back from it, nothing was touched")]
    Refused {
        /// Generation.
        generation: u32,
        /// The record's sequence number.
        seq: u32,
        /// Why.
        error: HostError,
    },
    /// Some knobs could not be restored (the rest were); the generation
    /// stays in force. Run again when they are back, or force.
    #[error("generation {generation}: could not restore {}; the rest was restored and the generation stays in force. Roll back again when they are back, or with --force to close the generation without them", list(.unrestored))]
    Partial {
        /// Generation.
        generation: u32,
        /// Each knob not restored.
        unrestored: Vec<Unrestored>,
    },
}

impl RollbackError {
    /// Whether the journal was refused by the OS (EACCES/EPERM): not root,
    /// most often.
    pub fn permission_denied(&self) -> bool {
        matches!(self, RollbackError::Journal(j) if j.permission_denied())
    }
}

/// What a rollback did.
#[derive(Debug, Serialize)]
pub struct RollbackReport {
    /// Generations rolled back now, newest first.
    pub rolled_back: Vec<u32>,
    /// Knobs restored.
    pub restored: usize,
    /// Knobs not restored (only with `force`): the generations were closed
    /// without them.
    pub unrestored: Vec<Unrestored>,
}

/// Roll back generation `id` and every newer one (or, with `None`, the newest
/// active one). Idempotent: generations already rolled back are skipped.
/// Every journal is checked first (checksums, and every target and original
/// against [`targets`]); a bad one aborts before any write.
///
/// Every knob that can be restored is; the others are reported per knob. A
/// generation with unrestored knobs stays in force ([`RollbackError::Partial`])
/// unless `force`, which closes it anyway and lists them in the report and
/// the journal. The state directory is locked throughout.
pub fn rollback(
    knobs: &Knobs,
    state: &StateDir,
    id: Option<u32>,
    force: bool,
) -> Result<RollbackReport, RollbackError> {
    let lock = state.lock()?;
    rollback_locked(knobs, state, &lock, id, force, None)
}

/// [`rollback`] under a lock the caller took (`lock` proves it), with the
/// `reason` recorded in each generation's `rolled_back` record when nettune
/// rolls back by itself (a confirm deadline that passed).
pub fn rollback_locked(
    knobs: &Knobs,
    state: &StateDir,
    _lock: &StateLock,
    id: Option<u32>,
    force: bool,
    reason: Option<&str>,
) -> Result<RollbackReport, RollbackError> {
    let all = state.load_all()?;
    let mut todo: Vec<&Generation> = match id {
        None => all.iter().rev().find(|g| g.active()).into_iter().collect(),
        Some(id) => {
            if !all.iter().any(|g| g.id == id) {
                return Err(JournalError::NoGeneration(id).into());
            }
            all.iter().filter(|g| g.id >= id && g.active()).collect()
        }
    };
    todo.sort_by_key(|g| std::cmp::Reverse(g.id));
    for g in &todo {
        check_generation(g)?;
    }
    let mut rep = RollbackReport {
        rolled_back: Vec::new(),
        restored: 0,
        unrestored: Vec::new(),
    };
    for g in todo {
        let failures = restore_records(knobs, g);
        if !failures.is_empty() && !force {
            return Err(RollbackError::Partial {
                generation: g.id,
                unrestored: failures,
            });
        }
        let befores = g
            .records
            .iter()
            .filter(|r| matches!(r, Record::Before { .. }))
            .count();
        rep.restored += befores.saturating_sub(failures.len());
        state.writer(g.id)?.append(&Record::RolledBack {
            at: now(),
            unrestored: failures.iter().map(|u| u.to_string()).collect(),
            reason: reason.map(str::to_string),
        })?;
        rep.rolled_back.push(g.id);
        rep.unrestored.extend(failures);
    }
    Ok(rep)
}
