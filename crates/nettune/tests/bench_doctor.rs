//! `nettune bench --doctor`: the doctor rules on both ends over the measured
//! window, in the `--json` document (`"doctor": {"client", "server"}`), the
//! NDJSON result, the human summary, and after Ctrl-C; not in `--csv`.

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine_common::*;
use serde_json::Value;
use std::process::{Command, Stdio};

/// `bench` against a fresh loopback server with `extra` flags.
fn run(test: &str, extra: &[&str]) -> std::process::Output {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut args = vec!["127.0.0.1", "-p", &port, "--test", test];
    args.extend_from_slice(QUICK);
    args.extend_from_slice(extra);
    bench(&args, &[])
}

/// A doctor report of one end: the documented shape, schema 1, every id
/// (found or skipped) one of the catalogue's, and the rate rules ran (the
/// window had samples).
fn check_report(end: &str, r: &Value) {
    assert_eq!(r["schema_version"], 1, "{end}: {r}");
    for f in r["findings"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap();
        assert!(doctor::DoctorId::parse(id).is_some(), "{end}: {id}");
        assert!(
            ["critical", "warning", "info"].contains(&f["severity"].as_str().unwrap()),
            "{f}"
        );
        for k in ["title", "subject", "why", "source"] {
            assert!(f[k].is_string(), "{end}: {k} in {f}");
        }
        assert!(f["evidence"].is_array(), "{f}");
        let fix = &f["fix"];
        assert!(
            fix["text"].is_string() && fix["changes"].is_array(),
            "{fix}"
        );
        assert!(
            fix.get("command").is_some() && fix.get("app").is_some(),
            "{fix}"
        );
    }
    for s in r["skipped"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        assert!(doctor::DoctorId::parse(id).is_some(), "{end}: {id}");
        assert!(s["reason"].is_string(), "{s}");
        // Rate rules had a window: none skips for want of samples.
        let reason = s["reason"].as_str().unwrap();
        assert!(
            reason != engine::diagnosis::SHORT_WINDOW && reason != doctor::input::NO_SAMPLES,
            "{end}: {id} skipped: {reason}"
        );
    }
    let skipped: Vec<&str> = r["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert!(
        !skipped.contains(&"udp-rcvbuf-errors"),
        "{end}: {skipped:?}"
    );
}

#[test]
fn loopback_json_has_both_ends_reports() {
    let r = json(&run("udp-stream", &["--size", "256", "--json", "--doctor"]));
    sane(&r, "udp-stream");
    let d = &r["doctor"];
    assert_eq!(
        d.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["client", "drops", "server"],
        "{d}"
    );
    // drops by reason over the run: counted, or the one line saying why not
    let drops = &d["drops"];
    assert_eq!(drops["host"], "client", "{drops}");
    assert!(
        drops["total"].is_u64() || drops["unavailable"].is_string(),
        "{drops}"
    );
    check_report("client", &d["client"]);
    check_report("server", &d["server"]);
    // Moved out of the server's side report, not repeated there.
    assert!(r["server_side"].get("doctor").is_none());
    assert!(r["client"].get("doctor").is_none());
    // Without --doctor the key is absent and neither end diagnosed.
    let r = json(&run("udp-stream", &["--size", "256", "--json"]));
    assert!(r.get("doctor").is_none(), "{r}");
    assert!(r["server_side"].get("doctor").is_none());
}

#[test]
fn doctor_composes_with_json_stream_csv_and_human() {
    let out = run("tcp-rr", &["--json-stream", "--doctor"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "result");
    check_report("client", &last["result"]["doctor"]["client"]);
    check_report("server", &last["result"]["doctor"]["server"]);

    let out = run("tcp-rr", &["--doctor"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let client = text.find("Findings (client): ").expect(&text);
    let server = text.find("Findings (server): ").expect(&text);
    // After the summary (its CPU block), client first.
    assert!(
        text.find("CPU").unwrap() < client && client < server,
        "{text}"
    );

    // CSV keeps its columns: the findings are not in it.
    let out = run("tcp-rr", &["--csv", "--doctor"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains("Findings") && !text.contains("doctor"),
        "{text}"
    );
    let cols = text.lines().next().unwrap().split(',').count();
    assert!(text.lines().all(|l| l.split(',').count() == cols), "{text}");
}

#[test]
fn ctrl_c_keeps_the_findings_over_the_window_that_ran() {
    use std::io::{BufRead, Read};
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    let mut child = Command::new(BIN)
        .args(["bench", "127.0.0.1", "-p", &port, "--test", "tcp-rr"])
        .args(["--duration", "20", "--warmup", "0.1", "--interval", "0.2"])
        .args(["--json-stream", "--doctor"])
        .env_remove("NETTUNE_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut r = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    r.read_line(&mut text).unwrap();
    assert!(!text.is_empty(), "bench printed nothing");
    let st = Command::new("sh")
        .args(["-c", "kill -INT \"$0\"", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    r.read_to_string(&mut text).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{text}");
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let res = &last["result"];
    assert_eq!(res["interrupted"], true);
    check_report("client", &res["doctor"]["client"]);
    check_report("server", &res["doctor"]["server"]);
}
