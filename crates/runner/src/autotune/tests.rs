use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use model::experiment::{Factor, Knob, Level, Metric};
use model::plan::{NetnsScope, Plan};
use model::snapshot::HostSnapshot;
use model::stats::SplitMix64;
use tune::autotune::{Objective, Search, SearchConfig, SearchSpace};

use super::*;
use crate::exec::{ExecError, Executor, HostId};

/// `nettune inspect --json` in a namespace with a veth pair (6.18).
const SNAP: &str = include_str!("../../../tune/src/levels/testdata/netns-veth-6.18.json");
/// `nettune bench --test tcp-stream --json` over loopback.
const STREAM: &str = include_str!("../../tests/data/bench-tcp-stream-lo.json");

mod bytes;
mod coalesce;
mod step;

/// results.json as a document, for the tests that index it.
fn outcome_json(
    objective: &str,
    built: &BuiltSpace,
    ended: &Ended,
    trace: &[RunTrace],
) -> serde_json::Value {
    serde_json::to_value(outcome(objective, built, ended, trace)).unwrap()
}

fn snap() -> HostSnapshot {
    serde_json::from_str(SNAP).unwrap()
}

fn snaps() -> Vec<(HostId, HostSnapshot)> {
    vec![(HostId(1), snap()), (HostId(0), snap())]
}

/// A fake lab of two hosts: a bench gives 1 Gbit/s with 1 % noise, +10 %
/// while `tcp_tw_reuse` is 1 on the client; apply and rollback are counted.
struct Fake {
    applied: Vec<Vec<Plan>>,
    rng: SplitMix64,
    benches: usize,
    applies: usize,
    rollbacks: usize,
    dirty_benches: usize,
    cancel_after: Option<(usize, Arc<AtomicBool>)>,
    /// A file whose writes fail, as veth's `threaded` does (EOPNOTSUPP).
    refuse: Option<&'static str>,
    /// Each bench's `--bind` address, in order.
    binds: Vec<Option<String>>,
}

impl Fake {
    fn new() -> Fake {
        Fake {
            applied: vec![Vec::new(), Vec::new()],
            rng: SplitMix64::new(3),
            benches: 0,
            applies: 0,
            rollbacks: 0,
            dirty_benches: 0,
            cancel_after: None,
            refuse: None,
            binds: Vec::new(),
        }
    }
}

impl Executor for Fake {
    fn hosts(&self) -> usize {
        2
    }
    fn host_name(&self, host: HostId) -> String {
        format!("fake-{host}")
    }
    fn bench(
        &mut self,
        client: HostId,
        _server: HostId,
        args: &[String],
        _deadline: Duration,
    ) -> Result<model::bench::result::BenchResult, ExecError> {
        self.benches += 1;
        self.binds.push(
            args.iter()
                .position(|a| a == "--bind")
                .and_then(|i| args.get(i + 1))
                .cloned(),
        );
        if let Some((n, flag)) = &self.cancel_after {
            if self.benches >= *n {
                flag.store(true, Ordering::SeqCst);
                return Err(ExecError::Cancelled);
            }
        }
        let tw = self.applied[client.0].iter().any(|p| {
            p.changes
                .iter()
                .any(|c| c.knob == "net.ipv4.tcp_tw_reuse" && c.after == "1")
        });
        if !self.applied.iter().all(Vec::is_empty) {
            self.dirty_benches += 1;
        }
        let base = if tw { 1.1e9 } else { 1e9 };
        let v = self.rng.normal(base, base * 0.01);
        let mut j: serde_json::Value = serde_json::from_str(STREAM).unwrap();
        j["results"][0]["bits_per_sec"] = serde_json::json!(v);
        Ok(serde_json::from_value(j).unwrap())
    }
    fn inspect(&mut self, _host: HostId) -> Result<HostSnapshot, ExecError> {
        Ok(snap())
    }
    fn doctor(
        &mut self,
        host: HostId,
        _args: &[String],
    ) -> Result<model::findings::Report, ExecError> {
        Err(ExecError::NoHost(host))
    }
    fn plan(&mut self, host: HostId, _args: &[String]) -> Result<Plan, ExecError> {
        Err(ExecError::NoHost(host))
    }
    fn apply(&mut self, host: HostId, plan: &Plan) -> Result<(), ExecError> {
        let plan = plan.clone();
        if let Some(file) = self.refuse {
            if plan.changes.iter().any(|c| c.knob == file) {
                return Err(ExecError::Failed {
                    what: format!("apply on {host}"),
                    code: Some(1),
                    stderr: format!("nettune: {file}: write failed: Operation not supported (os error 95); this apply (generation 4) was rolled back"),
                });
            }
        }
        self.applies += 1;
        self.applied[host.0].push(plan);
        Ok(())
    }
    fn rollback(&mut self, host: HostId) -> Result<(), ExecError> {
        // As `nettune rollback` without an ID: the newest generation.
        self.rollbacks += 1;
        self.applied[host.0].pop();
        Ok(())
    }
}

fn cfg(cancel: Arc<AtomicBool>) -> DriveConfig {
    DriveConfig {
        client: HostId(1),
        server: HostId(0),
        hosts: vec![HostId(1), HostId(0)],
        snapshots: snaps(),
        bench_args: vec!["--test".into(), "tcp-stream".into()],
        deadline: Duration::from_secs(10),
        objective: Metric::Throughput,
        responses: Vec::new(),
        scope: NetnsScope::Child,
        cancel,
        sources: Vec::new(),
        time: None,
    }
}

fn keys(b: &BuiltSpace) -> Vec<&'static str> {
    b.factors.iter().map(|f| f.knob.name()).collect()
}

#[test]
fn max_cps_space_on_veth_starts_from_the_current_levels() {
    let b = build(Objective::MaxCps, &snaps(), NetnsScope::Child);
    assert_eq!(
        keys(&b),
        [
            "tcp_tw_reuse",
            "ip_local_port_range",
            "rps_cpus",
            "busy_poll",
            "threaded_napi"
        ]
    );
    // Current level first, as read from the snapshot.
    assert_eq!(b.factors[0].levels, [Level::Int(2), Level::Int(1)]);
    assert_eq!(
        b.factors[1].levels,
        [Level::Range([32768, 60999]), Level::Range([1024, 65535])]
    );
    assert_eq!(b.factors[2].levels[0], Level::Cpus(Vec::new()));
    assert!(SearchSpace::new(b.factors).is_ok());
}

#[test]
fn levels_a_host_cannot_take_or_already_has_are_excluded_with_reasons() {
    let b = build(Objective::MaxThroughput, &snaps(), NetnsScope::Child);
    // tcp_rmem's maximum is already 32 MiB; bbr is the current congestion
    // control, cubic is available.
    let rmem = b.excluded.iter().find(|e| e.knob == Knob::TcpRmem).unwrap();
    assert!(rmem.reason.contains("already"), "{rmem}");
    let cc = b
        .factors
        .iter()
        .find(|f| f.knob == Knob::CongestionControl)
        .unwrap();
    assert_eq!(
        cc.levels,
        [Level::Name("bbr".into()), Level::Name("cubic".into())]
    );
    // A host lacking the NAPI files: the factor is out, naming the file.
    let mut s: serde_json::Value = serde_json::from_str(SNAP).unwrap();
    for i in s["interfaces"].as_array_mut().unwrap() {
        i["gro_flush_timeout"] = serde_json::Value::Null;
    }
    let s: HostSnapshot = serde_json::from_value(s).unwrap();
    let b = build(
        Objective::MaxThroughput,
        &[(HostId(1), s)],
        NetnsScope::Child,
    );
    let gro = b
        .excluded
        .iter()
        .find(|e| e.knob == Knob::GroFlushTimeout)
        .unwrap();
    assert!(gro.reason.contains("gro_flush_timeout"), "{gro}");
    assert!(!keys(&b).contains(&"gro_flush_timeout"));
}

#[test]
fn a_host_with_nothing_changeable_says_why_per_factor() {
    let mut s: serde_json::Value = serde_json::from_str(SNAP).unwrap();
    s["sysctls"] = serde_json::json!({});
    s["interfaces"] = serde_json::json!([]);
    let s: HostSnapshot = serde_json::from_value(s).unwrap();
    let b = build(Objective::MinP99, &[(HostId(1), s)], NetnsScope::Child);
    // busy_poll is a bench option: it stays; the NAPI knobs are out.
    assert_eq!(keys(&b), ["busy_poll"]);
    let mut s: serde_json::Value = serde_json::from_str(SNAP).unwrap();
    s["sysctls"] = serde_json::json!({});
    s["interfaces"] = serde_json::json!([]);
    let s: HostSnapshot = serde_json::from_value(s).unwrap();
    let b = build(
        Objective::MaxThroughput,
        &[(HostId(1), s)],
        NetnsScope::Child,
    );
    // Pinning the workload is a bench option: it stays (as busy_poll).
    assert_eq!(keys(&b), ["cpu_pin"]);
    let e = AutotuneRunError::NothingToChange {
        objective: "max-throughput",
        reasons: b.excluded.clone(),
    }
    .to_string();
    for knob in [
        "tcp_rmem",
        "congestion_control",
        "gro_flush_timeout",
        "rps_cpus",
    ] {
        assert!(e.contains(knob), "{knob} missing from {e}");
    }
    assert!(e.contains("absent") || e.contains("loopback"), "{e}");
}

fn pin_levels(b: &BuiltSpace) -> Vec<Level> {
    b.factors
        .iter()
        .find(|f| f.knob == Knob::CpuPin)
        .map(|f| f.levels.clone())
        .unwrap_or_default()
}

#[test]
fn max_throughput_pins_the_workload_on_a_cpu_without_the_nics_irqs() {
    // veth has no IRQs: its first local CPU, after the current level (not pinned).
    let b = build(Objective::MaxThroughput, &snaps(), NetnsScope::Child);
    assert_eq!(
        pin_levels(&b),
        [Level::Cpus(Vec::new()), Level::Cpus(vec![0])]
    );
    assert!(b
        .sources
        .iter()
        .any(|(k, s)| *k == Knob::CpuPin && s.contains("app-on-irq-cpu")));
    // A queue IRQ of the device served by CPU 0: the workload goes to CPU 1.
    let mut s: serde_json::Value = serde_json::from_str(SNAP).unwrap();
    let irq = s["irqs"][0]["number"].clone();
    for i in s["interfaces"].as_array_mut().unwrap() {
        if i["name"] != "lo" {
            i["irqs"] = serde_json::json!([irq]);
        }
    }
    let s: HostSnapshot = serde_json::from_value(s).unwrap();
    let b = build(
        Objective::MaxThroughput,
        &[(HostId(1), s)],
        NetnsScope::Child,
    );
    assert_eq!(
        pin_levels(&b),
        [Level::Cpus(Vec::new()), Level::Cpus(vec![1])]
    );
}

#[test]
fn a_bench_option_the_workload_sets_is_left_out_saying_so() {
    let mut b = build(Objective::MaxThroughput, &snaps(), NetnsScope::Child);
    let workload = ["--nodelay".to_string(), "--cpus".into(), "1".into()];
    space::workload_sets(&mut b, &snaps(), NetnsScope::Child, &workload);
    assert!(!keys(&b).contains(&"cpu_pin"), "{:?}", keys(&b));
    assert!(!b.sources.iter().any(|(k, _)| *k == Knob::CpuPin));
    let e = b.excluded.iter().find(|e| e.knob == Knob::CpuPin).unwrap();
    assert_eq!(e.to_string(), "cpu_pin: the workload's args set --cpus");
    // Host knobs and options the workload leaves alone stay.
    assert!(keys(&b).contains(&"congestion_control"));
    let mut b = build(Objective::MaxPps, &snaps(), NetnsScope::Child);
    space::workload_sets(&mut b, &snaps(), NetnsScope::Child, &["--udp-gso".into()]);
    assert!(!keys(&b).contains(&"udp_gso"));
    assert!(keys(&b).contains(&"udp_gro"));
}

fn tw_search(budget: usize) -> Search {
    let space = SearchSpace::new(vec![Factor {
        knob: Knob::TcpTwReuse,
        levels: vec![Level::Int(2), Level::Int(1)],
    }])
    .unwrap();
    let mut c = SearchConfig::new(Metric::Throughput);
    c.budget = Some(budget);
    c.seed = 11;
    Search::new(space, c).unwrap()
}

#[test]
fn drive_applies_each_arm_rolls_it_back_and_keeps_a_real_gain() {
    let mut fake = Fake::new();
    let mut search = tw_search(60);
    let cancel = Arc::new(AtomicBool::new(false));
    let mut seen = 0;
    let (ended, trace) =
        drive(&mut search, &mut fake, &cfg(cancel), &mut |_, _| seen += 1).unwrap();
    let Ended::Done(o) = &ended else {
        panic!("{ended:?}")
    };
    assert_eq!(trace.len(), o.runs);
    assert_eq!(seen, o.runs);
    assert_eq!(fake.benches, o.runs);
    assert_eq!(fake.applies, fake.rollbacks);
    assert!(fake.applied.iter().all(Vec::is_empty), "host left changed");
    assert_eq!(describe(o), ["tcp_tw_reuse=1"], "{}", o.render());
    // Only the candidate's arms ran changed.
    assert_eq!(
        fake.dirty_benches,
        trace.iter().filter(|r| r.arm != "baseline").count()
    );
    let doc = outcome_json(
        "max-throughput",
        &BuiltSpace {
            factors: Vec::new(),
            sources: Vec::new(),
            excluded: Vec::new(),
        },
        &ended,
        &trace,
    );
    assert_eq!(doc["accepted"][0]["knob"], "tcp_tw_reuse");
    assert_eq!(doc["trace"].as_array().unwrap().len(), o.runs);
    // The recorded loopback bench: both threads under 90 %.
    assert!(trace
        .iter()
        .all(|r| r.limited_by.as_deref() == Some("no single thread")));
    assert_eq!(doc["trace"][0]["limited_by"], "no single thread");
    let plan = plan_of(&ended);
    let text = serde_json::to_string_pretty(&plan).unwrap();
    let back = Plan::from_json(&text).unwrap();
    assert_eq!(back.changes.len(), 1);
    assert_eq!(back.changes[0].after, "1");
}

#[test]
fn a_time_budget_raises_the_run_budget_at_the_pace_measured() {
    // The fake's runs take microseconds: an hour pays for far more runs
    // than the 40 estimated, and the search ends on its own.
    let mut search = tw_search(40);
    let mut c = cfg(Arc::new(AtomicBool::new(false)));
    c.time = Some(Duration::from_secs(3600));
    let (ended, trace) = drive(&mut search, &mut Fake::new(), &c, &mut |_, _| {}).unwrap();
    let budget = search.budget().unwrap();
    assert!(budget > 1000, "{budget}");
    assert!(matches!(ended, Ended::Done(_)));
    assert!(trace.len() <= budget);
    // Time already up: the estimate's budget stands (never lowered).
    let mut search = tw_search(40);
    c.time = Some(Duration::ZERO);
    let (_, trace) = drive(&mut search, &mut Fake::new(), &c, &mut |_, _| {}).unwrap();
    assert_eq!(search.budget(), Some(40));
    assert!(trace.len() <= 40);
}

#[test]
fn runs_that_fit_take_the_mean_pace() {
    let s = Duration::from_secs;
    assert_eq!(runs_that_fit(s(600), s(80), 20), 130);
    assert_eq!(runs_that_fit(s(600), s(600), 20), 0);
    assert_eq!(runs_that_fit(s(600), s(700), 20), 0);
    assert_eq!(runs_that_fit(s(600), s(10), 0), 0);
    // A run too quick to time counts as a nanosecond.
    assert_eq!(runs_that_fit(s(600), Duration::ZERO, 3), 600_000_000_000);
}

#[test]
fn consecutive_runs_bind_to_different_source_addresses() {
    let mut fake = Fake::new();
    let mut search = tw_search(60);
    let mut c = cfg(Arc::new(AtomicBool::new(false)));
    c.sources = (1..=4)
        .map(|d| std::net::IpAddr::from([198, 19, 1, d]))
        .collect();
    let (_, trace) = drive(&mut search, &mut fake, &c, &mut |_, _| {}).unwrap();
    assert!(trace.len() > 8, "{}", trace.len());
    assert_eq!(fake.binds.len(), trace.len());
    for (i, b) in fake.binds.iter().enumerate() {
        let want = format!("198.19.1.{}", i % 4 + 1);
        assert_eq!(b.as_deref(), Some(want.as_str()), "run {i}");
    }
    for w in fake.binds.windows(2) {
        assert_ne!(w[0], w[1]);
    }
    // Without a pool the bench picks its own source.
    let mut fake = Fake::new();
    let mut search = tw_search(60);
    drive(
        &mut search,
        &mut fake,
        &cfg(Arc::new(AtomicBool::new(false))),
        &mut |_, _| {},
    )
    .unwrap();
    assert!(fake.binds.iter().all(Option::is_none));
}

#[test]
fn ctrl_c_rolls_the_current_arm_back_and_proves_nothing() {
    let mut fake = Fake::new();
    let cancel = Arc::new(AtomicBool::new(false));
    fake.cancel_after = Some((5, cancel.clone()));
    let mut search = tw_search(60);
    let (ended, trace) = drive(&mut search, &mut fake, &cfg(cancel), &mut |_, _| {}).unwrap();
    assert!(ended.interrupted(), "{ended:?}");
    assert_eq!(trace.len(), 4);
    assert_eq!(fake.applies, fake.rollbacks);
    assert!(fake.applied.iter().all(Vec::is_empty));
    assert!(accepted_changes(&ended).is_empty());
    let doc = outcome_json("max-throughput", &no_space(), &ended, &trace);
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["accepted"].as_array().map(Vec::len), Some(0));
    assert!(doc["rejected"][0]["reason"]
        .as_str()
        .is_some_and(|r| r.contains("interrupted")));
}

fn no_space() -> BuiltSpace {
    BuiltSpace {
        factors: Vec::new(),
        sources: Vec::new(),
        excluded: Vec::new(),
    }
}

/// The plan of what `ended` accepted, for the lab's client namespace.
fn plan_of(ended: &Ended) -> Plan {
    accepted_plan(
        &snap(),
        NetnsScope::Child,
        &accepted_changes(ended),
        "max-throughput",
    )
    .unwrap()
    .plan
}

/// Drive `search` on `fake` to its end, without Ctrl-C.
fn drive_to_end(search: &mut Search, fake: &mut Fake) -> (Outcome, Vec<RunTrace>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let (ended, trace) = drive(search, fake, &cfg(cancel), &mut |_, _| {}).unwrap();
    match ended {
        Ended::Done(o) => (o, trace),
        Ended::Cancelled(o) => panic!("cancelled\n{}", o.render()),
    }
}

/// `tw_search(60)` on a fresh fake, with Ctrl-C right after run `n`
/// (1-based), as the progress callback sees it.
fn tw_cancelled_after(n: usize) -> (Ended, Vec<RunTrace>, Fake) {
    let mut fake = Fake::new();
    let mut search = tw_search(60);
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    let (ended, trace) = drive(&mut search, &mut fake, &cfg(cancel), &mut |r, _| {
        if r.seq + 1 == n {
            flag.store(true, Ordering::SeqCst);
        }
    })
    .unwrap();
    (ended, trace, fake)
}

#[test]
fn ctrl_c_in_the_recheck_keeps_the_change_its_runs_proved() {
    // The whole search first: how many runs it takes to prove the change.
    let (full, _) = drive_to_end(&mut tw_search(60), &mut Fake::new());
    assert_eq!(describe(&full), ["tcp_tw_reuse=1"], "{}", full.render());
    // The same search, Ctrl-C right after its last run, before the search
    // says it is done: the re-check's runs have proved the change, so it
    // is kept (before, a Ctrl-C kept nothing).
    let last = full.runs;
    let (ended, trace, fake) = tw_cancelled_after(last);
    let Ended::Cancelled(o) = &ended else {
        panic!("{ended:?}")
    };
    assert_eq!(trace.len(), last);
    assert_eq!(fake.applies, fake.rollbacks);
    assert!(fake.applied.iter().all(Vec::is_empty), "host left changed");
    assert_eq!(describe(o), ["tcp_tw_reuse=1"], "{}", o.render());
    let rc = o.rechecks.last().expect("re-checked");
    assert!(rc.passed && rc.effect.change.lo > 2.0, "{}", o.render());
    let doc = outcome_json("max-throughput", &no_space(), &ended, &trace);
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["accepted"][0]["knob"], "tcp_tw_reuse");
    assert_eq!(doc["rechecks"][0]["passed"], true);
    assert!(doc["rounds"].as_u64().is_some_and(|r| r >= 2));
    let plan = plan_of(&ended);
    assert_eq!(plan.changes.len(), 1);
    // A Ctrl-C one run earlier: the re-check is still open, nothing kept.
    let (ended, _, _) = tw_cancelled_after(last - 1);
    assert!(ended.interrupted());
    assert!(accepted_changes(&ended).is_empty(), "{ended:?}");
}

#[test]
fn a_level_the_host_refuses_to_write_is_probed_out_with_its_reason() {
    let mut fake = Fake::new();
    fake.refuse = Some("threaded");
    let mut b = build(Objective::MinP99, &snaps(), NetnsScope::Child);
    assert!(keys(&b).contains(&"threaded_napi"));
    probe(&mut fake, &mut b, &snaps(), NetnsScope::Child).unwrap();
    assert_eq!(keys(&b), ["busy_poll", "napi_defer_hard_irqs"]);
    let t = b
        .excluded
        .iter()
        .find(|e| e.knob == Knob::ThreadedNapi)
        .unwrap();
    assert_eq!(
        t.to_string(),
        "threaded_napi=true: threaded: write failed: Operation not supported (os error 95) on h1"
    );
    // Every probe was rolled back, the refused one too (the runner's one
    // step rolls back whatever the apply returned).
    assert_eq!(fake.applies + 1, fake.rollbacks);
    assert!(fake.applied.iter().all(Vec::is_empty));
    assert!(!b.sources.iter().any(|(k, _)| *k == Knob::ThreadedNapi));
}

/// A re-check of `accepted` (kept on top of `on_top_of`) on a fresh fake,
/// to its end: the report and the fake.
fn recheck_on_fake(
    accepted: &[(Knob, Level)],
    on_top_of: &[Vec<(Knob, Level)>],
    rc: &RecheckConfig,
) -> (RecheckReport, Fake) {
    let mut fake = Fake::new();
    let report = recheck(
        &mut fake,
        &cfg(Arc::new(AtomicBool::new(false))),
        accepted,
        on_top_of,
        rc,
        &mut |_, _| {},
    )
    .unwrap()
    .expect("not cancelled");
    (report, fake)
}

#[test]
fn a_recheck_says_per_change_whether_it_still_holds() {
    // The fake's bench gains 10 % with tcp_tw_reuse=1 on the client; the
    // port range does nothing (any more).
    let accepted = vec![
        (Knob::TcpTwReuse, Level::Int(1)),
        (Knob::IpLocalPortRange, Level::Range([1024, 65535])),
    ];
    let rc = RecheckConfig {
        repeats: 5,
        budget: 20,
        seed: 9,
        min_effect_pct: 2.0,
        statistic: model::stats::Statistic::Median,
    };
    let mut fake = Fake::new();
    let mut seen = 0;
    let report = recheck(
        &mut fake,
        &cfg(Arc::new(AtomicBool::new(false))),
        &accepted,
        &[],
        &rc,
        &mut |_, total| {
            seen += 1;
            assert_eq!(total, 20);
        },
    )
    .unwrap()
    .expect("not cancelled");
    assert_eq!(seen, 20);
    assert_eq!(fake.benches, 20);
    assert_eq!(fake.dirty_benches, 15, "every arm but the baseline applied");
    assert_eq!(fake.applies, fake.rollbacks);
    let rows: Vec<(&str, bool)> = report
        .rows
        .iter()
        .map(|r| (r.label.as_str(), r.holds))
        .collect();
    assert_eq!(
        rows,
        [
            ("tcp_tw_reuse=1 + ip_local_port_range=1024-65535", true),
            ("tcp_tw_reuse=1", true),
            ("ip_local_port_range=1024-65535", false),
        ]
    );
    assert!(report.rows[0].combined);
    assert!(!report.all_hold());
    let text = report.render();
    assert!(
        text.contains("no longer holds") && text.contains(" % ["),
        "{text}"
    );
    let j = serde_json::to_value(report.output()).unwrap();
    assert_eq!(j["all_hold"], false);
    assert_eq!(j["rows"][1]["holds"], true);
    assert_eq!(j["runs_used"], 20);
    // A budget without room for each change alone re-checks the setting
    // only and says the rest was not measured.
    let rc = RecheckConfig { budget: 10, ..rc };
    let (report, fake) = recheck_on_fake(&accepted, &[], &rc);
    assert_eq!(fake.benches, 10);
    assert!(report.rows[0].holds && report.rows[1].effect.is_none());
    assert!(report.all_hold());
    assert!(report.render().contains("not measured alone"));
}

#[test]
fn a_recheck_judges_a_forward_pass_change_on_top_of_what_it_was_kept_on() {
    // tcp_tw_reuse=1 kept first, the port range kept on top of it: the
    // range is compared with tcp_tw_reuse=1 (the fake's range does
    // nothing), never with the baseline, where the setting's gain would
    // make it look like it holds.
    let tw = (Knob::TcpTwReuse, Level::Int(1));
    let range = (Knob::IpLocalPortRange, Level::Range([1024, 65535]));
    let accepted = vec![tw.clone(), range];
    let on_top_of = vec![Vec::new(), vec![tw]];
    let rc = RecheckConfig {
        repeats: 5,
        budget: 20,
        seed: 9,
        min_effect_pct: 2.0,
        statistic: model::stats::Statistic::Median,
    };
    // The setting and tcp_tw_reuse=1 alone, and the baseline: 3 arms.
    assert_eq!(recheck::arms(&accepted, &on_top_of, &rc).len(), 2);
    let (report, fake) = recheck_on_fake(&accepted, &on_top_of, &rc);
    assert_eq!(fake.benches, 15);
    let rows: Vec<(&str, bool)> = report
        .rows
        .iter()
        .map(|r| (r.label.as_str(), r.holds))
        .collect();
    assert_eq!(
        rows,
        [
            ("tcp_tw_reuse=1 + ip_local_port_range=1024-65535", true),
            ("tcp_tw_reuse=1", true),
            (
                "ip_local_port_range=1024-65535 (on top of tcp_tw_reuse=1)",
                false
            ),
        ]
    );
    let e = report.rows[2].effect.expect("measured");
    assert!(e.change.lo < 2.0, "{e}");
}

#[test]
fn a_change_is_read_from_knob_equals_level_or_refused_saying_why() {
    use super::space::parse_change;
    assert_eq!(
        parse_change("rps_cpus=1").unwrap(),
        (Knob::RpsCpus, Level::Cpus(vec![1]))
    );
    assert_eq!(
        parse_change("ip_local_port_range=1024-65535").unwrap(),
        (Knob::IpLocalPortRange, Level::Range([1024, 65535]))
    );
    assert_eq!(
        parse_change("busy_poll=50").unwrap(),
        (Knob::BusyPoll, Level::Int(50))
    );
    let e = parse_change("rps_cpus").unwrap_err().to_string();
    assert!(e.contains("not KNOB=LEVEL"), "{e}");
    let e = parse_change("rps=1").unwrap_err().to_string();
    assert!(
        e.contains("unknown knob `rps`") && e.contains("rps_cpus"),
        "{e}"
    );
    let e = parse_change("busy_poll=fast").unwrap_err().to_string();
    assert!(e.contains("`fast` is not a level of busy_poll"), "{e}");
}

#[test]
fn a_planted_candidate_is_raced_first_next_to_the_current_level() {
    use super::space::{add_candidates, ASKED};
    let mut b = build(Objective::MaxPps, &snaps(), NetnsScope::Child);
    assert_eq!(keys(&b)[..3], ["udp_gso", "udp_gro", "rcvbuf"]);
    add_candidates(
        &mut b,
        &snaps(),
        NetnsScope::Child,
        &[
            (Knob::RpsCpus, Level::Cpus(vec![1])),
            // The current level: nothing to race.
            (Knob::BusyPoll, Level::Int(0)),
            // A knob the space cannot read the current level of.
            (Knob::Channels, Level::Int(4)),
        ],
    );
    // rps_cpus moves first, its proposal kept after the planted level.
    assert_eq!(keys(&b)[0], "rps_cpus");
    let rps = &b.factors[0];
    assert_eq!(rps.levels[0], Level::Cpus(Vec::new()));
    assert!(rps.levels.contains(&Level::Cpus(vec![1])), "{rps:?}");
    assert!(b.sources.contains(&(Knob::RpsCpus, ASKED)));
    // busy_poll keeps its proposal, raced where it was.
    assert!(keys(&b).contains(&"busy_poll"));
    let out: Vec<String> = b
        .excluded
        .iter()
        .filter(|e| e.reason.starts_with("--candidate"))
        .map(ToString::to_string)
        .collect();
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(
        out[0].starts_with("busy_poll=0: --candidate: already"),
        "{out:?}"
    );
    assert!(out[1].starts_with("channels=4: --candidate:"), "{out:?}");
    let space = SearchSpace::new(b.factors.clone()).unwrap();
    assert_eq!(space.candidates()[0].to_string(), "rps_cpus=1");
}

#[test]
fn a_setting_from_an_earlier_run_is_the_current_level() {
    use super::space::start_from;
    let mut b = build(Objective::MaxPps, &snaps(), NetnsScope::Child);
    assert!(keys(&b).contains(&"busy_poll"));
    start_from(&mut b, &[(Knob::BusyPoll, Level::Int(50))]);
    assert!(!keys(&b).contains(&"busy_poll"), "{:?}", keys(&b));
    let e = b
        .excluded
        .iter()
        .find(|e| e.knob == Knob::BusyPoll)
        .unwrap();
    assert_eq!(e.to_string(), "busy_poll: --from already sets it (50)");
    assert!(!b.sources.iter().any(|(k, _)| *k == Knob::BusyPoll));
}

#[test]
fn a_kept_setting_stays_under_every_arm_and_goes_at_the_end() {
    use super::drive::keep;
    let mut fake = Fake::new();
    let setting = [(Knob::TcpTwReuse, Level::Int(1))];
    let mut kept = keep(&mut fake, &snaps(), NetnsScope::Child, &setting).unwrap();
    assert_eq!(kept.hosts, [HostId(1), HostId(0)]);
    assert!(kept.bench_args.is_empty());
    // A search on top: the port range does nothing in the fake.
    let space = SearchSpace::new(vec![Factor {
        knob: Knob::IpLocalPortRange,
        levels: vec![Level::Range([32768, 60999]), Level::Range([1024, 65535])],
    }])
    .unwrap();
    let mut c = SearchConfig::new(Metric::Throughput);
    c.budget = Some(40);
    c.seed = 5;
    let mut search = Search::new(space, c).unwrap();
    let (o, trace) = drive_to_end(&mut search, &mut fake);
    assert!(o.accepted.is_empty(), "{}", o.render());
    // Every run, the baseline's too, ran with the kept setting in force.
    assert_eq!(fake.dirty_benches, trace.len());
    assert!(trace.iter().all(|r| r.value > 1.05e9), "{trace:?}");
    assert_eq!(fake.applied[1].len(), 1, "the kept setting is still there");
    kept.undo(&mut fake).unwrap();
    assert!(fake.applied.iter().all(Vec::is_empty));
    assert_eq!(fake.applies, fake.rollbacks);
}

#[test]
fn limits_lines_name_the_baselines_state_and_every_arm_measured_in_another() {
    let run = |arm: &str, value: f64, l: Option<&str>| RunTrace {
        seq: 0,
        arm: arm.into(),
        value,
        values: Default::default(),
        limited_by: l.map(Into::into),
        others: None,
        drops: Vec::new(),
    };
    let recv = Some("the server's recv thread");
    let send = Some("the client's send thread");
    let trace = vec![
        run("baseline", 17.0, recv),
        run("cpu_pin=0", 33.0, Some("CPU 0, shared by both threads")),
        run("baseline", 18.0, recv),
        run("rps_cpus=1", 17.5, recv),
        run("congestion_control=cubic", 34.0, send),
        run("congestion_control=cubic", 16.0, recv),
        run("congestion_control=cubic", 35.0, send),
        run("rps_cpus=1", 17.0, None),
    ];
    let fmt = |v: f64| format!("{v:.1}");
    assert_eq!(
        limits_lines(&trace, &fmt),
        [
            "baseline: the server's recv thread in 2 of 2 runs (median 17.5)",
            "cpu_pin=0: CPU 0, shared by both threads in 1 of 1 runs (median 33.0)",
            "congestion_control=cubic: the client's send thread in 2 of 3 runs (median 34.5), \
             the server's recv thread in 1 (median 16.0)",
        ]
    );
    let silent: Vec<RunTrace> = trace.iter().map(|r| run(&r.arm, r.value, None)).collect();
    assert!(limits_lines(&silent, &fmt).is_empty());
}

/// The baseline's runs of a search in the lab, unpinned tcp-stream
/// (Gbit/s and the thread that limited each; the two states of
/// bench/RESULTS.md, "What the two modes are", 2026-11-29).
#[test]
fn two_states_of_the_baseline_are_named_once_apart() {
    let run = |value: f64, l: &str| RunTrace {
        seq: 0,
        arm: "baseline".into(),
        value,
        values: Default::default(),
        limited_by: Some(l.into()),
        others: None,
        drops: Vec::new(),
    };
    let recv = "the server's recv thread";
    let send = "the client's send thread";
    let fmt = |v: f64| format!("{v:.1} Gbit/s");
    let mut trace = vec![
        run(34.1, send),
        run(17.6, recv),
        run(36.2, send),
        run(14.8, recv),
        run(29.3, send),
        RunTrace {
            arm: "congestion_control=cubic".into(),
            ..run(40.0, send)
        },
    ];
    assert_eq!(
        two_states_note(&trace, &fmt).unwrap(),
        "the runs of baseline fell into two states (the client's send thread in 3 of 5 runs \
         (median 34.1 Gbit/s), the server's recv thread in 2 (median 16.2 Gbit/s)), 110 % \
         apart: a change's gain can depend on the state the host is in when it runs; a \
         workload pinned with --cpus (args in --workload FILE) measures one state"
    );
    // One run in the second state, or two states close together: no note.
    trace.remove(3);
    assert_eq!(two_states_note(&trace, &fmt), None);
    let close = vec![
        run(34.1, send),
        run(30.0, recv),
        run(36.2, send),
        run(31.0, recv),
    ];
    assert_eq!(two_states_note(&close, &fmt), None);
    let one = vec![run(34.1, send), run(17.6, send)];
    assert_eq!(two_states_note(&one, &fmt), None);
    // A baseline in one state and candidates split (bbr then cubic, as
    // in docs/autotune.md's search of seed 12).
    let cubic = |value: f64, l: &str, arm: &str| RunTrace {
        arm: arm.into(),
        ..run(value, l)
    };
    let mixed = vec![
        run(10.5, "no single thread"),
        run(10.4, "no single thread"),
        cubic(16.5, recv, "congestion_control=cubic"),
        cubic(32.4, send, "congestion_control=cubic"),
        cubic(16.0, recv, "congestion_control=cubic"),
        cubic(33.0, send, "congestion_control=cubic"),
        cubic(16.9, recv, "congestion_control=cubic + rps_cpus=1"),
        cubic(34.0, send, "congestion_control=cubic + rps_cpus=1"),
        cubic(15.0, recv, "congestion_control=cubic + rps_cpus=1"),
        cubic(31.0, send, "congestion_control=cubic + rps_cpus=1"),
    ];
    let n = two_states_note(&mixed, &fmt).unwrap();
    assert!(
        n.starts_with(
            "the runs of congestion_control=cubic (and 1 other arm's) fell into two states \
             (the client's send thread in 2 of 4 runs (median 32.7 Gbit/s)"
        ),
        "{n}"
    );
}

#[test]
fn the_plan_summary_names_host_changes_and_bench_options() {
    let of = |changes: &[(Knob, Level)]| {
        accepted_plan(&snap(), NetnsScope::Child, changes, "max-throughput")
            .unwrap()
            .summary()
    };
    // Congestion control is kept per socket: no host change, and the plan
    // would otherwise read as empty.
    let cubic = [(Knob::CongestionControl, Level::Name("cubic".into()))];
    assert_eq!(
        of(&cubic),
        "no host change; for the application: nettune bench --congestion cubic"
    );
    let tw = [(Knob::TcpTwReuse, Level::Int(1))];
    assert_eq!(of(&tw), "1 host change");
    let both = [tw[0].clone(), cubic[0].clone()];
    assert_eq!(
        of(&both),
        "1 host change; for the application: nettune bench --congestion cubic"
    );
    assert_eq!(of(&[]), "no host change");
}
