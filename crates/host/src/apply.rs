//! Applying a plan through the journal, rolling back, and checking drift.
//!
//! Every change is: read the original, journal it durably, write, read back
//! and compare. Failures are classified: a managed IRQ refusing its affinity
//! (EIO before 6.12, EPERM after) is *unchangeable* and the apply goes on;
//! EBUSY/EAGAIN are retried; anything else rolls back this apply and names
//! the knob.

pub mod ethtool;
mod files;
pub mod targets;

use crate::error::HostError;
use crate::journal::{
    now, Generation, JournalError, JournalWriter, Record, StateDir, APPLIED, STOPPED,
};
use crate::root::Root;
use model::plan::{Change, CreatedKind, Phase, Plan, Target, ValueFormat};
use model::CpuSet;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use thiserror::Error;

pub use ethtool::{CliEthtool, Ethtool, FixtureEthtool};

/// Starts and stops system services (irqbalance).
pub trait Services {
    /// `running` or `stopped`; `None` when the host has no service manager.
    fn state(&self, name: &str) -> Result<Option<String>, HostError>;
    /// Bring the service to `running` or `stopped`.
    fn set(&self, name: &str, state: &str) -> Result<(), HostError>;
}

/// systemd through `systemctl`.
#[derive(Debug, Default)]
pub struct Systemd;

impl Services for Systemd {
    fn state(&self, name: &str) -> Result<Option<String>, HostError> {
        let out = Command::new("systemctl")
            .args(["is-active", name])
            .output()
            .map_err(|e| HostError::io(format!("systemctl is-active {name}"), e))?;
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Some(
            if s == "active" { "running" } else { "stopped" }.into(),
        ))
    }

    fn set(&self, name: &str, state: &str) -> Result<(), HostError> {
        let verb = if state == "running" { "start" } else { "stop" };
        let what = format!("systemctl {verb} {name}");
        let out = Command::new("systemctl")
            .args([verb, name])
            .output()
            .map_err(|e| HostError::io(&what, e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(HostError::Io {
                path: what.into(),
                error: std::io::Error::other(
                    String::from_utf8_lossy(&out.stderr).trim().to_string(),
                ),
            })
        }
    }
}

/// No service manager (fixture roots): services read as absent.
#[derive(Debug, Default)]
pub struct NoServices;

impl Services for NoServices {
    fn state(&self, _name: &str) -> Result<Option<String>, HostError> {
        Ok(None)
    }
    fn set(&self, name: &str, _state: &str) -> Result<(), HostError> {
        Err(HostError::NotFound {
            path: format!("service {name}").into(),
        })
    }
}

/// Everything a change can touch.
pub struct Knobs<'a> {
    /// The root.
    pub root: &'a Root,
    /// Ethtool access.
    pub ethtool: &'a dyn Ethtool,
    /// Service manager.
    pub services: &'a dyn Services,
    /// Where modprobe.d snippets go (`STATE/modprobe.d`).
    pub snippet_dir: PathBuf,
}

impl std::fmt::Debug for Knobs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Knobs")
            .field("root", &self.root)
            .field("snippet_dir", &self.snippet_dir)
            .finish()
    }
}

fn irq_dir(irq: u32) -> String {
    format!("/proc/irq/{irq}")
}

/// Whether an error from an IRQ affinity write means "managed IRQ".
fn is_unchangeable(e: &HostError) -> bool {
    matches!(e, HostError::PermissionDenied { .. }) || matches!(e.raw_os_error(), Some(1) | Some(5))
}

fn is_retryable(e: &HostError) -> bool {
    matches!(e.raw_os_error(), Some(11) | Some(16))
}

impl Knobs<'_> {
    /// The file an IRQ's affinity is written to: `smp_affinity_list` when
    /// present, else `smp_affinity` (a mask).
    fn irq_file(&self, irq: u32) -> (String, bool) {
        let list = format!("{}/smp_affinity_list", irq_dir(irq));
        if self.root.exists(&list) {
            (list, true)
        } else {
            (format!("{}/smp_affinity", irq_dir(irq)), false)
        }
    }

    /// The snippet's file name (`module` and `param` are checked names, so
    /// it is one plain component of the snippet directory).
    fn snippet(module: &str, param: &str) -> String {
        format!("nettune-{module}-{param}.conf")
    }

    /// The current raw value; `Ok(None)` when the knob does not exist.
    /// A target a plan or journal may not name is refused (see [`targets`]).
    pub fn read_raw(&self, t: &Target) -> Result<Option<String>, HostError> {
        targets::check_target(t)?;
        let opt = |r: Result<String, HostError>| match r {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        };
        match t {
            Target::File { path, .. } => opt(self.root.read(path)),
            Target::IrqAffinity { irq, .. } => opt(self.root.read(self.irq_file(*irq).0)),
            Target::Ethtool { iface, group, attr } => Ok(self
                .ethtool
                .get(iface, *group, attr)?
                .map(|v| v.to_string())),
            Target::Service { name } => self.services.state(name),
            Target::ModuleParam { module, param } => {
                files::read_snippet(&self.snippet_dir, &Self::snippet(module, param))
            }
            Target::Created { path, what } => files::read_created(self.root, path, *what),
        }
    }

    /// The current value in the plan's notation (cpulist for IRQs, trimmed text).
    pub fn read_value(&self, t: &Target) -> Result<Option<String>, HostError> {
        let raw = self.read_raw(t)?;
        Ok(match (t, raw) {
            (Target::IrqAffinity { irq, .. }, Some(r)) => {
                let (_, is_list) = self.irq_file(*irq);
                if is_list {
                    Some(r.trim().to_string())
                } else {
                    Some(
                        CpuSet::parse_mask(&r)
                            .map(|s| s.to_list())
                            .unwrap_or_else(|_| r.trim().to_string()),
                    )
                }
            }
            (Target::Created { .. }, r) => r,
            (_, r) => r.map(|s| s.trim().to_string()),
        })
    }

    /// Write a value given in the plan's notation. The target and the value
    /// are checked first (see [`targets`]).
    pub fn write(&self, t: &Target, value: &str) -> Result<(), HostError> {
        targets::check_target(t)?;
        targets::check_value(t, value)?;
        match t {
            Target::File { path, .. } => self.root.write(path, value),
            Target::IrqAffinity { irq, .. } => {
                let (path, is_list) = self.irq_file(*irq);
                if is_list {
                    self.root.write(&path, value)
                } else {
                    let set = CpuSet::parse_list(value).map_err(|source| HostError::Parse {
                        path: path.clone().into(),
                        source,
                    })?;
                    let cur = self.root.read(&path).unwrap_or_default();
                    let groups = u32::try_from(cur.trim().split(',').count()).unwrap_or(1);
                    self.root.write(&path, &set.to_mask_groups(groups))
                }
            }
            Target::Ethtool { iface, group, attr } => {
                let v: u64 = value.trim().parse().map_err(|_| HostError::Io {
                    path: t.describe().into(),
                    error: std::io::Error::other(format!("`{value}` is not a number")),
                })?;
                self.ethtool.set(iface, *group, attr, v)
            }
            Target::Service { name } => self.services.set(name, value),
            Target::ModuleParam { module, param } => {
                let text = if value.starts_with("options ") || value.starts_with('#') {
                    value.to_string()
                } else {
                    format!(
                        "# Written by nettune for review; copy to /etc/modprobe.d/ and reload {module} to use.\noptions {module} {param}={value}\n"
                    )
                };
                files::write_snippet(&self.snippet_dir, &Self::snippet(module, param), &text)
            }
            Target::Created { path, what } => files::write_created(self.root, path, *what, value),
        }
    }

    /// Put back a journaled original (raw bytes for files; `None` = remove).
    pub fn restore(&self, t: &Target, original: Option<&str>) -> Result<(), HostError> {
        targets::check_target(t)?;
        if let Some(v) = original {
            targets::check_value(t, v)?;
        }
        match (t, original) {
            (Target::File { path, .. }, Some(raw)) => self.write_raw(path, raw),
            (Target::IrqAffinity { irq, .. }, Some(raw)) => {
                self.write_raw(&self.irq_file(*irq).0, raw)
            }
            (Target::ModuleParam { module, param }, None) => {
                files::remove_snippet(&self.snippet_dir, &Self::snippet(module, param))
            }
            (Target::Created { path, what }, None) => files::remove_created(self.root, path, *what),
            (Target::Created { path, what }, Some(v)) => match what {
                CreatedKind::Dir => Ok(()),
                _ => files::write_created(self.root, path, *what, v),
            },
            (t, Some(v)) => self.write(t, v.trim()),
            (t, None) => Err(HostError::NotFound {
                path: t.describe().into(),
            }),
        }
    }

    /// Write the exact original text back (fixtures: byte for byte).
    fn write_raw(&self, path: &str, raw: &str) -> Result<(), HostError> {
        if self.root.is_live() {
            return self.root.write(path, raw.trim_end_matches('\n'));
        }
        let real = self.root.resolve_confined(path, true)?;
        let mut f = crate::root::open_for_write(&real, Path::new(path), true)?;
        std::io::Write::write_all(&mut f, raw.as_bytes()).map_err(|e| HostError::io(path, e))
    }

    /// Read back after a write; `Err(message)` when it does not hold.
    pub fn check(&self, t: &Target, intended: &str) -> Result<(), String> {
        let cur = match self.read_value(t) {
            Ok(Some(v)) => v,
            Ok(None) => return Err("vanished after the write".into()),
            Err(e) => return Err(format!("read back failed: {e}")),
        };
        let same = match t {
            Target::File { format, .. } => format.same(&cur, intended),
            Target::IrqAffinity { .. } => ValueFormat::List.same(&cur, intended),
            Target::ModuleParam { .. } => cur.contains(&format!("={intended}")),
            Target::Created { .. } => true,
            _ => ValueFormat::Text.same(&cur, intended),
        };
        if !same {
            return Err(format!("wrote {intended}, read back {cur}"));
        }
        Ok(())
    }
}

impl Knobs<'_> {
    fn effective_files(&self, irq: u32) -> Vec<(String, ValueFormat)> {
        [
            ("effective_affinity_list", ValueFormat::List),
            ("effective_affinity", ValueFormat::Mask),
        ]
        .into_iter()
        .map(|(f, fmt)| (format!("{}/{f}", irq_dir(irq)), fmt))
        .filter(|(p, _)| self.root.exists(p))
        .collect()
    }

    /// `Some(message)` when `effective_affinity` (kernel 4.15+) lies outside
    /// the intended CPUs. On a live host the move may be pending until the
    /// IRQ next fires, so this is a note, not a failure.
    pub fn effective_mismatch(&self, irq: u32, intended: &str) -> Option<String> {
        let want = CpuSet::parse_list(intended).ok()?;
        let (path, fmt) = self.effective_files(irq).into_iter().next()?;
        let text = self.root.read_trim(&path).ok()?;
        let got = match fmt {
            ValueFormat::List => CpuSet::parse_list(&text).ok()?,
            _ => CpuSet::parse_mask(&text).ok()?,
        };
        (!got.is_empty() && !got.is_subset(&want)).then(|| {
            format!(
                "effective_affinity is still {} (outside {intended}; the move is pending until the IRQ fires)",
                got.to_list()
            )
        })
    }
}

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

/// An apply that failed (and was rolled back).
#[derive(Debug, Error)]
pub enum ApplyError {
    /// The journal could not be written: nothing further was touched.
    #[error("journal: {0}")]
    Journal(JournalError),
    /// A knob failed; the apply was rolled back.
    #[error("{knob} ({target}): {error}; this apply (generation {generation}) was rolled back{rollback_note}")]
    Knob {
        /// Knob name.
        knob: String,
        /// Target description.
        target: String,
        /// What went wrong.
        error: String,
        /// Generation.
        generation: u32,
        /// Empty, or what the rollback could not restore.
        rollback_note: String,
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

impl From<JournalError> for ApplyError {
    fn from(e: JournalError) -> Self {
        ApplyError::Journal(e)
    }
}

/// Re-plan hook: the later phases' changes from a fresh snapshot.
pub type Replan<'a> = Box<dyn FnMut() -> Result<Vec<Change>, String> + 'a>;

/// Apply knobs.
#[derive(Default)]
pub struct ApplyOptions<'a> {
    /// Test hook: stop (sleep forever) after this many writes, to test crashes.
    pub pause_after_writes: Option<usize>,
    /// Called after the channels phase changed something: returns the
    /// changes of the later phases computed from a fresh snapshot (IRQs
    /// renumber). `None`: the plan is applied exactly as given, so the apply
    /// stops after a channel change that later changes depend on (see
    /// [`ApplyReport::stopped`]).
    pub replan: Option<Replan<'a>>,
    /// Apply even when an earlier generation is incomplete.
    pub force: bool,
}

impl std::fmt::Debug for ApplyOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApplyOptions")
            .field("pause_after_writes", &self.pause_after_writes)
            .field("replan", &self.replan.is_some())
            .field("force", &self.force)
            .finish()
    }
}

fn retry<T>(mut f: impl FnMut() -> Result<T, HostError>) -> Result<T, HostError> {
    let mut tries = 0;
    loop {
        match f() {
            Err(e) if is_retryable(&e) && tries < 5 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20 << tries));
            }
            r => return r,
        }
    }
}

/// Check a change's target and intended value (see [`targets`]).
pub fn check_change(c: &Change) -> Result<(), HostError> {
    targets::check_target(&c.target)?;
    targets::check_value(&c.target, &c.after)
}

/// Apply `plan` through a new journal generation in `state`.
///
/// Every change is checked first (a refused target or value writes nothing).
/// The state directory is locked for the whole apply (see [`StateDir::lock`]):
/// a concurrent apply or rollback fails at once with [`JournalError::Locked`].
pub fn apply(
    knobs: &Knobs<'_>,
    state: &StateDir,
    plan: &Plan,
    mut opts: ApplyOptions<'_>,
) -> Result<ApplyReport, ApplyError> {
    for (i, c) in plan.changes.iter().enumerate() {
        check_change(c).map_err(|error| ApplyError::Refused {
            index: i + 1,
            knob: c.knob.clone(),
            error,
        })?;
    }
    let _lock = state.lock()?;
    if !opts.force {
        if let Some(g) = state.load_all()?.into_iter().rev().find(|g| g.active()) {
            if !g.finished() {
                return Err(ApplyError::Incomplete(g.id));
            }
        }
    }
    let mut w = state.begin(plan, &knobs.root.dir().to_string_lossy())?;
    let gen = w.id;
    let mut report = ApplyReport {
        generation: gen,
        changes: Vec::new(),
        stopped: None,
    };
    let mut changes: Vec<Change> = plan.changes.clone();
    let mut writes = 0usize;
    let mut seq = 0u32;
    let mut i = 0;
    let mut channels_changed = false;
    while i < changes.len() {
        let c = changes[i].clone();
        i += 1;
        let fail = |w: &mut JournalWriter, error: String| -> ApplyError {
            let note = match rollback_generation(knobs, w, state) {
                Ok(()) => String::new(),
                Err(e) => format!(" (rollback incomplete: {e})"),
            };
            ApplyError::Knob {
                knob: c.knob.clone(),
                target: c.target.describe(),
                error,
                generation: gen,
                rollback_note: note,
            }
        };
        // Re-planned changes were not checked up front.
        if let Err(e) = check_change(&c) {
            return Err(fail(&mut w, e.to_string()));
        }
        if matches!(c.target, Target::Service { .. }) && !knobs.root.is_live() {
            report.changes.push(Applied {
                knob: c.knob.clone(),
                target: c.target.describe(),
                before: c.before.clone(),
                after: c.after.clone(),
                outcome: Outcome::Skipped {
                    why: "fixture root: services are not managed".into(),
                },
                note: None,
            });
            continue;
        }
        let original = match retry(|| knobs.read_raw(&c.target)) {
            Ok(o) => o,
            Err(e) => return Err(fail(&mut w, format!("reading the original value: {e}"))),
        };
        let creates = matches!(
            c.target,
            Target::ModuleParam { .. } | Target::Created { .. }
        );
        if original.is_none() && !creates {
            return Err(fail(
                &mut w,
                "knob not found (vanished since the plan was made)".into(),
            ));
        }
        if knobs.check(&c.target, &c.after).is_ok() && !creates {
            report.changes.push(Applied {
                knob: c.knob.clone(),
                target: c.target.describe(),
                before: c.before.clone(),
                after: c.after.clone(),
                outcome: Outcome::Unchanged,
                note: None,
            });
            continue;
        }
        let this = seq;
        seq += 1;
        w.append(&Record::Before {
            seq: this,
            target: c.target.clone(),
            knob: c.knob.clone(),
            original: original.clone(),
            intended: c.after.clone(),
        })?;
        match retry(|| knobs.write(&c.target, &c.after)) {
            Ok(()) => {}
            Err(e) if matches!(c.target, Target::IrqAffinity { .. }) && is_unchangeable(&e) => {
                w.append(&Record::Unchangeable {
                    seq: this,
                    error: e.to_string(),
                })?;
                report.changes.push(Applied {
                    knob: c.knob.clone(),
                    target: c.target.describe(),
                    before: c.before.clone(),
                    after: c.after.clone(),
                    outcome: Outcome::Unchangeable {
                        error: format!("{e} (managed IRQ: the kernel owns its affinity)"),
                    },
                    note: None,
                });
                continue;
            }
            Err(e) => {
                w.append(&Record::WriteFailed {
                    seq: this,
                    error: e.to_string(),
                })?;
                return Err(fail(&mut w, format!("write failed: {e}")));
            }
        }
        writes += 1;
        if let Err(msg) = knobs.check(&c.target, &c.after) {
            return Err(fail(&mut w, msg));
        }
        w.append(&Record::Done { seq: this })?;
        let mut note = None;
        if let Target::IrqAffinity { irq, .. } = &c.target {
            if !knobs.root.is_live() {
                // A fixture has no kernel: move effective_affinity to the first
                // intended CPU as x86 does, journaled like any write.
                if let Err(e) = emulate_effective(knobs, &mut w, &mut seq, *irq, &c.after) {
                    return Err(fail(&mut w, e));
                }
            }
            for _ in 0..5 {
                note = knobs.effective_mismatch(*irq, &c.after);
                if note.is_none() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        report.changes.push(Applied {
            knob: c.knob.clone(),
            target: c.target.describe(),
            before: c.before.clone(),
            after: c.after.clone(),
            outcome: Outcome::Applied,
            note,
        });
        if c.phase == Phase::Channels {
            channels_changed = true;
        }
        if let Some(n) = opts.pause_after_writes {
            if writes >= n {
                eprintln!("nettune: paused after {writes} writes (test hook)");
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(3600));
                }
            }
        }
        let next_is_later = changes.get(i).map_or(true, |n| n.phase > Phase::Channels);
        if channels_changed && c.phase == Phase::Channels && next_is_later {
            if let Some(rp) = opts.replan.as_mut() {
                match rp() {
                    Ok(new) => {
                        changes.truncate(i);
                        changes.extend(new.into_iter().filter(|n| n.phase > Phase::Channels));
                    }
                    Err(e) => {
                        return Err(fail(&mut w, format!("re-reading IRQs after channels: {e}")))
                    }
                }
            } else if i < changes.len() {
                // The rest was planned for the old queues and IRQ numbers:
                // apply the plan exactly or not at all past this point.
                let remaining = changes.len() - i;
                let msg = format!(
                    "stopped after the channel change ({} = {}): {remaining} later change(s) were planned for the old queues and IRQ numbers and were not applied",
                    c.target.describe(),
                    c.after
                );
                w.append(&Record::End {
                    status: STOPPED.into(),
                    at: now(),
                    error: Some(msg),
                })?;
                report.stopped = Some(Stopped {
                    after: c.target.describe(),
                    remaining,
                });
                return Ok(report);
            }
        }
    }
    w.append(&Record::End {
        status: APPLIED.into(),
        at: now(),
        error: None,
    })?;
    Ok(report)
}

fn emulate_effective(
    knobs: &Knobs<'_>,
    w: &mut JournalWriter,
    seq: &mut u32,
    irq: u32,
    intended: &str,
) -> Result<(), String> {
    let Some(first) = CpuSet::parse_list(intended).ok().and_then(|s| s.first()) else {
        return Ok(());
    };
    for (path, fmt) in knobs.effective_files(irq) {
        let original = knobs.root.read(&path).map_err(|e| e.to_string())?;
        let value = match fmt {
            ValueFormat::List => first.to_string(),
            _ => {
                let groups = u32::try_from(original.trim().split(',').count()).unwrap_or(1);
                CpuSet::single(first).to_mask_groups(groups)
            }
        };
        let target = Target::File {
            path: path.clone(),
            format: fmt,
        };
        if knobs.check(&target, &value).is_ok() {
            continue;
        }
        let this = *seq;
        *seq += 1;
        w.append(&Record::Before {
            seq: this,
            target: target.clone(),
            knob: "effective_affinity".into(),
            original: Some(original),
            intended: value.clone(),
        })
        .map_err(|e| e.to_string())?;
        knobs.write(&target, &value).map_err(|e| e.to_string())?;
        w.append(&Record::Done { seq: this })
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Restore a generation from its journal writer (used on apply failure).
fn rollback_generation(
    knobs: &Knobs<'_>,
    w: &mut JournalWriter,
    state: &StateDir,
) -> Result<(), String> {
    let g = state.load(w.id).map_err(|e| e.to_string())?;
    let failures = restore_records(knobs, &g);
    let _ = w.append(&Record::End {
        status: "failed".into(),
        at: now(),
        error: None,
    });
    if failures.is_empty() {
        let _ = w.append(&Record::RolledBack {
            at: now(),
            unrestored: Vec::new(),
        });
        Ok(())
    } else {
        Err(failures
            .iter()
            .map(|u| u.to_string())
            .collect::<Vec<_>>()
            .join("; "))
    }
}

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

/// Restore every `before` record of `g` in reverse, going on past failures;
/// returns what could not be restored.
fn restore_records(knobs: &Knobs<'_>, g: &Generation) -> Vec<Unrestored> {
    let untouched: std::collections::BTreeSet<u32> = g
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Unchangeable { seq, .. } | Record::WriteFailed { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    let mut failures = Vec::new();
    for r in g.records.iter().rev() {
        if let Record::Before {
            seq,
            target,
            original,
            knob,
            ..
        } = r
        {
            if untouched.contains(seq) {
                continue;
            }
            if matches!(target, Target::Service { .. }) && !knobs.root.is_live() {
                continue;
            }
            match retry(|| knobs.restore(target, original.as_deref())) {
                Ok(()) => {}
                Err(e) if matches!(target, Target::IrqAffinity { .. }) && is_unchangeable(&e) => {}
                Err(error) => failures.push(Unrestored {
                    generation: g.id,
                    knob: knob.clone(),
                    target: target.describe(),
                    error,
                }),
            }
        }
    }
    failures
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

fn list(u: &[Unrestored]) -> String {
    u.iter()
        .map(|u| u.to_string())
        .collect::<Vec<_>>()
        .join("; ")
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
    knobs: &Knobs<'_>,
    state: &StateDir,
    id: Option<u32>,
    force: bool,
) -> Result<RollbackReport, RollbackError> {
    let _lock = state.lock()?;
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
        })?;
        rep.rolled_back.push(g.id);
        rep.unrestored.extend(failures);
    }
    Ok(rep)
}

/// Drift status of one knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// Current equals intended.
    Ok,
    /// Current differs.
    Drift,
    /// The knob does not exist on this host now.
    NotAvailable,
    /// The kernel refused it at apply time.
    Unchangeable,
}

/// One knob in a verify report.
#[derive(Debug, Clone, Serialize)]
pub struct DriftItem {
    /// Knob name.
    pub knob: String,
    /// Target description.
    pub target: String,
    /// Intended value.
    pub intended: String,
    /// Current value.
    pub current: Option<String>,
    /// Status.
    pub status: DriftStatus,
}

/// Compare the knobs a generation wrote with the host now.
pub fn verify(knobs: &Knobs<'_>, g: &Generation) -> Vec<DriftItem> {
    let unchangeable: Vec<u32> = g
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Unchangeable { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    let mut out: Vec<DriftItem> = Vec::new();
    for r in &g.records {
        let Record::Before {
            seq,
            target,
            knob,
            intended,
            ..
        } = r
        else {
            continue;
        };
        let desc = target.describe();
        out.retain(|d| d.target != desc);
        if unchangeable.contains(seq) {
            out.push(DriftItem {
                knob: knob.clone(),
                target: desc,
                intended: intended.clone(),
                current: knobs.read_value(target).ok().flatten(),
                status: DriftStatus::Unchangeable,
            });
            continue;
        }
        let current = knobs.read_value(target).ok().flatten();
        let status = match &current {
            None => DriftStatus::NotAvailable,
            Some(_) if knobs.check(target, intended).is_ok() => DriftStatus::Ok,
            Some(_) => DriftStatus::Drift,
        };
        out.push(DriftItem {
            knob: knob.clone(),
            target: desc,
            intended: intended.clone(),
            current,
            status,
        });
    }
    out
}

/// The state directory for a root: `--state-dir` when given, else
/// `/var/lib/nettune` under the root.
///
/// `--state-dir` is the user's and trusted as given. The default is resolved
/// inside the root like any path apply writes: a `var/` (or `var/lib/`)
/// symlinked out of a fixture root is refused with [`HostError::Escape`].
pub fn default_state_dir(root: &Root, given: Option<&Path>) -> Result<PathBuf, HostError> {
    match given {
        Some(p) => Ok(p.to_path_buf()),
        None => root.resolve_confined(DEFAULT_STATE_DIR, true),
    }
}

/// The state directory on a live host.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/nettune";

#[cfg(test)]
mod tests {
    use super::*;
    use model::plan::{EthtoolGroup, NetnsScope, PlanOptions};

    fn change(phase: Phase, knob: &str, target: Target, after: &str) -> Change {
        Change {
            phase,
            knob: knob.into(),
            target,
            before: None,
            after: after.into(),
            rule: "test".into(),
            reason: "test".into(),
            source: "test".into(),
        }
    }

    fn file(path: &str) -> Target {
        Target::File {
            path: path.into(),
            format: ValueFormat::Text,
        }
    }

    #[test]
    fn channels_change_triggers_a_replan_of_later_phases() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path().join("root");
        std::fs::create_dir_all(r.join("ethtool")).unwrap();
        std::fs::create_dir_all(r.join("proc/sys")).unwrap();
        std::fs::write(
            r.join("ethtool/eth0.json"),
            "{\n  \"channels\": {\"status\": \"ok\", \"value\": {\"combined_max\": 8, \"combined\": 2}}\n}\n",
        )
        .unwrap();
        std::fs::write(r.join("proc/sys/old"), "0\n").unwrap();
        std::fs::write(r.join("proc/sys/new"), "0\n").unwrap();
        let root = Root::new(&r);
        let eth = FixtureEthtool::new(root.clone());
        let k = Knobs {
            root: &root,
            ethtool: &eth,
            services: &NoServices,
            snippet_dir: t.path().join("state/modprobe.d"),
        };
        let plan = Plan {
            schema_version: 1,
            profile: "t".into(),
            profile_toml: None,
            fingerprint: "f".into(),
            hostname: None,
            options: PlanOptions::default(),
            scope: NetnsScope::Init,
            changes: vec![
                change(
                    Phase::Channels,
                    "combined",
                    Target::Ethtool {
                        iface: "eth0".into(),
                        group: EthtoolGroup::Channels,
                        attr: "combined".into(),
                    },
                    "8",
                ),
                change(Phase::IrqAffinity, "old", file("/proc/sys/old"), "1"),
            ],
            notes: vec![],
        };
        let state = StateDir::new(t.path().join("state"));
        let mut called = 0;
        let rep = apply(
            &k,
            &state,
            &plan,
            ApplyOptions {
                replan: Some(Box::new(|| {
                    called += 1;
                    Ok(vec![change(
                        Phase::IrqAffinity,
                        "new",
                        file("/proc/sys/new"),
                        "7",
                    )])
                })),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(called, 1);
        assert_eq!(rep.changes.len(), 2);
        assert_eq!(
            std::fs::read_to_string(r.join("proc/sys/new")).unwrap(),
            "7\n"
        );
        assert_eq!(
            std::fs::read_to_string(r.join("proc/sys/old")).unwrap(),
            "0\n"
        );
        assert!(std::fs::read_to_string(r.join("ethtool/eth0.json"))
            .unwrap()
            .contains("\"combined\": 8"));
        rollback(&k, &state, None, false).unwrap();
        assert!(std::fs::read_to_string(r.join("ethtool/eth0.json"))
            .unwrap()
            .contains("\"combined\": 2}"));
        assert_eq!(
            std::fs::read_to_string(r.join("proc/sys/new")).unwrap(),
            "0\n"
        );
    }

    #[test]
    fn classification() {
        let eio = HostError::Io {
            path: "/proc/irq/5/smp_affinity".into(),
            error: std::io::Error::from_raw_os_error(5),
        };
        let busy = HostError::Io {
            path: "x".into(),
            error: std::io::Error::from_raw_os_error(16),
        };
        assert!(is_unchangeable(&eio) && !is_retryable(&eio));
        assert!(is_retryable(&busy) && !is_unchangeable(&busy));
        let mut n = 0;
        let r: Result<(), HostError> = retry(|| {
            n += 1;
            if n < 3 {
                Err(HostError::Io {
                    path: "x".into(),
                    error: std::io::Error::from_raw_os_error(11),
                })
            } else {
                Ok(())
            }
        });
        assert!(r.is_ok() && n == 3);
    }
}
