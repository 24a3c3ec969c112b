//! The runner's inputs for an experiment file: the results skeleton (every
//! cell pending), the schedule, and [`ExperimentSetup`], which turns a cell's
//! levels into a plan per host (`tune::levels`) and applies it through each
//! host's journal.

use std::collections::BTreeMap;
use std::time::Duration;

use model::experiment::{Experiment, Hosts, Knob, LabPath, Level, Probe, ProbeKind, Workload};
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
        w.test.name().into(),
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
            label: exp.cell_label(&c),
            levels: exp.cell_levels(&c),
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
                test: w.test.name().into(),
                args: [bench_args(w), probe_args(exp.responses.probe.as_ref())].concat(),
            })
            .collect(),
        factors: exp
            .factors
            .iter()
            .enumerate()
            .map(|(i, f)| FactorInfo {
                knob: exp.factor_label(i),
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
        notes: exp.scope_notes().into_iter().map(Into::into).collect(),
        fixes: Vec::new(),
        warnings: Vec::new(),
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
/// host's snapshot, plans the levels of the factors that apply there
/// (`[[factor]] hosts`; `tune::levels::cell_plan`), applies the plan through
/// the host's journal, and rolls back the hosts it changed.
#[derive(Debug)]
pub struct ExperimentSetup {
    exp: Experiment,
    hosts: Vec<HostId>,
    /// The names each host answers to in `[[factor]] hosts`, as `hosts`.
    names: Vec<Vec<String>>,
    scope: NetnsScope,
    applied: Vec<HostId>,
}

impl ExperimentSetup {
    /// Set up cells of `exp` on `hosts` (client and server), whose snapshots
    /// are read in the given namespace scope. The hosts have no names: a
    /// factor with `hosts` applies on none of them (see
    /// [`ExperimentSetup::lab`] and [`ExperimentSetup::named`]).
    pub fn new(exp: Experiment, hosts: Vec<HostId>, scope: NetnsScope) -> ExperimentSetup {
        let names = vec![Vec::new(); hosts.len()];
        ExperimentSetup {
            exp,
            hosts,
            names,
            scope,
            applied: Vec::new(),
        }
    }

    /// Set up cells on a lab's `client` (the load, first) and `server`,
    /// named `client` and `server` for `[[factor]] hosts`; one host (the
    /// loopback lab) is both.
    pub fn lab(
        exp: Experiment,
        client: HostId,
        server: HostId,
        scope: NetnsScope,
    ) -> ExperimentSetup {
        let hosts: Vec<(HostId, Vec<String>)> = if client == server {
            vec![(client, vec!["client".into(), "server".into()])]
        } else {
            vec![
                (client, vec!["client".into()]),
                (server, vec!["server".into()]),
            ]
        };
        ExperimentSetup::named(exp, hosts, scope)
    }

    /// Set up cells on `hosts`, each with the names it answers to in
    /// `[[factor]] hosts` (a fleet host: its role and its inventory name).
    /// The first host's bench options are the run's.
    pub fn named(
        exp: Experiment,
        hosts: Vec<(HostId, Vec<String>)>,
        scope: NetnsScope,
    ) -> ExperimentSetup {
        let (hosts, names) = hosts.into_iter().unzip();
        ExperimentSetup {
            exp,
            hosts,
            names,
            scope,
            applied: Vec::new(),
        }
    }
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
            // The factors of this host (a cell's levels are in factor order).
            let names = self.names.get(i).map_or(&[][..], Vec::as_slice);
            let here: Vec<(Knob, Level)> = levels
                .iter()
                .enumerate()
                .filter(|(f, _)| self.exp.factor_applies(*f, names))
                .map(|(_, kl)| kl.clone())
                .collect();
            if here.is_empty() {
                continue;
            }
            let snap = exec.inspect(h)?;
            let done =
                crate::step::apply_on_host(exec, h, &snap, self.scope, &here, &mut self.applied)?;
            if i == 0 {
                applied.bench_args = done.bench_args;
            }
            if let Some(v) = done.plan.and_then(|p| serde_json::to_value(&p).ok()) {
                applied.plans.push((format!("{} @ {h}", cell.label), v));
            }
        }
        Ok(applied)
    }

    fn rollback(&mut self, _cell: &CellResult, exec: &mut dyn Executor) -> Result<(), ExecError> {
        crate::step::rollback_hosts(exec, &mut self.applied)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::exec::ErrorKind;

    /// Two lab hosts whose snapshot is a namespace with a veth pair; every
    /// apply recorded with the knobs of its plan.
    #[derive(Default)]
    struct Fake {
        applied: Vec<(HostId, Vec<String>)>,
        rolled_back: Vec<HostId>,
    }

    impl Executor for Fake {
        fn hosts(&self) -> usize {
            2
        }
        fn host_name(&self, host: HostId) -> String {
            format!("h{}", host.0)
        }
        fn bench(
            &mut self,
            _: HostId,
            _: HostId,
            _: &[String],
            _: Duration,
        ) -> Result<model::bench::result::BenchResult, ExecError> {
            unreachable!("no bench in these tests")
        }
        fn inspect(&mut self, _: HostId) -> Result<HostSnapshot, ExecError> {
            crate::exec::parse(
                "inspect",
                include_str!("../../tune/src/levels/testdata/netns-veth-6.18.json"),
            )
        }
        fn doctor(
            &mut self,
            _: HostId,
            _: &[String],
        ) -> Result<model::findings::Report, ExecError> {
            unreachable!()
        }
        fn plan(&mut self, _: HostId, _: &[String]) -> Result<model::plan::Plan, ExecError> {
            unreachable!()
        }
        fn apply(&mut self, host: HostId, plan: &model::plan::Plan) -> Result<(), ExecError> {
            let p = serde_json::to_value(plan).unwrap();
            let knobs = p["changes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| format!("{}={}", c["target"]["path"].as_str().unwrap(), c["after"]))
                .collect();
            self.applied.push((host, knobs));
            Ok(())
        }
        fn rollback(&mut self, host: HostId) -> Result<(), ExecError> {
            self.rolled_back.push(host);
            Ok(())
        }
    }

    fn exp(factors: &str) -> Experiment {
        model::experiment::parse(&format!(
            "[hosts.lab]\nhosts = 2\n[[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\n{factors}[responses]\nmetrics = [\"transactions\"]\n"
        ))
        .unwrap()
    }

    fn cell(exp: &Experiment, index: usize) -> CellResult {
        let r = results_skeleton(exp, Machine::default(), String::new());
        r.cells[index].clone()
    }

    const TW: &str = "/proc/sys/net/ipv4/tcp_tw_reuse";
    const PORTS: &str = "/proc/sys/net/ipv4/ip_local_port_range";

    #[test]
    fn a_factor_with_hosts_is_applied_only_on_the_hosts_it_names() {
        let e = exp(
            "[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\nhosts = [\"server\"]\n\
             [[factor]]\nname = \"ip_local_port_range\"\nlevels = [[2000, 3000]]\n",
        );
        let (client, server) = (HostId(1), HostId(0));
        let mut s = ExperimentSetup::lab(e.clone(), client, server, NetnsScope::Child);
        let mut x = Fake::default();
        let c = cell(&e, 1);
        assert_eq!(c.label, "tcp_tw_reuse=1 ip_local_port_range=2000-3000");
        let a = s.apply(&c, &mut x).unwrap();
        assert_eq!(x.applied.len(), 2);
        // The client takes the unscoped factor only; the server both.
        assert_eq!(x.applied[0].0, client);
        assert!(
            x.applied[0].1.iter().all(|k| k.starts_with(PORTS)),
            "{:?}",
            x.applied
        );
        assert_eq!(x.applied[1].0, server);
        assert!(
            x.applied[1].1.contains(&format!("{TW}=\"1\"")),
            "{:?}",
            x.applied
        );
        assert_eq!(a.plans.len(), 2);
        s.rollback(&c, &mut x).unwrap();
        assert_eq!(x.rolled_back, [server, client]);
        // The notes say where the factor went.
        let r = results_skeleton(&e, Machine::default(), String::new());
        assert!(
            r.notes[0].starts_with("factor[0] tcp_tw_reuse: its levels are applied on server only")
        );
    }

    #[test]
    fn a_host_that_takes_no_level_of_the_cell_gets_no_plan_and_no_check() {
        // Cell 0 of a client-only factor: the server gets no plan.
        let e = exp("[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\nhosts = [\"client\"]\n");
        let mut s = ExperimentSetup::lab(e.clone(), HostId(1), HostId(0), NetnsScope::Child);
        let mut x = Fake::default();
        s.apply(&cell(&e, 0), &mut x).unwrap();
        assert_eq!(x.applied.len(), 1);
        assert_eq!(x.applied[0].0, HostId(1));
        // Coalescing is n/a on veth: checked on the server only, named there.
        let e =
            exp("[[factor]]\nname = \"coalesce_rx_usecs\"\nlevels = [0]\nhosts = [\"server\"]\n");
        let mut s = ExperimentSetup::lab(e.clone(), HostId(1), HostId(0), NetnsScope::Child);
        let err = s.apply(&cell(&e, 0), &mut x).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotApplicable);
        assert!(err.to_string().contains("on h0"), "{err}");
    }

    #[test]
    fn two_factors_of_one_knob_set_one_level_per_end() {
        let e = exp(
            "[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\nhosts = [\"server\"]\n\
             [[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 2]\nhosts = [\"client\"]\n",
        );
        let c = cell(&e, 2);
        assert_eq!(c.label, "tcp_tw_reuse@server=1 tcp_tw_reuse@client=0");
        let mut s = ExperimentSetup::lab(e.clone(), HostId(1), HostId(0), NetnsScope::Child);
        let mut x = Fake::default();
        s.apply(&c, &mut x).unwrap();
        assert_eq!(
            x.applied,
            [
                (HostId(1), vec![format!("{TW}=\"0\"")]),
                (HostId(0), vec![format!("{TW}=\"1\"")]),
            ]
        );
    }
}
