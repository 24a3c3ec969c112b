//! `nettune autotune --inventory`: the search on a fleet's hosts through
//! their agents. Two netns agents of a lab the test builds (the server on
//! the hub, the load client on the spoke); the knobs go into per-host
//! copies of a fixture (`--root-template`), so the search changes nothing of
//! this machine while its benches run between the namespaces. Root only.

#![allow(clippy::unwrap_used)]

mod fixture_copy;

use fixture_copy::{assert_same, fixture, tree};
use lab::{Lab, LabSpec};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A two-host lab and an inventory of its netns agents in `dir`, each
/// host's fixture copy at `dir/HOST/root`.
fn setup(dir: &Path, prefix: &str) -> (Lab, String) {
    let lab = Lab::build(LabSpec {
        prefix: prefix.into(),
        ..LabSpec::new(2, 1)
    })
    .unwrap();
    let link = &lab.links()[0];
    let inv = dir.join("inv.toml");
    std::fs::write(
        &inv,
        format!(
            "[[host]]\nname = \"srv\"\ntransport = \"netns\"\nnetns = \"{}\"\nroles = [\"server\"]\n\
             [[host]]\nname = \"cli\"\ntransport = \"netns\"\nnetns = \"{}\"\nroles = [\"clients\"]\n\
             labels = {{ server_address = \"{}\" }}\n",
            lab.hosts()[0].name(),
            lab.hosts()[link.host].name(),
            link.hub.addr
        ),
    )
    .unwrap();
    for h in ["srv", "cli"] {
        std::fs::create_dir(dir.join(h)).unwrap();
        let st = Command::new("cp")
            .arg("-a")
            .arg(fixture("c4-8xlarge"))
            .arg(dir.join(h).join("root"))
            .status()
            .unwrap();
        assert!(st.success());
    }
    (lab, inv.to_str().unwrap().to_string())
}

fn autotune(dir: &Path, inv: &str, extra: &[&str]) -> Output {
    let roots = format!("{}/{{host}}/root", dir.display());
    let states = format!("{}/{{host}}/state", dir.display());
    Command::new(BIN)
        .args(["autotune", "--objective", "max-cps", "--inventory", inv])
        .args(["--server", "srv", "--clients", "clients"])
        .args(["--root-template", &roots, "--state-dir-template", &states])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_search_on_two_agents_applies_each_candidate_through_their_journals_and_rolls_back() {
    if !lab::require_root("autotune_fleet::a_search_on_two_agents") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (_lab, inv) = setup(t.path(), "ntatf");
    let before = tree(&t.path().join("srv/root"));
    // The space comes from the server's and the client's own snapshots.
    let o = autotune(t.path(), &inv, &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("srv (server) and cli (load client)"),
        "{}",
        text(&o)
    );
    assert!(err.contains("tcp_tw_reuse"), "{}", text(&o));
    // The search itself, bounded: 1 s runs, the least budget max-cps takes.
    let out = t.path().join("out");
    let o = autotune(
        t.path(),
        &inv,
        &[
            "--duration",
            "1",
            "--budget",
            "39",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    eprintln!("{}", text(&o));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["objective"], "max-cps", "{r:#}");
    let runs = r["trace"].as_array().unwrap().len();
    assert!((1..=39).contains(&runs), "{runs} runs");
    assert!(out.join("plan.json").exists() && out.join("profile.toml").exists());
    // Every candidate went through each host's journal and came back.
    for h in ["srv", "cli"] {
        let state = t.path().join(h).join("state");
        let o = Command::new(BIN)
            .args(["history", "--json", "--state-dir"])
            .arg(&state)
            .arg("--root")
            .arg(t.path().join(h).join("root"))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
        let gens = v["generations"].as_array().unwrap();
        assert!(!gens.is_empty(), "{h}: nothing was applied: {v:#}");
        assert!(
            gens.iter().all(|g| !g["rolled_back_at"].is_null()),
            "{h}: {v:#}"
        );
    }
    // The server's copy is as it was, byte for byte.
    assert_same(&before, &tree(&t.path().join("srv/root")));
}

#[test]
fn inventory_flags_are_checked_before_anything_connects() {
    let t = tempfile::tempdir().unwrap();
    let inv = t.path().join("inv.toml");
    std::fs::write(
        &inv,
        "[[host]]\nname = \"a\"\ntransport = \"local\"\nroles = [\"server\"]\n",
    )
    .unwrap();
    let inv = inv.to_str().unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(["autotune", "--objective", "max-cps"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // --inventory needs --server and --clients; they need --inventory.
    let o = run(&["--inventory", inv]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(&["--lab", "--server", "a"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(&[
        "--lab",
        "--inventory",
        inv,
        "--server",
        "a",
        "--clients",
        "a",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // A client pattern with no host besides the server is named.
    let o = run(&["--inventory", inv, "--server", "a", "--clients", "a"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("names no host of"),
        "{}",
        text(&o)
    );
}
