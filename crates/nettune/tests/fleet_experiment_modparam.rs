//! `nettune experiment` with a `module_param` factor on a `[hosts.fleet]`
//! of two netns agents whose knobs go into per-host copies of the
//! c4-8xlarge fixture (an ixgbevf NIC, seed 001) through `--root-template`:
//! with `reload = true` each cell writes the snippet on the server and
//! "reloads" ixgbevf, which the fixture root records under
//! `sys/module/ixgbevf/`; rollback reloads again. Without `reload` every
//! cell is n/a and nothing is written. Never a real modprobe. Root only.

#![allow(clippy::unwrap_used)]

use lab::{Lab, LabSpec};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The lab, `dir/inv.toml`, per-host fixture roots `dir/{srv,cli}/root`.
fn setup(dir: &Path, prefix: &str) -> (Lab, Vec<PathBuf>) {
    let lab = Lab::build(LabSpec {
        prefix: prefix.into(),
        ..LabSpec::new(2, 1)
    })
    .unwrap();
    let link = &lab.links()[0];
    std::fs::write(
        dir.join("inv.toml"),
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
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/c4-8xlarge");
    let roots = ["srv", "cli"]
        .iter()
        .map(|h| {
            let root = dir.join(h).join("root");
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
    (lab, roots)
}

fn run(dir: &Path, reload: &str) -> (Output, Value) {
    let file = dir.join("exp.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"fleet-itr\"\nseed = 7\nrepeats = 1\nwarmup = 0\n\
             [hosts.fleet]\ninventory = \"inv.toml\"\nserver = \"server\"\nclients = \"clients\"\n\
             [[workload]]\nname = \"rr\"\ntest = \"tcp-rr\"\nduration_s = 1\n\
             [[factor]]\nname = \"module_param\"\nmodule = \"ixgbevf\"\nparam = \"InterruptThrottleRate\"\n\
             levels = [\"1\", \"0\"]\nhosts = [\"server\"]\n{reload}\
             [responses]\nmetrics = [\"transactions\"]\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = Command::new(BIN)
        .arg("experiment")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .arg("--state-dir-template")
        .arg(format!("{}/{{host}}/state", dir.display()))
        .arg("--root-template")
        .arg(format!("{}/{{host}}/root", dir.display()))
        .args(["--timeout", "60"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let r = std::fs::read_to_string(out.join("results.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (o, r)
}

fn reloads(root: &Path) -> String {
    std::fs::read_to_string(root.join("sys/module/ixgbevf/nettune-reloads")).unwrap_or_default()
}

#[test]
fn itr_levels_with_reload_reload_the_servers_driver_per_cell_and_roll_back() {
    if !lab::require_root("fleet_experiment_modparam::itr_levels_with_reload") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (_lab, roots) = setup(t.path(), "ntfxm");
    let (o, r) = run(t.path(), "reload = true\n");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["status"]["state"], "done", "{c:#}");
    }
    assert_eq!(
        cells[0]["label"],
        "module_param=ixgbevf.InterruptThrottleRate=1"
    );
    // Per cell (in the run's random order): a reload with the level after
    // the write, one without after the rollback; the client's driver was
    // never reloaded.
    let log = reloads(&roots[0]);
    let mut pairs: Vec<&str> = log.split_inclusive("reload\n").collect();
    pairs.sort_unstable();
    assert_eq!(
        pairs,
        [
            "reload InterruptThrottleRate=0\nreload\n",
            "reload InterruptThrottleRate=1\nreload\n"
        ],
        "{log}"
    );
    assert_eq!(reloads(&roots[1]), "");
    let plans = r["plans"].to_string();
    assert!(plans.contains("\"reload_modules\":true"), "{plans}");
    // No snippet is left on the server.
    let snippets = t.path().join("srv/state/modprobe.d");
    let left: Vec<_> = std::fs::read_dir(&snippets)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn itr_levels_without_reload_are_not_applicable_and_write_nothing() {
    if !lab::require_root("fleet_experiment_modparam::itr_levels_without_reload") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let (_lab, roots) = setup(t.path(), "ntfxn");
    let (o, r) = run(t.path(), "");
    let cells = r["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert_eq!(cells.len(), 2);
    for c in cells {
        assert_eq!(c["status"]["state"], "not_applicable", "{c:#}");
        let why = c["status"].to_string();
        assert!(why.contains("reload = true"), "{why}");
    }
    assert_eq!(reloads(&roots[0]), "");
    assert!(!t.path().join("srv/state/modprobe.d").exists());
}
