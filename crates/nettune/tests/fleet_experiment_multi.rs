//! `nettune experiment` with `[hosts.fleet]` and three clients: a lab hub
//! (the server) and three spokes (the clients) as netns agents; every run
//! loads the server from all three at once (`fleet bench`'s synchronized
//! start) and records their sum. Root only.

#![allow(clippy::unwrap_used)]

use lab::{Lab, LabSpec};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");
const KNOB: &str = "/proc/sys/net/ipv4/tcp_tw_reuse";
const CLIENTS: [&str; 3] = ["c1", "c2", "c3"];

/// tcp_tw_reuse in each namespace of `lab`.
fn knobs(lab: &Lab) -> Vec<String> {
    lab.hosts()
        .iter()
        .map(|h| {
            let o = Command::new("ip")
                .args(["netns", "exec", h.name(), "cat", KNOB])
                .output()
                .unwrap();
            assert!(o.status.success(), "{o:?}");
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        })
        .collect()
}

/// `client HOST: N UNIT in ...` notes of a merged run: (host, N).
fn shares(notes: &[Value]) -> Vec<(String, u64)> {
    notes
        .iter()
        .filter_map(Value::as_str)
        .filter_map(|n| n.strip_prefix("client "))
        .filter_map(|n| {
            let (host, rest) = n.split_once(": ")?;
            let count = rest.split_whitespace().next()?.parse().ok()?;
            Some((host.to_string(), count))
        })
        .collect()
}

/// A lab of a hub and three spokes, its inventory (c3 reaching the server
/// at `c3_address` instead of its link's hub end, when given) and an
/// experiment of 2 cells × `repeats` 1-second tcp-rr runs in `dir`; the
/// experiment run, its output directory and state template.
fn run(
    dir: &Path,
    prefix: &str,
    c3_address: Option<&str>,
    repeats: u32,
) -> (Lab, Output, PathBuf, String, Vec<String>) {
    let lab = Lab::build(LabSpec {
        prefix: prefix.into(),
        ..LabSpec::new(4, 1)
    })
    .unwrap();
    let mut inv = format!(
        "[[host]]\nname = \"srv\"\ntransport = \"netns\"\nnetns = \"{}\"\nroles = [\"server\"]\n",
        lab.hosts()[0].name()
    );
    for (name, link) in CLIENTS.iter().zip(lab.links()) {
        let addr = match c3_address {
            Some(a) if *name == "c3" => a.to_string(),
            _ => link.hub.addr.to_string(),
        };
        inv.push_str(&format!(
            "[[host]]\nname = \"{name}\"\ntransport = \"netns\"\nnetns = \"{}\"\nroles = [\"clients\"]\n\
             labels = {{ server_address = \"{addr}\" }}\n",
            lab.hosts()[link.host].name(),
        ));
    }
    std::fs::write(dir.join("inv.toml"), inv).unwrap();
    let file = dir.join("exp.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"fleet-multi\"\nseed = 5\nrepeats = {repeats}\nwarmup = 0\n\
             [hosts.fleet]\ninventory = \"inv.toml\"\nserver = \"server\"\nclients = \"clients\"\n\
             [[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n\
             [[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\n\
             [responses]\nmetrics = [\"transactions\"]\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let states = format!("{}/{{host}}/state", dir.display());
    let before = knobs(&lab);
    let o = Command::new(BIN)
        .arg("experiment")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(["--state-dir-template", &states, "--timeout", "60"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (lab, o, out, states, before)
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every host's journal (`nettune history`): `generations` of this run,
/// each rolled back.
fn all_rolled_back(states: &str, generations: usize) {
    for host in ["srv", "c1", "c2", "c3"] {
        let d = states.replace("{host}", host);
        let o = Command::new(BIN)
            .args(["history", "--json", "--state-dir", &d])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
        let g = v["generations"].as_array().unwrap();
        assert_eq!(g.len(), generations, "{host}: {v:#}");
        assert!(g.iter().all(|g| !g["rolled_back_at"].is_null()), "{host}");
    }
}

#[test]
fn every_client_loads_the_server_at_once_and_each_run_is_their_sum() {
    if !lab::require_root("fleet_experiment_multi::every_client_loads_the_server_at_once") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (lab, o, out, states, before) = run(t.path(), "ntfxm", None, 2);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let notes = r["notes"].to_string();
    assert!(notes.contains("server srv, clients c1, c2, c3"), "{notes}");
    assert!(
        notes.contains("every client loads the server at once"),
        "{notes}"
    );
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["status"]["state"], "done", "{c:#}");
        let runs = c["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{c:#}");
        for run in runs {
            let raw = out.join(run["raw"].as_str().unwrap());
            let b: Value = serde_json::from_str(&std::fs::read_to_string(&raw).unwrap()).unwrap();
            let bn = b["notes"].as_array().unwrap();
            eprintln!("{}: {bn:#?}", run["raw"]);
            let head = bn[0].as_str().unwrap();
            assert!(
                head.starts_with("3 clients, synchronized start, skew "),
                "{head}"
            );
            // Each client's share, and the run's transactions their sum.
            let sh = shares(bn);
            let names: Vec<&str> = sh.iter().map(|(h, _)| h.as_str()).collect();
            assert_eq!(names, CLIENTS, "{bn:#?}");
            assert!(sh.iter().all(|(_, n)| *n > 0), "{sh:?}");
            let total: u64 = sh.iter().map(|(_, n)| n).sum();
            assert_eq!(b["results"][0]["msgs"].as_u64(), Some(total), "{bn:#?}");
            assert_eq!(b["results"][0]["unit"], "transactions");
            // results.json's value is the merged rate: the clients' rates summed.
            let rate = run["values"]["transactions"].as_f64().unwrap();
            let per_sec = b["results"][0]["per_sec"].as_f64().unwrap();
            assert_eq!(rate, per_sec);
            let secs = b["results"][0]["seconds"].as_f64().unwrap();
            assert!(
                (rate * secs - total as f64).abs() <= 0.05 * total as f64,
                "{rate}/s over {secs} s vs {total}"
            );
            // The latency of all three clients' samples.
            assert_eq!(b["results"][0]["latency"]["count"].as_u64(), Some(total));
        }
    }
    // Every host's journal: one generation per cell, each rolled back.
    all_rolled_back(&states, 2);
    assert_eq!(knobs(&lab), before);
}

#[test]
fn a_client_that_fails_its_part_fails_the_run_naming_it() {
    if !lab::require_root("fleet_experiment_multi::a_client_that_fails_its_part") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    // c3 looks for the server on its own loopback: nobody listens there.
    let (lab, o, out, states, before) = run(t.path(), "ntfxn", Some("127.0.0.1"), 1);
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("results.json"))
            .unwrap_or_else(|e| panic!("{e}: {}", text(&o))),
    )
    .unwrap();
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{}", text(&o));
    for c in cells {
        let e = c["status"]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{c:#}"));
        assert!(e.contains("bench on c3"), "{e}");
        assert!(c["runs"].as_array().unwrap().is_empty(), "{c:#}");
    }
    all_rolled_back(&states, 2);
    assert_eq!(knobs(&lab), before);
}
