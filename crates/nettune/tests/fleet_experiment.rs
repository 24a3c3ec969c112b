//! `nettune experiment` with `[hosts.fleet]`: an inventory of two netns
//! agents in a lab the test builds (the server on the hub, the client on
//! the spoke), a factor each namespace owns (`net.ipv4.tcp_tw_reuse`), each
//! host's journal in its own state directory (`--state-dir-template`).
//! Run end to end, then with the client's agent killed mid-run; then a ring
//! factor on the server only, into per-host fixture roots
//! (`--root-template`). Root only.

#![allow(clippy::unwrap_used)]

use lab::{Lab, LabSpec};
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");
const KNOB: &str = "/proc/sys/net/ipv4/tcp_tw_reuse";

/// A two-host lab, its inventory and an experiment file of `repeats`
/// 1-second tcp-rr runs at tcp_tw_reuse 0 and 1, in `dir`.
struct Setup {
    lab: Lab,
    file: PathBuf,
    inv: PathBuf,
    states: String,
    out: PathBuf,
}

fn setup(dir: &Path, prefix: &str, repeats: u32) -> Setup {
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
    let file = dir.join("exp.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"fleet-tw\"\nseed = 3\nrepeats = {repeats}\nwarmup = 0\n\
             [hosts.fleet]\ninventory = \"inv.toml\"\nserver = \"server\"\nclients = \"clients\"\n\
             [[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n\
             [[factor]]\nname = \"tcp_tw_reuse\"\nlevels = [0, 1]\n\
             [responses]\nmetrics = [\"transactions\"]\n"
        ),
    )
    .unwrap();
    Setup {
        lab,
        file,
        inv,
        states: format!("{}/{{host}}/state", dir.display()),
        out: dir.join("out"),
    }
}

impl Setup {
    /// `nettune experiment` on the file, spawned.
    fn spawn(&self) -> std::process::Child {
        self.spawn_with(&[])
    }

    /// `nettune experiment` on the file with `extra` arguments, spawned.
    fn spawn_with(&self, extra: &[&str]) -> std::process::Child {
        Command::new(BIN)
            .arg("experiment")
            .arg(&self.file)
            .arg("--out")
            .arg(&self.out)
            .args(["--state-dir-template", &self.states, "--timeout", "60"])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn ns(&self, i: usize) -> &str {
        self.lab.hosts()[i].name()
    }

    /// tcp_tw_reuse in each namespace.
    fn knobs(&self) -> Vec<String> {
        (0..2)
            .map(|i| {
                let o = Command::new("ip")
                    .args(["netns", "exec", self.ns(i), "cat", KNOB])
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{o:?}");
                String::from_utf8_lossy(&o.stdout).trim().to_string()
            })
            .collect()
    }

    /// `nettune history --json` of `host`'s journal: (generation, rolled back).
    fn history(&self, host: &str) -> Vec<(u64, bool)> {
        let dir = self.states.replace("{host}", host);
        let o = Command::new(BIN)
            .args(["history", "--json", "--state-dir", &dir])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"));
        v["generations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["generation"].as_u64().unwrap(),
                    !g["rolled_back_at"].is_null(),
                )
            })
            .collect()
    }

    fn results(&self) -> Value {
        let text = std::fs::read_to_string(self.out.join("results.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn an_experiment_on_two_netns_agents_applies_and_rolls_back_each_cell_on_each_host() {
    if !lab::require_root("fleet_experiment::an_experiment_on_two_netns_agents") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let s = setup(t.path(), "ntfxa", 2);
    let before = s.knobs();
    let o = s.spawn().wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = s.results();
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["status"]["state"], "done", "{c:#}");
        assert_eq!(c["runs"].as_array().unwrap().len(), 2, "{c:#}");
    }
    assert_eq!(r["interrupted"], false);
    let notes = r["notes"].to_string();
    assert!(notes.contains("server srv, clients cli"), "{notes}");
    // The bench facts are filed under the inventory names.
    assert!(r["host_facts"].get("cli").is_some(), "{}", r["host_facts"]);
    // Each host: one generation per cell, each rolled back.
    for host in ["srv", "cli"] {
        let h = s.history(host);
        assert_eq!(h.len(), 2, "{host}: {h:?}");
        assert!(h.iter().all(|(_, back)| *back), "{host}: {h:?}");
    }
    assert_eq!(s.knobs(), before);
    // The plans applied are in the results, per cell and host.
    assert_eq!(r["plans"].as_object().unwrap().len(), 4, "{}", r["plans"]);
    assert!(s.out.join("report.html").exists());
}

/// The pid of the `nettune agent --stdio` in namespace `ns`.
fn agent_pid(ns: &str) -> Option<u32> {
    let ino = std::fs::metadata(format!("/run/netns/{ns}")).ok()?.ino();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(net) = std::fs::metadata(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        if net.ino() != ino {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
        if args.contains(&b"agent".as_slice()) && args.contains(&b"--stdio".as_slice()) {
            return Some(pid);
        }
    }
    None
}

#[test]
fn a_client_agent_killed_mid_run_stops_the_run_and_the_server_is_rolled_back() {
    if !lab::require_root("fleet_experiment::a_client_agent_killed_mid_run") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let s = setup(t.path(), "ntfxb", 3);
    let before = s.knobs();
    let child = s.spawn();
    // Once the first run is in results.json, kill the client's agent (the
    // second run is then under way).
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < end, "no run recorded within 60 s");
        let runs = std::fs::read_to_string(s.out.join("results.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map(|v| {
                v["cells"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c["runs"].as_array().unwrap().len())
                    .sum::<usize>()
            })
            .unwrap_or(0);
        if runs >= 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = agent_pid(s.ns(1)).expect("the client's agent");
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    eprintln!("{err}");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err.contains("host cli was lost"), "{err}");
    assert!(err.contains("stays applied there"), "{err}");
    // results.json keeps the run(s) so far, the cell interrupted.
    let r = s.results();
    assert_eq!(r["interrupted"], true, "{r:#}");
    let cells = r["cells"].as_array().unwrap();
    assert!(
        cells.iter().any(|c| c["status"]["state"] == "interrupted"),
        "{r:#}"
    );
    let runs: usize = cells
        .iter()
        .map(|c| c["runs"].as_array().unwrap().len())
        .sum();
    assert!(runs >= 1, "{r:#}");
    // The server's every generation was rolled back.
    let srv = s.history("srv");
    assert!(!srv.is_empty());
    assert!(srv.iter().all(|(_, back)| *back), "{srv:?}");
    assert_eq!(s.knobs()[0], before[0]);
    // The client keeps its cell's generation: the printed command rolls it back.
    let cli = s.history("cli");
    let line = err
        .lines()
        .find(|l| l.contains("nettune fleet rollback --inventory"))
        .unwrap_or_else(|| panic!("no rollback command: {err}"));
    let g: u64 = line
        .split("--to ")
        .nth(1)
        .and_then(|x| x.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(line.contains("--limit cli"), "{line}");
    assert!(cli.contains(&(g, false)), "{cli:?} {line}");
    let o = Command::new(BIN)
        .arg("fleet")
        .arg("rollback")
        .arg("--inventory")
        .arg(&s.inv)
        .args(["--limit", "cli", "--to", &g.to_string()])
        .args(["--state-dir-template", &s.states])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(s.history("cli").iter().all(|(_, back)| *back));
    assert_eq!(s.knobs(), before);
    // With the host back (a fresh agent), --resume reruns the interrupted
    // cell and the rest.
    let o = Command::new(BIN)
        .arg("experiment")
        .arg(&s.file)
        .arg("--resume")
        .arg(&s.out)
        .args(["--state-dir-template", &s.states, "--timeout", "60"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = s.results();
    assert_eq!(r["interrupted"], false);
    for c in r["cells"].as_array().unwrap() {
        assert_eq!(c["status"]["state"], "done", "{c:#}");
        assert_eq!(c["runs"].as_array().unwrap().len(), 3, "{c:#}");
    }
    assert!(s.history("cli").iter().all(|(_, back)| *back));
    assert!(s.history("srv").iter().all(|(_, back)| *back));
    assert_eq!(s.knobs(), before);
}

/// A NIC fixture that reports rings (ixgbevf eth0: 1024 of 4096).
const RING_FIXTURE: &str = "c4-8xlarge";

/// `ethtool/eth0.json` of a host's fixture root.
fn ring_file(root: &Path) -> PathBuf {
    root.join("ethtool/eth0.json")
}

/// The RX ring a fixture root's eth0 reports.
fn rx_ring(root: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(ring_file(root)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["rings"]["value"]["rx"].as_u64()
}

#[test]
fn a_ring_factor_with_hosts_server_changes_the_servers_rings_only() {
    if !lab::require_root("fleet_experiment::a_ring_factor_with_hosts_server") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let s = setup(t.path(), "ntfxr", 2);
    // The knobs go into per-host copies of a NIC fixture; the bench
    // traffic still flows between the namespaces.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(RING_FIXTURE);
    let roots: Vec<PathBuf> = ["srv", "cli"]
        .iter()
        .map(|h| {
            let root = t.path().join(h).join("root");
            std::fs::create_dir_all(root.parent().unwrap()).unwrap();
            let o = Command::new("cp")
                .arg("-a")
                .arg(&fixture)
                .arg(&root)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", text(&o));
            root
        })
        .collect();
    let originals: Vec<Value> = roots
        .iter()
        .map(|r| serde_json::from_str(&std::fs::read_to_string(ring_file(r)).unwrap()).unwrap())
        .collect();
    assert_eq!(rx_ring(&roots[0]), Some(1024));
    std::fs::write(
        &s.file,
        "name = \"fleet-rings\"\nseed = 5\nrepeats = 2\nwarmup = 0\n\
         [hosts.fleet]\ninventory = \"inv.toml\"\nserver = \"server\"\nclients = \"clients\"\n\
         [[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n\
         [[factor]]\nname = \"rx_ring\"\nlevels = [1024, 4096]\nhosts = [\"server\"]\n\
         [responses]\nmetrics = [\"transactions\"]\n",
    )
    .unwrap();
    let tw_before = s.knobs();
    let template = format!("{}/{{host}}/root", t.path().display());
    let mut child = s.spawn_with(&["--root-template", &template]);
    // Watch both ring files while the cells run.
    let (mut seen_srv, mut seen_cli) = (Vec::new(), Vec::new());
    let end = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < end, "the experiment ran past 120 s");
        for (root, seen) in [(&roots[0], &mut seen_srv), (&roots[1], &mut seen_cli)] {
            if let Some(v) = rx_ring(root) {
                if !seen.contains(&v) {
                    seen.push(v);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let o = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", text(&o));
    // The server's ring took the level; the client's never moved.
    assert!(seen_srv.contains(&4096), "server rings seen: {seen_srv:?}");
    assert_eq!(seen_cli, [1024], "client rings seen");
    let r = s.results();
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["status"]["state"], "done", "{c:#}");
    }
    assert_eq!(cells[1]["label"], "rx_ring=4096");
    assert_eq!(cells[1]["levels"][0][0], "rx_ring");
    // One plan per cell, the server's; the notes say where the factor went.
    let plans = r["plans"].as_object().unwrap();
    assert_eq!(plans.len(), 2, "{}", r["plans"]);
    let plan_text = r["plans"].to_string();
    assert!(plan_text.contains("\"group\":\"rings\""), "{plan_text}");
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("factor[0] rx_ring: its levels are applied on server only"),
        "{notes}"
    );
    // After the run both fixtures are as they were and the server's journal
    // rolled back each cell; the client's journal holds nothing.
    for (root, orig) in roots.iter().zip(&originals) {
        let now: Value =
            serde_json::from_str(&std::fs::read_to_string(ring_file(root)).unwrap()).unwrap();
        assert_eq!(&now, orig, "{}", root.display());
    }
    let h = s.history("srv");
    assert_eq!(h.len(), 2, "srv: {h:?}");
    assert!(h.iter().all(|(_, back)| *back), "srv: {h:?}");
    let cli_state = s.states.replace("{host}", "cli");
    if Path::new(&cli_state).exists() {
        assert!(s.history("cli").is_empty(), "{:?}", s.history("cli"));
    }
    // The namespaces' own knobs were not touched.
    assert_eq!(s.knobs(), tw_before);
}

#[test]
fn a_factor_host_outside_the_run_is_refused_before_anything_is_applied() {
    if !lab::require_root("fleet_experiment::a_factor_host_outside_the_run") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let s = setup(t.path(), "ntfxh", 1);
    let before = s.knobs();
    let text_now = std::fs::read_to_string(&s.file).unwrap();
    std::fs::write(
        &s.file,
        text_now.replace(
            "levels = [0, 1]\n",
            "levels = [0, 1]\nhosts = [\"server\", \"mon1\"]\n",
        ),
    )
    .unwrap();
    let o = s.spawn().wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        err.contains("factor[0].hosts: \"mon1\" is no role or host of this experiment (known: server, clients, srv, cli)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!s.out.join("results.json").exists());
    assert_eq!(s.knobs(), before);
}
