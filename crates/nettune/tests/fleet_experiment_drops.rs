//! Issue 39: `nettune experiment` on a fleet records each run's drops by
//! reason from the hosts' agents (`drops_start` and `drops_finish` over
//! each host's long-lived session), one entry per host named by the
//! inventory. Two netns agents in a lab the test builds (`nt39c-PID-N`,
//! deleted on drop); they share this machine's kernel, so the counts are
//! the machine's: the test asserts that each agent recorded its entry
//! (counts and their mode, not "not recorded"), never a count. Root only;
//! skips with the reason otherwise (never under CI=true).

#![allow(clippy::unwrap_used)]

use lab::{Lab, LabSpec};
use serde_json::Value;
use std::process::Command;

#[test]
fn each_run_of_a_fleet_experiment_carries_each_agents_drops() {
    if !lab::require_root("fleet_experiment_drops::each_run_carries_each_agents_drops") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let lab = Lab::build(LabSpec {
        prefix: "nt39c".into(),
        ..LabSpec::new(2, 1)
    })
    .unwrap();
    let spoke = lab.links()[0].host;
    let hub_addr = lab.links()[0].hub.addr.to_string();
    let inventory = [
        ("srv", lab.hosts()[0].name(), "server", None),
        ("cli", lab.hosts()[spoke].name(), "clients", Some(hub_addr)),
    ]
    .iter()
    .map(|(name, ns, role, to)| {
        let labels = to
            .as_ref()
            .map(|a| format!("labels = {{ server_address = \"{a}\" }}\n"))
            .unwrap_or_default();
        format!("[[host]]\nname = \"{name}\"\ntransport = \"netns\"\nnetns = \"{ns}\"\nroles = [\"{role}\"]\n{labels}")
    })
    .collect::<String>();
    std::fs::write(dir.join("hosts.toml"), inventory).unwrap();
    let exp = dir.join("drops.toml");
    std::fs::write(
        &exp,
        "name = \"fleet-drops\"\nseed = 39\nrepeats = 1\nwarmup = 0\n\
         [hosts.fleet]\ninventory = \"hosts.toml\"\nserver = \"server\"\nclients = \"clients\"\n\
         [[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n\
         [[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\n\
         [responses]\nmetrics = [\"transactions\"]\n",
    )
    .unwrap();
    let out = dir.join("results");
    let o = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .arg("experiment")
        .arg(&exp)
        .arg("--out")
        .arg(&out)
        .arg("--state-dir-template")
        .arg(format!("{}/state-{{host}}", dir.display()))
        .args(["--timeout", "60"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = format!(
        "{:?}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "{said}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let runs: Vec<&Value> = r["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["runs"].as_array().unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "{r:#}");
    for run in runs {
        let drops = run["drops"].as_array().unwrap();
        let mut hosts: Vec<&str> = drops.iter().map(|d| d["host"].as_str().unwrap()).collect();
        hosts.sort_unstable();
        assert_eq!(hosts, ["cli", "srv"], "{drops:#?}");
        for d in drops {
            // Recorded by the host's agent: its counts and their mode,
            // not the line of an executor that does not watch.
            assert!(d.get("unavailable").is_none(), "{d:#}");
            assert!(d["total"].is_u64() && d["exact"].is_boolean(), "{d:#}");
            assert!(d["seconds"].as_f64().is_some_and(|s| s > 0.0), "{d:#}");
            assert!(d["reasons"].is_array(), "{d:#}");
        }
    }
}
