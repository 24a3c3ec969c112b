//! `nettune profile list | show | active`: the --json shapes documented in
//! docs/tune.md ("nettune profile"), `show` planning like `plan`, and `active`
//! following apply and rollback on a temp copy of a fixture.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn run(args: &[&str], root: Option<&Path>, state: Option<&Path>) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nettune"));
    c.args(args);
    if let Some(r) = root {
        c.arg("--root").arg(r);
    }
    if let Some(s) = state {
        c.arg("--state-dir").arg(s);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[test]
fn list_json_has_the_three_builtins() {
    let v: Value = serde_json::from_str(&run(&["profile", "list", "--json"], None, None)).unwrap();
    assert_eq!(v["schema_version"], 1);
    let names: Vec<&str> = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(keys(e), ["builtin", "description", "name"]);
            e["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(names, ["latency", "throughput", "balanced"]);
}

#[test]
fn show_json_is_the_profile_plus_the_plan_that_plan_makes() {
    let root = fixture("c4-8xlarge");
    let v: Value = serde_json::from_str(&run(
        &["profile", "show", "throughput", "--json"],
        Some(&root),
        None,
    ))
    .unwrap();
    assert_eq!(
        keys(&v),
        [
            "base",
            "description",
            "name",
            "plan",
            "rules",
            "schema_version",
            "settings"
        ]
    );
    assert_eq!(v["name"], "throughput");
    for r in v["rules"].as_array().unwrap() {
        assert_eq!(keys(r), ["id", "rationale", "source"]);
    }
    assert_eq!(v["settings"]["coalesce"], "adaptive");
    let plan: Value = serde_json::from_str(&run(
        &["plan", "--profile", "throughput", "--json"],
        Some(&root),
        None,
    ))
    .unwrap();
    assert_eq!(v["plan"], plan);
    let human = run(&["profile", "show", "throughput"], Some(&root), None);
    assert!(human.contains("Rules, in the order they run:"), "{human}");
    assert!(human.contains("Plan: profile throughput"), "{human}");
}

#[test]
fn active_follows_apply_and_rollback() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let st = Command::new("cp")
        .arg("-a")
        .arg(fixture("c4-8xlarge"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(st.success());
    let state = t.path().join("state");
    let (r, s) = (Some(root.as_path()), Some(state.as_path()));
    let none: Value = serde_json::from_str(&run(&["profile", "active", "--json"], r, s)).unwrap();
    assert_eq!(
        keys(&none),
        [
            "active",
            "applied_at",
            "applied_at_utc",
            "generation",
            "profile",
            "schema_version",
            "status",
            "writes"
        ]
    );
    assert_eq!(none["active"], false);
    assert!(run(&["profile", "active"], r, s).starts_with("No current active profile"));

    run(&["apply", "--profile", "latency", "--yes"], r, s);
    let a: Value = serde_json::from_str(&run(&["profile", "active", "--json"], r, s)).unwrap();
    assert_eq!(a["active"], true);
    assert_eq!(a["profile"], "latency");
    assert_eq!(a["generation"], 1);
    assert_eq!(a["status"], "applied");
    assert!(a["writes"].as_u64().unwrap() > 0);
    let line = run(&["profile", "active"], r, s);
    assert!(
        line.starts_with("Current active profile: latency (generation 1, applied "),
        "{line}"
    );
    // RFC 3339's Z already says UTC: "…Z UTC" says it twice.
    assert!(!line.contains("Z UTC"), "{line}");
    let at = a["applied_at_utc"].as_str().unwrap();
    assert!(line.contains(&format!("applied {at},")), "{line}");

    run(&["rollback"], r, s);
    let after: Value = serde_json::from_str(&run(&["profile", "active", "--json"], r, s)).unwrap();
    assert_eq!(after["active"], false);
}
