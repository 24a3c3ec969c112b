//! `lab::NetnsExecutor` driving the real `nettune` binary inside a lab's
//! namespaces: bench to the server host, doctor, plan, apply through the
//! host's own journal and roll back; the deadline kills a call; the root
//! namespace's settings stay as they were.

#![allow(clippy::unwrap_used)]

use lab::{Lab, LabSpec, NetnsExecutor};
use runner::exec::{ExecError, Executor, HostId};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn root_sysctls() -> Vec<String> {
    [
        "net/core/rmem_max",
        "net/core/wmem_max",
        "net/ipv4/tcp_rmem",
        "net/ipv4/tcp_wmem",
        "net/core/netdev_max_backlog",
    ]
    .iter()
    .map(|k| std::fs::read_to_string(format!("/proc/sys/{k}")).unwrap_or_default())
    .collect()
}

fn wait_listening(ns: &lab::Netns) {
    let t = Instant::now();
    while !ns.sh("ss -ltnH 'sport = :5290'").unwrap().contains("5290") {
        assert!(t.elapsed() < Duration::from_secs(5), "serve did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bench_doctor_plan_apply_rollback_inside_the_lab() {
    if !lab::require_root("lab_netns_exec::bench_doctor_plan_apply_rollback_inside_the_lab") {
        return;
    }
    let before = root_sysctls();
    let lab = Lab::build(LabSpec {
        prefix: "ntexec".into(),
        ..LabSpec::new(2, 2)
    })
    .unwrap();
    let _serve = lab.hosts()[1].spawn(BIN, &["serve", "--quiet"]).unwrap();
    wait_listening(&lab.hosts()[1]);
    let mut ex = NetnsExecutor::new(&lab, BIN).unwrap();
    assert_eq!(ex.hosts(), 2);
    assert_eq!(ex.host_name(HostId(1)), lab.hosts()[1].name());
    let state = ex.state_dir(HostId(1)).unwrap().to_path_buf();
    assert!(state.is_dir());

    let args: Vec<String> = ["--test", "tcp-rr", "--duration", "1", "--warmup", "0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let bench = ex
        .bench(HostId(0), HostId(1), &args, Duration::from_secs(20))
        .unwrap();
    assert!(!bench.results.is_empty(), "{bench:?}");

    let snap = ex.inspect(HostId(1)).unwrap();
    assert!(!snap.interfaces.is_empty(), "{snap:?}");
    // What the executor answers is typed: the report, not its text.
    let _report: model::findings::Report = ex
        .doctor(HostId(1), &["--sample".into(), "0.5".into()])
        .unwrap();

    let plan = ex
        .plan(
            HostId(1),
            &[
                "--profile".into(),
                "throughput".into(),
                "--bdp".into(),
                "10gbit,10ms".into(),
            ],
        )
        .unwrap();
    let parsed = serde_json::to_value(&plan).unwrap();
    let first = &parsed["changes"][0];
    let path = first["target"]["path"].as_str().unwrap().to_string();
    let want = first["after"].as_str().unwrap().to_string();
    let read = |p: &str| {
        let v = lab.hosts()[1].sh(&format!("cat {p}")).unwrap();
        v.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let original = read(&path);
    assert_ne!(original, want, "{path}: the plan changes it");
    ex.apply(HostId(1), &plan).unwrap();
    assert_eq!(read(&path), want, "{path} applied in the namespace");
    ex.rollback(HostId(1)).unwrap();
    assert_eq!(read(&path), original, "{path} rolled back");

    // A plan naming a knob this namespace lacks: n/a, not a failure.
    let mut bad = serde_json::to_value(&plan).unwrap();
    let changes = bad["changes"].as_array_mut().unwrap();
    let mut c = changes
        .iter()
        .find(|c| {
            c["target"]["path"]
                .as_str()
                .is_some_and(|p| p.contains("/proc/sys/"))
        })
        .cloned()
        .unwrap();
    c["target"]["path"] = "/proc/sys/net/ipv4/tcp_nosuch".into();
    let t = c["target"].to_string();
    c["target"] = serde_json::from_str(&t).unwrap();
    *changes = vec![c];
    let bad: model::plan::Plan = serde_json::from_value(bad).unwrap();
    match ex.apply(HostId(1), &bad) {
        Err(e @ ExecError::NotApplicable { .. }) => {
            assert_eq!(e.kind(), runner::exec::ErrorKind::KnobAbsent, "{e:?}");
            assert!(e.to_string().contains("tcp_nosuch"), "{e}");
        }
        other => panic!("{other:?}"),
    }

    // A bench longer than its deadline is killed at the deadline.
    let long: Vec<String> = ["--test", "tcp-stream", "--duration", "30"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let t = Instant::now();
    let r = ex.bench(HostId(0), HostId(1), &long, Duration::from_secs(2));
    assert!(matches!(r, Err(ExecError::Timeout { .. })), "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(10));

    assert!(matches!(ex.inspect(HostId(5)), Err(ExecError::NoHost(_))));
    drop(ex);
    assert!(!state.exists(), "the executor removes its state dirs");
    assert_eq!(root_sysctls(), before, "root namespace settings changed");
}

/// The lab loop makes the header of doctor's plan from the host's snapshot
/// (`tune::planner::header`) instead of running `nettune plan` for it: the
/// header is the one `nettune plan --profile balanced --bdp ..` writes in
/// that namespace, so `apply` takes the plan there.
#[test]
fn the_header_made_from_a_snapshot_is_the_plan_commands() {
    if !lab::require_root("lab_netns_exec::the_header_made_from_a_snapshot_is_the_plan_commands") {
        return;
    }
    let lab = Lab::build(LabSpec {
        prefix: "nthdr".into(),
        ..LabSpec::new(2, 2)
    })
    .unwrap();
    let mut ex = NetnsExecutor::new(&lab, BIN).unwrap();
    let bdp = "100000000bit,20000us";
    let args: Vec<String> = ["--profile", "balanced", "--bdp", bdp]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for h in [HostId(0), HostId(1)] {
        let mut planned = ex.plan(h, &args).unwrap();
        planned.changes.clear();
        planned.notes.clear();
        let snap = ex.inspect(h).unwrap();
        let options = model::plan::PlanOptions {
            bdp: Some(model::plan::Bdp::parse(bdp).unwrap()),
            ..Default::default()
        };
        let balanced = tune::profile::builtin("balanced").unwrap();
        let header =
            tune::planner::header(&snap, &balanced, &options, model::plan::NetnsScope::Child);
        let json = |p: &model::plan::Plan| serde_json::to_string_pretty(p).unwrap();
        assert_eq!(json(&header), json(&planned), "{h}");
    }
}
