//! The loop library: the host operations it needs as one trait ([`exec`]),
//! the experiment runner below, `nettune lab`'s loop ([`loop_`]) and the
//! autotune driver ([`autotune`]), none of which links the traffic engine
//! or the namespaces.
//!
//! The experiment runner: runs cells (a set of changes each) over an
//! [`Executor`], repeats every workload in each, and keeps
//! `DIR/results.json` ([`ExperimentResults`]) up to date after every run.
//!
//! Per cell, in the results' `run_order`: [`CellSetup::apply`] (an
//! [`ExecError::NotApplicable`] marks the cell n/a with its reason and the
//! run goes on), then for every workload its warm-up runs and its repeats
//! (fixed, or until the [`StopRule`] is met), then [`CellSetup::rollback`].
//! Cells already `done` or `not_applicable` are skipped, so a resumed run
//! continues where it stopped. Raising the cancel flag (Ctrl-C) rolls the
//! current cell back, marks it `interrupted`, keeps every run so far and
//! returns [`Outcome::Cancelled`]. A host lost mid-run
//! ([`ExecError::HostLost`]: its agent died) stops the run: the current
//! cell is rolled back on every other host and marked `interrupted`, the
//! runs so far are kept, and [`RunError::HostLost`] names the host, whose
//! share of the cell stays applied.
//!
//! # Supplying your own cells and setup
//!
//! `nettune experiment` builds its cells from a file
//! ([`experiment::results_skeleton`], [`experiment::ExperimentSetup`]);
//! another caller (`nettune lab`: "baseline" and "doctor's plan") builds an
//! [`ExperimentResults`] itself with `kind`, `cells` (index, label, levels,
//! status `Pending`), `run_order` (a fixed order such as `[0, 1]`),
//! `baseline_cell`, `workloads` and `metrics`, implements [`CellSetup`] (for
//! example: baseline applies nothing; the other cell applies doctor's plan
//! with [`Executor::apply`] and records it in [`Applied::plans`]), fills a
//! [`Schedule`] and calls [`run`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use model::results::{
    CellResult, CellStatus, ExperimentResults, OverheadRow, RunRecord, RESULTS_FILE,
};
use model::stats::{self, BootstrapConfig, Decision, StopRule};
use thiserror::Error;

use crate::exec::{ExecError, Executor, HostId};
use crate::step::{StepOutcome, StepSetup};

pub mod autotune;
mod cell_stats;
mod eta;
pub mod exec;
pub mod experiment;
pub mod loop_;
pub mod metrics;
mod overhead;
pub mod quality;
mod split;
pub mod step;
mod store;
#[cfg(test)]
mod tests;

pub use cell_stats::recompute_all;
use cell_stats::{cell_stats, values_of};
use eta::Eta;
pub use eta::{estimate, Estimate};
use overhead::run_overhead;
pub use split::{merge_args, SplitExecutor};
pub use store::{load_for_resume, out_dir, write_atomic, EXPERIMENT_FILE};

/// What a cell's setup did, for the runner and the results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Extra bench arguments every workload of the cell runs with (bench
    /// options as factors: `--flows 4`, `--busy-poll 50`).
    pub bench_args: Vec<String>,
    /// Extra bench arguments for single workloads, by workload name, merged
    /// after `bench_args` (`nettune lab`: `--rcvbuf 4M` for the UDP
    /// workload only, from a doctor finding whose fix is a socket option).
    pub workload_args: Vec<(String, Vec<String>)>,
    /// Plans applied (the `nettune plan --json` shape), stored in
    /// `results.plans` under the given key (usually the cell label).
    pub plans: Vec<(String, serde_json::Value)>,
    /// Notes for the reader (`results.notes`).
    pub notes: Vec<model::results::Note>,
    /// Only these workloads run in the cell (`nettune lab`: a fix is
    /// measured on the workloads it concerns); `None`: all of them.
    pub workloads: Option<Vec<String>>,
}

/// How one cell is put in place and taken away again. Implemented by
/// [`experiment::ExperimentSetup`] for experiment files and by `nettune lab`
/// for its baseline and doctor's-plan cells.
pub trait CellSetup {
    /// Put the cell's levels in place on the hosts. Return
    /// [`ExecError::NotApplicable`] when a host cannot take them: the cell
    /// is marked n/a with that reason (after [`CellSetup::rollback`], in
    /// case part of it was applied).
    fn apply(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<Applied, ExecError>;

    /// Undo everything [`CellSetup::apply`] did for this cell. Called after
    /// the cell's runs, after a failure and after a cancel.
    fn rollback(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<(), ExecError>;
}

/// One workload as the runner runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadRun {
    /// Name (as in `results.workloads`).
    pub name: String,
    /// Bench arguments (`--test tcp-rr --duration 5 ...`, without the
    /// address or `--json`, which the executor adds).
    pub args: Vec<String>,
    /// Expected seconds of one run (for the ETA).
    pub expected: Duration,
    /// Deadline of one run.
    pub deadline: Duration,
}

/// What to run and how often.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Host running the bench client.
    pub client: HostId,
    /// Host running the server.
    pub server: HostId,
    /// The workloads, in order, run in every cell.
    pub workloads: Vec<WorkloadRun>,
    /// Warm-up runs per workload and cell, discarded.
    pub warmup: u32,
    /// Fixed repeats per workload and cell (the minimum with `until_ci`).
    pub repeats: u32,
    /// Sequential stopping: repeat until the rule stops (on the workload's
    /// primary metric, the first of `results.metrics` it yields), at most
    /// `max_repeats`.
    pub until_ci: Option<StopRule>,
    /// Bootstrap for the statistics.
    pub bootstrap: BootstrapConfig,
    /// Runs per workload over loopback inside the server host for the
    /// overhead rows (0: none). `Executor::bench` with `client == server`
    /// must run over that host's loopback.
    pub overhead_repeats: u32,
}

/// Where and how to write.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Results directory.
    pub out_dir: PathBuf,
    /// Text of the experiment file, copied to `DIR/experiment.toml` (not
    /// overwritten when resuming).
    pub experiment_text: Option<String>,
    /// Raised by Ctrl-C.
    pub cancel: Arc<AtomicBool>,
}

/// Progress of a run, for a bar or plain lines.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgressEvent {
    /// A run starts.
    Run {
        /// 1-based position of the cell in this session's work.
        cell_pos: usize,
        /// Cells to run in this session.
        cells: usize,
        /// Cell label.
        label: String,
        /// Workload name.
        workload: String,
        /// 0-based repeat (warm-ups first).
        repeat: u32,
        /// Whether it is a warm-up.
        warmup: bool,
        /// Estimated time left.
        eta: Duration,
    },
    /// A cell could not take its levels.
    NotApplicable {
        /// Cell label.
        label: String,
        /// Why.
        reason: String,
    },
    /// A cell ended (done, failed or interrupted).
    CellEnd {
        /// Cell label.
        label: String,
        /// Its status.
        status: CellStatus,
    },
    /// The overhead runs over loopback start.
    Overhead {
        /// Workload name.
        workload: String,
        /// 0-based repeat.
        repeat: u32,
    },
}

/// Receives progress events.
pub trait Progress {
    /// One event.
    fn event(&mut self, ev: &ProgressEvent);
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn event(&mut self, _ev: &ProgressEvent) {}
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every cell is done, n/a or failed.
    Completed,
    /// Cancelled; the current cell was rolled back and marked interrupted.
    Cancelled,
}

/// The runner could not go on.
#[derive(Debug, Error)]
pub enum RunError {
    /// Writing the results directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Resuming was refused.
    #[error("{0}")]
    Resume(String),
    /// A file of the results directory could not be read or written (a
    /// FIFO, a file too large, a symlink where a directory belongs...).
    #[error(transparent)]
    File(#[from] host::HostError),
    /// Rolling a cell back failed: the host may keep its changes.
    #[error("rollback of cell `{cell}` failed: {source}")]
    Rollback {
        /// Cell label.
        cell: String,
        /// The executor's error.
        #[source]
        source: ExecError,
    },
    /// The schedule is unusable.
    #[error("{0}")]
    Schedule(String),
    /// A host was lost mid-run ([`ExecError::HostLost`]): the run stopped,
    /// the cell was rolled back on the other hosts and marked interrupted,
    /// and what it applied on `host` stays applied there.
    #[error("host {host} was lost during cell `{cell}` ({reason}); the run stopped, the cell was rolled back on the other hosts{}, and what it applied on {host} stays applied there", others_failed(rollback))]
    HostLost {
        /// The lost host ([`Executor::host_name`]).
        host: String,
        /// The cell it was lost in.
        cell: String,
        /// What was seen.
        reason: String,
        /// Rolling the cell back on another host failed too: why.
        rollback: Option<String>,
    },
}

fn others_failed(rollback: &Option<String>) -> String {
    match rollback {
        Some(e) => format!(" (but that rollback failed: {e})"),
        None => String::new(),
    }
}

/// [`RunError::HostLost`] for `lost`, with the rollback's own failure
/// unless it is the lost host's.
fn host_lost(cell: &str, lost: ExecError, rb: Result<(), ExecError>) -> RunError {
    let (host, reason) = match lost {
        ExecError::HostLost { host, reason } => (host, reason),
        other => (String::new(), other.to_string()),
    };
    let rollback = match rb {
        Ok(()) => None,
        Err(ExecError::HostLost { host: h, .. }) if h == host => None,
        Err(e) => Some(e.to_string()),
    };
    RunError::HostLost {
        host,
        cell: cell.to_string(),
        reason,
        rollback,
    }
}

/// Run the pending cells of `results` and keep `DIR/results.json` current.
pub fn run(
    results: &mut ExperimentResults,
    schedule: &Schedule,
    exec: &mut dyn Executor,
    setup: &mut dyn CellSetup,
    opts: &RunOptions,
    progress: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    if schedule.workloads.is_empty() {
        return Err(RunError::Schedule("no workloads".into()));
    }
    if let Some(rule) = &schedule.until_ci {
        rule.validate()
            .map_err(|e| RunError::Schedule(e.to_string()))?;
    }
    let dir = &opts.out_dir;
    out_dir(dir)?;
    out_dir(&dir.join("runs"))?;
    if let Some(text) = &opts.experiment_text {
        let p = dir.join(EXPERIMENT_FILE);
        if !p.exists() {
            write_atomic(&p, text.as_bytes())?;
        }
    }
    results.interrupted = false;
    results.finished = None;
    let todo: Vec<usize> = results
        .run_order
        .iter()
        .copied()
        .filter(|i| {
            results.cell(*i).is_some_and(|c| {
                !matches!(
                    c.status,
                    CellStatus::Done | CellStatus::NotApplicable { .. }
                )
            })
        })
        .collect();
    let mut eta = Eta::new(schedule, todo.len());
    save(results, dir)?;
    for (pos, &index) in todo.iter().enumerate() {
        if opts.cancel.load(Ordering::SeqCst) {
            return cancelled(results, dir);
        }
        let outcome = match run_cell(
            results,
            index,
            pos + 1,
            todo.len(),
            schedule,
            exec,
            setup,
            opts,
            progress,
            &mut eta,
        ) {
            Ok(o) => o,
            Err(e @ RunError::HostLost { .. }) => {
                // Keep what was measured; a resume reruns the cell.
                recompute_all(results, &schedule.bootstrap, schedule.until_ci.as_ref());
                results.interrupted = true;
                save(results, dir)?;
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        eta.cell_done();
        recompute_all(results, &schedule.bootstrap, schedule.until_ci.as_ref());
        save(results, dir)?;
        if outcome == Outcome::Cancelled {
            return cancelled(results, dir);
        }
    }
    if schedule.overhead_repeats > 0 {
        if let Outcome::Cancelled = run_overhead(results, schedule, exec, opts, progress)? {
            return cancelled(results, dir);
        }
    }
    results.finished = Some(model::time::rfc3339_utc(std::time::SystemTime::now()));
    save(results, dir)?;
    Ok(Outcome::Completed)
}

fn cancelled(results: &mut ExperimentResults, dir: &Path) -> Result<Outcome, RunError> {
    results.interrupted = true;
    save(results, dir)?;
    Ok(Outcome::Cancelled)
}

fn save(results: &ExperimentResults, dir: &Path) -> Result<(), RunError> {
    let text = serde_json::to_vec_pretty(results).map_err(|e| RunError::Io {
        path: dir.join(RESULTS_FILE),
        source: std::io::Error::other(e),
    })?;
    write_atomic(&dir.join(RESULTS_FILE), &text)
}

fn cell_mut(results: &mut ExperimentResults, index: usize) -> Option<&mut CellResult> {
    results.cells.iter_mut().find(|c| c.index == index)
}

fn set_status(results: &mut ExperimentResults, index: usize, status: CellStatus) {
    if let Some(c) = cell_mut(results, index) {
        c.status = status;
    }
}

#[allow(clippy::too_many_arguments)]
fn run_cell(
    results: &mut ExperimentResults,
    index: usize,
    pos: usize,
    total: usize,
    schedule: &Schedule,
    exec: &mut dyn Executor,
    setup: &mut dyn CellSetup,
    opts: &RunOptions,
    progress: &mut dyn Progress,
    eta: &mut Eta,
) -> Result<Outcome, RunError> {
    let Some(cell) = results.cell(index).cloned() else {
        return Ok(Outcome::Completed);
    };
    // A rerun cell starts over: its earlier partial runs were made under a
    // setup that has since been rolled back.
    if let Some(c) = cell_mut(results, index) {
        c.runs.clear();
        c.stats.clear();
        c.status = CellStatus::Pending;
    }
    let mut step = CellStep { setup, cell: &cell };
    let (measured, rb) = match step::apply_measure_rollback(exec, &mut step, |exec, applied| {
        for (k, v) in &applied.plans {
            results.plans.insert(k.clone(), v.clone());
        }
        for n in &applied.notes {
            if !results.notes.contains(n) {
                results.notes.push(n.clone());
            }
        }
        measure_cell(
            results, index, pos, total, schedule, exec, applied, opts, progress, eta,
        )
    }) {
        StepOutcome::Measured {
            measured, rollback, ..
        } => (measured, rollback),
        StepOutcome::ApplyFailed {
            error: e,
            rollback: rb,
        } => {
            if matches!(e, ExecError::HostLost { .. }) {
                set_status(results, index, CellStatus::Interrupted);
                progress.event(&ProgressEvent::CellEnd {
                    label: cell.label.clone(),
                    status: CellStatus::Interrupted,
                });
                return Err(host_lost(&cell.label, e, rb));
            }
            let status = match e {
                ExecError::NotApplicable { reason, .. } => {
                    progress.event(&ProgressEvent::NotApplicable {
                        label: cell.label.clone(),
                        reason: reason.clone(),
                    });
                    CellStatus::NotApplicable { reason }
                }
                ExecError::Cancelled => CellStatus::Interrupted,
                other => CellStatus::Failed {
                    error: format!("apply: {other}"),
                },
            };
            let interrupted = status == CellStatus::Interrupted;
            set_status(results, index, status.clone());
            progress.event(&ProgressEvent::CellEnd {
                label: cell.label.clone(),
                status,
            });
            rb.map_err(|source| RunError::Rollback {
                cell: cell.label.clone(),
                source,
            })?;
            return Ok(if interrupted {
                Outcome::Cancelled
            } else {
                Outcome::Completed
            });
        }
    };
    let (status, outcome) = match measured {
        Err(MeasureError::Exec(e @ ExecError::HostLost { .. })) => {
            set_status(results, index, CellStatus::Interrupted);
            progress.event(&ProgressEvent::CellEnd {
                label: cell.label.clone(),
                status: CellStatus::Interrupted,
            });
            return Err(host_lost(&cell.label, e, rb));
        }
        Ok(Outcome::Completed) => (CellStatus::Done, Outcome::Completed),
        Ok(Outcome::Cancelled) => (CellStatus::Interrupted, Outcome::Cancelled),
        Err(MeasureError::Exec(e)) => (
            CellStatus::Failed {
                error: e.to_string(),
            },
            Outcome::Completed,
        ),
        Err(MeasureError::Run(e)) => {
            set_status(results, index, CellStatus::Interrupted);
            rb.map_err(|source| RunError::Rollback {
                cell: cell.label.clone(),
                source,
            })?;
            return Err(e);
        }
    };
    set_status(results, index, status.clone());
    progress.event(&ProgressEvent::CellEnd {
        label: cell.label.clone(),
        status,
    });
    match rb {
        // Lost after its runs: they stand, the run stops.
        Err(e @ ExecError::HostLost { .. }) => Err(host_lost(&cell.label, e, Ok(()))),
        rb => {
            rb.map_err(|source| RunError::Rollback {
                cell: cell.label.clone(),
                source,
            })?;
            Ok(outcome)
        }
    }
}

/// A cell of an experiment as the runner's step: its setup's apply and
/// rollback.
struct CellStep<'a> {
    setup: &'a mut dyn CellSetup,
    cell: &'a CellResult,
}

impl StepSetup for CellStep<'_> {
    type Applied = Applied;

    fn apply(&mut self, exec: &mut dyn Executor) -> Result<Applied, ExecError> {
        self.setup.apply(self.cell, exec)
    }

    fn rollback(&mut self, exec: &mut dyn Executor) -> Result<(), ExecError> {
        self.setup.rollback(self.cell, exec)
    }
}

enum MeasureError {
    Exec(ExecError),
    Run(RunError),
}

impl From<RunError> for MeasureError {
    fn from(e: RunError) -> Self {
        MeasureError::Run(e)
    }
}

#[allow(clippy::too_many_arguments)]
fn measure_cell(
    results: &mut ExperimentResults,
    index: usize,
    pos: usize,
    total: usize,
    schedule: &Schedule,
    exec: &mut dyn Executor,
    applied: &Applied,
    opts: &RunOptions,
    progress: &mut dyn Progress,
    eta: &mut Eta,
) -> Result<Outcome, MeasureError> {
    let label = results
        .cell(index)
        .map(|c| c.label.clone())
        .unwrap_or_default();
    let cell_dir = opts.out_dir.join("runs").join(format!("cell-{index:03}"));
    out_dir(&cell_dir)?;
    let metrics = results.metrics.clone();
    for w in &schedule.workloads {
        if applied
            .workloads
            .as_ref()
            .is_some_and(|only| !only.contains(&w.name))
        {
            continue;
        }
        let mut args = merge_args(&w.args, &applied.bench_args);
        for (name, extra) in &applied.workload_args {
            if *name == w.name {
                args = merge_args(&args, extra);
            }
        }
        let max = match &schedule.until_ci {
            Some(rule) => u32::try_from(rule.max_repeats).unwrap_or(u32::MAX),
            None => schedule.repeats,
        };
        let mut repeat = 0u32;
        let mut measured: Vec<f64> = Vec::new();
        let mut primary: Option<model::experiment::Metric> = None;
        loop {
            let warmup = repeat < schedule.warmup;
            let n_measured = repeat.saturating_sub(schedule.warmup);
            if !warmup {
                if n_measured >= max {
                    break;
                }
                match &schedule.until_ci {
                    None if n_measured >= schedule.repeats => break,
                    Some(rule) if measured.len() >= rule.min_repeats => {
                        if let Ok(Decision::Stop(_)) = rule.decide(&measured) {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if opts.cancel.load(Ordering::SeqCst) {
                return Ok(Outcome::Cancelled);
            }
            progress.event(&ProgressEvent::Run {
                cell_pos: pos,
                cells: total,
                label: label.clone(),
                workload: w.name.clone(),
                repeat,
                warmup,
                eta: eta.left(),
            });
            let start_time = model::time::rfc3339_utc(std::time::SystemTime::now());
            let run = step::bench(exec, schedule.client, schedule.server, &args, w.deadline);
            let (bench, drops) = match run {
                Ok(b) => b,
                Err(ExecError::Cancelled) => return Ok(Outcome::Cancelled),
                Err(e @ ExecError::HostLost { .. }) => return Err(MeasureError::Exec(e)),
                // Ctrl-C also reaches the bench process, which then fails.
                Err(_) if opts.cancel.load(Ordering::SeqCst) => return Ok(Outcome::Cancelled),
                Err(e) => return Err(MeasureError::Exec(e)),
            };
            if opts.cancel.load(Ordering::SeqCst) {
                // The run was cut short by Ctrl-C: not a measurement.
                return Ok(Outcome::Cancelled);
            }
            eta.run_done(w.expected);
            note_facts(results, &bench, exec, schedule);
            let raw_name = format!("{}-r{repeat:02}.json", file_safe(&w.name));
            let raw_path = cell_dir.join(&raw_name);
            write_atomic(&raw_path, exec::bench_text(&bench).as_bytes())?;
            let mut rec = metrics::record(&bench, &metrics);
            rec.workload = w.name.clone();
            rec.repeat = repeat;
            rec.warmup = warmup;
            rec.start_time = start_time;
            rec.raw = Some(format!("runs/cell-{index:03}/{raw_name}"));
            rec.drops = drops;
            if !warmup {
                if primary.is_none() {
                    primary = metrics
                        .iter()
                        .copied()
                        .find(|m| rec.values.contains_key(m.key()));
                }
                if let Some(v) = primary.and_then(|m| rec.values.get(m.key())) {
                    measured.push(*v);
                }
            }
            let workloads = results.workloads.clone();
            if let Some(c) = cell_mut(results, index) {
                c.runs.push(rec);
                c.stats = cell_stats(c, &workloads, &metrics, &schedule.bootstrap, None, None);
            }
            save(results, &opts.out_dir)?;
            repeat = repeat.saturating_add(1);
        }
    }
    Ok(Outcome::Completed)
}

/// Keep each host's facts from the first bench output that names them.
fn note_facts(
    results: &mut ExperimentResults,
    bench: &model::bench::result::BenchResult,
    exec: &dyn Executor,
    schedule: &Schedule,
) {
    let client = exec.host_name(schedule.client);
    let server = exec.host_name(schedule.server);
    if results.host_facts.contains_key(&client) && results.host_facts.contains_key(&server) {
        return;
    }
    for (name, side) in [(client, &bench.client), (server, &bench.server_side)] {
        if let Ok(f) = serde_json::to_value(&side.facts) {
            results.host_facts.entry(name).or_insert(f);
        }
    }
}

fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}
