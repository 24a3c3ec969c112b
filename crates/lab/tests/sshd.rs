//! One sshd per lab namespace ([`SshFleet`]): reachable over ssh from the
//! hub with the generated `ssh_config`, ssh's own reasons for a stopped
//! server, a wrong host key and a refused identity, and nothing left behind.
//! Needs root and openssh-server; skips otherwise (fails under `CI=true`).

#![allow(clippy::unwrap_used)]

use nettune_lab::sshd::{require_sshd, SshFleet};
use nettune_lab::{run_text, Lab, LabSpec};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn lab(hosts: u32) -> Lab {
    Lab::build(LabSpec {
        prefix: "ntsshd".into(),
        ..LabSpec::new(hosts, 1)
    })
    .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Pids inside the namespace `ns`.
fn pids_in(ns: &str) -> Vec<String> {
    run_text(Command::new("ip").args(["netns", "pids", ns]))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn every_spoke_answers_over_ssh_from_the_hub() {
    if !require_sshd("sshd::every_spoke_answers_over_ssh_from_the_hub") {
        return;
    }
    let lab = lab(5);
    let fleet = SshFleet::start(&lab, &[1, 2, 3, 4]).unwrap();
    assert_eq!(fleet.hosts(), vec![1, 2, 3, 4]);
    let config = std::fs::read_to_string(fleet.config()).unwrap();
    for i in 1..=4 {
        let addr = lab.addr(i).unwrap();
        assert_eq!(fleet.addr(i), Some(addr));
        assert!(
            config.contains(&format!("Host h{i}\n  HostName {addr}\n")),
            "{config}"
        );
        let out = fleet
            .ssh(&lab.hosts()[0], i, &["ip", "-br", "addr"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "h{i}: {}", stderr(&out));
        assert!(text.contains(&format!("{addr}/30")), "h{i}: {text}");
        for other in (1..=4).filter(|&o| o != i) {
            let not = lab.addr(other).unwrap();
            assert!(
                !text.contains(&format!("{not}/")),
                "h{i} shows h{other}: {text}"
            );
        }
    }
    let kh = std::fs::read_to_string(fleet.known_hosts()).unwrap();
    assert_eq!(kh.lines().count(), 4, "{kh}");
    assert!(
        kh.contains(&format!("[{}]:2222 ssh-ed25519 ", lab.addr(3).unwrap())),
        "{kh}"
    );
}

#[test]
fn failures_carry_ssh_own_reasons() {
    if !require_sshd("sshd::failures_carry_ssh_own_reasons") {
        return;
    }
    let lab = lab(4);
    let hub = &lab.hosts()[0];
    let mut fleet = SshFleet::start_on(&lab, &[1, 2, 3], 2022).unwrap();
    for i in 1..=3 {
        let out = fleet.ssh(hub, i, &["true"]).output().unwrap();
        assert!(out.status.success(), "h{i} before: {}", stderr(&out));
    }

    fleet.stop(1).unwrap();
    assert_eq!(fleet.pid(1), None);
    let out = fleet.ssh(hub, 1, &["true"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Connection refused"),
        "{}",
        stderr(&out)
    );

    fleet.wrong_host_key(2).unwrap();
    let out = fleet.ssh(hub, 2, &["true"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Host key verification failed"),
        "{}",
        stderr(&out)
    );

    let stranger = fleet.stranger_config().unwrap();
    let out = hub
        .command("ssh")
        .arg("-F")
        .arg(&stranger)
        .args(["h3", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Permission denied"),
        "{}",
        stderr(&out)
    );
    // The fleet's own key still gets in: only the identity was wrong.
    let out = fleet.ssh(hub, 3, &["true"]).output().unwrap();
    assert!(out.status.success(), "h3 after: {}", stderr(&out));
}

#[test]
fn drop_leaves_no_sshd_and_no_namespace() {
    if !require_sshd("sshd::drop_leaves_no_sshd_and_no_namespace") {
        return;
    }
    let names: Vec<String>;
    {
        let lab = lab(3);
        names = lab.hosts().iter().map(|h| h.name().to_string()).collect();
        let fleet = SshFleet::start(&lab, &[0, 1, 2]).unwrap();
        let dir = fleet.dir().to_path_buf();
        let listeners: Vec<u32> = (0..3).map(|i| fleet.pid(i).unwrap()).collect();
        // The hub's sshd answers a spoke (through the spoke's route).
        let out = fleet.ssh(&lab.hosts()[2], 0, &["true"]).output().unwrap();
        assert!(out.status.success(), "h2 -> h0: {}", stderr(&out));
        // An open session: sshd forks a child for it, which must go too.
        let mut client = fleet
            .ssh(&lab.hosts()[0], 1, &["sleep", "30"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while pids_in(&names[1]).len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(pids_in(&names[1]).len() >= 2, "no session in {}", names[1]);
        drop(fleet);
        for pid in listeners {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "sshd {pid} still there"
            );
        }
        for ns in &names[1..] {
            let left = pids_in(ns);
            assert!(left.is_empty(), "{ns}: {left:?} left");
        }
        assert!(!dir.exists(), "{} left", dir.display());
        // The session was killed under it, so the client ends by itself.
        let deadline = Instant::now() + Duration::from_secs(5);
        while client.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let ended = client.try_wait().unwrap().is_some();
        let _ = client.kill();
        let _ = client.wait();
        assert!(ended, "the ssh client still runs after the fleet dropped");
    }
    let list = run_text(Command::new("ip").args(["netns", "list"])).unwrap();
    let left: Vec<&String> = names
        .iter()
        .filter(|n| {
            list.lines()
                .any(|l| l.split_whitespace().next() == Some(n.as_str()))
        })
        .collect();
    assert!(left.is_empty(), "{left:?} left in {list}");
}

#[test]
fn a_server_that_cannot_listen_is_a_clear_error() {
    if !require_sshd("sshd::a_server_that_cannot_listen_is_a_clear_error") {
        return;
    }
    let lab = lab(2);
    // The port is already taken in host 1: the second sshd cannot bind it.
    let _taken = SshFleet::start_on(&lab, &[1], 2200).unwrap();
    let err = SshFleet::start_on(&lab, &[1], 2200)
        .unwrap_err()
        .to_string();
    assert!(err.contains("sshd of h1"), "{err}");
    assert!(err.contains("Address already in use"), "{err}");
}

#[test]
fn directories_of_dead_runs_are_reaped_and_live_ones_kept() {
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let tmp = std::env::temp_dir();
    let dead = tmp.join(format!("nettune-sshd-{dead_pid}-7"));
    let live = tmp.join(format!("nettune-sshd-{}-999999", std::process::id()));
    for d in [&dead, &live] {
        std::fs::create_dir_all(d.join("h1")).unwrap();
    }
    let removed = nettune_lab::sshd::reap_stale_dirs();
    let live_kept = live.exists();
    let _ = std::fs::remove_dir_all(&live);
    // (Another test's SshFleet::start may have reaped it first.)
    assert!(!dead.exists(), "{} kept: {removed:?}", dead.display());
    assert!(live_kept, "{} removed", live.display());
}
