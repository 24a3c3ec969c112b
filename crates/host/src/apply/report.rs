//! What an apply reports, and how it fails.

use super::knob::CheckError;
use super::rollback::Unrestored;
use crate::error::HostError;
use crate::journal::JournalError;
use serde::Serialize;
use thiserror::Error;

/// What happened to one change.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Outcome {
    /// Written and read back.
    Applied,
    /// Already at the intended value.
    Unchanged,
    /// The kernel refused for good (managed IRQ); not changed.
    Unchangeable {
        /// The error.
        error: String,
    },
    /// Not attempted (why).
    Skipped {
        /// Why.
        why: String,
    },
}

/// One line of an apply report.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// Knob name.
    pub knob: String,
    /// Target description.
    pub target: String,
    /// Value before.
    pub before: Option<String>,
    /// Value written.
    pub after: String,
    /// What happened.
    pub outcome: Outcome,
    /// A remark (e.g. `effective_affinity` not moved yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The result of an apply.
#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    /// Generation number in the journal.
    pub generation: u32,
    /// Per change.
    pub changes: Vec<Applied>,
    /// Set when the apply stopped after a channel change (no re-plan given):
    /// the later changes were planned for the old queues and IRQ numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// Why an apply stopped before the end of its plan.
#[derive(Debug, Clone, Serialize)]
pub struct Stopped {
    /// The channel change that was applied (target description).
    pub after: String,
    /// Changes of the plan not applied.
    pub remaining: usize,
}

/// A re-plan that failed, from the caller that re-plans after a channel
/// change (see [`Paused::abort`](super::Paused::abort)).
pub type ReplanError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong with one knob during an apply.
#[derive(Debug, Error)]
pub enum KnobError {
    /// A (re-planned) change names a target or value nettune refuses to touch.
    #[error("{0}")]
    Refused(HostError),
    /// Its original value could not be read.
    #[error("reading the original value: {0}")]
    ReadOriginal(HostError),
    /// It does not exist.
    #[error("knob not found (vanished since the plan was made)")]
    Vanished,
    /// The write failed.
    #[error("write failed: {0}")]
    Write(HostError),
    /// The write did not hold.
    #[error("{0}")]
    Check(CheckError),
    /// A write that follows from it (`effective_affinity` under a fixture) failed.
    #[error("{0}")]
    FollowUp(HostError),
    /// Reloading the module after writing its parameter failed.
    #[error("module reload failed: {0}")]
    Reload(HostError),
    /// A change written before a module reload, which gave the driver's
    /// interfaces their defaults again, could not be written again after it.
    #[error("written again after reloading {module}: {error}")]
    AfterReload {
        /// The module reloaded.
        module: String,
        /// What the change's knob did.
        error: Box<KnobError>,
    },
    /// Re-planning after the channel change failed.
    #[error("re-reading IRQs after channels: {0}")]
    Replan(ReplanError),
}

/// Why a rollback after a failed apply is incomplete.
#[derive(Debug, Error)]
pub enum RollbackIncomplete {
    /// The generation's journal could not be read back.
    #[error("{0}")]
    Journal(JournalError),
    /// Some knobs could not be restored.
    #[error("{}", super::rollback::list(.0))]
    Unrestored(Vec<Unrestored>),
}

/// A plan given whole (a `--plan FILE`, an agent's `apply` request) that
/// [`check_plan`](super::check_plan) refuses: nothing was touched.
#[derive(Debug, Error)]
pub enum PlanRefused {
    /// It names a file that only `apply --persist` creates.
    #[error("{shown}: names a created file ({target}); only `apply --persist` creates files")]
    Created {
        /// The plan, as the caller names it.
        shown: String,
        /// The created file's target.
        target: String,
    },
    /// It was made for other hardware, and `force` was not given.
    #[error("{0}")]
    OtherHost(Box<OtherHost>),
}

/// A plan made for other hardware ([`PlanRefused::OtherHost`]).
#[derive(Debug, Error)]
#[error("{shown}: made for host {plan_host} (fingerprint {plan_fingerprint}), but this host is {host} (fingerprint {fingerprint}): {changed}; refusing (plan again, or pass --force to apply anyway)")]
pub struct OtherHost {
    /// The plan, as the caller names it.
    pub shown: String,
    /// The hostname the plan recorded (`?` when none).
    pub plan_host: String,
    /// The fingerprint it recorded.
    pub plan_fingerprint: String,
    /// This host's name (`?` when unknown).
    pub host: String,
    /// This host's fingerprint.
    pub fingerprint: String,
    /// What changed, in words.
    pub changed: String,
}

/// An apply that failed (and was rolled back).
#[derive(Debug, Error)]
pub enum ApplyError {
    /// The journal could not be written: nothing further was touched.
    #[error("journal: {0}")]
    Journal(JournalError),
    /// A knob failed; the apply was rolled back.
    #[error("{knob} ({target}): {error}; this apply (generation {generation}) was rolled back{}", incomplete(.rollback))]
    Knob {
        /// Knob name.
        knob: String,
        /// Target description.
        target: String,
        /// What went wrong.
        error: Box<KnobError>,
        /// Generation.
        generation: u32,
        /// What the rollback could not restore, if anything.
        rollback: Option<Box<RollbackIncomplete>>,
    },
    /// A previous apply did not finish and was not rolled back.
    #[error("generation {0} did not finish (crash, or a failed apply whose rollback was incomplete) and is not rolled back: run `nettune rollback` first, or pass --force")]
    Incomplete(u32),
    /// The plan names a target or value nettune refuses to touch: nothing
    /// was written and no generation was started.
    #[error("change {index} ({knob}): {error}; nothing was written")]
    Refused {
        /// 1-based position in the plan's changes.
        index: usize,
        /// Knob name.
        knob: String,
        /// Why.
        error: HostError,
    },
}

impl ApplyError {
    /// Whether the journal was refused by the OS (EACCES/EPERM): not root,
    /// most often.
    pub fn permission_denied(&self) -> bool {
        matches!(self, ApplyError::Journal(j) if j.permission_denied())
    }

    /// Whether a knob the plan writes is absent on this host (no such
    /// sysctl, `/sys` or `/proc/irq` file): `nettune apply` exits
    /// [`EXIT_KNOB_ABSENT`](super::EXIT_KNOB_ABSENT) for it.
    pub fn knob_absent(&self) -> bool {
        match self {
            ApplyError::Knob { error, .. } => error.knob_absent(),
            ApplyError::Refused { error, .. } => error.is_not_found(),
            _ => false,
        }
    }

    /// Whether the OS refused a write (the journal's or a knob's) for want
    /// of privileges (EACCES/EPERM): `nettune apply` exits
    /// [`EXIT_NOT_ROOT`](super::EXIT_NOT_ROOT) for it.
    pub fn refused_for_privileges(&self) -> bool {
        match self {
            ApplyError::Knob { error, .. } => error.permission_denied(),
            ApplyError::Refused { error, .. } => {
                matches!(error, HostError::PermissionDenied { .. })
            }
            _ => self.permission_denied(),
        }
    }
}

impl KnobError {
    /// Whether the knob does not exist (it vanished, or reading or writing
    /// it found no file).
    pub fn knob_absent(&self) -> bool {
        match self {
            KnobError::Vanished => true,
            KnobError::Refused(e) | KnobError::ReadOriginal(e) | KnobError::Write(e) => {
                e.is_not_found()
            }
            _ => false,
        }
    }

    /// Whether reading or writing the knob was refused (EACCES/EPERM).
    pub fn permission_denied(&self) -> bool {
        match self {
            KnobError::ReadOriginal(e) | KnobError::Write(e) | KnobError::FollowUp(e) => {
                matches!(e, HostError::PermissionDenied { .. })
            }
            _ => false,
        }
    }
}

fn incomplete(r: &Option<Box<RollbackIncomplete>>) -> String {
    match r {
        None => String::new(),
        Some(e) => format!(" (rollback incomplete: {e})"),
    }
}

impl From<JournalError> for ApplyError {
    fn from(e: JournalError) -> Self {
        ApplyError::Journal(e)
    }
}
