//! `lab::LabSession` with the real `nettune serve`: every host's server
//! listens once `start` returns, dropping the session leaves no namespace,
//! marker or server, and the lab of a killed run is reaped at the next start.

#![allow(clippy::unwrap_used)]

use lab::{LabSession, LabSpec, MARKER_DIR};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn netns_list() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn servers_listen_in_every_host_and_drop_leaves_nothing() {
    if !lab::require_root("lab_session::servers_listen_in_every_host_and_drop_leaves_nothing") {
        return;
    }
    let s = LabSession::start(
        LabSpec {
            prefix: "ntsess".into(),
            ..LabSpec::new(3, 2)
        },
        BIN,
        Duration::from_secs(10),
    )
    .unwrap();
    let name = s.lab().name().to_string();
    let hosts: Vec<String> = s
        .lab()
        .hosts()
        .iter()
        .map(|n| n.name().to_string())
        .collect();
    assert_eq!(hosts.len(), 3);
    for ns in s.lab().hosts() {
        let ss = ns.sh("ss -ltnH 'sport = :5290'").unwrap();
        assert!(ss.contains("5290"), "{}: {ss}", ns.name());
    }
    let pids: Vec<String> = hosts
        .iter()
        .flat_map(|h| {
            let o = Command::new("ip")
                .args(["netns", "pids", h])
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(pids.len() >= 3, "a server per host: {pids:?}");
    drop(s);
    let left: Vec<String> = netns_list()
        .into_iter()
        .filter(|n| hosts.contains(n))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(!Path::new(MARKER_DIR).join(format!("{name}.pid")).exists());
    for p in pids {
        assert!(
            !Path::new(&format!("/proc/{p}")).exists(),
            "server {p} survived"
        );
    }
}

#[test]
fn a_killed_runs_lab_is_reaped_at_the_next_start() {
    if !lab::require_root("lab_session::a_killed_runs_lab_is_reaped_at_the_next_start") {
        return;
    }
    // A dead pid: a child spawned and reaped.
    let mut child = Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let dead = child.id();
    // What a SIGKILLed run leaves: its namespaces (one with a process in
    // it) and its marker.
    let lab = format!("ntkill-{dead}-0");
    for i in 0..2 {
        let st = Command::new("ip")
            .args(["netns", "add", &format!("{lab}-h{i}")])
            .status()
            .unwrap();
        assert!(st.success());
    }
    std::fs::create_dir_all(MARKER_DIR).unwrap();
    let marker = Path::new(MARKER_DIR).join(format!("{lab}.pid"));
    std::fs::write(&marker, format!("{dead} 1\n")).unwrap();

    let s = LabSession::start(
        LabSpec {
            prefix: "ntkill".into(),
            ..LabSpec::new(2, 1)
        },
        BIN,
        Duration::from_secs(10),
    )
    .unwrap();
    let reaped = s.reaped().to_vec();
    let list = netns_list();
    drop(s);
    let left: Vec<&String> = list.iter().filter(|n| n.starts_with(&lab)).collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(!marker.exists());
    assert_eq!(reaped.len(), 1, "{reaped:?}");
    assert_eq!(reaped[0].lab, lab);
    assert_eq!(reaped[0].owner_pid, dead);
    assert_eq!(reaped[0].netns.len(), 2, "{reaped:?}");
}

#[test]
fn a_server_that_cannot_start_is_an_error_and_nothing_stays() {
    if !lab::require_root("lab_session::a_server_that_cannot_start_is_an_error_and_nothing_stays") {
        return;
    }
    let before: Vec<String> = netns_list();
    let e = LabSession::start(
        LabSpec {
            prefix: "ntnoserve".into(),
            ..LabSpec::new(2, 1)
        },
        "/bin/false",
        Duration::from_secs(5),
    )
    .unwrap_err();
    assert!(e.to_string().contains("serve"), "{e}");
    let me = format!("ntnoserve-{}-", std::process::id());
    let left: Vec<String> = netns_list()
        .into_iter()
        .filter(|n| n.starts_with(&me) && !before.contains(n))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_loopback_server_needs_no_root_and_dies_on_drop() {
    use runner::exec::{Executor, HostId};
    let s = lab::LoopbackServer::start(BIN, Duration::from_secs(10)).unwrap();
    let port = s.port();
    let mut ex = s.executor();
    // 16 MiB is past a default net.core.rmem_max: the server forces it only
    // for a client with its token that asks (--force-buffers); the lab gives
    // both ends its token.
    let args: Vec<String> = [
        "--test",
        "tcp-rr",
        "--duration",
        "0.5",
        "--warmup",
        "0",
        "--rcvbuf",
        "16M",
        "--force-buffers",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let bench = ex
        .bench(HostId(0), HostId(0), &args, Duration::from_secs(20))
        .unwrap();
    assert!(!bench.results.is_empty(), "{bench:?}");
    assert!(
        !bench.notes.iter().any(|n| n.contains("was clamped")),
        "{:?}",
        bench.notes
    );
    drop(s);
    let listening = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    assert!(!listening, "port {port} still served");
}
