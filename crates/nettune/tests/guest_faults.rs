//! `nettune fleet apply` on guests (docs/guests.md, docs/fleet.md):
//!
//! - A guest killed in the middle of an apply: the command ends with an
//!   error naming the guest by its inventory name, and the host that runs
//!   it keeps its own settings (nothing of the plan lands on it). The
//!   guest's agent stops after two writes (the apply's test hook
//!   `NETTUNE_TEST_PAUSE_AFTER_WRITES`, handed to `/init` on the kernel's
//!   command line) and says so on the console; QEMU is killed then, as a
//!   crash or a power cut would end it.
//! - The confirm deadline on a guest: a plan that reloads a driver is
//!   applied with a deadline, and confirmed over a second session on the
//!   guest's one agent port; the guest's watchdog (started with `setsid`)
//!   then leaves the generation in force.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod guest_common;

use fleet::proto::Request;
use guest::{BootOptions, Netdev, Nic, NicModel};
use guest_common::*;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The host's own values of what the guest's plan writes, by path (files
/// the host lacks read as absent), and every IRQ's affinity on the host.
fn host_values(plan: &serde_json::Value) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for c in plan["changes"].as_array().into_iter().flatten() {
        if let Some(p) = c["target"]["path"].as_str() {
            out.insert(p.to_string(), std::fs::read_to_string(p).ok());
        }
    }
    for e in std::fs::read_dir("/proc/irq").unwrap().flatten() {
        let p = e.path().join("smp_affinity_list");
        if p.exists() {
            out.insert(p.display().to_string(), std::fs::read_to_string(&p).ok());
        }
    }
    out
}

/// A fleet inventory of one host, `name`, the guest `g` over its agent socket.
fn inventory(dir: &std::path::Path, name: &str, g: &guest::Guest) -> std::path::PathBuf {
    let inv = dir.join("guests.toml");
    std::fs::write(
        &inv,
        format!(
            "[[host]]\nname = \"{name}\"\ntransport = \"guest\"\nsocket = \"{}\"\n",
            g.agent_socket().display()
        ),
    )
    .unwrap();
    inv
}

#[test]
fn a_guest_killed_mid_apply_is_named_and_the_host_is_untouched() {
    let Some((qemu, kernel)) = machine_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nic = Nic {
        model: NicModel::E1000e,
        netdev: Netdev::UserRestricted,
        node1: true,
    };
    let opts = BootOptions {
        netns: None,
        append: vec!["NETTUNE_TEST_PAUSE_AFTER_WRITES=2".into()],
    };
    let name = "killed-mid-apply";
    let g = boot_nics_with(&qemu, &kernel, name, vec![nic], false, dir.path(), &opts);
    let plan = plan(&mut connect(&g), "latency");
    assert!(plan["changes"].as_array().unwrap().len() > 2, "{plan:#}");
    let host_before = host_values(&plan);

    let inv = inventory(dir.path(), name, &g);
    let mut child = Command::new(NETTUNE)
        .args(["fleet", "apply", "--profile", "latency", "--yes", "--json"])
        .args(["--confirm-timeout", "0", "--inventory"])
        .arg(&inv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let console = g.machine().console_log();
    let g_socket = g.agent_socket();
    let t0 = Instant::now();
    let paused = loop {
        let text = std::fs::read_to_string(&console).unwrap_or_default();
        if text.contains("paused after 2 writes (test hook)") {
            break true;
        }
        if t0.elapsed() > AGENT_DEADLINE || child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(paused, "the guest's apply never paused: {}", g.tail());
    g.kill_now();

    // The fleet's own per-host timeout (120 s) is the longest it may wait.
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    // The failure names the guest by its inventory name, the socket after
    // it: once at the start of stderr's failure line, and first in the
    // JSON's error.
    let label = format!("{name} (guest {})", g_socket.display());
    let line = stderr
        .lines()
        .find(|l| l.starts_with(&format!("nettune: fleet apply: {label} failed")))
        .unwrap_or_else(|| panic!("no failure line naming {label}: {stderr}"));
    assert!(
        !line.contains(&format!("{label}: ")),
        "the guest {name} is named twice: {line}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let message = v["hosts"][0]["error"]["message"].as_str().unwrap_or("");
    assert!(message.starts_with(&label), "{message}");
    eprintln!(
        "fleet apply after the kill: {}\n{stdout}\n{stderr}",
        out.status
    );
    assert_eq!(
        host_values(&plan),
        host_before,
        "the host's own values moved"
    );
}

/// docs/fleet.md "Confirm deadline" on a guest: e1000e's latency plan sets
/// its `InterruptThrottleRate` (a module parameter, which gets a deadline
/// on any transport), so `fleet apply` applies with `confirm_within`, ends
/// that session and confirms over a new one on the guest's single agent
/// port. The apply ends ok, and the generation is in force, not rolled
/// back, confirmed.
#[test]
fn fleet_apply_confirms_on_a_guest_over_a_second_session() {
    let Some((qemu, kernel)) = machine_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let nic = Nic {
        model: NicModel::E1000e,
        netdev: Netdev::UserRestricted,
        node1: false,
    };
    let name = "confirm-deadline";
    let g = boot_nics(&qemu, &kernel, name, vec![nic], false, dir.path());
    let mut agent = connect(&g);
    let plan = plan(&mut agent, "latency");
    let reloads = plan["changes"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["target"]["kind"] == "module_param");
    assert!(reloads, "no module parameter to give a deadline: {plan:#}");
    // The guest serves one session at a time.
    drop(agent);

    let inv = inventory(dir.path(), name, &g);
    // The deadline is long enough that only a confirm that never came
    // rolls back; the fleet's own per-host timeout (120 s) bounds a hang.
    let out = Command::new(NETTUNE)
        .args(["fleet", "apply", "--profile", "latency", "--yes", "--json"])
        .args(["--confirm-timeout", "600", "--inventory"])
        .arg(&inv)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "fleet apply with a confirm deadline on a guest: {}\n{stdout}\n{stderr}\n{}",
        out.status,
        g.tail()
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let host = &v["hosts"][0];
    assert_eq!(host["outcome"], "ok", "{host:#}");
    let confirm = &host["result"]["confirm"];
    assert_eq!(confirm["within"], 600, "no confirm deadline: {host:#}");
    let generation = confirm["generation"].as_u64().unwrap();

    let mut agent = connect(&g);
    let history = Request::History {
        root: None,
        state_dir: None,
    };
    let h = ask(&mut agent, &history, "history");
    let gen = h["generations"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|x| x["generation"].as_u64() == Some(generation))
        .unwrap_or_else(|| panic!("generation {generation} not in {h:#}"));
    assert!(gen["rolled_back_at"].is_null(), "{gen:#}");
    // Confirmed already: a second confirm is harmless and says so.
    let again = Request::Confirm {
        root: None,
        state_dir: None,
        generation: u32::try_from(generation).unwrap(),
    };
    let c = ask(&mut agent, &again, "confirm");
    assert_eq!(c["status"], "confirmed", "{c:#}");
    drop(agent);
    g.kill_now();
}
