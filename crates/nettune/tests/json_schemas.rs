//! Every `--json` output shape has a JSON Schema (draft 2020-12) under
//! docs/schema/, and real outputs of the binary on the fixtures validate
//! against it.
//!
//! The validator here is a small subset of JSON Schema written with
//! serde_json (no schema crate in the lock file): `type`, `properties`,
//! `required`, `additionalProperties`, `items`, `enum`, `const`, `oneOf` and
//! `minimum`, `$ref` to another file of docs/schema (`"bench.json"`), plus
//! the annotations `$schema`, `$id`, `title` and
//! `description`. A schema using any other keyword fails
//! `schemas_use_only_the_checked_keywords`, so nothing in a schema goes
//! unchecked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fixture_copy;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures").join(name)
}

fn schema(name: &str) -> Value {
    let p = repo().join("docs/schema").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "oneOf",
    "minimum",
    "$ref",
];

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

/// Errors of `v` against schema `s`, each naming its JSON path.
fn validate(s: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    let Some(s) = s.as_object() else {
        if s == &Value::Bool(false) {
            errs.push(format!("{path}: not allowed"));
        }
        return;
    };
    if let Some(Value::String(r)) = s.get("$ref") {
        let name = r
            .strip_suffix(".json")
            .expect("$ref names a file of docs/schema");
        validate(&schema(name), v, path, errs);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap_or(""), v)),
            _ => false,
        };
        if !ok {
            errs.push(format!("{path}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            errs.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        if !e.contains(v) {
            errs.push(format!("{path}: {v} is not one of {e:?}"));
        }
    }
    if let (Some(m), Some(n)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < m {
            errs.push(format!("{path}: {n} < {m}"));
        }
    }
    if let Some(Value::Array(alts)) = s.get("oneOf") {
        let matching = alts
            .iter()
            .filter(|a| {
                let mut e = Vec::new();
                validate(a, v, path, &mut e);
                e.is_empty()
            })
            .count();
        if matching != 1 {
            errs.push(format!("{path}: matches {matching} of oneOf, not 1"));
        }
    }
    if let Some(o) = v.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(req)) = s.get("required") {
            for k in req.iter().filter_map(Value::as_str) {
                if !o.contains_key(k) {
                    errs.push(format!("{path}: missing required key {k:?}"));
                }
            }
        }
        for (k, x) in o {
            let p = format!("{path}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate(ps, x, &p, errs),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => errs.push(format!("{p}: key not in the schema")),
                    Some(a) => validate(a, x, &p, errs),
                    None => {}
                },
            }
        }
    }
    if let (Some(items), Some(a)) = (s.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            validate(items, x, &format!("{path}[{i}]"), errs);
        }
    }
}

fn check(name: &str, v: &Value, what: &str) {
    let mut errs = Vec::new();
    validate(&schema(name), v, "$", &mut errs);
    assert!(
        errs.is_empty(),
        "{what} does not match docs/schema/{name}.json:\n  {}",
        errs.iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// Run nettune; its stdout parsed as one JSON document (exit status in `ok`).
fn run_json(args: &[&str], ok: &[i32]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(args)
        .output()
        .unwrap();
    let code = o.status.code().unwrap_or(-1);
    assert!(
        ok.contains(&code),
        "{args:?} exited {code}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// The fixture roots (every directory under tests/fixtures but `doctor`).
fn fixture_roots() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "doctor"))
        .collect();
    v.sort();
    assert!(v.len() > 10, "fixtures found: {v:?}");
    v
}

/// A writable copy of a fixture (apply writes to it) and a state dir, as
/// paths.
fn copy(name: &str) -> (fixture_copy::Copy, String, String) {
    let c = fixture_copy::copy(name);
    let (r, s) = (
        c.root.to_str().unwrap().to_string(),
        c.state.to_str().unwrap().to_string(),
    );
    (c, r, s)
}

#[test]
fn schemas_use_only_the_checked_keywords_and_are_listed() {
    fn walk(s: &Value, at: &str) {
        let Some(o) = s.as_object() else { return };
        for (k, x) in o {
            assert!(KEYWORDS.contains(&k.as_str()), "{at}: keyword {k}");
            match k.as_str() {
                "properties" => {
                    for (p, ps) in x.as_object().unwrap() {
                        walk(ps, &format!("{at}.{p}"));
                    }
                }
                "items" | "additionalProperties" => walk(x, &format!("{at}/{k}")),
                "oneOf" => {
                    for a in x.as_array().unwrap() {
                        walk(a, &format!("{at}/oneOf"));
                    }
                }
                _ => {}
            }
        }
    }
    let dir = repo().join("docs/schema");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let s: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(
            s["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        walk(&s, &name);
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name} is not listed in docs/schema/README.md"
        );
        n += 1;
    }
    assert!(n >= 14, "{n} schemas");
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let good = run_json(&["profile", "list", "--json"], &[0]);
    check("profile-list", &good, "profile list");
    for bad in [
        serde_json::json!({"profiles": good["profiles"]}),
        serde_json::json!({"schema_version": 2, "profiles": good["profiles"]}),
        serde_json::json!({"schema_version": 1, "profiles": good["profiles"], "extra": 1}),
        serde_json::json!({"schema_version": 1, "profiles": [{"name": 1}]}),
        good["profiles"].clone(),
    ] {
        let mut errs = Vec::new();
        validate(&schema("profile-list"), &bad, "$", &mut errs);
        assert!(!errs.is_empty(), "{bad} passed");
    }
}

#[test]
fn inspect_plan_and_doctor_on_every_fixture() {
    for root in fixture_roots() {
        let r = root.to_str().unwrap();
        let what = |c: &str| format!("{c} --root {r}");
        check(
            "inspect",
            &run_json(&["inspect", "--json", "--root", r], &[0]),
            &what("inspect"),
        );
        for p in ["throughput", "latency", "balanced"] {
            // A root without CPUs (real-interrupts holds only /proc/interrupts)
            // has no plan: exit 1, nothing on stdout.
            let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
                .args(["plan", "--profile", p, "--json", "--root", r])
                .output()
                .unwrap();
            if o.status.code() == Some(1) && o.stdout.is_empty() {
                continue;
            }
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            check("plan", &v, &what("plan"));
        }
        // doctor exits non-zero when it finds something.
        check(
            "doctor",
            &run_json(&["doctor", "--json", "--root", r], &[0, 1, 3, 4, 5]),
            &what("doctor"),
        );
    }
}

#[test]
fn journal_commands_through_apply_and_rollback() {
    for fx in ["c4-8xlarge", "two-socket-16q"] {
        let (_t, r, s) = copy(fx);
        let j = ["--root", r.as_str(), "--state-dir", s.as_str()];
        let with = |a: &[&str]| -> Vec<String> {
            a.iter()
                .chain(j.iter())
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
        };
        let json = |a: &[&str], ok: &[i32]| {
            let v = with(a);
            run_json(&v.iter().map(String::as_str).collect::<Vec<_>>(), ok)
        };
        check(
            "profile-active",
            &json(&["profile", "active", "--json"], &[0]),
            "profile active (none)",
        );
        check(
            "history",
            &json(&["history", "--json"], &[0]),
            "history (empty)",
        );
        // Issue 38: verify --json with nothing applied is an error, and
        // still JSON on stdout (exit 1), so a script reading it can tell.
        check(
            "error",
            &json(&["verify", "--json"], &[1]),
            "verify (nothing applied)",
        );
        check(
            "rollback",
            &json(&["rollback", "--json"], &[0]),
            "rollback (nothing)",
        );
        check(
            "apply",
            &json(
                &["apply", "--profile", "throughput", "--yes", "--json"],
                &[0],
            ),
            "apply",
        );
        check("verify", &json(&["verify", "--json"], &[0, 3]), "verify");
        check(
            "profile-active",
            &json(&["profile", "active", "--json"], &[0]),
            "profile active",
        );
        check(
            "history",
            &json(&["history", "--json"], &[0]),
            "history (applied)",
        );
        let rb = json(&["rollback", "--json"], &[0]);
        check("rollback", &rb, "rollback");
        assert_eq!(rb["rolled_back"], serde_json::json!([1]), "{rb}");
        let h = json(&["history", "--json"], &[0]);
        check("history", &h, "history (rolled back)");
        assert!(h["generations"][0]["rolled_back_at"].is_u64(), "{h}");
    }
}

#[test]
fn rollback_json_is_printed_when_the_rollback_fails() {
    let (_t, r, s) = copy("c4-8xlarge");
    let j = ["--root", r.as_str(), "--state-dir", s.as_str()];
    let mut a = vec!["apply", "--profile", "throughput", "--yes"];
    a.extend(j);
    run_json(&[a.as_slice(), &["--json"]].concat(), &[0]);
    // A vanished knob: the IRQ's affinity file is gone.
    std::fs::remove_dir_all(Path::new(&r).join("proc/irq/266")).unwrap();
    let mut a = vec!["rollback", "--json"];
    a.extend(j);
    let v = run_json(&a, &[1]);
    check("rollback", &v, "rollback (partial)");
    assert!(v["error"].is_string(), "{v}");
    assert!(v["restored"].is_null(), "{v}");
    assert!(!v["unrestored"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn profile_list_and_show() {
    check(
        "profile-list",
        &run_json(&["profile", "list", "--json"], &[0]),
        "profile list",
    );
    let root = fixture("two-socket-16q");
    for p in ["latency", "throughput", "balanced"] {
        check(
            "profile-show",
            &run_json(
                &[
                    "profile",
                    "show",
                    p,
                    "--json",
                    "--root",
                    root.to_str().unwrap(),
                ],
                &[0],
            ),
            &format!("profile show {p}"),
        );
    }
}

#[test]
fn stat_lines_from_a_capture_with_samples() {
    let root = fixture("nic-ena-allowance");
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["stat", "--json", "--root", root.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut n = 0;
    for line in text.lines() {
        check("stat", &serde_json::from_str(line).unwrap(), "stat line");
        n += 1;
    }
    assert!(n >= 1, "{text}");
}

/// This host's own outputs, read only (a fixture's shape is not a real
/// host's: fields a fixture always has may be null here): live `stat` lines
/// carry `time`; `inspect`, `doctor` and `plan` of the live host.
#[test]
fn live_host_outputs() {
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["stat", "0.2", "2", "--json", "--no-nic-stats"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["time"].is_string(), "{line}");
        check("stat", &v, "live stat line");
    }
    check(
        "inspect",
        &run_json(&["inspect", "--json"], &[0]),
        "live inspect",
    );
    check(
        "doctor",
        &run_json(&["doctor", "--json"], &[0, 1, 2]),
        "live doctor",
    );
    for p in ["latency", "throughput", "balanced"] {
        check(
            "plan",
            &run_json(&["plan", "--profile", p, "--json"], &[0]),
            "live plan",
        );
    }
}

/// Stored outputs (not made here): real `bench --json` results kept by the
/// lab's tests, and the report's results.json fixture.
#[test]
fn stored_bench_results_and_results_json() {
    let data = repo().join("crates/runner/tests/data");
    let mut n = 0;
    for e in std::fs::read_dir(&data).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name.starts_with("bench-") && name.ends_with(".json") {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            check("bench", &v, &name);
            n += 1;
        }
    }
    assert!(n >= 1);
    let p = repo().join("crates/report/tests/fixtures/synthetic-results.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    check("results", &v, "synthetic-results.json");
}

/// `nettune autotune`'s results.json: the report's fixtures, real lab runs'
/// files (autotune-max-cps-results.json as this version wrote it; no lab run
/// in this test).
#[test]
fn stored_autotune_results_json() {
    let p = repo().join("crates/report/tests/fixtures/autotune-max-cps-results.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    check("autotune-results", &v, "autotune-max-cps-results.json");
    let p = repo().join("crates/report/tests/fixtures/autotune-results.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    check("autotune-results", &v, "autotune-results.json");
    // With a forward pass: passes and on_top_of (this version, 2026-11-29).
    let p = repo().join("crates/report/tests/fixtures/autotune-forward-results.json");
    let fwd: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    check("autotune-results", &fwd, "autotune-forward-results.json");
    assert_eq!(fwd["passes"][1]["on_top_of"][0], "congestion_control=cubic");
    let mut bad = fwd.clone();
    bad["passes"][0]["extra"] = Value::from(1);
    let mut errs = Vec::new();
    validate(&schema("autotune-results"), &bad, "$", &mut errs);
    assert!(!errs.is_empty(), "an unknown key in a pass passed");
    // The schema is strict: a key it does not know, or a wrong kind, fails.
    let mut bad = v.clone();
    bad["kind"] = Value::from("lab");
    let mut errs = Vec::new();
    validate(&schema("autotune-results"), &bad, "$", &mut errs);
    assert!(!errs.is_empty());
    // --statistic: median or mean, nothing else.
    let mut mean = v.clone();
    mean["workload"]["statistic"] = Value::from("mean");
    check("autotune-results", &mean, "--statistic mean");
    mean["workload"]["statistic"] = Value::from("average");
    let mut errs = Vec::new();
    validate(&schema("autotune-results"), &mean, "$", &mut errs);
    assert!(!errs.is_empty(), "statistic \"average\" passed");
}

#[test]
fn serve_events_on_loopback() {
    let mut guard = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_nettune"))
            .args([
                "serve",
                "--json",
                "--quiet",
                "--listen",
                "127.0.0.1",
                "--port",
                "0",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let child = &mut guard.0;
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    check("serve", &v, "serve listening");
    assert_eq!(v["event"], "listening");
    let addr = v["address"].as_str().unwrap().to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{v}");
    assert_ne!(addr, "127.0.0.1:0", "the bound port is reported");
    bench_outputs_against(&addr);
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    line.clear();
    out.read_line(&mut line).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    check("serve", &v, "serve stopped");
    assert_eq!(v["event"], "stopped");
    assert_eq!(v["signal"], 15);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
}

/// A child killed and reaped on drop: a failed assertion does not leave
/// the server running past the test.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `bench --json` and `bench --json-stream` against the server at `addr`
/// (loopback, 1 s each).
fn bench_outputs_against(addr: &str) {
    let (host, port) = addr.rsplit_once(':').unwrap();
    for mode in ["--json", "--json-stream"] {
        let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
            .args([
                "bench",
                host,
                "--port",
                port,
                "--test",
                "tcp-stream",
                "--duration",
                "1",
                "--warmup",
                "0",
                "--interval",
                "0.5",
                mode,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8(o.stdout).unwrap();
        if mode == "--json" {
            check(
                "bench",
                &serde_json::from_str(&text).unwrap(),
                "bench --json",
            );
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() >= 2, "{text}");
        for l in &lines {
            check(
                "bench-stream",
                &serde_json::from_str(l).unwrap(),
                "bench --json-stream line",
            );
        }
        let last: Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
        assert_eq!(last["type"], "result", "{last}");
        // Issue 38: the result line carries its schema_version at the top,
        // as the interval lines do.
        assert_eq!(
            last["schema_version"], last["result"]["schema_version"],
            "{last}"
        );
        assert!(last["schema_version"].is_u64(), "{last}");
    }
    bench_doctor_against(host, port);
}

/// `bench --doctor --json`: both reports and the drops by reason over the
/// run (counts as root, else the watcher's one line), in bench.json's shape.
fn bench_doctor_against(host: &str, port: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["bench", host, "--port", port, "--test", "tcp-stream"])
        .args(["--duration", "1", "--warmup", "0", "--doctor", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    check("bench", &v, "bench --doctor --json");
    let drops = &v["doctor"]["drops"];
    assert_eq!(drops["host"], "client", "{drops}");
    assert!(
        drops["reasons"].is_array() != drops["unavailable"].is_string(),
        "either counts or the reason: {drops}"
    );
    // The shape of each arm, and nothing else, passes drops-run.json.
    let mut errs = Vec::new();
    validate(
        &schema("drops-run"),
        &serde_json::json!({"host": "client", "unavailable": "x", "total": 1}),
        "$",
        &mut errs,
    );
    assert!(!errs.is_empty(), "a mixed record passed");
}

#[test]
fn fleet_documents_and_their_per_host_results() {
    // Two local hosts on fixture copies, and one whose root does not exist.
    let t = tempfile::tempdir().unwrap();
    let (a, ra, sa) = copy("c4-8xlarge");
    let (b, rb, sb) = copy("c4-8xlarge");
    let inv = t.path().join("inv.toml");
    let mut text = String::new();
    for (h, r, s) in [
        ("a", &ra, &sa),
        ("b", &rb, &sb),
        ("gone", &"/nonexistent-root".to_string(), &sa),
    ] {
        text.push_str(&format!(
            "[[host]]\nname = \"{h}\"\ntransport = \"local\"\nlabels = {{ root = \"{r}\", state_dir = \"{s}\" }}\n"
        ));
    }
    std::fs::write(&inv, text).unwrap();
    let inv = inv.to_str().unwrap();
    let fleet = |cmd: &[&str], limit: &str, ok: &[i32]| {
        let mut args = vec!["fleet"];
        args.extend_from_slice(cmd);
        args.extend_from_slice(&[
            "--inventory",
            inv,
            "--limit",
            limit,
            "--json",
            "--timeout",
            "60",
        ]);
        let v = run_json(&args, ok);
        check("fleet", &v, &args.join(" "));
        v
    };
    let each = |v: &Value, name: &str| {
        for h in v["hosts"].as_array().unwrap() {
            if !h["result"].is_null() {
                check(name, &h["result"], &format!("fleet {name}: {}", h["host"]));
            }
        }
    };
    let v = fleet(&["inspect"], "all", &[4]);
    assert_eq!(v["failed"], serde_json::json!(["gone"]));
    assert_eq!(v["hosts"][2]["error"]["kind"], "remote");
    each(&v, "inspect");
    each(&fleet(&["doctor"], "a,b", &[0, 1, 2]), "doctor");
    each(
        &fleet(&["plan", "--profile", "throughput"], "a,b", &[0]),
        "plan",
    );
    each(
        &fleet(&["apply", "--profile", "throughput", "--yes"], "a,b", &[0]),
        "apply",
    );
    each(&fleet(&["verify"], "a,b", &[0]), "verify");
    each(&fleet(&["history"], "a,b", &[0]), "history");
    each(&fleet(&["rollback"], "a,b", &[0]), "rollback");
    drop((a, b));
}

#[test]
fn fleet_bench_document_on_loopback() {
    // A local server and two local clients over 127.0.0.1.
    let t = tempfile::tempdir().unwrap();
    let inv = t.path().join("inv.toml");
    let mut text = String::from("[[host]]\nname = \"srv\"\ntransport = \"local\"\n");
    for c in ["c1", "c2"] {
        text.push_str(&format!(
            "[[host]]\nname = \"{c}\"\ntransport = \"local\"\nroles = [\"clients\"]\nlabels = {{ server_address = \"127.0.0.1\" }}\n"
        ));
    }
    std::fs::write(&inv, text).unwrap();
    let args = [
        "fleet",
        "bench",
        "--inventory",
        inv.to_str().unwrap(),
        "--server",
        "srv",
        "--clients",
        "clients",
        "--test",
        "tcp-rr",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--json",
        "--timeout",
        "60",
    ];
    let v = run_json(&args, &[0]);
    check("fleet-bench", &v, &args.join(" "));
    assert_eq!(v["hosts"].as_array().unwrap().len(), 2);
    assert!(v["skew_ns"].is_u64() && v["aggregate"]["latency"]["count"].is_u64());
    // N→M: two servers, the clients dealt to them in turn.
    let two = t.path().join("two.toml");
    let mut text = String::new();
    for s in ["s1", "s2"] {
        text.push_str(&format!(
            "[[host]]\nname = \"{s}\"\ntransport = \"local\"\nroles = [\"servers\"]\nlabels = {{ bench_address = \"127.0.0.1\" }}\n"
        ));
    }
    for c in ["c1", "c2"] {
        text.push_str(&format!(
            "[[host]]\nname = \"{c}\"\ntransport = \"local\"\nroles = [\"clients\"]\n"
        ));
    }
    std::fs::write(&two, text).unwrap();
    let mut args2 = args.to_vec();
    args2[3] = two.to_str().unwrap();
    args2[5] = "servers";
    let v = run_json(&args2, &[0]);
    check("fleet-bench", &v, &args2.join(" "));
    let servers: Vec<&str> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["server"].as_str().unwrap())
        .collect();
    assert_eq!(servers, ["s1", "s2"]);
    assert_eq!(v["servers"].as_array().unwrap().len(), 2);
    assert_eq!(v["aggregate"]["hosts"], 2);
}

/// An interface listed in /sys/class/net that is gone when its files are
/// read (a veth moved into a namespace or deleted meanwhile, as labs do):
/// its unreadable fields are null, and the schemas say they may be. A real
/// `bench --json` under load once failed the bench schema on exactly that.
#[test]
fn an_interface_gone_mid_read_matches_the_schemas() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let st = Command::new("cp")
        .arg("-a")
        .arg(repo().join("tests/fixtures/c4-8xlarge"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(st.success());
    // Listed, but its files went with it: an empty device directory.
    std::fs::create_dir_all(root.join("sys/devices/virtual/net/gone0")).unwrap();
    std::os::unix::fs::symlink(
        "../../devices/virtual/net/gone0",
        root.join("sys/class/net/gone0"),
    )
    .unwrap();
    let v = run_json(
        &["inspect", "--json", "--root", root.to_str().unwrap()],
        &[0],
    );
    let gone = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "gone0")
        .unwrap_or_else(|| panic!("no gone0 in {}", v["interfaces"]));
    assert!(
        gone["mtu"].is_null() && gone["operstate"].is_null(),
        "{gone}"
    );
    check("inspect", &v, "inspect with a vanished interface");
    // The bench's host facts of such an interface.
    let p = repo().join("crates/runner/tests/data/bench-tcp-rr-lo.json");
    let mut b: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    for side in ["client", "server_side"] {
        let i = &mut b[side]["facts"]["interfaces"][0];
        assert!(i.is_object(), "{side}: {i}");
        i["mtu"] = Value::Null;
        i["operstate"] = Value::Null;
    }
    check("bench", &b, "bench facts with a vanished interface");
}

/// `drops --json` over a capture recorded with drops (tests/captures, its
/// LABEL says how): every line is docs/schema/drops.json, the last one the
/// totals; each sample's drops.json is docs/schema/drops-counts.json.
#[test]
fn drops_lines_and_captured_counts_match_their_schemas() {
    let root = repo().join("tests/captures/kvm-2vcpu-6.18-drops");
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args([
            "drops",
            "--json",
            "--iface",
            "lo",
            "--root",
            root.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "two intervals and the totals: {text}");
    for l in &lines {
        check("drops", l, "drops line");
    }
    assert_eq!(lines[2]["kind"], "totals");
    for k in ["0000", "0001", "0002"] {
        let p = root.join("samples").join(k).join("drops.json");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        check("drops-counts", &v, &p.display().to_string());
    }
}
