//! The experiment runner against a fake executor: results written after
//! every run, n/a cells, Ctrl-C rollback, resume, until-ci, and metrics from
//! recorded bench JSON.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use model::bench::result::BenchResult;
use model::experiment::{parse, Metric};
use model::findings::Report;
use model::plan::{NetnsScope, Plan};
use model::results::{CellStatus, ExperimentResults, Machine, RESULTS_FILE};
use model::snapshot::HostSnapshot;
use model::stats::SplitMix64;
use nettune_runner::exec::{ExecError, Executor, HostId};
use nettune_runner::{
    self as runner, experiment as rx, load_for_resume, metrics, NoProgress, Outcome, Progress,
    ProgressEvent, RunError, RunOptions,
};

/// `nettune bench --test tcp-stream --duration 2 --json` over loopback
/// (kernel 6.18, 2 CPUs, 2026-11-24).
const STREAM: &str = include_str!("data/bench-tcp-stream-lo.json");
/// `nettune bench --test tcp-rr --duration 2 --json` over loopback (same).
const RR: &str = include_str!("data/bench-tcp-rr-lo.json");
/// `nettune inspect --json` in a namespace with a veth pair.
const SNAP: &str = include_str!("../../tune/src/levels/testdata/netns-veth-6.18.json");

/// A fake lab: two hosts; applying a plan records its changes, rollback
/// drops them; a bench's throughput is 1 Gbit/s, +10 % while
/// `tcp_tw_reuse` is 1 on the client, with seeded relative noise `sd`.
struct Fake {
    applied: Vec<Vec<Plan>>,
    calls: Vec<String>,
    benches: usize,
    cancel_after: Option<(usize, Arc<AtomicBool>)>,
    sd: f64,
    rng: SplitMix64,
    dir: Option<std::path::PathBuf>,
    /// Runs found in results.json before each bench call.
    seen_runs: Vec<usize>,
    /// After raising the cancel flag, fail the bench as a bench killed by
    /// SIGINT does (exit 130), instead of returning its output.
    fail_on_cancel: bool,
    /// Every bench call's arguments (between two hosts: not the loopback
    /// overhead runs).
    bench_args: Vec<Vec<String>>,
    /// Recorded bench outputs to return in turn (between two hosts),
    /// instead of STREAM with a drawn throughput.
    recorded: Vec<&'static str>,
}

impl Fake {
    fn new(sd: f64) -> Fake {
        Fake {
            applied: vec![Vec::new(), Vec::new()],
            calls: Vec::new(),
            benches: 0,
            cancel_after: None,
            sd,
            rng: SplitMix64::new(7),
            dir: None,
            seen_runs: Vec::new(),
            fail_on_cancel: false,
            bench_args: Vec::new(),
            recorded: Vec::new(),
        }
    }

    fn tw_reuse_on(&self) -> bool {
        self.applied[0].iter().any(|p| {
            p.changes
                .iter()
                .any(|c| c.knob == "net.ipv4.tcp_tw_reuse" && c.after == "1")
        })
    }
}

impl Executor for Fake {
    fn hosts(&self) -> usize {
        2
    }

    fn host_name(&self, host: HostId) -> String {
        format!("fake{}", host.0)
    }

    fn bench(
        &mut self,
        client: HostId,
        server: HostId,
        args: &[String],
        _deadline: Duration,
    ) -> Result<BenchResult, ExecError> {
        if client != server {
            self.bench_args.push(args.to_vec());
        }
        if let Some(dir) = &self.dir {
            let text = std::fs::read_to_string(dir.join(RESULTS_FILE)).unwrap();
            let r = ExperimentResults::from_json(&text).unwrap();
            self.seen_runs
                .push(r.cells.iter().map(|c| c.runs.len()).sum());
        }
        self.benches += 1;
        self.calls.push(format!("bench {client}->{server}"));
        if let Some((n, flag)) = &self.cancel_after {
            if self.benches >= *n {
                flag.store(true, Ordering::SeqCst);
                if self.fail_on_cancel {
                    return Err(ExecError::Failed {
                        what: "bench".into(),
                        code: Some(130),
                        stderr: "interrupted".into(),
                    });
                }
            }
        }
        if client != server && !self.recorded.is_empty() {
            return Ok(
                serde_json::from_str(self.recorded[self.benches % self.recorded.len()]).unwrap(),
            );
        }
        let mut base = if client == server { 3e9 } else { 1e9 };
        if self.tw_reuse_on() {
            base *= 1.1;
        }
        let v = self.rng.normal(base, base * self.sd);
        let mut j: serde_json::Value = serde_json::from_str(STREAM).unwrap();
        j["results"][0]["bits_per_sec"] = serde_json::json!(v);
        Ok(serde_json::from_value(j).unwrap())
    }

    fn inspect(&mut self, _host: HostId) -> Result<HostSnapshot, ExecError> {
        self.calls.push("inspect".into());
        Ok(serde_json::from_str(SNAP).unwrap())
    }

    fn doctor(&mut self, host: HostId, _args: &[String]) -> Result<Report, ExecError> {
        Err(ExecError::NoHost(host))
    }

    fn plan(&mut self, host: HostId, _args: &[String]) -> Result<Plan, ExecError> {
        Err(ExecError::NoHost(host))
    }

    fn apply(&mut self, host: HostId, plan: &Plan) -> Result<(), ExecError> {
        let p = plan.clone();
        self.calls.push(format!("apply {host}"));
        self.applied[host.0].push(p);
        Ok(())
    }

    fn rollback(&mut self, host: HostId) -> Result<(), ExecError> {
        self.calls.push(format!("rollback {host}"));
        self.applied[host.0].clear();
        Ok(())
    }
}

const TW: &str = r#"
name = "tw"
seed = 5
repeats = 3
warmup = 1

[hosts.lab]
hosts = 2

[[workload]]
name = "stream"
test = "tcp-stream"
duration_s = 1

[[factor]]
name = "tcp_tw_reuse"
levels = [0, 1]

[[factor]]
name = "congestion_control"
levels = ["cubic", "vegas"]

[responses]
metrics = ["throughput", "retransmits"]
"#;

fn start(
    text: &str,
    dir: &Path,
    until: Option<f64>,
) -> (
    ExperimentResults,
    runner::Schedule,
    rx::ExperimentSetup,
    RunOptions,
) {
    let exp = parse(text).unwrap();
    let results = rx::results_skeleton(&exp, Machine::default(), "2026-11-24T00:00:00Z".into());
    let schedule = rx::schedule(&exp, HostId(0), HostId(1), until);
    let setup = rx::ExperimentSetup::new(exp, vec![HostId(0), HostId(1)], NetnsScope::Child);
    let opts = RunOptions {
        out_dir: dir.to_path_buf(),
        experiment_text: Some(text.into()),
        cancel: Arc::new(AtomicBool::new(false)),
    };
    (results, schedule, setup, opts)
}

fn on_disk(dir: &Path) -> ExperimentResults {
    ExperimentResults::from_json(&std::fs::read_to_string(dir.join(RESULTS_FILE)).unwrap()).unwrap()
}

#[derive(Default)]
struct Events(Vec<ProgressEvent>);

impl Progress for Events {
    fn event(&mut self, ev: &ProgressEvent) {
        self.0.push(ev.clone());
    }
}

#[test]
fn runs_every_cell_writes_after_each_run_and_marks_unavailable_levels_na() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut results, schedule, mut setup, opts) = start(TW, tmp.path(), None);
    let mut fake = Fake::new(0.01);
    fake.dir = Some(tmp.path().to_path_buf());
    let mut ev = Events::default();
    let out = runner::run(
        &mut results,
        &schedule,
        &mut fake,
        &mut setup,
        &opts,
        &mut ev,
    )
    .unwrap();
    assert_eq!(out, Outcome::Completed);

    // results.json before bench k held k-1 runs (the overhead runs at the
    // end add none to cells).
    let cell_runs = 2 * 4;
    assert_eq!(
        &fake.seen_runs[..cell_runs],
        &(0..cell_runs).collect::<Vec<_>>()[..]
    );

    let r = on_disk(tmp.path());
    let brief = |r: &ExperimentResults| -> Vec<(String, CellStatus, usize)> {
        r.cells
            .iter()
            .map(|c| (c.label.clone(), c.status.clone(), c.runs.len()))
            .collect()
    };
    assert_eq!(brief(&r), brief(&results));
    assert!(r.finished.is_some() && !r.interrupted);
    for c in &r.cells {
        let vegas = c.levels.iter().any(|(_, l)| l == "vegas");
        if vegas {
            let CellStatus::NotApplicable { reason } = &c.status else {
                panic!("{c:?}")
            };
            assert!(reason.contains("congestion_control=vegas"), "{reason}");
            assert!(c.runs.is_empty());
        } else {
            assert_eq!(c.status, CellStatus::Done, "{}", c.label);
            assert_eq!(c.runs.len(), 4);
            assert_eq!(c.runs.iter().filter(|r| r.warmup).count(), 1);
            let raw = c.runs[1].raw.as_deref().unwrap();
            assert!(tmp.path().join(raw).is_file(), "{raw}");
        }
    }
    // The tw_reuse=1 cell against the baseline: a gain with an interval.
    let tw1 = r
        .cells
        .iter()
        .find(|c| c.label == "tcp_tw_reuse=1 congestion_control=cubic")
        .unwrap();
    let st = tw1
        .stats
        .iter()
        .find(|s| s.metric == Metric::Throughput)
        .unwrap();
    let cmp = st.vs_baseline.as_ref().unwrap();
    assert_eq!(cmp.verdict, model::stats::Verdict::Gain, "{cmp:?}");
    assert!(r.cells[0].stats.iter().all(|s| s.vs_baseline.is_none()));
    // Overhead rows: loopback (3 Gbit/s in the fake) beside the lab path.
    let oh = r
        .overhead
        .iter()
        .find(|o| o.metric == Metric::Throughput)
        .unwrap();
    assert!(
        oh.loopback.median > 2.5e9 && oh.lab.median < 1.1e9,
        "{oh:?}"
    );
    // Nothing stays applied; each apply is followed by a rollback.
    assert!(fake.applied.iter().all(Vec::is_empty));
    assert!(tmp.path().join("experiment.toml").is_file());
    assert!(ev
        .0
        .iter()
        .any(|e| matches!(e, ProgressEvent::NotApplicable { .. })));
    assert!(ev
        .0
        .iter()
        .any(|e| matches!(e, ProgressEvent::Run { cells: 4, .. })));
}

#[test]
fn ctrl_c_mid_cell_rolls_back_keeps_partial_results_and_resume_finishes_only_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut results, schedule, mut setup, opts) = start(TW, tmp.path(), None);
    let mut fake = Fake::new(0.01);
    // Cancel during the 6th bench: the second measured cell, run 2 of 4.
    fake.cancel_after = Some((6, opts.cancel.clone()));
    let out = runner::run(
        &mut results,
        &schedule,
        &mut fake,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out, Outcome::Cancelled);
    assert!(fake.applied.iter().all(Vec::is_empty), "{:?}", fake.calls);
    let last_apply = fake
        .calls
        .iter()
        .rposition(|c| c.starts_with("apply"))
        .unwrap();
    assert!(fake.calls[last_apply..]
        .iter()
        .any(|c| c.starts_with("rollback")));
    let r = on_disk(tmp.path());
    assert!(r.interrupted && r.finished.is_none());
    let done = r
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Done)
        .count();
    let interrupted: Vec<_> = r
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Interrupted)
        .collect();
    assert_eq!(done, 1);
    assert_eq!(interrupted.len(), 1);
    // The run cut short by Ctrl-C is not kept; the one before it is.
    assert_eq!(interrupted[0].runs.len(), 1);

    // A changed file is refused.
    let changed = TW.replace("repeats = 3", "repeats = 4");
    let e = load_for_resume(tmp.path(), &changed).unwrap_err();
    assert!(matches!(e, RunError::Resume(_)), "{e}");
    assert!(e.to_string().contains("differs"), "{e}");

    // Resume: only the interrupted cell and those not run yet.
    let mut resumed = load_for_resume(tmp.path(), TW).unwrap();
    let pending_before = resumed
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Pending)
        .count();
    let (_, schedule, mut setup, opts) = start(TW, tmp.path(), None);
    let mut fake2 = Fake::new(0.01);
    let out = runner::run(
        &mut resumed,
        &schedule,
        &mut fake2,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out, Outcome::Completed);
    // Cells left: the interrupted one and the pending ones (one of which,
    // if vegas, is n/a and runs nothing); then 3 overhead runs.
    let na_pending = r
        .cells
        .iter()
        .filter(|c| {
            matches!(c.status, CellStatus::Pending | CellStatus::Interrupted)
                && c.levels.iter().any(|(_, l)| l == "vegas")
        })
        .count();
    // Order [3, 0, 2, 1]: 3 is n/a, 0 done, 2 interrupted, 1 not reached.
    assert_eq!(pending_before, 2);
    assert_eq!(fake2.benches, (pending_before - na_pending) * 4 + 3);
    let r2 = on_disk(tmp.path());
    assert!(!r2.interrupted && r2.finished.is_some());
    assert!(r2.cells.iter().all(|c| matches!(
        c.status,
        CellStatus::Done | CellStatus::NotApplicable { .. }
    )));
    // The cell done before the interruption kept its runs untouched.
    let kept = r
        .cells
        .iter()
        .find(|c| c.status == CellStatus::Done)
        .unwrap();
    let raws = |runs: &[model::results::RunRecord]| -> Vec<Option<String>> {
        runs.iter().map(|r| r.raw.clone()).collect()
    };
    let again = r2.cell(kept.index).unwrap();
    assert_eq!(raws(&again.runs), raws(&kept.runs));
    assert_eq!(again.runs[0].start_time, kept.runs[0].start_time);
}

#[test]
fn a_bench_failing_because_of_ctrl_c_is_an_interruption_not_a_failed_cell() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut results, schedule, mut setup, opts) = start(TW, tmp.path(), None);
    let mut fake = Fake::new(0.01);
    fake.cancel_after = Some((2, opts.cancel.clone()));
    fake.fail_on_cancel = true;
    let out = runner::run(
        &mut results,
        &schedule,
        &mut fake,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out, Outcome::Cancelled);
    assert!(fake.applied.iter().all(Vec::is_empty));
    assert!(results
        .cells
        .iter()
        .all(|c| !matches!(c.status, CellStatus::Failed { .. })));
    assert_eq!(
        results
            .cells
            .iter()
            .filter(|c| c.status == CellStatus::Interrupted)
            .count(),
        1
    );
}

const ONE: &str = r#"
name = "one"
seed = 9
repeats = 3
warmup = 0

[hosts.lab]
hosts = 2
path = "loopback"

[[workload]]
name = "stream"
test = "tcp-stream"
duration_s = 1

[responses]
metrics = ["throughput"]
"#;

/// One tcp-stream flow over the lab's veth pair (`nettune experiment`, 3 s,
/// cubic; 2-vCPU VM, kernel 6.18.44, 2026-11-29) by an engine from before
/// the `threads` field: 17.6 Gbit/s with the server's receiving thread busy
/// 98.5 % of the window, and 34.1 Gbit/s with the client's sending thread
/// busy 97.9 %.
const RECV_BOUND: &str = include_str!("data/bench-tcp-stream-veth-recv-bound.json");
const SEND_BOUND: &str = include_str!("data/bench-tcp-stream-veth-send-bound.json");

#[test]
fn a_cell_whose_runs_two_threads_limited_says_so_with_each_groups_median() {
    let s = metrics::record_from_json(RECV_BOUND, &[Metric::Throughput]).unwrap();
    assert_eq!(s.limited_by.as_deref(), Some("the server's recv thread"));
    let s = metrics::record_from_json(SEND_BOUND, &[Metric::Throughput]).unwrap();
    assert_eq!(s.limited_by.as_deref(), Some("the client's send thread"));
    // Loopback, both workers below 90 %: measured, and no thread alone.
    let s = metrics::record_from_json(STREAM, &[Metric::Throughput]).unwrap();
    assert_eq!(s.limited_by.as_deref(), Some("no single thread"));

    let tmp = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(0.0);
    fake.recorded = vec![RECV_BOUND, SEND_BOUND, RECV_BOUND];
    run_one(tmp.path(), None, &mut fake);
    let st = &on_disk(tmp.path()).cells[0].stats[0];
    let groups: Vec<(&str, usize, f64)> = st
        .limits
        .iter()
        .map(|g| {
            (
                g.limited_by.as_str(),
                g.runs,
                (g.median / 1e8).round() / 10.0,
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("the server's recv thread", 2, 17.6),
            ("the client's send thread", 1, 34.1)
        ],
        "{st:?}"
    );
}

/// Run the one-cell experiment ONE on `fake` into `dir` to the end.
fn run_one(dir: &Path, until: Option<f64>, fake: &mut Fake) -> ExperimentResults {
    let (mut results, schedule, mut setup, opts) = start(ONE, dir, until);
    runner::run(
        &mut results,
        &schedule,
        fake,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    results
}

fn runs_until_ci(sd: f64) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let mut fake = Fake::new(sd);
    let results = run_one(tmp.path(), Some(2.0), &mut fake);
    let st = &results.cells[0].stats[0];
    assert!(st.stop.is_some(), "{st:?}");
    fake.benches
}

#[test]
fn until_ci_needs_fewer_runs_on_a_quiet_metric_than_a_noisy_one() {
    let quiet = runs_until_ci(0.002);
    let noisy = runs_until_ci(0.08);
    assert_eq!(quiet, 3, "a quiet metric stops at the minimum");
    assert!(noisy > quiet, "quiet {quiet}, noisy {noisy}");
    // Capped at 4 x repeats.
    assert!(noisy <= 12, "{noisy}");
}

#[test]
fn metrics_come_from_recorded_bench_json() {
    let all = [
        Metric::Throughput,
        Metric::Transactions,
        Metric::LatencyP50,
        Metric::LatencyP99,
        Metric::CpuPct,
        Metric::SoftirqPct,
        Metric::CpuPerWork,
        Metric::Retransmits,
        Metric::LossPct,
    ];
    let s = metrics::record_from_json(STREAM, &all).unwrap();
    let raw: serde_json::Value = serde_json::from_str(STREAM).unwrap();
    // cpu_per_work: the receiver's CPU-s per GB (this older JSON has only
    // µs per MB, which is CPU-s per GB × 1000).
    let us_per_mb = raw["server_service_demand"]["us_per_mb"].as_f64().unwrap();
    assert_eq!(s.values["cpu_per_work"], us_per_mb / 1000.0);
    // Without work (or CPU) there is no CPU per work, and no panic.
    let mut idle = raw.clone();
    idle["server_service_demand"] = serde_json::json!({"us_per_mb": null, "us_per_transaction": null, "us_per_kpkt": null, "cpu_s_per_gb": null});
    let none = metrics::record_from_json(&idle.to_string(), &all).unwrap();
    assert!(
        !none.values.contains_key("cpu_per_work"),
        "{:?}",
        none.values
    );
    assert_eq!(
        s.values["throughput"],
        raw["results"][0]["bits_per_sec"].as_f64().unwrap()
    );
    assert_eq!(
        s.values["retransmits"],
        raw["results"][0]["retransmits"].as_f64().unwrap()
    );
    assert!(!s.values.contains_key("transactions"));
    assert!(!s.values.contains_key("latency_p50"));
    assert!(!s.values.contains_key("loss_pct"));
    // softirq_pct: the busiest CPU of the receiving side (the server).
    let cpus = raw["server_side"]["cpu"]["cpus"].as_array().unwrap();
    let max = cpus
        .iter()
        .map(|c| c["softirq"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(s.values["softirq_pct"], max);
    assert_eq!(s.cpus.len(), cpus.len());
    assert_eq!(
        s.intervals.len(),
        raw["intervals"].as_array().unwrap().len()
    );
    assert!(s.latency_cdf.is_empty());

    let r = metrics::record_from_json(RR, &all).unwrap();
    let raw: serde_json::Value = serde_json::from_str(RR).unwrap();
    let lat = &raw["results"][0]["latency"];
    assert_eq!(
        r.values["latency_p50"],
        lat["p50_ns"].as_f64().unwrap() / 1000.0
    );
    assert_eq!(
        r.values["latency_p99"],
        lat["p99_ns"].as_f64().unwrap() / 1000.0
    );
    assert_eq!(
        r.values["transactions"],
        raw["results"][0]["per_sec"].as_f64().unwrap()
    );
    // CPU-s per 1000 transactions is µs per transaction / 1000.
    assert_eq!(
        r.values["cpu_per_work"],
        raw["server_service_demand"]["us_per_transaction"]
            .as_f64()
            .unwrap()
            / 1000.0
    );
    assert!(!r.values.contains_key("throughput"));
    let cdf = &r.latency_cdf;
    assert!(!cdf.is_empty() && cdf.len() <= 200);
    assert_eq!(cdf.last().unwrap()[1], 1.0);
    assert!(cdf
        .windows(2)
        .all(|w| w[0][0] <= w[1][0] && w[0][1] <= w[1][1]));
    // Only the metrics asked for go to values.
    let only = metrics::record_from_json(RR, &[Metric::Transactions]).unwrap();
    assert_eq!(only.values.len(), 1);
    assert!(metrics::record_from_json("{\"x\":1}", &all).is_err());
}

#[test]
fn latency_comes_from_the_probe_when_one_ran_beside_the_load() {
    // The `probe` object as `nettune bench --probe icmp:20 --json` writes it.
    let mut j: serde_json::Value = serde_json::from_str(STREAM).unwrap();
    j["probe"] = serde_json::json!({
        "kind": "icmp", "interval_ms": 20, "sent": 100, "answered": 98, "lost": 2,
        "skipped": 0, "min_us": 40, "p50_us": 61, "p90_us": 90, "p99_us": 130,
        "max_us": 150, "histogram": [[40, 10], [61, 40], [90, 38], [130, 9], [150, 1]],
        "note": null
    });
    let want = [Metric::Throughput, Metric::LatencyP50, Metric::LatencyP99];
    let r = metrics::record_from_json(&j.to_string(), &want).unwrap();
    assert_eq!(r.values["latency_p50"], 61.0);
    assert_eq!(r.values["latency_p99"], 130.0);
    let p = r.probe.as_ref().unwrap();
    assert_eq!((p.kind.as_str(), p.count, p.lost), ("icmp", 98, 2));
    assert_eq!(r.latency_cdf.first().unwrap(), &[40.0, 10.0 / 98.0]);
    assert_eq!(r.latency_cdf.last().unwrap()[1], 1.0);
    // A probe that got no answer gives no latency.
    j["probe"]["answered"] = serde_json::json!(0);
    let r = metrics::record_from_json(&j.to_string(), &want).unwrap();
    assert!(r.probe.is_none() && !r.values.contains_key("latency_p50"));

    // The file's probe becomes the bench's --probe.
    let exp = parse(
        &ONE.replace(
            "metrics = [\"throughput\"]",
            "metrics = [\"throughput\", \"latency_p50\"]\nprobe = { kind = \"icmp\", interval_ms = 20 }",
        ),
    )
    .unwrap();
    let s = rx::schedule(&exp, HostId(0), HostId(1), None);
    let a = &s.workloads[0].args;
    let i = a.iter().position(|x| x == "--probe").unwrap();
    assert_eq!(a[i + 1], "icmp:20");
}

/// A setup that adds bench arguments to one workload only (as `nettune
/// lab` does with a doctor finding's `--rcvbuf 4M` for its UDP workload).
struct PerWorkload(rx::ExperimentSetup);

impl runner::CellSetup for PerWorkload {
    fn apply(
        &mut self,
        cell: &model::results::CellResult,
        exec: &mut dyn Executor,
    ) -> Result<runner::Applied, ExecError> {
        let mut a = self.0.apply(cell, exec)?;
        a.workload_args = vec![("rr".into(), vec!["--rcvbuf".into(), "4M".into()])];
        Ok(a)
    }
    fn rollback(
        &mut self,
        cell: &model::results::CellResult,
        exec: &mut dyn Executor,
    ) -> Result<(), ExecError> {
        self.0.rollback(cell, exec)
    }
}

#[test]
fn per_workload_bench_args_reach_only_their_workload() {
    let text = TW.replacen(
        "[[factor]]",
        "[[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n\n[[factor]]",
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let (mut results, schedule, setup, opts) = start(&text, dir.path(), None);
    let mut fake = Fake::new(0.0);
    let mut setup = PerWorkload(setup);
    runner::run(
        &mut results,
        &schedule,
        &mut fake,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    let rr: Vec<&Vec<String>> = fake
        .bench_args
        .iter()
        .filter(|a| a.windows(2).any(|w| w[0] == "--test" && w[1] == "tcp-rr"))
        .collect();
    let stream: Vec<&Vec<String>> = fake
        .bench_args
        .iter()
        .filter(|a| {
            a.windows(2)
                .any(|w| w[0] == "--test" && w[1] == "tcp-stream")
        })
        .collect();
    assert!(!rr.is_empty() && !stream.is_empty());
    assert!(rr
        .iter()
        .all(|a| a.windows(2).any(|w| w[0] == "--rcvbuf" && w[1] == "4M")));
    assert!(stream.iter().all(|a| !a.iter().any(|x| x == "--rcvbuf")));
}

/// Issue 35: links planted under every output the runner writes (the
/// lab's, an experiment's). A link at a file is replaced by the file and
/// its target is left as it was; a link at a directory on the way
/// (`runs`, a cell's) is refused naming it, and nothing lands behind it.
#[test]
fn planted_links_under_a_results_directory_are_never_written_through() {
    let victim = tempfile::tempdir().unwrap();
    let precious = victim.path().join("precious");
    std::fs::write(&precious, "precious").unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let (mut results, schedule, mut setup, opts) = start(TW, tmp.path(), None);
    for f in [RESULTS_FILE, runner::EXPERIMENT_FILE] {
        std::os::unix::fs::symlink(&precious, tmp.path().join(f)).unwrap();
    }
    let mut fake = Fake::new(0.01);
    let out = runner::run(
        &mut results,
        &schedule,
        &mut fake,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out, Outcome::Completed);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
    let m = std::fs::symlink_metadata(tmp.path().join(RESULTS_FILE)).unwrap();
    assert!(m.is_file(), "results.json is a file of its own now");
    assert_eq!(on_disk(tmp.path()).cells.len(), results.cells.len());

    for planted in ["runs", "runs/cell-000"] {
        let tmp = tempfile::tempdir().unwrap();
        let (mut results, schedule, mut setup, opts) = start(TW, tmp.path(), None);
        let at = tmp.path().join(planted);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(victim.path(), &at).unwrap();
        let mut fake = Fake::new(0.01);
        let e = runner::run(
            &mut results,
            &schedule,
            &mut fake,
            &mut setup,
            &opts,
            &mut NoProgress,
        )
        .unwrap_err();
        assert!(e.to_string().contains(planted), "{planted}: {e}");
        let entries: Vec<_> = std::fs::read_dir(victim.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(entries, ["precious"], "{planted}: written behind the link");
    }
}

/// Issue 35: autotune's results and report files: a link at the file is
/// replaced, a linked output directory is refused.
#[test]
fn planted_links_under_autotune_outputs_are_never_written_through() {
    let victim = tempfile::tempdir().unwrap();
    let precious = victim.path().join("precious");
    std::fs::write(&precious, "precious").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    std::fs::create_dir(&dir).unwrap();
    for name in ["results.json", "report.md"] {
        std::os::unix::fs::symlink(&precious, dir.join(name)).unwrap();
        nettune_runner::autotune::write_file(&dir, name, b"{}").unwrap();
        assert!(std::fs::symlink_metadata(dir.join(name)).unwrap().is_file());
    }
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
    let linked = tmp.path().join("linked");
    std::os::unix::fs::symlink(victim.path(), &linked).unwrap();
    let e = nettune_runner::autotune::write_file(&linked, "results.json", b"{}").unwrap_err();
    assert!(e.to_string().contains("linked"), "{e}");
    assert!(!victim.path().join("results.json").exists());
}
