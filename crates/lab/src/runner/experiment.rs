//! The runner's inputs for an experiment file: the results skeleton (every
//! cell pending), the schedule, and [`ExperimentSetup`], which turns a cell's
//! levels into a plan per host (`tune::levels`) and applies it through each
//! host's journal.

use std::collections::BTreeMap;
use std::time::Duration;

use model::experiment::{Experiment, Hosts, LabPath, Level, Probe, ProbeKind, TestKind, Workload};
use model::plan::NetnsScope;
use model::results::{
    CellResult, CellStatus, ExperimentResults, FactorInfo, LabInfo, Machine, ResultsKind,
    WorkloadInfo, RESULTS_SCHEMA_VERSION,
};
use model::snapshot::HostSnapshot;
use model::stats::{BootstrapConfig, StopRule};

use super::{Applied, CellSetup, Schedule, WorkloadRun};
use crate::exec::{ExecError, Executor, HostId, NotApplicableKind};

/// Bench warm-up inside each run (`nettune bench --warmup`), seconds.
pub const BENCH_WARMUP_S: f64 = 1.0;

/// Runs per workload over loopback for the overhead rows when the lab path is veth.
pub const OVERHEAD_REPEATS: u32 = 3;

fn test_name(t: TestKind) -> &'static str {
    match t {
        TestKind::TcpStream => "tcp-stream",
        TestKind::UdpStream => "udp-stream",
        TestKind::TcpRr => "tcp-rr",
        TestKind::TcpCrr => "tcp-crr",
    }
}

/// `--probe KIND:MS` for the file's latency probe (`nettune bench --probe`),
/// the interval rounded to whole ms within 1..=1000.
pub fn probe_args(p: Option<&Probe>) -> Vec<String> {
    let Some(p) = p else { return Vec::new() };
    let kind = match p.kind {
        ProbeKind::Rr => "rr",
        ProbeKind::Icmp => "icmp",
    };
    let ms = p.interval_ms.round().clamp(1.0, 1000.0) as u64;
    vec!["--probe".into(), format!("{kind}:{ms}")]
}

/// The bench arguments of a workload (without address and `--json`).
pub fn bench_args(w: &Workload) -> Vec<String> {
    let mut a = vec![
        "--test".to_string(),
        test_name(w.test).into(),
        "--duration".into(),
        format!("{}", w.duration_s),
        "--warmup".into(),
        format!("{BENCH_WARMUP_S}"),
        "--flows".into(),
        w.flows.to_string(),
    ];
    if let Some(s) = w.size {
        a.extend(["--size".into(), s.to_string()]);
    }
    if w.nodelay {
        a.push("--nodelay".into());
    }
    if let Some(s) = w.sndbuf {
        a.extend(["--sndbuf".into(), s.to_string()]);
    }
    if let Some(s) = w.rcvbuf {
        a.extend(["--rcvbuf".into(), s.to_string()]);
    }
    a
}

/// A fresh results skeleton for `exp`: every cell pending, the run order
/// from the seed, cell 0 the baseline.
pub fn results_skeleton(exp: &Experiment, machine: Machine, started: String) -> ExperimentResults {
    let cells = exp
        .cells()
        .into_iter()
        .map(|c| CellResult {
            index: c.index,
            label: c.label(),
            levels: c
                .levels
                .iter()
                .map(|(k, l)| (k.name().to_string(), l.to_string()))
                .collect(),
            status: CellStatus::Pending,
            runs: Vec::new(),
            stats: Vec::new(),
        })
        .collect();
    let lab = match &exp.hosts {
        Hosts::Lab(t) => Some(LabInfo {
            hosts: t.hosts,
            queues: t.queues,
            rate_mbit: t.rate_mbit,
            delay_ms: t.delay_ms,
            jitter_ms: t.jitter_ms,
            loss_pct: t.loss_pct,
            delay_mechanism: if t.delay_ms > 0.0 || t.jitter_ms > 0.0 || t.loss_pct > 0.0 {
                "unknown".into()
            } else {
                "none".into()
            },
            path: match t.path {
                LabPath::Veth => "veth".into(),
                LabPath::Loopback => "loopback".into(),
            },
        }),
        Hosts::Agents(_) | Hosts::Fleet(_) => None,
    };
    ExperimentResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kind: ResultsKind::Experiment,
        name: exp.name.clone(),
        description: exp.description.clone(),
        nettune_version: env!("CARGO_PKG_VERSION").into(),
        started,
        finished: None,
        interrupted: false,
        seed: exp.seed,
        min_effect_pct: model::stats::DEFAULT_MIN_EFFECT_PCT,
        machine,
        lab,
        host_facts: BTreeMap::new(),
        workloads: exp
            .workloads
            .iter()
            .map(|w| WorkloadInfo {
                name: w.name.clone(),
                test: test_name(w.test).into(),
                args: [bench_args(w), probe_args(exp.responses.probe.as_ref())].concat(),
            })
            .collect(),
        factors: exp
            .factors
            .iter()
            .map(|f| FactorInfo {
                knob: f.knob.name().into(),
                levels: f.levels.iter().map(Level::to_string).collect(),
            })
            .collect(),
        metrics: exp.responses.metrics.clone(),
        baseline_cell: 0,
        run_order: exp.run_order(),
        cells,
        overhead: Vec::new(),
        doctor_before: None,
        doctor_after: None,
        plans: BTreeMap::new(),
        notes: Vec::new(),
    }
}

/// The schedule of `exp` between `client` and `server`; `until_ci_pct`
/// (the `--until-ci` flag) overrides the file's `until_ci`.
pub fn schedule(
    exp: &Experiment,
    client: HostId,
    server: HostId,
    until_ci_pct: Option<f64>,
) -> Schedule {
    let until = match (until_ci_pct, exp.until_ci) {
        (Some(pct), file) => Some((
            pct,
            file.map_or(exp.repeats.max(3).saturating_mul(4), |u| u.max_repeats),
        )),
        (None, Some(u)) => Some((u.target_pct, u.max_repeats)),
        (None, None) => None,
    };
    let min = exp.repeats.max(3);
    let until_ci = until.map(|(pct, max)| {
        let mut r = StopRule::new(pct, min as usize, max.max(min) as usize);
        r.bootstrap.seed = exp.seed;
        r
    });
    let overhead_repeats = match &exp.hosts {
        Hosts::Lab(t) if t.path == LabPath::Veth => OVERHEAD_REPEATS,
        _ => 0,
    };
    Schedule {
        client,
        server,
        workloads: exp
            .workloads
            .iter()
            .map(|w| {
                let expected = Duration::from_secs_f64(w.duration_s + BENCH_WARMUP_S + 0.5);
                WorkloadRun {
                    name: w.name.clone(),
                    args: [bench_args(w), probe_args(exp.responses.probe.as_ref())].concat(),
                    expected,
                    deadline: expected.saturating_mul(2) + Duration::from_secs(20),
                }
            })
            .collect(),
        warmup: exp.warmup,
        repeats: exp.repeats,
        until_ci,
        bootstrap: BootstrapConfig {
            seed: exp.seed,
            ..BootstrapConfig::default()
        },
        overhead_repeats,
    }
}

/// The machine, from a host's snapshot (lab hosts share the machine).
pub fn machine_of(snap: &HostSnapshot) -> Machine {
    Machine {
        hostname: snap.source.hostname.clone().unwrap_or_default(),
        kernel: snap.source.kernel.clone().unwrap_or_default(),
        cpus: u32::try_from(snap.cpu.online.len()).unwrap_or(u32::MAX),
        cpu_model: None,
    }
}

/// Applies an experiment cell's levels on every host taking part: reads the
/// host's snapshot, plans the levels (`tune::levels::cell_plan`), applies
/// the plan through the host's journal, and rolls back the hosts it changed.
#[derive(Debug)]
pub struct ExperimentSetup {
    exp: Experiment,
    hosts: Vec<HostId>,
    scope: NetnsScope,
    applied: Vec<HostId>,
}

impl ExperimentSetup {
    /// Set up cells of `exp` on `hosts` (client and server), whose snapshots
    /// are read in the given namespace scope.
    pub fn new(exp: Experiment, hosts: Vec<HostId>, scope: NetnsScope) -> ExperimentSetup {
        ExperimentSetup {
            exp,
            hosts,
            scope,
            applied: Vec::new(),
        }
    }
}

fn snapshot(exec: &mut dyn Executor, h: HostId) -> Result<HostSnapshot, ExecError> {
    let text = exec.inspect(h)?;
    serde_json::from_str(&text).map_err(|e| ExecError::Failed {
        what: format!("inspect on {}", exec.host_name(h)),
        code: None,
        stderr: format!("not a host snapshot: {e}"),
    })
}

impl CellSetup for ExperimentSetup {
    fn apply(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<Applied, ExecError> {
        let Some(levels) = self
            .exp
            .cells()
            .into_iter()
            .find(|c| c.index == cell.index)
            .map(|c| c.levels)
        else {
            return Err(ExecError::not_applicable(
                NotApplicableKind::Level,
                format!("no cell {} in the experiment", cell.index),
            ));
        };
        let mut applied = Applied::default();
        let hosts = self.hosts.clone();
        for (i, h) in hosts.into_iter().enumerate() {
            let snap = snapshot(exec, h)?;
            let cp = tune::levels::cell_plan(&snap, self.scope, &levels).map_err(|e| {
                ExecError::not_applicable(NotApplicableKind::Level, format!("{e} on {h}"))
            })?;
            if i == 0 {
                applied.bench_args = cp.bench_args.clone();
            }
            if cp.plan.changes.is_empty() {
                continue;
            }
            let json = serde_json::to_string(&cp.plan).map_err(|e| ExecError::Failed {
                what: "plan".into(),
                code: None,
                stderr: e.to_string(),
            })?;
            self.applied.push(h);
            exec.apply(h, &json)?;
            if let Ok(v) = serde_json::to_value(&cp.plan) {
                applied.plans.push((format!("{} @ {h}", cell.label), v));
            }
        }
        Ok(applied)
    }

    fn rollback(&mut self, _cell: &CellResult, exec: &mut dyn Executor) -> Result<(), ExecError> {
        let mut first_err = None;
        for h in std::mem::take(&mut self.applied).into_iter().rev() {
            if let Err(e) = exec.rollback(h) {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
