//! What `nettune lab` applies: the plan made from doctor's findings
//! (`cmd::lab::plan_from_doctor`), from the real doctor report and plans of
//! the c4.8xlarge fixture (whose RPS is off: four steering changes).

#![allow(clippy::unwrap_used)]

use lab::exec::ExecError;
use model::plan::Phase;
use nettune::cmd::lab::plan_from_doctor;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn fixture() -> String {
    format!(
        "{}/../../tests/fixtures/c4-8xlarge",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn nettune(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn doctor() -> serde_json::Value {
    serde_json::from_str(&nettune(&["doctor", "--root", &fixture(), "--json"])).unwrap()
}

fn plan(args: &[String]) -> Result<String, ExecError> {
    let mut a: Vec<&str> = vec!["plan"];
    a.extend(args.iter().map(String::as_str));
    a.push("--json");
    Ok(nettune(&a))
}

fn base() -> Result<String, ExecError> {
    plan(&[
        "--profile".into(),
        "balanced".into(),
        "--root".into(),
        fixture(),
    ])
}

#[test]
fn the_union_of_the_findings_changes_one_per_target_in_phase_order() {
    let mut doc = doctor();
    let rps = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rps-off")
        .cloned()
        .unwrap();
    let steering = rps["fix"]["changes"].as_array().unwrap().clone();
    assert_eq!(steering.len(), 4);
    // A second finding listing a sysctl change first and one of the same
    // steering changes again.
    let throughput: serde_json::Value = serde_json::from_str(
        &plan(&[
            "--profile".into(),
            "throughput".into(),
            "--root".into(),
            fixture(),
        ])
        .unwrap(),
    )
    .unwrap();
    let sysctl = throughput["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["phase"] == "sysctls")
        .cloned()
        .unwrap();
    let mut other = rps.clone();
    other["id"] = "other".into();
    other["fix"]["changes"] = serde_json::json!([sysctl, steering[0]]);
    // First, so the phase order is the sort's doing, not the findings'.
    doc["findings"].as_array_mut().unwrap().insert(0, other);

    let (p, ids) = plan_from_doctor(&doc, base, |_| panic!("no command needed"))
        .unwrap()
        .unwrap();
    assert_eq!(ids, ["other", "rps-off"]);
    assert_eq!(p.changes.len(), 5, "{:?}", p.changes);
    let phases: Vec<Phase> = p.changes.iter().map(|c| c.phase).collect();
    assert_eq!(phases[..4], [Phase::Steering; 4]);
    assert_eq!(phases[4], Phase::Sysctls);
    // The header is the plan made on the same host.
    let b = model::plan::Plan::from_json(&base().unwrap()).unwrap();
    assert_eq!(p.fingerprint, b.fingerprint);
    assert_eq!(p.profile, "balanced");
}

#[test]
fn without_changes_the_command_a_finding_names_is_planned() {
    let mut doc = doctor();
    // As on a live host: the fixture's command names its --root, which the
    // closure below supplies the way the namespace does in the lab.
    let cmd = "nettune plan --profile balanced --iface eth0";
    for f in doc["findings"].as_array_mut().unwrap() {
        f["fix"]["changes"] = serde_json::json!([]);
        f["fix"]["command"] = cmd.into();
    }
    let mut asked = Vec::new();
    let (p, ids) = plan_from_doctor(
        &doc,
        || panic!("no base plan needed"),
        |args| {
            asked = args.to_vec();
            let mut a = args.to_vec();
            a.extend(["--root".to_string(), fixture()]);
            plan(&a)
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(ids, ["rps-off"]);
    assert!(!p.changes.is_empty());
    assert_eq!(asked.join(" "), cmd.trim_start_matches("nettune plan "));
}

#[test]
fn nothing_to_apply_is_none_and_root_commands_are_not_run_elsewhere() {
    let none = serde_json::json!({"findings": [], "skipped": []});
    assert!(plan_from_doctor(&none, || panic!(), |_| panic!())
        .unwrap()
        .is_none());
    // A command for a capture (`--root`) is not this host's plan: skipped.
    let doc = serde_json::json!({"findings": [{"id": "x", "fix": {
        "text": "", "changes": [], "app": null,
        "command": "nettune plan --profile balanced --root /tmp/cap --iface eth0"}}]});
    assert!(plan_from_doctor(&doc, || panic!(), |_| panic!())
        .unwrap()
        .is_none());
    // Garbage does not panic.
    for bad in [serde_json::json!(null), serde_json::json!({"findings": 3})] {
        assert!(plan_from_doctor(&bad, || panic!(), |_| panic!())
            .unwrap()
            .is_none());
    }
}
