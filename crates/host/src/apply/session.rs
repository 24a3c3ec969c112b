//! Applying a plan through one journal generation.
//!
//! [`begin`] checks the plan, takes the state lock and starts the
//! generation; [`Apply::run`] applies its changes in order. A channel change
//! renumbers IRQs and adds or removes queues, so when the channels phase
//! changed something the run pauses there ([`Progress::ChannelsChanged`]):
//! the caller either re-plans the later phases from the host as it now is and
//! [resumes](Paused::resume) the same generation with them, or
//! [stops](Paused::stop) it. [`apply`] is the plain form: a plan applied
//! exactly, stopping after a channel change that later changes depend on.

use super::backend::FollowUp;
use super::irqmap::IrqMap;
use super::knob::{retry, Knobs};
use super::report::{
    Applied, ApplyError, ApplyReport, KnobError, OtherHost, Outcome, PlanRefused, ReplanError,
    RollbackIncomplete, Stopped,
};
use super::rollback::restore_records;
use super::targets;
use crate::error::HostError;
use crate::journal::{now, EndStatus, JournalWriter, Record, StateDir, StateLock};
use model::plan::{Change, Phase, Plan, Target};
use model::snapshot::QueueRef;

/// How to apply.
#[derive(Debug, Default, Clone)]
pub struct ApplyOptions {
    /// Test hook: stop (sleep forever) after this many writes, to test crashes.
    pub pause_after_writes: Option<usize>,
    /// Apply even when an earlier generation is incomplete.
    pub force: bool,
}

impl ApplyOptions {
    /// The options of `nettune apply` and the agent's `apply`: `force`, and
    /// the `NETTUNE_TEST_PAUSE_AFTER_WRITES` test hook from the environment.
    pub fn from_env(force: bool) -> ApplyOptions {
        ApplyOptions {
            pause_after_writes: std::env::var("NETTUNE_TEST_PAUSE_AFTER_WRITES")
                .ok()
                .and_then(|v| v.parse().ok()),
            force,
        }
    }
}

/// Check a change's target and intended value (see [`targets`]).
pub fn check_change(c: &Change) -> Result<(), HostError> {
    targets::check_target(&c.target)?;
    targets::check_value(&c.target, &c.after)
}

/// An apply in progress: its generation is open in the journal and the
/// state directory is locked. Dropping it without finishing leaves the
/// generation unfinished, as a crash would (`nettune rollback` undoes it).
#[derive(Debug)]
#[must_use = "an apply not run to its end leaves its generation unfinished"]
pub struct Apply<'k> {
    knobs: &'k Knobs,
    state: &'k StateDir,
    _lock: StateLock,
    w: JournalWriter,
    changes: Vec<Change>,
    report: ApplyReport,
    seq: u32,
    writes: usize,
    pause_after_writes: Option<usize>,
    /// The host's IRQs by interface and queue, read when a plan holds IRQ
    /// changes (again after a channel change).
    irqs: Option<IrqMap>,
    /// The plan's `reload_modules`: reload a module after writing its
    /// parameter snippet.
    reload_modules: bool,
    /// The changes written so far, each with the queue of its IRQ: read
    /// back after a module reload, which gives the driver's interfaces its
    /// defaults again (and may renumber their IRQs).
    written: Vec<(Change, Option<QueueRef>)>,
}

/// Where a run got to.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // made once per apply: boxing would buy nothing
#[must_use = "a paused apply must be resumed or stopped"]
pub enum Progress<'k> {
    /// Every change was applied; the generation is closed.
    Finished(ApplyReport),
    /// The channels phase changed something: the later changes were planned
    /// for the old queues and IRQ numbers.
    ChannelsChanged(Paused<'k>),
}

/// An apply paused after its channels phase.
#[derive(Debug)]
#[must_use = "a paused apply must be resumed or stopped"]
pub struct Paused<'k> {
    apply: Apply<'k>,
    after: Change,
    rest: Vec<Change>,
}

/// Check `plan`, lock `state` and start a generation for it. A refused change
/// writes nothing and starts nothing ([`ApplyError::Refused`]); a concurrent
/// apply or rollback fails at once with
/// [`JournalError::Locked`](crate::journal::JournalError::Locked).
pub fn begin<'k>(
    knobs: &'k Knobs,
    state: &'k StateDir,
    plan: &Plan,
    opts: ApplyOptions,
) -> Result<Apply<'k>, ApplyError> {
    for (i, c) in plan.changes.iter().enumerate() {
        check_change(c).map_err(|error| ApplyError::Refused {
            index: i + 1,
            knob: c.knob.clone(),
            error,
        })?;
    }
    let irqs = holds_irqs(&plan.changes).then(|| IrqMap::read(knobs.root()));
    if let Some(m) = &irqs {
        if let Some((i, c, error)) = first_stale_irq(m, &plan.changes) {
            return Err(ApplyError::Refused {
                index: i + 1,
                knob: c.knob.clone(),
                error,
            });
        }
    }
    let lock = state.lock()?;
    if !opts.force {
        if let Some(g) = state.load_all()?.into_iter().rev().find(|g| g.active()) {
            if !g.finished() {
                return Err(ApplyError::Incomplete(g.id));
            }
        }
    }
    let w = state.begin(plan, &knobs.root().dir().to_string_lossy())?;
    Ok(Apply {
        knobs,
        state,
        _lock: lock,
        report: ApplyReport {
            generation: w.id,
            changes: Vec::new(),
            stopped: None,
        },
        w,
        changes: plan.changes.clone(),
        seq: 0,
        writes: 0,
        pause_after_writes: opts.pause_after_writes,
        irqs,
        reload_modules: plan.options.reload_modules,
        written: Vec::new(),
    })
}

/// Whether any change sets an IRQ's affinity.
fn holds_irqs(changes: &[Change]) -> bool {
    changes
        .iter()
        .any(|c| matches!(c.target, Target::IrqAffinity { .. }))
}

/// The first change naming an IRQ that is not its interface's on the host
/// now (see [`IrqMap::queue_of`]).
fn first_stale_irq<'c>(
    m: &IrqMap,
    changes: &'c [Change],
) -> Option<(usize, &'c Change, HostError)> {
    changes
        .iter()
        .enumerate()
        .find_map(|(i, c)| match &c.target {
            Target::IrqAffinity { irq, iface } => m.queue_of(iface, *irq).err().map(|e| (i, c, e)),
            _ => None,
        })
}

/// Apply `plan` exactly as given through a new generation in `state`: when a
/// channel change is written and later changes remain, stop there (see
/// [`ApplyReport::stopped`]).
pub fn apply(
    knobs: &Knobs,
    state: &StateDir,
    plan: &Plan,
    opts: ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply_replanning(knobs, state, plan, opts, None)
}

/// Check a plan given whole (`shown` naming it: a `--plan` file, an agent's
/// request) against the host under `root` before anything is touched:
/// refused when it names created files, or was made for another host (its
/// fingerprint differs) without `force`. The refusal names what changed in
/// one line: at boot (nettune.service) it is the journal's reason for the
/// failed unit.
pub fn check_plan(
    plan: &Plan,
    shown: &str,
    root: &crate::Root,
    force: bool,
) -> Result<(), PlanRefused> {
    if let Some(c) = plan
        .changes
        .iter()
        .find(|c| matches!(c.target, Target::Created { .. }))
    {
        return Err(PlanRefused::Created {
            shown: shown.to_string(),
            target: c.target.describe(),
        });
    }
    let snap = crate::read_snapshot(root);
    let fingerprint = snap.fingerprint();
    if plan.fingerprint != fingerprint && !force {
        let changed = model::plan::hardware_changes(plan, &snap);
        return Err(PlanRefused::OtherHost(Box::new(OtherHost {
            shown: shown.to_string(),
            plan_host: plan.hostname.as_deref().unwrap_or("?").to_string(),
            plan_fingerprint: plan.fingerprint.clone(),
            host: snap.source.hostname.as_deref().unwrap_or("?").to_string(),
            fingerprint,
            changed: if changed.is_empty() {
                "its CPUs, NUMA nodes or a NIC's driver, PCI address or MAC changed".to_string()
            } else {
                changed.join(", ")
            },
        })));
    }
    Ok(())
}

/// Re-plans the changes after a channel change from the host as it now is
/// (the IRQs were renumbered, queues added or removed).
pub type Replan<'a> = &'a mut dyn FnMut() -> Result<Vec<Change>, ReplanError>;

/// [`apply`], and after a channel change with later changes left, the same
/// generation goes on with the changes `replan` gives (a failed re-plan
/// rolls the generation back, naming why); without `replan` it stops there.
/// What `nettune apply` and the agent's `apply` both run.
pub fn apply_replanning(
    knobs: &Knobs,
    state: &StateDir,
    plan: &Plan,
    opts: ApplyOptions,
    replan: Option<Replan<'_>>,
) -> Result<ApplyReport, ApplyError> {
    match begin(knobs, state, plan, opts)?.run()? {
        Progress::Finished(r) => Ok(r),
        Progress::ChannelsChanged(p) => match replan {
            Some(replan) => match replan() {
                Ok(later) => p.resume(later),
                Err(e) => Err(p.abort(e)),
            },
            None if p.remaining() == 0 => p.resume(Vec::new()),
            None => p.stop(),
        },
    }
}

impl<'k> Apply<'k> {
    /// The generation number.
    pub fn generation(&self) -> u32 {
        self.report.generation
    }

    /// Apply the plan's changes in order, pausing after the channels phase
    /// when it changed something.
    pub fn run(mut self) -> Result<Progress<'k>, ApplyError> {
        let changes = std::mem::take(&mut self.changes);
        match self.apply_changes(changes, true)? {
            Some((after, rest)) => Ok(Progress::ChannelsChanged(Paused {
                apply: self,
                after,
                rest,
            })),
            None => self.end().map(Progress::Finished),
        }
    }

    /// Apply `changes`; with `pause`, return the channel change and the
    /// changes after it when the channels phase changed something.
    fn apply_changes(
        &mut self,
        changes: Vec<Change>,
        pause: bool,
    ) -> Result<Option<(Change, Vec<Change>)>, ApplyError> {
        let mut channels_changed = false;
        let mut it = changes.into_iter().peekable();
        while let Some(c) = it.next() {
            if self.change(&c)? && c.phase == Phase::Channels {
                channels_changed = true;
            }
            let next_is_later = it.peek().is_none_or(|n| n.phase > Phase::Channels);
            if pause && channels_changed && c.phase == Phase::Channels && next_is_later {
                return Ok(Some((c, it.collect())));
            }
        }
        Ok(None)
    }

    fn push(&mut self, c: &Change, outcome: Outcome, note: Option<String>) {
        self.report.changes.push(Applied {
            knob: c.knob.clone(),
            target: c.target.describe(),
            before: c.before.clone(),
            after: c.after.clone(),
            outcome,
            note,
        });
    }

    fn next_seq(&mut self) -> u32 {
        let s = self.seq;
        self.seq = self.seq.saturating_add(1);
        s
    }

    /// Apply one change: read the original, journal it, write, read back.
    /// `Ok(true)` when it was written; a failure rolls the generation back.
    fn change(&mut self, c: &Change) -> Result<bool, ApplyError> {
        let knobs = self.knobs;
        let knob = match knobs.knob(&c.target) {
            Ok(k) => k,
            Err(e) => return Err(self.fail(c, KnobError::Refused(e))),
        };
        if let Some(why) = knob.unmanaged() {
            self.push(c, Outcome::Skipped { why: why.into() }, None);
            return Ok(false);
        }
        let original = match retry(|| knob.read_raw()) {
            Ok(o) => o,
            Err(e) => return Err(self.fail(c, KnobError::ReadOriginal(e))),
        };
        if original.is_none() && !knob.creates() {
            return Err(self.fail(c, KnobError::Vanished));
        }
        if !knob.creates() && knob.check(&c.after).is_ok() {
            self.push(c, Outcome::Unchanged, None);
            return Ok(false);
        }
        let queue = match self.queue_of(&c.target) {
            Ok(q) => q,
            Err(e) => return Err(self.fail(c, KnobError::Refused(e))),
        };
        let seq = self.next_seq();
        self.w.append(&Record::Before {
            seq,
            target: c.target.clone(),
            knob: c.knob.clone(),
            original,
            intended: c.after.clone(),
            queue,
        })?;
        match retry(|| knob.write(&c.after)) {
            Ok(()) => {}
            Err(e) if knob.unchangeable(&e) => {
                self.w.append(&Record::Unchangeable {
                    seq,
                    error: e.to_string(),
                })?;
                let error = format!("{e} (managed IRQ: the kernel owns its affinity)");
                self.push(c, Outcome::Unchangeable { error }, None);
                return Ok(false);
            }
            Err(e) => {
                self.w.append(&Record::WriteFailed {
                    seq,
                    error: e.to_string(),
                })?;
                return Err(self.fail(c, KnobError::Write(e)));
            }
        }
        self.writes += 1;
        if let Err(e) = knob.check(&c.after) {
            return Err(self.fail(c, KnobError::Check(e)));
        }
        self.w.append(&Record::Done { seq })?;
        self.written.push((c.clone(), queue));
        if let (true, Target::ModuleParam { module, .. }) = (self.reload_modules, &c.target) {
            // Journaled as done: a failed reload rolls the snippet back and
            // reloads again (rollback.rs).
            if let Err(e) = self.knobs.reload_module(module) {
                return Err(self.fail(c, KnobError::Reload(e)));
            }
            if let Err((i, error)) = self.reassert() {
                let w = self.written[i].0.clone();
                let error = KnobError::AfterReload {
                    module: module.clone(),
                    error,
                };
                return Err(self.fail(&w, error));
            }
        }
        let follow_ups = match knob.follow_ups(&c.after) {
            Ok(f) => f,
            Err(e) => return Err(self.fail(c, KnobError::FollowUp(e))),
        };
        for f in follow_ups {
            if let Err(e) = self.follow_up(&f) {
                return Err(match e {
                    FollowUpError::Journal(e) => e.into(),
                    FollowUpError::Host(e) => self.fail(c, KnobError::FollowUp(e)),
                });
            }
        }
        let note = knob.note(&c.after);
        self.push(c, Outcome::Applied, note);
        self.test_pause();
        Ok(true)
    }

    /// After a module reload: every change written so far that no longer
    /// reads back (the reloaded driver's defaults: its coalescing, features,
    /// queues' steering, a new IRQ's affinity) is written again, an IRQ
    /// found anew by its queue. The journal keeps each knob's original from
    /// before the apply, which rollback restores.
    fn reassert(&mut self) -> Result<(), (usize, Box<KnobError>)> {
        let knobs = self.knobs;
        let map = IrqMap::read(knobs.root());
        for (i, (c, queue)) in self.written.iter().enumerate() {
            if matches!(c.target, Target::ModuleParam { .. }) {
                continue;
            }
            let target = match (&c.target, queue) {
                (Target::IrqAffinity { irq, iface }, Some(q)) => match map.resolve(iface, *irq, *q)
                {
                    Ok(irq) => Target::IrqAffinity {
                        irq,
                        iface: iface.clone(),
                    },
                    Err(e) => return Err((i, Box::new(KnobError::Refused(e)))),
                },
                (t, _) => t.clone(),
            };
            let knob = knobs
                .knob(&target)
                .map_err(|e| (i, Box::new(KnobError::Refused(e))))?;
            if knob.check(&c.after).is_ok() {
                continue;
            }
            retry(|| knob.write(&c.after)).map_err(|e| (i, Box::new(KnobError::Write(e))))?;
            knob.check(&c.after)
                .map_err(|e| (i, Box::new(KnobError::Check(e))))?;
        }
        self.irqs = Some(map);
        Ok(())
    }

    /// For an IRQ's affinity, the queue the IRQ serves (journaled with it).
    fn queue_of(&mut self, t: &Target) -> Result<Option<QueueRef>, HostError> {
        let Target::IrqAffinity { irq, iface } = t else {
            return Ok(None);
        };
        let root = self.knobs.root();
        self.irqs
            .get_or_insert_with(|| IrqMap::read(root))
            .queue_of(iface, *irq)
    }

    /// A write that follows from another, journaled like any other; skipped
    /// when the knob already holds the value.
    fn follow_up(&mut self, f: &FollowUp) -> Result<(), FollowUpError> {
        let knobs = self.knobs;
        let knob = knobs.knob(&f.target)?;
        let original = knob.read_raw()?;
        if knob.check(&f.value).is_ok() {
            return Ok(());
        }
        let seq = self.next_seq();
        self.w.append(&Record::Before {
            seq,
            target: f.target.clone(),
            knob: f.knob.into(),
            original,
            intended: f.value.clone(),
            queue: None,
        })?;
        knob.write(&f.value)?;
        self.w.append(&Record::Done { seq })?;
        Ok(())
    }

    /// The `NETTUNE_TEST_PAUSE_AFTER_WRITES` hook: sleep for good after that
    /// many writes, so a test can SIGKILL an apply in the middle.
    fn test_pause(&self) {
        if let Some(n) = self.pause_after_writes {
            if self.writes >= n {
                eprintln!("nettune: paused after {} writes (test hook)", self.writes);
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            }
        }
    }

    /// Roll this generation back after `c` failed with `error`, and say so.
    fn fail(&mut self, c: &Change, error: KnobError) -> ApplyError {
        ApplyError::Knob {
            knob: c.knob.clone(),
            target: c.target.describe(),
            error: Box::new(error),
            generation: self.report.generation,
            rollback: self.roll_back().err().map(Box::new),
        }
    }

    /// Restore what this generation wrote (from its journal) and close it.
    fn roll_back(&mut self) -> Result<(), RollbackIncomplete> {
        let g = self
            .state
            .load(self.w.id)
            .map_err(RollbackIncomplete::Journal)?;
        let failures = restore_records(self.knobs, &g);
        let _ = self.w.append(&Record::End {
            status: EndStatus::Failed,
            at: now(),
            error: None,
        });
        if !failures.is_empty() {
            return Err(RollbackIncomplete::Unrestored(failures));
        }
        let _ = self.w.append(&Record::RolledBack {
            at: now(),
            unrestored: Vec::new(),
            reason: None,
        });
        Ok(())
    }

    /// Close the generation as applied.
    fn end(mut self) -> Result<ApplyReport, ApplyError> {
        self.w.append(&Record::End {
            status: EndStatus::Applied,
            at: now(),
            error: None,
        })?;
        Ok(self.report)
    }
}

/// A follow-up write's failure: the journal (fatal as is) or the knob.
enum FollowUpError {
    Journal(crate::journal::JournalError),
    Host(HostError),
}

impl From<HostError> for FollowUpError {
    fn from(e: HostError) -> Self {
        FollowUpError::Host(e)
    }
}

impl From<crate::journal::JournalError> for FollowUpError {
    fn from(e: crate::journal::JournalError) -> Self {
        FollowUpError::Journal(e)
    }
}

impl<'k> Paused<'k> {
    /// The channel change written last.
    pub fn after(&self) -> &Change {
        &self.after
    }

    /// How many changes of the plan come after it.
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The generation number.
    pub fn generation(&self) -> u32 {
        self.apply.generation()
    }

    /// Continue the same generation with `later`: the later phases planned
    /// again from the host as it is now (changes of the channels phase or
    /// before are dropped). Each is checked first; a refused one rolls the
    /// generation back.
    pub fn resume(mut self, later: Vec<Change>) -> Result<ApplyReport, ApplyError> {
        let later: Vec<Change> = later
            .into_iter()
            .filter(|c| c.phase > Phase::Channels)
            .collect();
        for c in &later {
            if let Err(e) = check_change(c) {
                return Err(self.apply.fail(c, KnobError::Refused(e)));
            }
        }
        // The channel change renumbered the IRQs: read them again.
        self.apply.irqs = holds_irqs(&later).then(|| IrqMap::read(self.apply.knobs.root()));
        if let Some(m) = &self.apply.irqs {
            if let Some((_, c, e)) = first_stale_irq(m, &later) {
                let c = c.clone();
                return Err(self.apply.fail(&c, KnobError::Refused(e)));
            }
        }
        // Nothing in `later` is a channel change, so this never pauses.
        let _ = self.apply.apply_changes(later, false)?;
        self.apply.end()
    }

    /// End the generation here: what was written stays in force, and the
    /// report says how many changes were left out ([`ApplyReport::stopped`]).
    /// With none left it is simply applied.
    pub fn stop(self) -> Result<ApplyReport, ApplyError> {
        let Paused {
            mut apply,
            after,
            rest,
        } = self;
        if rest.is_empty() {
            return apply.end();
        }
        let remaining = rest.len();
        let msg = format!(
            "stopped after the channel change ({} = {}): {remaining} later change(s) were planned for the old queues and IRQ numbers and were not applied",
            after.target.describe(),
            after.after
        );
        apply.w.append(&Record::End {
            status: EndStatus::Stopped,
            at: now(),
            error: Some(msg),
        })?;
        apply.report.stopped = Some(Stopped {
            after: after.target.describe(),
            remaining,
        });
        Ok(apply.report)
    }

    /// Re-planning failed: roll the generation back and say why.
    pub fn abort(mut self, error: ReplanError) -> ApplyError {
        let after = self.after.clone();
        self.apply.fail(&after, KnobError::Replan(error))
    }
}
