#![allow(clippy::unwrap_used)]
use super::*;

fn v(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn flags_the_agent_requests_carry() {
    let a = v(&["--sample", "2", "--profile", "latency"]);
    assert_eq!(flag(&a, "--profile").map(String::as_str), Some("latency"));
    assert_eq!(flag(&a, "--bdp"), None);
    assert!(only(&a, &["--sample", "--profile"]).is_ok());
    assert_eq!(only(&v(&["--json"]), &["--sample"]), Err("--json"));
}

#[test]
fn a_closed_pipe_loses_the_host_and_a_timeout_only_ends_the_session() {
    let job = Job {
        host: "web1".into(),
        transport: model::inventory::Transport::Local,
        root: None,
        state_dir: None,
        remote_exe: None,
    };
    let mut slot = Slot {
        job,
        session: Shared::default(),
        lost: None,
        applied: Some(4),
    };
    let d = Duration::from_secs(5);
    let t = failed(
        &mut slot,
        "bench",
        Failure {
            kind: "timeout",
            message: "local: no answer".into(),
        },
        d,
    );
    assert!(matches!(t, ExecError::Timeout { .. }), "{t}");
    assert!(slot.lost.is_none());
    let e = failed(
        &mut slot,
        "bench",
        Failure {
            kind: "protocol",
            message: "local: the agent pipe closed".into(),
        },
        d,
    );
    assert_eq!(
        e.to_string(),
        "host web1 was lost: local: the agent pipe closed"
    );
    assert_eq!(slot.lost.as_deref(), Some("local: the agent pipe closed"));
    let r = failed(
        &mut slot,
        "apply",
        Failure {
            kind: "remote",
            message: "x".into(),
        },
        d,
    );
    assert!(matches!(r, ExecError::Failed { .. }));
}

fn cfg() -> Config {
    Config {
        opts: Options {
            parallel: 1,
            deadline: Duration::from_secs(5),
            copy: false,
            version: "0.1.0".into(),
            exe: "/nonexistent/nettune".into(),
        },
        confirm_within: Some(60),
        token: None,
    }
}

#[test]
fn a_lost_host_is_named_with_what_stays_applied_and_gets_nothing_more() {
    let job = Job {
        host: "cli".into(),
        transport: model::inventory::Transport::Local,
        root: None,
        state_dir: None,
        remote_exe: None,
    };
    let mut ex = FleetExecutor::new(vec![job], cfg());
    ex.hosts[0].applied = Some(7);
    ex.hosts[0].lost = Some("the agent pipe closed".into());
    assert_eq!(
        ex.lost(),
        [LostHost {
            host: "cli".into(),
            reason: "the agent pipe closed".into(),
            generation: Some(7),
        }]
    );
    assert!(matches!(
        ex.inspect(HostId(0)),
        Err(ExecError::HostLost { .. })
    ));
    assert!(matches!(
        ex.rollback(HostId(0)),
        Err(ExecError::HostLost { .. })
    ));
    assert!(matches!(ex.inspect(HostId(3)), Err(ExecError::NoHost(_))));
}

#[test]
fn a_synchronized_run_names_a_lost_host_and_sends_it_nothing() {
    let job = |h: &str| Job {
        host: h.into(),
        transport: model::inventory::Transport::Local,
        root: None,
        state_dir: None,
        remote_exe: None,
    };
    let args = v(&["--test", "tcp-rr", "--duration", "1"]);
    let d = Duration::from_secs(5);
    let mut ex = FleetExecutor::new(vec![job("srv"), job("c1"), job("c2")], cfg());
    ex.load_from(vec![HostId(1), HostId(2)]);
    // A client lost before: the run does not start.
    ex.hosts[2].lost = Some("the agent pipe closed".into());
    let e = ex.bench(HostId(1), HostId(0), &args, d).unwrap_err();
    assert_eq!(e.to_string(), "host c2 was lost: the agent pipe closed");
    // The server's agent cannot be started (no such nettune): it is
    // lost, named, and gets nothing more.
    ex.hosts[2].lost = None;
    let e = ex.bench(HostId(1), HostId(0), &args, d).unwrap_err();
    assert!(
        matches!(&e, ExecError::HostLost { host, .. } if host == "srv"),
        "{e}"
    );
    assert_eq!(ex.lost().len(), 1);
    assert!(matches!(
        ex.inspect(HostId(0)),
        Err(ExecError::HostLost { .. })
    ));
}

#[test]
fn the_server_address_as_fleet_bench_chooses_it() {
    let inv = model::inventory::parse(
        "[[host]]\nname = \"srv\"\ntransport = \"ssh\"\naddress = \"10.0.0.1\"\n\
         [[host]]\nname = \"a\"\ntransport = \"local\"\nlabels = { server_address = \"192.168.1.1\" }\n\
         [[host]]\nname = \"b\"\ntransport = \"local\"\n",
        model::inventory::Format::Toml,
    )
    .unwrap();
    assert_eq!(server_address(&inv, "a", "srv", true, None), "192.168.1.1");
    assert_eq!(server_address(&inv, "b", "srv", true, Some("x")), "x");
    assert_eq!(server_address(&inv, "b", "srv", true, None), "10.0.0.1");
    assert_eq!(server_address(&inv, "a", "b", false, None), "b");
}

/// A guest's agent port as QEMU serves it: one connection at a time (a
/// second waits in the listen queue, unanswered, until the first closes),
/// the wake byte, then the agent protocol. Each request's type is recorded.
fn one_at_a_time_guest(path: &std::path::Path) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use crate::proto::Response;
    use std::io::Read;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let l = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let mut r = conn.unwrap();
            let mut w = r.try_clone().unwrap();
            let mut wake = [0u8; 1];
            if r.read_exact(&mut wake).is_err() {
                continue;
            }
            let _ = crate::serve::serve(&mut r, &mut w, "0.1.0", &[], |req| {
                log.lock().unwrap().push(req.name().to_string());
                let value = match req {
                    Request::History { .. } => serde_json::json!({"generations": []}),
                    Request::Apply { .. } => {
                        serde_json::json!({"schema_version": 1, "changes": [], "generation": 5})
                    }
                    _ => serde_json::json!({}),
                };
                Response::Json { value, code: 0 }
            });
        }
    });
    seen
}

/// Regression: an experiment's apply on a guest connected a second session
/// while its long-lived one held the guest's only agent port, and waited
/// until the deadline ("connecting to apply: ... no answer to hello"): the
/// host was lost and no level was ever set on a guest. Now the long-lived
/// session is ended first and the next step connects again.
#[test]
fn an_apply_on_a_guest_ends_the_long_lived_session_first() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("agent.sock");
    let seen = one_at_a_time_guest(&sock);
    let job = Job {
        host: "server".into(),
        transport: model::inventory::Transport::Guest {
            socket: sock.to_string_lossy().into_owned(),
        },
        root: None,
        state_dir: None,
        remote_exe: None,
    };
    let mut ex = FleetExecutor::new(vec![job], cfg());
    assert!(ex.connect_all().is_empty());
    let plan: Plan = serde_json::from_value(serde_json::json!({
        "schema_version": 1, "profile": "experiment", "fingerprint": "f", "hostname": null,
        "options": {}, "scope": "init", "changes": [], "notes": []
    }))
    .unwrap();
    ex.apply(HostId(0), &plan).unwrap();
    assert_eq!(ex.hosts[0].applied, Some(5));
    assert!(ex.lost().is_empty());
    // The rollback goes over a long-lived session again.
    ex.rollback(HostId(0)).unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["history", "apply", "rollback"], "{seen:?}");
}

/// A guest's agent port serving `caps` (one connection at a time, as
/// [`one_at_a_time_guest`]): `drops_start` answers that it watches,
/// `drops_finish` 7 drops of NO_SOCKET under its kernel's host name (or,
/// with `dies`, the agent goes away: its pipe closes). Each connection is
/// logged as `connect`, each request by its type.
fn drops_guest(
    path: &std::path::Path,
    caps: &'static [&'static str],
    dies: bool,
) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use crate::proto::Response;
    use std::io::Read;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let l = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let mut r = conn.unwrap();
            let mut w = r.try_clone().unwrap();
            let mut wake = [0u8; 1];
            if r.read_exact(&mut wake).is_err() {
                continue;
            }
            log.lock().unwrap().push("connect".to_string());
            // The agent of this connection may go (its pipe closes); the
            // port stays, for the next connection.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::serve::serve(&mut r, &mut w, "0.1.0", caps, |req| {
                    log.lock().unwrap().push(req.name().to_string());
                    let value = match req {
                        Request::DropsStart { .. } => serde_json::json!({"watching": true}),
                        Request::DropsFinish if dies => {
                            std::panic::resume_unwind(Box::new("killed"))
                        }
                        Request::DropsFinish => serde_json::json!({
                            "host": "guest-kernel", "seconds": 1.5, "total": 7, "exact": true,
                            "reasons": [{"name": "NO_SOCKET", "count": 7, "per_sec": 4.7}]
                        }),
                        _ => serde_json::json!({}),
                    };
                    Response::Json { value, code: 0 }
                })
            }));
        }
    });
    seen
}

/// Issue 39: a fleet's agents record each run's drops by reason over the
/// sessions the run already has: one entry per distinct host, named by
/// the inventory; an agent that does not serve `drops_start` (older) is
/// sent nothing and gives one line. Before, every host's entry was
/// "not recorded (its executor does not watch them)".
#[test]
fn each_host_of_a_run_records_its_drops_over_its_own_session() {
    let d = tempfile::tempdir().unwrap();
    let (new_sock, old_sock) = (d.path().join("new.sock"), d.path().join("old.sock"));
    let new = drops_guest(&new_sock, &["drops_start", "drops_finish"], false);
    let old = drops_guest(&old_sock, &["inspect"], false);
    let job = |h: &str, sock: &std::path::Path| Job {
        host: h.into(),
        transport: model::inventory::Transport::Guest {
            socket: sock.to_string_lossy().into_owned(),
        },
        root: None,
        state_dir: None,
        remote_exe: None,
    };
    let mut ex = FleetExecutor::new(vec![job("srv", &new_sock), job("cli", &old_sock)], cfg());
    assert!(ex.connect_all().is_empty());

    let drops = ex.watch_drops(HostId(1), HostId(0)).finish();
    assert_eq!(drops.len(), 2, "{drops:?}");
    assert_eq!(drops[0].host, "srv");
    let seen = drops[0].counts().unwrap();
    assert_eq!((seen.total, seen.exact), (7, true));
    assert_eq!(seen.reasons[0].name, "NO_SOCKET");
    assert_eq!(drops[1].host, "cli");
    let why = drops[1].why_not().unwrap();
    assert!(
        why.starts_with("drops by reason: not recorded on cli: its agent (nettune 0.1.0) is older"),
        "{why}"
    );
    assert_ne!(why, runner::exec::NOT_RECORDED);

    // Client and server on one host: one watch, one entry.
    let drops = ex.watch_drops(HostId(0), HostId(0)).finish();
    assert_eq!(drops.len(), 1, "{drops:?}");
    assert_eq!(drops[0].counts().map(|c| c.total), Some(7));

    // Everything went over the one session each host had: no second
    // connection (a guest's port would hang on it), nothing sent to the
    // older agent.
    let new = new.lock().unwrap().clone();
    assert_eq!(
        new,
        [
            "connect",
            "drops_start",
            "drops_finish",
            "drops_start",
            "drops_finish"
        ],
        "{new:?}"
    );
    assert_eq!(old.lock().unwrap().clone(), ["connect"]);
    assert!(ex.lost().is_empty());
}

/// An agent whose pipe closes at `drops_finish` is lost at the run's next
/// step, as if that step had seen the pipe close; the run's entry says why.
#[test]
fn an_agent_gone_at_drops_finish_is_lost_at_the_next_step() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("dies.sock");
    let seen = drops_guest(&sock, &["drops_start", "drops_finish"], true);
    let job = Job {
        host: "srv".into(),
        transport: model::inventory::Transport::Guest {
            socket: sock.to_string_lossy().into_owned(),
        },
        root: None,
        state_dir: None,
        remote_exe: None,
    };
    let mut ex = FleetExecutor::new(vec![job], cfg());
    assert!(ex.connect_all().is_empty());
    let drops = ex.watch_drops(HostId(0), HostId(0)).finish();
    let why = drops[0].why_not().unwrap_or_default().to_string();
    assert!(
        why.starts_with("drops by reason: not recorded on srv: "),
        "{why}"
    );
    assert!(matches!(
        ex.inspect(HostId(0)),
        Err(ExecError::HostLost { host, .. }) if host == "srv"
    ));
    assert_eq!(ex.lost().len(), 1);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["connect", "drops_start", "drops_finish"], "{seen:?}");
}
