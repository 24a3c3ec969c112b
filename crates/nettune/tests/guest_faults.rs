//! A guest killed in the middle of an apply (docs/guests.md): `nettune
//! fleet apply` ends with an error naming the guest, and the host that
//! runs it keeps its own settings (nothing of the plan lands on it).
//!
//! The guest's agent stops after two writes (the apply's test hook
//! `NETTUNE_TEST_PAUSE_AFTER_WRITES`, handed to `/init` on the kernel's
//! command line) and says so on the console; QEMU is killed then, as a
//! crash or a power cut would end it.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod guest_common;

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

    let inv = dir.path().join("guests.toml");
    std::fs::write(
        &inv,
        format!(
            "[[host]]\nname = \"{name}\"\ntransport = \"guest\"\nsocket = \"{}\"\n",
            g.agent_socket().display()
        ),
    )
    .unwrap();
    let mut child = Command::new(NETTUNE)
        .args(["fleet", "apply", "--profile", "latency", "--yes", "--json"])
        .args(["--confirm-timeout", "0", "--inventory"])
        .arg(&inv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let console = g.machine().console_log();
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
    assert!(
        stderr.contains(name) || stdout.contains(&format!("\"{name}\"")),
        "the error does not name the guest: {stdout}\n{stderr}"
    );
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
