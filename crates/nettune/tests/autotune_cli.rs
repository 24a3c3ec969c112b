//! `nettune autotune` end to end: bad input is refused in one line before
//! anything runs (no root needed); as root a short search in the lab
//! completes, writes results.json, plan.json (a plan `apply` reads),
//! profile.toml and the report,
//! and leaves no namespace and no root-namespace setting changed. No gain
//! is asserted (noise): the mechanism is.

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine_common::root_settings;
use std::process::Command;

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

/// The lab of the nettune process `pid` is gone and no root-namespace
/// setting differs from `before`.
fn assert_lab_gone(pid: u32, before: &[(String, String)]) {
    assert!(
        netns_of(pid).is_empty(),
        "namespaces left: {:?}",
        netns_of(pid)
    );
    assert_eq!(root_settings(), before, "a root-namespace setting changed");
}

/// DIR/results.json.
fn results_of(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// Run `nettune autotune ARGS`; stderr must be one line, exit 2, no lab.
fn refused(args: &[&str], needle: &str) {
    let out = Command::new(BIN)
        .arg("autotune")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!err.contains("building the lab"), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn an_objective_the_workload_cannot_measure_is_one_line() {
    refused(
        &["--objective", "max-cps", "--test", "tcp-stream", "--lab"],
        "max-cps cannot be measured by a tcp-stream workload: it needs a tcp-crr workload",
    );
    refused(
        &["--objective", "max-throughput", "--test", "tcp-rr", "--lab"],
        "needs a tcp-stream or udp-stream workload",
    );
    let out = Command::new(BIN)
        .args(["autotune", "--objective", "max-cps", "--test", "tcp-stream"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

/// udp-rr, a test of bench's catalogue, is a workload of autotune too: it
/// passes the workload check of the objectives it measures and is refused,
/// naming it, by the one it does not.
#[test]
fn a_udp_rr_workload_is_checked_like_the_others() {
    refused(
        &["--objective", "max-cps", "--test", "udp-rr", "--lab"],
        "max-cps cannot be measured by a udp-rr workload",
    );
    for objective in ["min-p99", "max-pps"] {
        refused(
            &[
                "--objective",
                objective,
                "--test",
                "udp-rr",
                "--budget",
                "3",
                "--lab",
            ],
            "a budget of 3 runs is too small",
        );
    }
}

#[test]
fn a_budget_too_small_is_said_up_front_with_the_minimum() {
    refused(
        &["--objective", "max-cps", "--budget", "10", "--lab"],
        "a budget of 10 runs is too small",
    );
    refused(
        &["--objective", "max-cps", "--budget", "10", "--lab"],
        "at least 39 runs",
    );
    refused(
        &["--objective", "max-cps", "--time", "20s", "--lab"],
        "--time gives",
    );
}

#[test]
fn other_bad_input_is_refused_before_anything_runs() {
    refused(
        &["--objective", "max-cps", "--inventory", "hosts.yaml"],
        "--server <HOST>",
    );
    refused(
        &["--objective", "max-cps", "--workload", "no-such-w.toml"],
        "--workload: no-such-w.toml: not found",
    );
    refused(
        &["--objective", "max-cps", "--constraint", "p99 < 5"],
        "constraint `p99 < 5`",
    );
    refused(
        &["--objective", "max-throughput", "--constraint", "p99<=+5%"],
        "constraint `p99<=+5%` cannot be measured by a tcp-stream workload",
    );
    refused(&["--objective", "fastest"], "unknown objective `fastest`");
    refused(&["--objective", "max-cps", "--duration", "0"], "--duration");
}

#[test]
fn help_has_examples() {
    let out = Command::new(BIN)
        .args(["autotune", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("Examples:") && text.contains("nettune autotune --objective max-cps --lab"),
        "{text}"
    );
}

#[test]
fn a_short_lab_search_completes_and_leaves_nothing() {
    if !lab::require_root("autotune_cli::a_short_lab_search_completes_and_leaves_nothing") {
        return;
    }
    let before = root_settings();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("at");
    let child = Command::new(BIN)
        .args(["autotune", "--objective", "max-cps", "--lab"])
        .args(["--duration", "1", "--budget", "39", "--seed", "1"])
        .arg("--out")
        .arg(&out_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}\n{text}");
    assert!(
        err.contains("search space:") && err.contains("tcp_tw_reuse"),
        "{err}"
    );
    // A rate: its arms are compared on their means, and the header says so.
    assert!(err.contains("arms compared on their means"), "{err}");
    assert!(text.contains("runs "), "{text}");
    assert_lab_gone(pid, &before);

    let doc = results_of(&out_dir);
    assert_eq!(doc["kind"], "autotune", "{doc}");
    assert_eq!(doc["workload"]["statistic"], "mean", "{doc}");
    assert!(!out_dir.join("outcome.json").exists());
    let profile = std::fs::read_to_string(out_dir.join("profile.toml")).unwrap();
    assert!(profile.contains("[levels]"), "{profile}");
    let page = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(page.contains("chart-autotune-trace"), "{page:.300}");
    let runs = doc["runs_used"].as_u64().unwrap();
    assert!((1..=39).contains(&runs), "{doc}");
    assert_eq!(doc["workload"]["test"], "tcp-crr", "{doc}");
    assert_eq!(doc["workload"]["duration"], 1, "{doc}");
    assert_eq!(doc["trace"].as_array().unwrap().len() as u64, runs);
    assert_eq!(doc["interrupted"], false);
    assert!(doc["space"].as_array().unwrap().len() >= 2, "{doc}");
    // Every candidate is either accepted or rejected with a reason.
    let decided =
        doc["accepted"].as_array().unwrap().len() + doc["rejected"].as_array().unwrap().len();
    let candidates: usize = doc["space"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["levels"].as_array().unwrap().len())
        .sum();
    assert_eq!(decided, candidates, "{doc}");

    // The plan is one `apply --plan` takes: dry-run in a fresh namespace
    // (--force: the lab host it was made for is gone).
    let plan_path = out_dir.join("plan.json");
    let plan = model::plan::Plan::from_json(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    assert_eq!(plan.profile, "autotune-max-cps");
    if doc["accepted"].as_array().unwrap().is_empty() {
        assert!(plan.changes.is_empty(), "{plan:?}");
    }
    let ns = lab::Netns::create("ntautotune").unwrap();
    let state = dir.path().join("state");
    let out = ns
        .command(BIN)
        .args(["apply", "--dry-run", "--force", "--plan"])
        .arg(&plan_path)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Re-check the saved result in a new lab: 12 runs of 1 s at most.
    let child = Command::new(BIN)
        .args(["autotune", "--recheck"])
        .arg(&out_dir)
        .args(["--budget", "12", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_lab_gone(pid, &before);
    if doc["accepted"].as_array().unwrap().is_empty() {
        assert_eq!(out.status.code(), Some(0), "{err}\n{text}");
        assert!(text.contains("nothing to re-check"), "{text}");
    } else {
        // 0: every change holds, 1: some do not (noise may do that).
        assert!(matches!(out.status.code(), Some(0 | 1)), "{err}\n{text}");
        let j: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(j["runs_used"].as_u64().unwrap() <= 12, "{j}");
        assert_eq!(j["all_hold"], out.status.code() == Some(0), "{j}");
        assert!(!j["rows"].as_array().unwrap().is_empty(), "{j}");
    }
}

/// TIME_WAIT sockets in the lab's client namespace from `src`.
fn time_wait_from(lab: &lab::Lab, src: std::net::Ipv4Addr) -> usize {
    lab.hosts()[1]
        .sh(&format!("ss -Htan state time-wait src {src}"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// The mechanism behind max-cps in the lab: a tcp-crr run leaves TIME_WAIT
/// sockets on its source address only (the client closes first, the server
/// none), so the next run, bound to another pool address, starts with none
/// on its own 4-tuples and gives a rate of the same order.
#[test]
fn back_to_back_crr_runs_on_pool_addresses_do_not_share_time_wait() {
    use runner::exec::{Executor, HostId};
    if !lab::require_root(
        "autotune_cli::back_to_back_crr_runs_on_pool_addresses_do_not_share_time_wait",
    ) {
        return;
    }
    let session = lab::LabSession::start(
        lab::LabSpec::new(2, 2),
        std::path::Path::new(BIN),
        lab::DEFAULT_LISTEN_TIMEOUT,
    )
    .unwrap();
    let pool = session.lab().add_source_pool(1, 2).unwrap();
    let [a, b] = [pool.list()[0], pool.list()[1]];
    let mut exec = session.executor().unwrap();
    let mut run = |src: std::net::Ipv4Addr| {
        let args: Vec<String> = [
            "--test",
            "tcp-crr",
            "--duration",
            "1",
            "--warmup",
            "0.5",
            "--bind",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([src.to_string()])
        .collect();
        let bench = exec
            .bench(
                HostId(1),
                HostId(0),
                &args,
                std::time::Duration::from_secs(30),
            )
            .unwrap();
        let m = model::experiment::Metric::Transactions;
        let rec = runner::metrics::record(&bench, &[m]);
        rec.values[m.key()]
    };
    assert_eq!(time_wait_from(session.lab(), a), 0);
    let first = run(a);
    let tw_a = time_wait_from(session.lab(), a);
    assert!(
        tw_a > 100,
        "the first run left {tw_a} TIME_WAIT sockets on {a}"
    );
    assert_eq!(time_wait_from(session.lab(), b), 0, "{b} before its run");
    // The server closes second: it holds no TIME_WAIT of its own.
    let server_tw = session.lab().hosts()[0]
        .sh("ss -Htan state time-wait | wc -l")
        .unwrap();
    assert!(
        server_tw.trim().parse::<usize>().unwrap() < 10,
        "{server_tw}"
    );
    let second = run(b);
    assert!(time_wait_from(session.lab(), b) > 100);
    let ratio = first.max(second) / first.min(second).max(1.0);
    assert!(ratio < 10.0, "{first} vs {second} conn/s");
    drop(exec);
    session.teardown();
}

#[test]
fn recheck_of_a_dir_without_outcome_json_is_one_line() {
    let dir = std::env::temp_dir().join(format!("nettune-recheck-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    refused(&["--recheck", d], "results.json");
    refused(&["--recheck", d], "nettune autotune --out DIR");
    let out = Command::new(BIN)
        .args(["autotune", "--recheck", d])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    // Not JSON, or no objective: one line naming the file. (outcome.json,
    // results.json's name before, is still read when there is no results.json.)
    std::fs::write(dir.join("outcome.json"), "{").unwrap();
    refused(&["--recheck", d], "not JSON");
    std::fs::write(dir.join("outcome.json"), "{}").unwrap();
    refused(&["--recheck", d], "no `objective`");
    // Nothing accepted: said, exit 0, nothing runs (no root needed).
    std::fs::write(
        dir.join("outcome.json"),
        r#"{"objective": "max-cps", "interrupted": false, "accepted": []}"#,
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["autotune", "--recheck", d])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to re-check"));
    // --recheck takes its objective from the file.
    refused(
        &["--recheck", d, "--objective", "max-cps"],
        "cannot be used with",
    );
    // A change kept on top of one that is not accepted (a corrupt or
    // edited file): one line, before anything runs.
    std::fs::write(
        dir.join("outcome.json"),
        r#"{"objective": "max-cps", "accepted": [{"knob": "tcp_tw_reuse", "level": "1", "on_top_of": ["congestion_control=cubic"]}]}"#,
    )
    .unwrap();
    refused(&["--recheck", d], "tcp_tw_reuse=1 is kept on top of congestion_control=cubic, which is not another accepted change");
    std::fs::write(
        dir.join("outcome.json"),
        r#"{"objective": "max-cps", "accepted": [{"knob": "tcp_tw_reuse", "level": "1", "on_top_of": [7]}]}"#,
    )
    .unwrap();
    refused(
        &["--recheck", d],
        "invalid type: integer `7`, expected a string",
    );
    // A statistic the search could not have run on: one line, naming the key.
    std::fs::write(
        dir.join("outcome.json"),
        r#"{"objective": "max-cps", "accepted": [], "workload": {"statistic": "average"}}"#,
    )
    .unwrap();
    refused(
        &["--recheck", d],
        "unknown variant `average`, expected `median` or `mean`",
    );
    // results.json, when there, is the one read.
    std::fs::write(dir.join("results.json"), "{}").unwrap();
    refused(&["--recheck", d], "results.json: no `objective`");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_in_the_race_exits_130_and_keeps_nothing_yet() {
    if !lab::require_root("autotune_cli::ctrl_c_in_the_race_exits_130_and_keeps_nothing_yet") {
        return;
    }
    use std::io::BufRead;
    let before = root_settings();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("at");
    let mut child = Command::new(BIN)
        .args(["autotune", "--objective", "max-cps", "--lab"])
        .args(["--duration", "1", "--budget", "39", "--seed", "1"])
        .arg("--out")
        .arg(&out_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Not a terminal: a progress line per run. After the third run (the
    // race's first round has 3 runs per arm) send SIGINT, as Ctrl-C does.
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let third = line.starts_with("run 3/");
        seen.push(line);
        if third {
            break;
        }
    }
    let progress = seen.last().cloned().unwrap_or_default();
    assert!(progress.starts_with("run 3/39 "), "{seen:#?}");
    assert!(progress.contains("best proven: none yet"), "{progress}");
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let err = rest.join("\n");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("nothing was proven yet"), "{err}");
    assert_lab_gone(pid, &before);
    let doc = results_of(&out_dir);
    assert_eq!(doc["interrupted"], true, "{doc}");
    assert_eq!(doc["accepted"].as_array().map(Vec::len), Some(0), "{doc}");
    // What was still racing is named, with its interval where it had one.
    assert!(
        doc["rejected"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["reason"] == "interrupted before it was decided"),
        "{doc}"
    );
    let plan =
        model::plan::Plan::from_json(&std::fs::read_to_string(out_dir.join("plan.json")).unwrap())
            .unwrap();
    assert!(plan.changes.is_empty(), "{plan:?}");
    // Nothing to start from, nothing to re-check: one line each, exit 2.
    let d = out_dir.to_str().unwrap();
    refused(&["--recheck", d], "interrupted before it proved anything");
    refused(
        &["--objective", "max-cps", "--lab", "--from", d],
        "interrupted before it proved anything",
    );
}

#[test]
fn recheck_of_an_interrupted_run_rechecks_what_it_proved() {
    let dir = tempfile::tempdir().unwrap();
    // A search stopped during its re-check, after tcp_tw_reuse=1 passed.
    std::fs::write(
        dir.path().join("results.json"),
        r#"{"kind": "autotune", "objective": "max-cps", "interrupted": true, "rounds": 2,
            "accepted": [{"knob": "tcp_tw_reuse", "level": "1"}],
            "workload": {"test": "tcp-crr", "duration": 1, "flows": 1, "seed": 3}}"#,
    )
    .unwrap();
    let d = dir.path().to_str().unwrap();
    if !lab::is_root() {
        // Read and taken: it goes as far as the lab, which needs root.
        let out = Command::new(BIN)
            .args(["autotune", "--recheck", d])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("interrupted"), "{err}");
        assert!(err.contains("root"), "{err}");
        return;
    }
    let child = Command::new(BIN)
        .args(["autotune", "--recheck", d, "--budget", "6", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}\n{text}");
    assert!(netns_of(pid).is_empty(), "namespaces left after --recheck");
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        j["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.to_string().contains("tcp_tw_reuse=1")),
        "{j}"
    );
}
