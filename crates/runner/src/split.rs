//! [`SplitExecutor`]: benches through one executor, the rest through
//! another; and [`merge_args`], a cell's bench options over the workload's.

use std::time::Duration;

use crate::exec::{DropsWatch, ExecError, Executor, HostId};
use model::bench::result::BenchResult;
use model::findings::Report;
use model::plan::Plan;
use model::snapshot::HostSnapshot;

/// An executor that sends `bench` calls to `bench` and every other call to
/// `rest`. Build `bench` with a cancel flag (Ctrl-C stops a running bench at
/// once) and `rest` without one, so the rollback after Ctrl-C is not itself
/// cancelled; `rest` owns the hosts' journals (apply and rollback).
#[derive(Debug)]
pub struct SplitExecutor<B, R> {
    /// Runs the benches.
    pub bench: B,
    /// Runs everything else.
    pub rest: R,
}

impl<B: Executor, R: Executor> Executor for SplitExecutor<B, R> {
    fn hosts(&self) -> usize {
        self.rest.hosts()
    }

    fn host_name(&self, host: HostId) -> String {
        self.rest.host_name(host)
    }

    fn bench(
        &mut self,
        client: HostId,
        server: HostId,
        args: &[String],
        deadline: Duration,
    ) -> Result<BenchResult, ExecError> {
        self.bench.bench(client, server, args, deadline)
    }

    fn watch_drops(&mut self, client: HostId, server: HostId) -> Box<dyn DropsWatch> {
        self.bench.watch_drops(client, server)
    }

    fn inspect(&mut self, host: HostId) -> Result<HostSnapshot, ExecError> {
        self.rest.inspect(host)
    }

    fn doctor(&mut self, host: HostId, args: &[String]) -> Result<Report, ExecError> {
        self.rest.doctor(host, args)
    }

    fn plan(&mut self, host: HostId, args: &[String]) -> Result<Plan, ExecError> {
        self.rest.plan(host, args)
    }

    fn apply(&mut self, host: HostId, plan: &Plan) -> Result<(), ExecError> {
        self.rest.apply(host, plan)
    }

    fn rollback(&mut self, host: HostId) -> Result<(), ExecError> {
        self.rest.rollback(host)
    }
}

/// `base` with the flags of `extra` (`--flag value` pairs or lone
/// `--switch`es) replacing the same flags in `base`: a cell's bench option
/// overrides the workload's.
pub fn merge_args(base: &[String], extra: &[String]) -> Vec<String> {
    fn pairs(a: &[String]) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = Vec::new();
        for x in a {
            match out.last_mut() {
                Some(last) if !x.starts_with("--") && last.len() == 1 => last.push(x.clone()),
                _ => out.push(vec![x.clone()]),
            }
        }
        out
    }
    let extra_p = pairs(extra);
    let mut out: Vec<String> = pairs(base)
        .into_iter()
        .filter(|p| !extra_p.iter().any(|e| e.first() == p.first()))
        .flatten()
        .collect();
    out.extend(extra_p.into_iter().flatten());
    out
}
