#![allow(clippy::unwrap_used)]
use super::*;
use serde_json::json;

fn host(name: &str, start_ns: u64, rate: f64, hist: Value) -> HostBench {
    HostBench {
        host: name.into(),
        role: "client",
        server: "hub".into(),
        target: "10.0.0.1".into(),
        outcome: "ok",
        error: None,
        clock: None,
        scheduled_start_unix_ns: Some(start_ns),
        started_at_unix_ns: Some(start_ns),
        start_ns: Some(start_ns),
        late_ns: Some(0),
        window_rate: None,
        result: Some(json!({
            "config": {"warmup_ms": 0, "duration_ms": 2000},
            "results": [{"unit": "transactions", "latency": {
                "mean_ns": 10.0, "min_ns": 5, "max_ns": 30, "histogram": hist}}],
            "intervals": [
                {"start_s": 0.0, "end_s": 1.0, "bits_per_sec": rate * 8.0, "per_sec": rate},
                {"start_s": 1.0, "end_s": 2.0, "bits_per_sec": rate * 8.0, "per_sec": rate}
            ],
            "client": {"cpu": {"seconds": 2.0, "cpus": [{"cpu": 0, "idle": 25.0}]}},
            "server_side": {"cpu": {"seconds": 2.0, "cpus": [{"cpu": 1, "idle": 50.0}]}}
        })),
    }
}

fn report(hosts: Vec<HostBench>) -> Report {
    Report {
        servers: vec![ServerRun {
            host: "hub".into(),
            listening: Some("[::]:5290".into()),
            error: None,
        }],
        scheduled_start_unix_ns: Some(1_000_000_000),
        skew_ns: None,
        max_late_ns: None,
        hosts,
        window: None,
        aggregate: None,
        cpu: Vec::new(),
        notes: Vec::new(),
        failed: Vec::new(),
    }
}

#[test]
fn the_aggregate_counts_only_the_common_window() {
    // b starts 0.5 s after a: the common window is [0.5, 2.0] of a.
    let a = host("a", 1_000_000_000, 100.0, json!([[10, 2], [20, 2]]));
    let b = host("b", 1_500_000_000, 300.0, json!([[10, 1], [30, 1]]));
    let mut r = report(vec![a, b]);
    summarize(&mut r);
    assert_eq!(r.skew_ns, Some(500_000_000));
    let w = r.window.unwrap();
    assert_eq!(
        (w.start_unix_ns, w.end_unix_ns),
        (1_500_000_000, 3_000_000_000)
    );
    let ag = r.aggregate.as_ref().unwrap();
    assert!((ag.per_sec - 400.0).abs() < 1e-6, "{ag:?}");
    assert!((ag.bits_per_sec - 3200.0).abs() < 1e-6);
    assert_eq!(ag.unit, "transactions");
    let l = ag.latency.as_ref().unwrap();
    assert_eq!(
        (l.count, l.p50_ns, l.p99_ns, l.min_ns, l.max_ns),
        (6, 10, 30, 5, 30)
    );
    assert_eq!(r.cpu.len(), 3);
    assert_eq!(r.cpu[2].role, "server");
    assert!(r.failed.is_empty());
    let t = table(&r);
    assert!(t.contains("start skew: 500.000 ms"), "{t}");
    assert!(t.contains("cpu a (client): cpu0 75%"), "{t}");
}

#[test]
fn a_bench_that_exits_non_zero_fails_its_host_even_with_a_document() {
    let doc = serde_json::json!({"error": "the server refused the test: busy"});
    let f = bench_answer("c3", (doc.clone(), 1)).unwrap_err();
    assert_eq!(f.kind, "remote");
    assert_eq!(
        f.message,
        "c3: bench exited 1: the server refused the test: busy"
    );
    assert_eq!(bench_answer("c3", (doc.clone(), 0)).unwrap(), doc);
    let f = bench_answer("c3", (serde_json::json!({}), 3)).unwrap_err();
    assert_eq!(f.message, "c3: bench exited 3: failed");
}

#[test]
fn a_failed_client_is_named_and_left_out() {
    let a = host("a", 1_000_000_000, 100.0, json!([[10, 1]]));
    let mut b = host("b", 1_000_000_000, 100.0, json!([[10, 1]]));
    b.outcome = "failed";
    b.result = None;
    b.error = Some(Failure {
        kind: "remote",
        message: "netns b: bench: refused".into(),
    });
    let mut r = report(vec![a, b]);
    summarize(&mut r);
    assert_eq!(r.failed, ["b"]);
    assert_eq!(r.aggregate.unwrap().hosts, 1);
    // A second server that failed: named, its client failed with it.
    let mut c = host("c", 1_000_000_000, 100.0, json!([[10, 1]]));
    c.server = "hub2".into();
    c.outcome = "failed";
    c.result = None;
    let mut r = report(vec![host("a", 1_000_000_000, 100.0, json!([[10, 1]])), c]);
    r.servers.push(ServerRun {
        host: "hub2".into(),
        listening: None,
        error: Some(Failure {
            kind: "transport",
            message: "netns hub2: gone".into(),
        }),
    });
    summarize(&mut r);
    assert_eq!(r.failed, ["hub2", "c"]);
    let t = table(&r);
    assert!(t.contains("server hub2: failed: netns hub2: gone"), "{t}");
    assert!(t.contains("4 host(s): 2 ok, 2 failed (hub2, c)"), "{t}");
    // A stream result without latency: no merged latency, no note.
    let v = json!({"results": [{"latency": null}]});
    assert!(merge_latency(&[&v]).is_none());
}
