//! The one runner step: apply levels on hosts through their journals →
//! measure → roll back on every host changed (also when the apply or the
//! measurement fails, or Ctrl-C stops it). An experiment's cell
//! (`run_cell`, through its [`CellSetup`](crate::CellSetup)) and an
//! autotune arm (`autotune::drive`, `autotune::recheck`) are both this step.

use model::bench::result::BenchResult;
use model::drops::run::RunDrops;
use model::experiment::{Knob, Level};
use model::plan::{NetnsScope, Plan};
use model::snapshot::HostSnapshot;

use crate::exec::{ExecError, Executor, HostId, NotApplicableKind};

/// What a step changes and how it undoes it.
pub trait StepSetup {
    /// What the apply hands to the measurement (bench arguments, plans).
    type Applied;
    /// Apply the step's levels; on an error what was applied so far is
    /// still rolled back by [`StepSetup::rollback`].
    fn apply(&mut self, exec: &mut dyn Executor) -> Result<Self::Applied, ExecError>;
    /// Undo everything [`StepSetup::apply`] did.
    fn rollback(&mut self, exec: &mut dyn Executor) -> Result<(), ExecError>;
}

/// How a step ended. The rollback ran in both cases; its result is here.
#[derive(Debug)]
pub enum StepOutcome<A, M> {
    /// The apply failed (nothing was measured).
    ApplyFailed {
        /// Why.
        error: ExecError,
        /// The rollback of what was applied before the failure.
        rollback: Result<(), ExecError>,
    },
    /// Applied, measured, rolled back.
    Measured {
        /// What the apply handed to the measurement.
        applied: A,
        /// What the measurement returned.
        measured: M,
        /// The rollback.
        rollback: Result<(), ExecError>,
    },
}

impl<A, T> StepOutcome<A, Result<T, ExecError>> {
    /// The measurement, or the first error: the apply's, then the
    /// measurement's, then the rollback's.
    pub fn first_error(self) -> Result<T, ExecError> {
        match self {
            StepOutcome::ApplyFailed { error, .. } => Err(error),
            StepOutcome::Measured {
                measured, rollback, ..
            } => {
                let v = measured?;
                rollback?;
                Ok(v)
            }
        }
    }
}

/// Apply `setup` on `exec`, run `measure` with what it applied, and roll
/// back, whatever the apply or the measurement returned.
pub fn apply_measure_rollback<S: StepSetup + ?Sized, M>(
    exec: &mut dyn Executor,
    setup: &mut S,
    measure: impl FnOnce(&mut dyn Executor, &S::Applied) -> M,
) -> StepOutcome<S::Applied, M> {
    match setup.apply(exec) {
        Err(error) => StepOutcome::ApplyFailed {
            error,
            rollback: setup.rollback(exec),
        },
        Ok(applied) => {
            let measured = measure(exec, &applied);
            StepOutcome::Measured {
                measured,
                rollback: setup.rollback(exec),
                applied,
            }
        }
    }
}

/// One run: `bench` of `client` against `server` with the drops by reason
/// each kernel saw from its start to its end ([`Executor::watch_drops`];
/// a host that cannot watch gives its reason, never an error). Every run
/// of an experiment, a lab and autotune is this call.
pub fn bench(
    exec: &mut dyn Executor,
    client: HostId,
    server: HostId,
    args: &[String],
    deadline: std::time::Duration,
) -> Result<(BenchResult, Vec<RunDrops>), ExecError> {
    let watch = exec.watch_drops(client, server);
    let bench = exec.bench(client, server, args, deadline);
    let drops = watch.finish();
    bench.map(|b| (b, drops))
}

/// A host's part of a step: the plan of `changes` on it and the bench
/// arguments they add.
#[derive(Debug, Clone, PartialEq)]
pub struct HostApplied {
    /// The plan applied; `None` when the changes change nothing there.
    pub plan: Option<Plan>,
    /// Bench arguments of the changes that are bench options.
    pub bench_args: Vec<String>,
}

/// Plan `changes` on host `h` against its snapshot and apply the plan
/// through the host's journal, pushing `h` onto `applied` first (a failed
/// apply is rolled back too).
pub fn apply_on_host(
    exec: &mut dyn Executor,
    h: HostId,
    snap: &HostSnapshot,
    scope: NetnsScope,
    changes: &[(Knob, Level)],
    applied: &mut Vec<HostId>,
) -> Result<HostApplied, ExecError> {
    let cp = tune::levels::cell_plan(snap, scope, changes)
        .map_err(|e| ExecError::not_applicable(NotApplicableKind::Level, format!("{e} on {h}")))?;
    if cp.plan.changes.is_empty() {
        return Ok(HostApplied {
            plan: None,
            bench_args: cp.bench_args,
        });
    }
    applied.push(h);
    exec.apply(h, &cp.plan)?;
    Ok(HostApplied {
        plan: Some(cp.plan),
        bench_args: cp.bench_args,
    })
}

/// Roll back every host of `applied`, the last applied first; the first
/// error is returned after every host was tried.
pub fn rollback_hosts(exec: &mut dyn Executor, applied: &mut Vec<HostId>) -> Result<(), ExecError> {
    let mut first = None;
    for h in std::mem::take(applied).into_iter().rev() {
        if let Err(e) = exec.rollback(h) {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// The same changes on each host of `snapshots` that is in `hosts`,
/// planned against its snapshot (an autotune arm, a `--from` setting).
#[derive(Debug)]
pub struct HostLevels<'a> {
    /// Each host's snapshot.
    pub snapshots: &'a [(HostId, HostSnapshot)],
    /// The hosts changed.
    pub hosts: &'a [HostId],
    /// Scope of the plans.
    pub scope: NetnsScope,
    /// The changes.
    pub changes: &'a [(Knob, Level)],
    /// Hosts changed so far, in order.
    pub applied: Vec<HostId>,
}

impl StepSetup for HostLevels<'_> {
    /// The bench arguments the changes add (the first host's).
    type Applied = Vec<String>;

    fn apply(&mut self, exec: &mut dyn Executor) -> Result<Vec<String>, ExecError> {
        let mut bench = Vec::new();
        if self.changes.is_empty() {
            return Ok(bench);
        }
        for (i, (h, snap)) in self.snapshots.iter().enumerate() {
            if !self.hosts.contains(h) {
                continue;
            }
            let done = apply_on_host(exec, *h, snap, self.scope, self.changes, &mut self.applied)?;
            if i == 0 {
                bench = done.bench_args;
            }
        }
        Ok(bench)
    }

    fn rollback(&mut self, exec: &mut dyn Executor) -> Result<(), ExecError> {
        rollback_hosts(exec, &mut self.applied)
    }
}
