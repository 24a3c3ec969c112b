//! `nettune experiment`: an invalid file is refused before anything runs,
//! the result table, and (as root) a tiny experiment in a real lab whose
//! rollback leaves the namespace's sysctl as it was.

#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use model::plan::NetnsScope;
use model::results::{CellStatus, Machine, RunRecord};
use runner::exec::HostId;
use runner::{self, experiment as rx, NoProgress, Outcome, RunOptions};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn netns_with(prefix: &str) -> usize {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

#[test]
fn an_invalid_file_is_one_line_naming_line_and_key_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\nwarmpu = 1\n[hosts.lab]\nhosts = 2\n[[workload]]\nname = \"s\"\ntest = \"tcp-stream\"\n[responses]\nmetrics = [\"throughput\"]\n",
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    let before = netns_with("ntexp-");
    let o = Command::new(BIN)
        .args(["experiment"])
        .arg(&file)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("nettune: "), "{err}");
    assert!(err.contains("bad.toml: line 2, key `warmpu`"), "{err}");
    assert!(o.stdout.is_empty());
    assert!(
        !out_dir.exists(),
        "nothing may run before the file is valid"
    );
    assert_eq!(netns_with("ntexp-"), before);

    // A bad level value names its factor and level.
    std::fs::write(
        &file,
        "[hosts.lab]\nhosts = 2\n[[workload]]\nname = \"s\"\ntest = \"tcp-stream\"\n[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 7]\n[responses]\nmetrics = [\"throughput\"]\n",
    )
    .unwrap();
    let o = Command::new(BIN)
        .arg("experiment")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 8, key `factor[0].levels[1]`"), "{err}");

    // A missing file is an error too, and --until-ci out of range a usage error.
    let o = Command::new(BIN)
        .args(["experiment", "/nonexistent/x.toml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(BIN)
        .args(["experiment", "x.toml", "--until-ci", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_files_delay_is_the_labs_round_trip_delay() {
    // seed 004: a 100 ms RTT link; LabSpec.delay is the round trip too.
    let exp = nettune::cmd::experiment::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rhel6-bdp.toml"),
    )
    .unwrap()
    .0;
    let model::experiment::Hosts::Lab(t) = &exp.hosts else {
        panic!("{:?}", exp.hosts)
    };
    let spec = nettune::cmd::experiment::lab_spec(t);
    assert_eq!(spec.delay, Some(Duration::from_millis(100)));
    assert_eq!(spec.rate, Some(100_000_000));
    assert!(spec.validate().is_ok());
}

#[test]
fn every_example_file_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        // autotune-*.toml are `autotune --workload` files, not experiments.
        let workload = p
            .file_name()
            .is_some_and(|f| f.to_string_lossy().starts_with("autotune-"));
        if p.extension().is_some_and(|x| x == "toml") && !workload {
            nettune::cmd::experiment::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 5, "{n}");
}

const TABLE: &str = r#"
name = "table"
seed = 3
repeats = 5
warmup = 0

[hosts.lab]
hosts = 2

[[workload]]
name = "crr"
test = "tcp-crr"

[[factor]]
name = "tcp_tw_reuse"
levels = [0, 1]

[[factor]]
name = "congestion_control"
levels = ["cubic", "vegas"]

[responses]
metrics = ["transactions", "latency_p99"]
"#;

fn run(tps: f64, p99: f64) -> RunRecord {
    RunRecord {
        workload: "crr".into(),
        repeat: 0,
        warmup: false,
        start_time: "2026-11-24T00:00:00Z".into(),
        values: [
            ("transactions".to_string(), tps),
            ("latency_p99".to_string(), p99),
        ]
        .into(),
        intervals: vec![],
        cpus: vec![],
        softirq_series: vec![],
        latency_cdf: vec![],
        probe: None,
        raw: None,
        limited_by: None,
        others: None,
        drops: Vec::new(),
    }
}

#[test]
fn the_result_table_shows_medians_intervals_changes_and_verdicts() {
    let exp = model::experiment::parse(TABLE).unwrap();
    let mut r = rx::results_skeleton(&exp, Machine::default(), "2026-11-24T00:00:00Z".into());
    // Made-up values with a known answer: tw_reuse=1 raises the rate by
    // about 20 % and leaves p99 where it was.
    let base = [1000.0, 1010.0, 990.0, 1005.0, 995.0];
    for c in &mut r.cells {
        let vegas = c.levels.iter().any(|(_, l)| l == "vegas");
        let tw = c
            .levels
            .iter()
            .any(|(k, l)| k == "tcp_tw_reuse" && l == "1");
        if vegas {
            c.status = CellStatus::NotApplicable {
                reason: "congestion_control=vegas: not in tcp_available_congestion_control (reno bbr cubic) on h1".into(),
            };
            continue;
        }
        for (i, b) in base.iter().enumerate() {
            let tps = if tw { b * 1.2 } else { *b };
            c.runs.push(run(tps, 250.0 + (i as f64) * 3.0));
        }
        c.status = CellStatus::Done;
    }
    runner::recompute_all(&mut r, &model::stats::BootstrapConfig::default(), None);
    insta::assert_snapshot!(nettune::cmd::experiment::table(&r));
}

#[test]
fn a_change_from_a_zero_baseline_is_shown_as_a_difference() {
    let exp = model::experiment::parse(TABLE).unwrap();
    let mut r = rx::results_skeleton(&exp, Machine::default(), String::new());
    for c in &mut r.cells {
        let tw = c
            .levels
            .iter()
            .any(|(k, l)| k == "tcp_tw_reuse" && l == "1");
        for b in [800.0, 810.0, 790.0] {
            c.runs.push(run(if tw { b } else { 0.0 }, 100.0));
        }
        c.status = CellStatus::Done;
    }
    runner::recompute_all(&mut r, &model::stats::BootstrapConfig::default(), None);
    let t = nettune::cmd::experiment::table(&r);
    let row = t
        .lines()
        .find(|l| l.contains("transactions  tcp_tw_reuse=1 congestion_control=cubic"))
        .unwrap();
    // tcp-crr counts connections: cps, as bench says.
    assert!(row.contains("+800 cps [790, 810] cps"), "{t}");
    assert!(row.ends_with("gain"), "{t}");
}

/// Reads a sysctl inside host `i` of the lab.
fn sysctl(s: &lab::LabSession, i: usize, key: &str) -> String {
    s.lab().hosts()[i]
        .sh(&format!("cat /proc/sys/{}", key.replace('.', "/")))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_tiny_experiment_runs_in_the_lab_and_rollback_restores_the_sysctl() {
    if !lab::require_root(
        "experiment_cli::a_tiny_experiment_runs_in_the_lab_and_rollback_restores_the_sysctl",
    ) {
        return;
    }
    let text = r#"
name = "tiny"
seed = 2
repeats = 1
warmup = 0
[hosts.lab]
hosts = 2
path = "loopback"
[[workload]]
name = "rr"
test = "tcp-rr"
duration_s = 1
[[factor]]
name = "tcp_tw_reuse"
levels = [0, 1]
[responses]
metrics = ["transactions", "latency_p50"]
"#;
    let exp = model::experiment::parse(text).unwrap();
    let s = lab::LabSession::start(
        lab::LabSpec {
            prefix: "ntexpt".into(),
            ..lab::LabSpec::new(2, 1)
        },
        BIN,
        Duration::from_secs(10),
    )
    .unwrap();
    let before: Vec<String> = (0..2)
        .map(|i| sysctl(&s, i, "net.ipv4.tcp_tw_reuse"))
        .collect();
    let mut exec = s.executor().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut results = rx::results_skeleton(&exp, Machine::default(), String::new());
    let schedule = rx::schedule(&exp, HostId(1), HostId(0), None);
    let mut setup = rx::ExperimentSetup::new(exp, vec![HostId(1), HostId(0)], NetnsScope::Child);
    let opts = RunOptions {
        out_dir: tmp.path().to_path_buf(),
        experiment_text: Some(text.into()),
        cancel: Arc::new(AtomicBool::new(false)),
    };
    let out = runner::run(
        &mut results,
        &schedule,
        &mut exec,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out, Outcome::Completed);
    for c in &results.cells {
        assert_eq!(c.status, CellStatus::Done, "{}: {:?}", c.label, c.status);
        assert_eq!(c.runs.len(), 1);
        assert!(c.runs[0].values["transactions"] > 0.0, "{:?}", c.runs[0]);
    }
    // Both levels were really written (one of them differs from the
    // namespace's default of 2), and each cell was rolled back.
    assert_eq!(results.plans.len(), 4, "{:?}", results.plans.keys());
    let after: Vec<String> = (0..2)
        .map(|i| sysctl(&s, i, "net.ipv4.tcp_tw_reuse"))
        .collect();
    assert_eq!(after, before);
}

/// Every test of bench's catalogue is a workload of an experiment: a
/// udp-rr workload runs in the lab and yields transactions and latency.
#[test]
fn a_udp_rr_workload_runs_in_the_lab() {
    if !lab::require_root("experiment_cli::a_udp_rr_workload_runs_in_the_lab") {
        return;
    }
    let text = r#"
name = "udp-rr"
seed = 3
repeats = 1
warmup = 0
[hosts.lab]
hosts = 2
path = "loopback"
[[workload]]
name = "urr"
test = "udp-rr"
duration_s = 1
[[factor]]
name = "tcp_tw_reuse"
levels = [0]
[responses]
metrics = ["transactions", "latency_p99"]
"#;
    let exp = model::experiment::parse(text).unwrap();
    let s = lab::LabSession::start(
        lab::LabSpec {
            prefix: "ntexpu".into(),
            ..lab::LabSpec::new(2, 1)
        },
        BIN,
        Duration::from_secs(10),
    )
    .unwrap();
    let mut exec = s.executor().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut results = rx::results_skeleton(&exp, Machine::default(), String::new());
    assert_eq!(results.workloads[0].test, "udp-rr");
    let schedule = rx::schedule(&exp, HostId(1), HostId(0), None);
    let mut setup = rx::ExperimentSetup::new(exp, vec![HostId(1), HostId(0)], NetnsScope::Child);
    let opts = RunOptions {
        out_dir: tmp.path().to_path_buf(),
        experiment_text: Some(text.into()),
        cancel: Arc::new(AtomicBool::new(false)),
    };
    let out = runner::run(
        &mut results,
        &schedule,
        &mut exec,
        &mut setup,
        &opts,
        &mut NoProgress,
    )
    .unwrap();
    assert_eq!(out, Outcome::Completed);
    let run = &results.cells[0].runs[0];
    assert!(run.values["transactions"] > 0.0, "{run:?}");
    assert!(run.values["latency_p99"] > 0.0, "{run:?}");
}

fn runs_in(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("results.json"))
        .ok()
        .and_then(|t| model::results::ExperimentResults::from_json(&t).ok())
        .map_or(0, |r| r.cells.iter().map(|c| c.runs.len()).sum())
}

#[test]
fn ctrl_c_exits_130_after_rollback_and_resume_finishes_the_experiment() {
    if !lab::require_root(
        "experiment_cli::ctrl_c_exits_130_after_rollback_and_resume_finishes_the_experiment",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("tiny.toml");
    std::fs::write(
        &file,
        "name = \"tiny\"\nrepeats = 2\nwarmup = 0\n[hosts.lab]\nhosts = 2\npath = \"loopback\"\n[[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\n[responses]\nmetrics = [\"transactions\"]\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    let child = Command::new(BIN)
        .arg("experiment")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while runs_in(&out) < 1 {
        assert!(start.elapsed() < Duration::from_secs(60), "no run written");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume"), "{err}");
    let r = model::results::ExperimentResults::from_json(
        &std::fs::read_to_string(out.join("results.json")).unwrap(),
    )
    .unwrap();
    assert!(r.interrupted, "{r:?}");
    assert_eq!(netns_with(&format!("ntexp-{pid}-")), 0, "the lab stays");

    let o = Command::new(BIN)
        .arg("experiment")
        .arg(&file)
        .arg("--resume")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = model::results::ExperimentResults::from_json(
        &std::fs::read_to_string(out.join("results.json")).unwrap(),
    )
    .unwrap();
    assert!(!r.interrupted && r.finished.is_some());
    assert!(r.cells.iter().all(|c| c.status == CellStatus::Done));
    assert!(r.cells.iter().all(|c| c.runs.len() == 2));
    // nettune report's page and summary, written at the end.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("tcp_tw_reuse=1"), "the page names the cells");
    assert!(out.join("report.md").is_file());
}

/// Run the binary with stdin closed, failing (not hanging) if it blocks.
fn run_bounded(
    args: &[&std::ffi::OsStr],
    unblock: Option<&std::path::Path>,
) -> std::process::Output {
    use std::process::Stdio;
    let child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(o) => o.unwrap(),
        Err(_) => {
            if let Some(f) = unblock {
                let _ = std::fs::OpenOptions::new().write(true).open(f);
            }
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("nettune {args:?} blocked");
        }
    }
}

/// A FIFO or a device as the experiment file: one line naming it, at once
/// (a FIFO blocked the open; /dev/zero was read until memory ran out).
#[test]
fn a_fifo_or_device_experiment_file_is_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("exp.toml");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let o = run_bounded(&["experiment".as_ref(), fifo.as_os_str()], Some(&fifo));
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("exp.toml") && err.contains("FIFO"), "{err}");
    let o = run_bounded(&["experiment".as_ref(), "/dev/zero".as_ref()], None);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/dev/zero") && err.contains("device"), "{err}");
}

/// The name was used as a path: `nettune-experiment-x/../../../../tmp/y`.
#[test]
fn a_path_as_the_name_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("p.toml");
    std::fs::write(
        &file,
        TABLE.replace("name = \"table\"", "name = \"x/../../../../tmp/y\""),
    )
    .unwrap();
    let o = Command::new(BIN)
        .current_dir(tmp.path())
        .arg("experiment")
        .arg(&file)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 2, key `name`"), "{err}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

/// 256 cells × 1,100 runs × 600 s (5.4 years) started silently.
#[test]
fn an_absurd_design_needs_yes_without_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("huge.toml");
    std::fs::write(
        &file,
        "name = \"huge\"\nrepeats = 1000\nwarmup = 100\n[hosts.lab]\nhosts = 2\n[[workload]]\nname = \"s\"\ntest = \"tcp-stream\"\nduration_s = 600\n[[factor]]\nname = \"flows\"\nlevels = [1, 2, 3, 4]\n[[factor]]\nname = \"busy_poll\"\nlevels = [0, 1, 2, 3]\n[[factor]]\nname = \"rcvbuf\"\nlevels = [0, 1, 2, 3]\n[[factor]]\nname = \"sndbuf\"\nlevels = [0, 1, 2, 3]\n[responses]\nmetrics = [\"throughput\"]\n",
    )
    .unwrap();
    let out_dir = tmp.path().join("out");
    let before = netns_with("ntexp-");
    let o = run_bounded(
        &[
            "experiment".as_ref(),
            file.as_os_str(),
            "--out".as_ref(),
            out_dir.as_os_str(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("256 cell(s)"), "{err}");
    assert!(err.contains("281603 bench runs"), "{err}");
    assert!(err.contains("5y "), "{err}");
    assert!(err.contains("--yes"), "{err}");
    assert!(!out_dir.exists());
    assert_eq!(netns_with("ntexp-"), before);
}

#[test]
fn the_experiment_files_lab_cap_is_the_labs() {
    assert_eq!(model::experiment::MAX_LAB_HOSTS, lab::MAX_HOSTS);
}

#[test]
fn a_fleet_file_is_checked_with_its_inventory_and_unreachable_hosts_are_named_before_anything_is_written(
) {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = tempfile::tempdir().unwrap();
    let run = |file: &std::path::Path| {
        Command::new(BIN)
            .arg("experiment")
            .arg(file)
            .args(["--no-copy", "--timeout", "5"])
            .current_dir(tmp.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    // The example inventory's hosts (example.com) cannot be reached: each
    // is named with ssh's reason, and nothing is applied or written.
    for name in ["fleet-itr-rr", "fleet-interrupt-rate"] {
        let o = run(&repo.join(format!("examples/{name}.toml")));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("nettune: experiment: srv1.example.com failed: "),
            "{err}"
        );
        assert!(
            err.contains("could not be reached; nothing was applied"),
            "{err}"
        );
        assert!(o.stdout.is_empty());
    }
    // Nothing was written where it ran.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);

    // The inventory is read relative to the file; a missing one, or a role it
    // lacks, is one line naming it.
    let text = std::fs::read_to_string(repo.join("examples/fleet-interrupt-rate.toml")).unwrap();
    let file = tmp.path().join("x.toml");
    std::fs::write(&file, &text).unwrap();
    let o = run(&file);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("fleet-hosts.ini"), "{err}");
    std::fs::write(
        tmp.path().join("fleet-hosts.ini"),
        "[server]\nsrv1\n[probe]\np1\n[other]\nc1\n",
    )
    .unwrap();
    let o = run(&file);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("hosts.fleet.clients"), "{err}");
}

#[test]
fn a_cell_whose_runs_different_threads_limited_gets_a_line_with_each_groups_median() {
    let exp = model::experiment::parse(TABLE).unwrap();
    let mut r = rx::results_skeleton(&exp, Machine::default(), String::new());
    for c in &mut r.cells {
        for (i, b) in [800.0, 810.0, 400.0, 790.0, 390.0].iter().enumerate() {
            let mut x = run(*b, 100.0);
            x.limited_by = Some(if *b < 500.0 {
                "the server's recv thread".into()
            } else if i == 0 && c.index == 0 {
                "no single thread".into()
            } else {
                "the client's request thread".into()
            });
            c.runs.push(x);
        }
        c.status = CellStatus::Done;
    }
    runner::recompute_all(&mut r, &model::stats::BootstrapConfig::default(), None);
    let t = nettune::cmd::experiment::table(&r);
    let label = &r.cells[1].label;
    let want = format!(
        "what limited {label} (crr transactions): the client's request thread in 3 of 5 runs \
         (median 800 cps), the server's recv thread in 2 (median 395 cps); the median depends \
         on how many runs fall in each"
    );
    assert!(t.lines().any(|l| l == want), "{t}");
    // Three groups in the first cell, most runs first.
    assert!(
        t.contains("the client's request thread in 2 of 5 runs (median 800 cps), the server's recv thread in 2 (median 395 cps), no single thread in 1 (median 800 cps)"),
        "{t}"
    );
}
