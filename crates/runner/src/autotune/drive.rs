//! The loop of `nettune autotune --lab`: for each measurement the search
//! asks for, apply the arm's changes on every host through its journal, run
//! the workload once, roll back, and record the run's values.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use model::drops::run::RunDrops;
use model::experiment::{Knob, Level, Metric};
use model::plan::NetnsScope;
use model::snapshot::HostSnapshot;
use tune::autotune::{Arm, Observation, Outcome, Response, Search, Step};

use super::AutotuneRunError;
use crate::exec::{ExecError, Executor, HostId};
use crate::step::{apply_measure_rollback, rollback_hosts, HostLevels, StepSetup};
use crate::{merge_args, metrics};

/// One run of the search, as results.json's trace lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTrace {
    /// 0-based run number.
    pub seq: usize,
    /// The arm (`baseline`, a candidate, or `a + b`).
    pub arm: String,
    /// The objective's value.
    pub value: f64,
    /// Every metric the run yielded, by key.
    pub values: BTreeMap<String, f64>,
    /// What limited the run (`model::results::RunRecord::limited_by`).
    pub limited_by: Option<String>,
    /// What else used the machine during the run.
    pub others: Option<model::busy::OthersLoad>,
    /// Drops by reason over the run, per kernel, or why none.
    pub drops: Vec<RunDrops>,
}

/// The note when some of the search's runs ran on a busy machine.
pub fn busy_note(trace: &[RunTrace]) -> Option<String> {
    model::busy::busy_of("the search", trace.iter().map(|r| r.others.as_ref()))
}

/// One run's metrics and what limited it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    /// Every metric the run yielded, by key.
    pub values: BTreeMap<String, f64>,
    /// What limited the run, when the bench said.
    pub limited_by: Option<String>,
    /// What else used the machine during the run.
    pub others: Option<model::busy::OthersLoad>,
    /// Drops by reason over the run, per kernel, or why none.
    pub drops: Vec<RunDrops>,
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// The search finished.
    Done(Outcome),
    /// Ctrl-C: the current arm was rolled back; the outcome is what the
    /// runs so far proved ([`Search::outcome_so_far`]: nothing during the
    /// race, during the re-check only what already met the acceptance rule).
    Cancelled(Outcome),
}

impl Ended {
    /// The outcome, finished or so far.
    pub fn outcome(&self) -> &Outcome {
        match self {
            Ended::Done(o) | Ended::Cancelled(o) => o,
        }
    }

    /// Whether the search was stopped before its end.
    pub fn interrupted(&self) -> bool {
        matches!(self, Ended::Cancelled(_))
    }
}

/// What the loop needs besides the search.
#[derive(Debug, Clone)]
pub struct DriveConfig {
    /// The host running the bench client.
    pub client: HostId,
    /// Hosts whose state the arms change (client and server).
    pub hosts: Vec<HostId>,
    /// Each host's snapshot, read once before the search (every arm is
    /// rolled back, so the state it plans against comes back).
    pub snapshots: Vec<(HostId, HostSnapshot)>,
    /// The server host.
    pub server: HostId,
    /// The workload's bench arguments (without address and `--json`).
    pub bench_args: Vec<String>,
    /// Deadline of one bench run.
    pub deadline: Duration,
    /// The objective's metric.
    pub objective: Metric,
    /// Responses the constraints watch.
    pub responses: Vec<Response>,
    /// Scope of the plans (the lab's namespaces: `Child`).
    pub scope: NetnsScope,
    /// Set by Ctrl-C.
    pub cancel: Arc<AtomicBool>,
    /// Source addresses of the client, taken in turn, one per run
    /// (`--bind`); empty: the bench picks its own. With connection-rate
    /// workloads a run on an address no run used in the last minute finds
    /// no TIME_WAIT of earlier runs on its 4-tuples, so it measures its arm
    /// rather than the history (the lab's `Lab::add_source_pool`).
    pub sources: Vec<IpAddr>,
    /// A time budget (`--time`): after each run the search's budget is
    /// raised to the runs that fit in it at the pace measured so far, so
    /// runs quicker than estimated buy more of them. It is never lowered
    /// (slower runs keep the estimate's budget). `None`: runs only.
    pub time: Option<Duration>,
}

impl DriveConfig {
    /// The source address of run `seq` (the pool in turn), if any.
    pub fn source(&self, seq: usize) -> Option<IpAddr> {
        self.sources
            .get(seq.checked_rem(self.sources.len())?)
            .copied()
    }
}

fn metric_of(r: Response) -> Metric {
    let Response::Metric(m) = r;
    m
}

/// A setting kept in force under the search (`--from`): the hosts whose
/// journals hold it and the bench arguments it adds to every run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kept {
    /// Hosts changed, in the order applied (rolled back in reverse).
    pub hosts: Vec<HostId>,
    /// Bench arguments of its bench options.
    pub bench_args: Vec<String>,
}

/// Apply `setting` on every host of `snapshots` through its journal and
/// keep it (`nettune autotune --from`): the search's arms are applied on
/// top, each rolled back to it, and [`Kept::undo`] rolls it back at the
/// end. On a failure what was applied is rolled back.
pub fn keep(
    exec: &mut dyn Executor,
    snapshots: &[(HostId, HostSnapshot)],
    scope: NetnsScope,
    setting: &[(Knob, Level)],
) -> Result<Kept, ExecError> {
    let hosts: Vec<HostId> = snapshots.iter().map(|(h, _)| *h).collect();
    let mut levels = HostLevels {
        snapshots,
        hosts: &hosts,
        scope,
        changes: setting,
        applied: Vec::new(),
    };
    match levels.apply(exec) {
        Ok(bench_args) => Ok(Kept {
            hosts: levels.applied,
            bench_args,
        }),
        Err(e) => {
            // Best effort: the error is the apply's (an apply that failed
            // rolled itself back, and the lab's hosts had nothing older).
            let _ = levels.rollback(exec);
            Err(e)
        }
    }
}

impl Kept {
    /// Roll the kept setting back on every host it changed.
    pub fn undo(&mut self, exec: &mut dyn Executor) -> Result<(), ExecError> {
        rollback_hosts(exec, &mut self.hosts)
    }
}

/// One measurement: the runner's step (apply the arm on every host, bench,
/// roll back, also when the bench fails).
pub(crate) fn measure(
    exec: &mut dyn Executor,
    cfg: &DriveConfig,
    changes: &[(Knob, Level)],
    seq: usize,
) -> Result<Measured, ExecError> {
    let mut levels = HostLevels {
        snapshots: &cfg.snapshots,
        hosts: &cfg.hosts,
        scope: cfg.scope,
        changes,
        applied: Vec::new(),
    };
    let (bench, drops) = apply_measure_rollback(exec, &mut levels, |exec, extra: &Vec<String>| {
        let mut args = merge_args(&cfg.bench_args, extra);
        if let Some(a) = cfg.source(seq) {
            args.extend(["--bind".to_string(), a.to_string()]);
        }
        crate::step::bench(exec, cfg.client, cfg.server, &args, cfg.deadline)
    })
    .first_error()?;
    let mut wanted = vec![cfg.objective];
    wanted.extend(cfg.responses.iter().map(|r| metric_of(*r)));
    let rec = metrics::record(&bench, &wanted);
    Ok(Measured {
        values: rec.values,
        limited_by: rec.limited_by,
        others: rec.others,
        drops,
    })
}

/// Drive `search` to its end on `exec`, calling `on_run` after each run.
/// Every arm is rolled back before the next; on Ctrl-C the current arm is
/// rolled back and the loop returns [`Ended::Cancelled`] with what the runs
/// so far proved, and the trace.
pub fn drive(
    search: &mut Search,
    exec: &mut dyn Executor,
    cfg: &DriveConfig,
    on_run: &mut dyn FnMut(&RunTrace, &Search),
) -> Result<(Ended, Vec<RunTrace>), AutotuneRunError> {
    let mut trace = Vec::new();
    let started = Instant::now();
    loop {
        if cfg.cancel.load(Ordering::SeqCst) {
            return cancelled(search, trace);
        }
        let (arm, seq) = match search.next_step()? {
            Step::Done(o) => return Ok((Ended::Done(o), trace)),
            Step::Measure { arm, seq } => (arm, seq),
        };
        let changes = arm_changes(search, &arm);
        let Measured {
            values,
            limited_by,
            others,
            drops,
        } = match measure(exec, cfg, &changes, seq) {
            Ok(v) => v,
            Err(ExecError::Cancelled) => return cancelled(search, trace),
            Err(_) if cfg.cancel.load(Ordering::SeqCst) => return cancelled(search, trace),
            Err(e) => {
                return Err(AutotuneRunError::Run {
                    seq,
                    arm: search.label(&arm),
                    source: e,
                })
            }
        };
        let key = cfg.objective.key();
        let value = values.get(key).copied().unwrap_or(f64::NAN);
        let mut obs = Observation::new(value);
        for r in &cfg.responses {
            let v = values.get(metric_of(*r).key()).copied().unwrap_or(f64::NAN);
            obs = obs.with(*r, v);
        }
        search.record(&arm, obs)?;
        if let Some(t) = cfg.time {
            let done = trace.len().saturating_add(1);
            search.raise_budget(done.saturating_add(runs_that_fit(t, started.elapsed(), done)));
        }
        let run = RunTrace {
            seq,
            arm: search.label(&arm),
            value,
            values,
            limited_by,
            others,
            drops,
        };
        on_run(&run, search);
        trace.push(run);
    }
}

/// Runs that fit in what is left of `total` after `done` runs took
/// `elapsed`, at their mean pace (0 when none is done or time is up).
pub fn runs_that_fit(total: Duration, elapsed: Duration, done: usize) -> usize {
    let Some(per_run) = u32::try_from(done)
        .ok()
        .filter(|&d| d > 0)
        .and_then(|d| elapsed.checked_div(d))
    else {
        return 0;
    };
    let left = total.saturating_sub(elapsed).as_nanos();
    usize::try_from(left / per_run.as_nanos().max(1)).unwrap_or(usize::MAX)
}

/// How [`drive`] ends on Ctrl-C: with what the runs so far proved.
fn cancelled(
    search: &Search,
    trace: Vec<RunTrace>,
) -> Result<(Ended, Vec<RunTrace>), AutotuneRunError> {
    Ok((Ended::Cancelled(search.outcome_so_far()?), trace))
}

/// The changes an arm makes: its candidates only (every other factor stays
/// at the host's current level, which is the baseline).
pub fn arm_changes(search: &Search, arm: &Arm) -> Vec<(Knob, Level)> {
    let cands = search.space().candidates();
    arm.changes()
        .into_iter()
        .filter_map(|i| cands.get(i))
        .map(|c| (c.knob, c.level.clone()))
        .collect()
}

/// What limited the runs of the search, for its summary: the baseline's
/// runs, then every arm whose runs were limited otherwise or split (its
/// verdict compares runs in another state than the baseline's), each as
/// `ARM: the server's recv thread in 18 of 18 runs (median 17.9 Gbit/s)`.
/// Empty when no run says what limited it.
pub fn limits_lines(trace: &[RunTrace], fmt: &dyn Fn(f64) -> String) -> Vec<String> {
    let all = arm_groups(trace);
    let base_top = all
        .first()
        .and_then(|(_, gs)| gs.first())
        .map(|g| g.limited_by.clone());
    all.iter()
        .enumerate()
        .filter(|(i, (_, gs))| {
            let differs = gs.len() > 1 || gs.first().map(|g| g.limited_by.clone()) != base_top;
            !gs.is_empty() && (*i == 0 || differs)
        })
        .map(|(_, (arm, gs))| format!("{arm}: {}", model::results::LimitGroup::describe(gs, fmt)))
        .collect()
}

/// Each arm's runs grouped by what limited them, the baseline first, then
/// the arms in the order of their first run.
fn arm_groups(trace: &[RunTrace]) -> Vec<(&str, Vec<model::results::LimitGroup>)> {
    let mut arms: Vec<&str> = vec![BASELINE];
    for r in trace {
        if !arms.contains(&r.arm.as_str()) {
            arms.push(&r.arm);
        }
    }
    arms.into_iter()
        .map(|arm| {
            let gs = model::results::LimitGroup::group(
                trace
                    .iter()
                    .filter(|r| r.arm == arm)
                    .map(|r| (r.value, r.limited_by.as_deref())),
            );
            (arm, gs)
        })
        .collect()
}

pub use model::busy::{STATE_MIN_RATIO, STATE_MIN_RUNS};

/// A note when an arm's runs fell into two states whose medians lie at
/// least [`STATE_MIN_RATIO`] apart (each in at least [`STATE_MIN_RUNS`]
/// runs), by what limited them or by value: the rule the lab and
/// experiments share (`model::busy::two_states`). A change's gain then
/// depends on which state the host is in, as the lab's unpinned tcp-stream
/// is either receiver- or sender-bound (bench/RESULTS.md, "What the two
/// modes are"). Names the first such arm (the baseline first) and how many
/// others split.
pub fn two_states_note(trace: &[RunTrace], fmt: &dyn Fn(f64) -> String) -> Option<String> {
    let mut arms: Vec<&str> = vec![BASELINE];
    for r in trace {
        if !arms.contains(&r.arm.as_str()) {
            arms.push(&r.arm);
        }
    }
    let mut found = arms.into_iter().filter_map(|arm| {
        let runs = trace
            .iter()
            .filter(|r| r.arm == arm)
            .map(|r| (r.value, r.limited_by.as_deref()));
        Some((arm, model::busy::two_states(runs)?))
    });
    let (arm, (gs, ratio)) = found.next()?;
    let others = match found.count() {
        0 => String::new(),
        1 => " (and 1 other arm's)".to_string(),
        n => format!(" (and {n} other arms')"),
    };
    Some(format!(
        "the runs of {arm}{others} fell into two states ({}), {:.0} % apart: a change's \
         gain can depend on the state the host is in when it runs; a workload pinned \
         with --cpus (args in --workload FILE) measures one state",
        model::results::LimitGroup::describe(&gs, fmt),
        (ratio - 1.0) * 100.0
    ))
}

/// The label of the search's baseline arm (`tune::autotune::Search::label`).
const BASELINE: &str = "baseline";
