//! `nettune lab` end to end: without root it says so in one line and offers
//! `--loopback`; `--loopback` measures over 127.0.0.1 without root; as root
//! the whole loop runs with small flags, writes the table and results.json,
//! and leaves no namespace and no root-namespace setting changed; Ctrl-C
//! mid-run exits 130 with the lab removed.

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine_common::root_settings;
use model::results::{CellStatus, ExperimentResults, ResultsKind};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn netns_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let me = format!("ntlab-{pid}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&me))
        .map(str::to_string)
        .collect()
}

#[test]
fn without_root_one_line_offers_the_loopback_benchmark() {
    let out = Command::new(BIN)
        .arg("lab")
        .env(nettune::cmd::lab::NOT_ROOT_ENV, "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs root"), "{err}");
    assert!(err.contains("nettune lab --loopback"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn help_has_examples() {
    let out = Command::new(BIN).args(["lab", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("Examples:") && text.contains("nettune lab --loopback"),
        "{text}"
    );
}

#[test]
fn bad_flags_are_refused_before_anything_runs() {
    // A value out of range is nettune's error (1); one that is not a
    // duration at all is refused by the shared parser as clap's bad value (2).
    for (flag, value, code) in [
        ("--repeats", "0", 1),
        ("--duration", "0", 1),
        ("--duration", "nan", 2),
        // No interval lies within ±0 %, and 100 % is every change.
        ("--min-effect", "0", 2),
        ("--min-effect", "100", 2),
    ] {
        let out = Command::new(BIN)
            .args(["lab", "--loopback", flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{err}");
    }
    let out = Command::new(BIN)
        .args(["lab", "--rate", "fast"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn loopback_measures_without_root_and_writes_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "lab",
            "--loopback",
            "--repeats",
            "3",
            "--duration",
            "0.3",
            "--out",
        ])
        .arg(dir.path())
        .env(nettune::cmd::lab::NOT_ROOT_ENV, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("loopback only, measuring"), "{text}");
    assert!(
        text.contains("95 % CI") && !text.contains("before"),
        "{text}"
    );
    for w in ["tcp-stream", "udp-stream-64", "tcp-rr", "tcp-crr"] {
        assert!(text.contains(w), "{w}: {text}");
    }
    let r = ExperimentResults::from_json(
        &std::fs::read_to_string(dir.path().join("results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r.kind, ResultsKind::Lab);
    assert_eq!(r.cells.len(), 1);
    assert_eq!(r.cells[0].status, CellStatus::Done);
    assert_eq!(r.cells[0].runs.len(), 12);
    assert!(r.cells[0].runs.iter().all(|run| !run.cpus.is_empty()));
    // Every run records drops by reason once, for the machine's one kernel:
    // counts, or the watcher's one line (not root) while the run went on.
    for run in &r.cells[0].runs {
        let hosts: Vec<&str> = run.drops.iter().map(|d| d.host.as_str()).collect();
        assert_eq!(hosts, ["this machine"], "{:?}", run.drops);
        assert!(run.drops[0].counts().is_some() || run.drops[0].why_not().is_some());
    }
    for f in ["report.html", "report.md"] {
        assert!(dir.path().join(f).is_file(), "{f} not written");
    }
}

#[test]
fn the_whole_loop_runs_and_leaves_nothing() {
    if !lab::require_root("lab_cli::the_whole_loop_runs_and_leaves_nothing") {
        return;
    }
    let before = root_settings();
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let child = Command::new(BIN)
        .args(["lab", "--repeats", "3", "--duration", "0.3", "--out"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}{err}");
    assert!(t.elapsed() < Duration::from_secs(180), "{:?}", t.elapsed());
    assert!(err.contains("doctor on ntlab-"), "{err}");
    // Doctor looks at both hosts: the connecting client and the receiver.
    assert!(err.contains("(client) and ntlab-"), "{err}");
    // What doctor found is printed once, in the table on stdout.
    assert!(err.contains("fix(es) to measure"), "{err}");
    for l in text.lines().filter(|l| l.starts_with("found on ")) {
        assert!(!err.contains(l), "on both stdout and stderr: {l}");
    }
    assert!(
        text.contains("the baseline is the kernel's defaults in fresh namespaces"),
        "{text}"
    );
    let r = ExperimentResults::from_json(
        &std::fs::read_to_string(dir.path().join("results.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r.kind, ResultsKind::Lab);
    let labels: Vec<&str> = r.cells.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels[0], "baseline");
    // One cell per fix, each measured only on the workloads it concerns.
    assert_eq!(r.fixes.len(), r.cells.len() - 1, "{labels:?}");
    for f in &r.fixes {
        let c = r.cell(f.cell).unwrap();
        assert_eq!(c.label, format!("fix {}", f.finding));
        assert!(!f.workloads.is_empty());
        assert!(
            c.runs.iter().all(|x| f.workloads.contains(&x.workload)),
            "{f:?}"
        );
        assert!(
            text.contains(&format!("fix {} against baseline", f.finding)),
            "{text}"
        );
    }
    if r.fixes.is_empty() {
        assert!(text.contains("only the baseline was measured"), "{text}");
    } else {
        assert!(text.contains("change (95 % CI)"), "{text}");
        assert!(text.contains("bottom line"), "{text}");
    }
    assert!(
        r.cells.iter().all(|c| c.status == CellStatus::Done),
        "{:?}",
        r.cells
    );
    assert!(r.doctor_before.is_some());
    assert!(r.finished.is_some() && !r.interrupted);
    assert!(r
        .cells
        .iter()
        .skip(1)
        .all(|c| c.stats.iter().any(|s| s.vs_baseline.is_some())));
    for f in ["report.html", "report.md"] {
        assert!(dir.path().join(f).is_file(), "{f} not written");
    }
    assert!(netns_of(pid).is_empty(), "{:?}", netns_of(pid));
    assert_eq!(root_settings(), before, "a root-namespace setting changed");
}

#[test]
fn ctrl_c_mid_run_exits_130_and_removes_the_lab() {
    if !lab::require_root("lab_cli::ctrl_c_mid_run_exits_130_and_removes_the_lab") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["lab", "--repeats", "3", "--duration", "2", "--out"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    // Wait until the second run has started: the lab is up, a bench runs.
    let mut seen = Vec::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        let go = l.contains("tcp-stream run 2");
        seen.push(l);
        if go {
            break;
        }
    }
    assert!(!netns_of(pid).is_empty(), "lab not up: {seen:?}");
    std::thread::sleep(Duration::from_millis(300));
    let st = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen:?} {rest:?}");
    assert!(rest.iter().any(|l| l.contains("interrupted")), "{rest:?}");
    assert!(netns_of(pid).is_empty(), "{:?}", netns_of(pid));
    let r = ExperimentResults::from_json(
        &std::fs::read_to_string(dir.path().join("results.json")).unwrap(),
    )
    .unwrap();
    assert!(r.interrupted);
    assert!(r.finished.is_none());
    interrupted_report_written(dir.path());
}

/// docs/report.md promises both report files after Ctrl-C too, showing the
/// interrupted mark (they were not written).
fn interrupted_report_written(dir: &std::path::Path) {
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md after Ctrl-C");
    assert!(md.contains("**Interrupted:**"), "{md}");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html after Ctrl-C");
    assert!(html.to_lowercase().contains("interrupted"));
}

#[test]
fn ctrl_c_of_the_loopback_benchmark_writes_the_report_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "lab",
            "--loopback",
            "--repeats",
            "3",
            "--duration",
            "1",
            "--out",
        ])
        .arg(dir.path())
        .env(nettune::cmd::lab::NOT_ROOT_ENV, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    for l in lines.by_ref() {
        let l = l.unwrap();
        let go = l.contains("tcp-stream run 2");
        seen.push(l);
        if go {
            break;
        }
    }
    let st = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen:?} {rest:?}");
    let r = ExperimentResults::from_json(
        &std::fs::read_to_string(dir.path().join("results.json")).unwrap(),
    )
    .unwrap();
    assert!(r.interrupted);
    interrupted_report_written(dir.path());
}
