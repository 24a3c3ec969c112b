//! What `nettune autotune` leaves in its directory, without a lab: the
//! profile.toml that `nettune apply --profile` takes (planning exactly the
//! changes of plan.json), the report of an autotune results.json, and
//! `--workload FILE` refused in one line naming the file and the key.

#![allow(clippy::unwrap_used)]

mod fixture_copy;
use fixture_copy::{bin, copy};

use model::experiment::{Knob, Level};
use model::plan::NetnsScope;
use model::snapshot::HostSnapshot;
use runner::autotune::{accepted_plan, profile_toml, ProfileHeader};
use std::path::PathBuf;

fn changes() -> Vec<(Knob, Level)> {
    vec![
        (Knob::TcpTwReuse, Level::Int(1)),
        (Knob::IpLocalPortRange, Level::Range([1024, 65535])),
        (Knob::RpsCpus, Level::Cpus(vec![0, 1])),
        (Knob::BusyPoll, Level::Int(50)),
    ]
}

/// (knob, target, after) of each change of a plan document.
fn triples(plan: &serde_json::Value) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["knob"].as_str().unwrap().to_string(),
                c["target"].to_string(),
                c["after"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn the_profile_plans_the_same_changes_as_the_plan_and_apply_takes_it() {
    let c = copy("kvm-2vcpu-6.18");
    let out = bin()
        .args(["inspect", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(out.status.success());
    let snap: HostSnapshot = serde_json::from_slice(&out.stdout).unwrap();
    let plan = accepted_plan(&snap, NetnsScope::Child, &changes(), "max-cps")
        .unwrap()
        .plan;
    let header = ProfileHeader {
        objective: "max-cps".into(),
        measured: "max-cps: transactions of a tcp-crr workload (3 s runs, 1 flow(s))".into(),
        gain: Some(
            "+1209.7 % [+787.7, +3162.2] for tcp_tw_reuse=1 + ip_local_port_range=1024-65535"
                .into(),
        ),
        date: "2026-11-26T04:40:00Z".into(),
        host: "vm (the lab's client namespace)".into(),
    };
    let text = profile_toml(&snap, NetnsScope::Child, &changes(), &header).unwrap();
    // The header: objective, gain with its interval, date, host.
    for want in [
        "# objective: max-cps: transactions",
        "# gain: +1209.7 % [+787.7, +3162.2]",
        "# date: 2026-11-26T04:40:00Z  host: vm",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // Busy polling is the application's socket option: said, not set.
    assert!(text.contains("\n# busy_poll = 50\n"), "{text}");
    assert!(text.contains("a profile cannot carry it"), "{text}");
    assert!(text.contains("\ntcp_tw_reuse = 1\n"), "{text}");
    let path = c.outside("profile.toml");
    std::fs::write(&path, &text).unwrap();

    // `plan --profile` of it: the changes of plan.json, no more.
    let out = bin()
        .args(["plan", "--json", "--netns-scope", "child", "--profile"])
        .arg(&path)
        .arg("--root")
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let planned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written = serde_json::to_value(&plan).unwrap();
    assert!(!plan.changes.is_empty());
    assert_eq!(triples(&planned), triples(&written));
    assert_eq!(planned["profile"], "autotune-max-cps");

    // `apply --profile --dry-run` takes it and would write those changes.
    let out = bin()
        .args(["apply", "--dry-run", "--netns-scope", "child", "--profile"])
        .arg(&path)
        .arg("--root")
        .arg(&c.root)
        .arg("--state-dir")
        .arg(&c.state)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "{} change(s) would be written",
            plan.changes.len()
        )),
        "{stdout}"
    );
}

/// Nothing proven (or Ctrl-C): the profile says so and plans no change.
#[test]
fn a_profile_of_nothing_proven_changes_nothing() {
    let c = copy("kvm-2vcpu-6.18");
    let out = bin()
        .args(["inspect", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    let snap: HostSnapshot = serde_json::from_slice(&out.stdout).unwrap();
    let header = ProfileHeader {
        objective: "max-pps".into(),
        ..ProfileHeader::default()
    };
    let text = profile_toml(&snap, NetnsScope::Child, &[], &header).unwrap();
    assert!(
        text.contains("# gain: none proven; this profile changes nothing"),
        "{text}"
    );
    let path = c.outside("profile.toml");
    std::fs::write(&path, &text).unwrap();
    let out = bin()
        .args(["plan", "--json", "--netns-scope", "child", "--profile"])
        .arg(&path)
        .arg("--root")
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(out.status.success());
    let planned: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(planned["changes"].as_array().unwrap().len(), 0, "{planned}");
}

#[test]
fn a_profile_level_the_host_cannot_take_or_read_names_the_key() {
    let c = copy("kvm-2vcpu-6.18");
    let path = c.outside("bad.toml");
    for (levels, needle) in [
        ("tcp_tw_reuse = 7", "levels.tcp_tw_reuse"),
        ("no_such_knob = 1", "levels.no_such_knob"),
        (
            "ip_local_port_range = \"1024\"",
            "levels.ip_local_port_range",
        ),
    ] {
        std::fs::write(
            &path,
            format!("inherit = \"balanced\"\n[levels]\n{levels}\n"),
        )
        .unwrap();
        let out = bin()
            .args(["plan", "--profile"])
            .arg(&path)
            .arg("--root")
            .arg(&c.root)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{levels}");
        assert!(
            err.contains("bad.toml") && err.contains(needle),
            "{levels}: {err}"
        );
    }
}

fn report_fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/autotune-results.json")
}

#[test]
fn report_of_an_autotune_directory_draws_the_search_trace() {
    let t = tempfile::tempdir().unwrap();
    std::fs::copy(report_fixture(), t.path().join("results.json")).unwrap();
    let out = bin().arg("report").arg(t.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(t.path().join("report.html")).unwrap();
    assert!(page.contains("<svg id=\"chart-autotune-trace\""));
    assert!(page.contains("<section id=\"rejected\">"));
    let md = std::fs::read_to_string(t.path().join("report.md")).unwrap();
    assert!(md.starts_with("# nettune autotune: "), "{md}");
    assert!(md.contains("## Rejected"), "{md}");
}

/// `nettune autotune ARGS`: exit 2, one line on stderr holding `needle`.
fn refused(args: &[&str], needle: &str) {
    let out = bin().arg("autotune").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn workload_file_errors_name_the_file_and_the_key() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("w.toml");
    let f = file.to_str().unwrap();
    let cases = [
        (
            "test = \"tcp-crr\"\nsise = 64\n",
            "w.toml:2: unknown field `sise`",
        ),
        ("flows = 0\n", "w.toml: key `flows`: 0 is not from 1 to 64"),
        ("duration = \"3\"\n", "w.toml:1: invalid type"),
        (
            "test = \"sctp\"\n",
            "w.toml: key `test`: `sctp` is not one of",
        ),
        (
            "test = \"tcp-stream\"\n",
            "w.toml: key `test`: max-cps cannot be measured by a tcp-stream workload",
        ),
        (
            "args = [\"--congestion\", \"bbr\"]\n",
            "w.toml: key `args`: `--congestion` is not an option a workload may add",
        ),
        (
            "args = [\"--outstanding\", \"many\"]\n",
            "w.toml: key `args`: invalid value 'many'",
        ),
    ];
    for (text, needle) in cases {
        std::fs::write(&file, text).unwrap();
        refused(
            &["--objective", "max-cps", "--lab", "--workload", f],
            needle,
        );
    }
    // The flags it replaces conflict with it, in one line.
    std::fs::write(&file, "test = \"tcp-crr\"\n").unwrap();
    refused(
        &[
            "--objective",
            "max-cps",
            "--lab",
            "--workload",
            f,
            "--duration",
            "2",
            "--size",
            "64",
        ],
        "cannot be used with --size, --duration",
    );
}

#[test]
fn the_example_workload_file_is_taken() {
    let example =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/autotune-crr.toml");
    // A budget of 1 run is refused after the file is read: the file itself passed.
    let out = bin()
        .args([
            "autotune",
            "--objective",
            "max-cps",
            "--lab",
            "--budget",
            "1",
            "--workload",
        ])
        .arg(&example)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a budget of 1 runs is too small"), "{err}");
}
