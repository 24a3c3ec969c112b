use super::*;

#[test]
fn cell_bench_options_override_the_workloads() {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        merge_args(
            &v(&["--test", "tcp-rr", "--flows", "1", "--nodelay"]),
            &v(&["--flows", "4", "--busy-poll", "50"])
        ),
        v(&[
            "--test",
            "tcp-rr",
            "--nodelay",
            "--flows",
            "4",
            "--busy-poll",
            "50"
        ])
    );
}

/// What a fake answers to a call the test does not make.
fn unasked<T>(host: HostId) -> Result<T, ExecError> {
    Err(ExecError::NoHost(host))
}

/// A plan with no changes.
fn empty_plan() -> model::plan::Plan {
    model::plan::Plan::from_json(
        r#"{"schema_version": 1, "profile": "balanced", "fingerprint": "f", "hostname": null,
            "options": {}, "scope": "child", "changes": [], "notes": []}"#,
    )
    .unwrap()
}

/// Whether every key and value of `a` is in `b` (arrays element by element).
fn subset(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .iter()
            .all(|(k, v)| y.get(k).is_some_and(|w| subset(v, w))),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| subset(v, w))
        }
        _ => a == b,
    }
}

/// The bench fixtures, as `nettune bench --json` printed them, read into
/// the type and written back as the runner's raw run files are: nothing is
/// lost (the fixtures predate some fields, which come back with their
/// defaults), and what is written reads back to the same bytes.
#[test]
fn bench_results_round_trip_without_loss() {
    for text in [
        include_str!("../tests/data/bench-tcp-rr-lo.json"),
        include_str!("../tests/data/bench-tcp-stream-lo.json"),
        include_str!("../tests/data/bench-tcp-stream-probe-lo.json"),
        include_str!("../tests/data/bench-tcp-stream-veth-recv-bound.json"),
        include_str!("../tests/data/bench-tcp-stream-veth-send-bound.json"),
    ] {
        let b: model::bench::result::BenchResult = exec::parse("bench", text).unwrap();
        let out = exec::bench_text(&b);
        let again: model::bench::result::BenchResult = exec::parse("bench", &out).unwrap();
        assert_eq!(exec::bench_text(&again), out);
        let (orig, back): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(text).unwrap(),
            serde_json::from_str(&out).unwrap(),
        );
        assert!(subset(&orig, &back));
    }
}

/// Two hosts; the client's agent dies at the `lose_at`th bench (1-based).
struct Losing {
    benches: usize,
    lose_at: usize,
    lost: bool,
    calls: Vec<String>,
}

impl Executor for Losing {
    fn hosts(&self) -> usize {
        2
    }
    fn host_name(&self, host: HostId) -> String {
        ["srv", "cli"].get(host.0).unwrap_or(&"?").to_string()
    }
    fn bench(
        &mut self,
        _client: HostId,
        _server: HostId,
        _args: &[String],
        _deadline: Duration,
    ) -> Result<model::bench::result::BenchResult, ExecError> {
        self.benches += 1;
        if self.benches >= self.lose_at {
            self.lost = true;
        }
        if self.lost {
            return Err(ExecError::HostLost {
                host: "cli".into(),
                reason: "the agent pipe closed".into(),
            });
        }
        exec::parse("bench", include_str!("../tests/data/bench-tcp-rr-lo.json"))
    }
    // The runner asks nothing of these here.
    fn inspect(&mut self, host: HostId) -> Result<model::snapshot::HostSnapshot, ExecError> {
        unasked(host)
    }
    fn doctor(&mut self, host: HostId, _: &[String]) -> Result<model::findings::Report, ExecError> {
        unasked(host)
    }
    fn plan(&mut self, host: HostId, _: &[String]) -> Result<model::plan::Plan, ExecError> {
        unasked(host)
    }
    fn apply(&mut self, host: HostId, _plan: &model::plan::Plan) -> Result<(), ExecError> {
        self.calls.push(format!("apply {host}"));
        Ok(())
    }
    fn rollback(&mut self, host: HostId) -> Result<(), ExecError> {
        if host == HostId(1) && self.lost {
            self.calls.push(format!("rollback {host} lost"));
            return Err(ExecError::HostLost {
                host: "cli".into(),
                reason: "the agent pipe closed".into(),
            });
        }
        self.calls.push(format!("rollback {host}"));
        Ok(())
    }
}

/// Applies on both hosts, rolls back both (the client first, as
/// `ExperimentSetup` does: the reverse of its apply order).
struct BothHosts;

impl CellSetup for BothHosts {
    fn apply(&mut self, _cell: &CellResult, exec: &mut dyn Executor) -> Result<Applied, ExecError> {
        let plan = empty_plan();
        exec.apply(HostId(0), &plan)?;
        exec.apply(HostId(1), &plan)?;
        Ok(Applied::default())
    }
    fn rollback(&mut self, _cell: &CellResult, exec: &mut dyn Executor) -> Result<(), ExecError> {
        let a = exec.rollback(HostId(1));
        let b = exec.rollback(HostId(0));
        a.and(b)
    }
}

#[test]
#[allow(clippy::unwrap_used)]
fn a_lost_host_stops_the_run_rolls_the_others_back_and_keeps_the_runs() {
    let exp = model::experiment::parse(
        "name = \"lost\"\nrepeats = 2\nwarmup = 0\n[hosts.lab]\nhosts = 2\n[[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\n[[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n[responses]\nmetrics = [\"transactions\"]\n",
    )
    .unwrap();
    let mut results = experiment::results_skeleton(&exp, Default::default(), String::new());
    let schedule = experiment::schedule(&exp, HostId(1), HostId(0), None);
    let dir = std::env::temp_dir().join(format!("nettune-runner-lost-{}", std::process::id()));
    let opts = RunOptions {
        out_dir: dir.clone(),
        experiment_text: None,
        cancel: Arc::new(AtomicBool::new(false)),
    };
    // Cell 0's two runs pass, cell 1's first one loses the client.
    let mut exec = Losing {
        benches: 0,
        lose_at: 3,
        lost: false,
        calls: Vec::new(),
    };
    let first = results.run_order[0];
    let second = results.run_order[1];
    let e = run(
        &mut results,
        &schedule,
        &mut exec,
        &mut BothHosts,
        &opts,
        &mut NoProgress,
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(&e, RunError::HostLost { host, rollback: None, .. } if host == "cli"),
        "{e:?}"
    );
    assert!(text.contains("host cli was lost"), "{text}");
    assert!(text.contains("stays applied there"), "{text}");
    // No third cell was started; the lost cell was rolled back on the server.
    assert_eq!(exec.benches, 3);
    assert_eq!(
        exec.calls,
        [
            "apply h0",
            "apply h1",
            "rollback h1",
            "rollback h0",
            "apply h0",
            "apply h1",
            "rollback h1 lost",
            "rollback h0",
        ]
    );
    let status = |r: &ExperimentResults, i: usize| r.cell(i).map(|c| c.status.clone());
    assert_eq!(status(&results, first), Some(CellStatus::Done));
    assert_eq!(status(&results, second), Some(CellStatus::Interrupted));
    assert!(results.interrupted);
    // results.json on disk says the same and keeps the runs so far.
    let text = std::fs::read_to_string(dir.join(RESULTS_FILE)).unwrap();
    let saved: ExperimentResults = serde_json::from_str(&text).unwrap();
    assert!(saved.interrupted);
    assert_eq!(saved.cell(first).map(|c| c.runs.len()), Some(2));
    assert_eq!(status(&saved, second), Some(CellStatus::Interrupted));
    // Each run records its drops per host, here the executor's one line
    // (it watches none): the runs went on.
    for r in &saved.cell(first).unwrap().runs {
        let why: Vec<_> = r
            .drops
            .iter()
            .map(|d| (d.host.as_str(), d.why_not()))
            .collect();
        let not = Some(crate::exec::NOT_RECORDED);
        assert_eq!(why, [("cli", not), ("srv", not)], "{r:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn file_names_are_safe() {
    assert_eq!(file_safe("a/b c"), "a_b_c");
    assert_eq!(file_safe("crr-16"), "crr-16");
}
