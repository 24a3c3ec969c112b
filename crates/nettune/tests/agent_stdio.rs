//! `nettune agent --stdio` through the fleet crate's transports: each
//! request answers with the document the CLI's `--json` prints; broken
//! streams are answered and end the agent cleanly; a namespace reached with
//! `ip netns exec` (as root; skipped otherwise).

#![allow(clippy::unwrap_used)]

mod fixture_copy;

use fixture_copy::{assert_same, bin, copy, fixture, nettune, ok, text, tree};
use fleet::proto::{self, ErrorKind, Request, Response, MAX_REQUEST, MAX_RESPONSE};
use fleet::{Agent, AgentError, Local, Netns};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_nettune");
const T: Duration = Duration::from_secs(30);

fn local() -> Agent {
    Agent::connect(&Local { exe: EXE.into() }, "0.1.0", T).unwrap()
}

/// `nettune ARGS` parsed as JSON, and its exit code.
fn cli_json(args: &[&str]) -> (serde_json::Value, i32) {
    let o = bin().args(args).stdin(Stdio::null()).output().unwrap();
    let v =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&o)));
    (v, o.status.code().unwrap_or(-1))
}

#[test]
fn inspect_plan_and_doctor_answer_what_the_cli_prints() {
    let root = fixture("c4-8xlarge");
    let r = root.to_str().unwrap();
    let mut a = local();
    assert_eq!(a.peer().nettune_version, env!("CARGO_PKG_VERSION"));
    assert!(a.peer().caps.iter().any(|c| c == "inspect"));

    let (v, code) = a
        .json(
            &Request::Inspect {
                root: Some(root.clone()),
                iface: vec![],
            },
            T,
        )
        .unwrap();
    assert_eq!(
        (v, i32::from(code)),
        cli_json(&["inspect", "--json", "--root", r])
    );

    let (v, code) = a
        .json(
            &Request::Plan {
                profile: "throughput".into(),
                root: Some(root.clone()),
                iface: vec![],
                cpus: None,
                exclude_cpus: Some("2-3".into()),
                bdp: Some("10gbit,20ms".into()),
            },
            T,
        )
        .unwrap();
    let cli = cli_json(&[
        "plan",
        "--profile",
        "throughput",
        "--json",
        "--root",
        r,
        "--exclude-cpus",
        "2-3",
        "--bdp",
        "10gbit,20ms",
    ]);
    assert_eq!((v, i32::from(code)), cli);

    let doc = fixture("doctor");
    let dir = std::fs::read_dir(&doc)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .min()
        .unwrap_or(root.clone());
    let (v, code) = a
        .json(
            &Request::Doctor {
                seconds: None,
                root: Some(dir.clone()),
                profile: Some("latency".into()),
                bdp: None,
                allowance: None,
            },
            T,
        )
        .unwrap();
    let cli = cli_json(&[
        "doctor",
        "--json",
        "--root",
        dir.to_str().unwrap(),
        "--profile",
        "latency",
    ]);
    assert_eq!((v, i32::from(code)), cli, "doctor of {}", dir.display());
}

#[test]
fn errors_are_the_cli_messages_and_the_session_goes_on() {
    let mut a = local();
    let e = a
        .json(
            &Request::Inspect {
                root: Some("/nonexistent/nettune-root".into()),
                iface: vec![],
            },
            T,
        )
        .unwrap_err();
    match &e {
        AgentError::Remote { kind, message, .. } => {
            assert_eq!(*kind, ErrorKind::Failed);
            assert_eq!(message, "--root /nonexistent/nettune-root: not a directory");
        }
        e => panic!("{e}"),
    }
    let e = a
        .json(
            &Request::Plan {
                profile: "no-such-profile".into(),
                root: Some(fixture("c4-8xlarge")),
                iface: vec![],
                cpus: None,
                exclude_cpus: None,
                bdp: None,
            },
            T,
        )
        .unwrap_err();
    assert!(e.to_string().contains("no-such-profile"), "{e}");
    let c = copy("c4-8xlarge");
    let e = a
        .json(
            &Request::Apply {
                plan: serde_json::json!({"changes": "all of them"}),
                root: Some(c.root.clone()),
                state_dir: Some(c.state.clone()),
                force: false,
                replan: false,
                confirm_within: None,
                dry_run: false,
            },
            T,
        )
        .unwrap_err();
    assert!(
        matches!(&e, AgentError::Remote { kind: ErrorKind::Failed, message, .. } if message.starts_with("the request's plan: ")),
        "{e}"
    );
    assert!(a
        .json(
            &Request::Inspect {
                root: Some(fixture("c4-8xlarge")),
                iface: vec!["eth0".into()]
            },
            T
        )
        .is_ok());
}

#[test]
fn verify_and_history_answer_what_the_cli_prints() {
    let c = copy("c4-8xlarge");
    let mut a = local();
    let (root, state) = (Some(c.root.clone()), Some(c.state.clone()));
    let hist = |a: &mut Agent| {
        a.json(
            &Request::History {
                root: root.clone(),
                state_dir: state.clone(),
            },
            T,
        )
        .unwrap()
    };
    let verify = Request::Verify {
        root: root.clone(),
        state_dir: state.clone(),
    };
    // nothing applied: both say so
    let (v, _) = hist(&mut a);
    assert_eq!(
        v,
        serde_json::from_str::<serde_json::Value>(&ok(&c, &["history", "--json"])).unwrap()
    );
    let e = a.json(&verify, T).unwrap_err().to_string();
    let cli = nettune(&c, &["verify", "--json"]);
    assert_eq!(cli.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&cli.stderr);
    let msg = msg.trim().trim_start_matches("nettune: ");
    assert_eq!(e, format!("local: verify: {msg}"));

    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    std::fs::write(
        c.root.join("sys/class/net/eth0/queues/rx-1/rps_cpus"),
        "0\n",
    )
    .unwrap();
    let (v, code) = a.json(&verify, T).unwrap();
    let cli = nettune(&c, &["verify", "--json"]);
    assert_eq!(code, 3);
    assert_eq!(cli.status.code(), Some(3));
    assert_eq!(
        v,
        serde_json::from_slice::<serde_json::Value>(&cli.stdout).unwrap()
    );
    let (v, _) = hist(&mut a);
    assert_eq!(v["generations"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        v,
        serde_json::from_str::<serde_json::Value>(&ok(&c, &["history", "--json"])).unwrap()
    );
}

#[test]
fn apply_and_rollback_answer_what_the_cli_prints_and_restore_the_copy() {
    // The same plan applied to two copies: by the agent and by the CLI.
    let (ca, cb) = (copy("c4-8xlarge"), copy("c4-8xlarge"));
    let before = tree(&ca.root);
    let mut a = local();
    let (plan, _) = a
        .json(
            &Request::Plan {
                profile: "throughput".into(),
                root: Some(ca.root.clone()),
                iface: vec![],
                cpus: None,
                exclude_cpus: None,
                bdp: None,
            },
            T,
        )
        .unwrap();
    let file = cb.outside("plan.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
    let (v, code) = a
        .json(
            &Request::Apply {
                plan,
                root: Some(ca.root.clone()),
                state_dir: Some(ca.state.clone()),
                force: false,
                replan: false,
                confirm_within: None,
                dry_run: false,
            },
            T,
        )
        .unwrap();
    let cli = ok(
        &cb,
        &["apply", "--plan", file.to_str().unwrap(), "--yes", "--json"],
    );
    assert_eq!(code, 0);
    assert_eq!(v, serde_json::from_str::<serde_json::Value>(&cli).unwrap());
    assert!(
        v["changes"].as_array().is_some_and(|c| !c.is_empty()),
        "{v}"
    );

    let (v, code) = a
        .json(
            &Request::Verify {
                root: Some(ca.root.clone()),
                state_dir: Some(ca.state.clone()),
            },
            T,
        )
        .unwrap();
    assert_eq!((v["drift"].as_u64(), code), (Some(0), 0), "{v}");

    let (v, code) = a
        .json(
            &Request::Rollback {
                root: Some(ca.root.clone()),
                state_dir: Some(ca.state.clone()),
                id: None,
                force: false,
            },
            T,
        )
        .unwrap();
    let cli = ok(&cb, &["rollback", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(v, serde_json::from_str::<serde_json::Value>(&cli).unwrap());
    assert_same(&before, &tree(&ca.root));
}

/// A raw agent child: its stdin, stdout, and the child.
fn raw() -> std::process::Child {
    Command::new(EXE)
        .args(["agent", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait (bounded) for the child's end: exit code and stderr.
fn finish(mut c: std::process::Child) -> (Option<i32>, String) {
    let start = Instant::now();
    loop {
        if let Some(st) = c.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (st.code(), err);
        }
        if start.elapsed() > T {
            let _ = c.kill();
            let _ = c.wait();
            panic!("the agent did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn an_oversized_frame_is_answered_and_the_agent_exits() {
    let mut c = raw();
    let mut w = c.stdin.take().unwrap();
    let mut r = c.stdout.take().unwrap();
    proto::write_preamble(&mut w).unwrap();
    let len = u32::try_from(MAX_REQUEST + 1).unwrap();
    w.write_all(&len.to_be_bytes()).unwrap();
    w.write_all(b"{\"type\":").unwrap();
    w.flush().unwrap();
    assert_eq!(proto::read_preamble(&mut r).unwrap(), proto::PROTO_VERSION);
    let m: Response = proto::read_msg(&mut r, MAX_RESPONSE).unwrap();
    assert!(
        matches!(&m, Response::Error { kind: ErrorKind::TooLarge, message } if message.contains("262145")),
        "{m:?}"
    );
    let (code, err) = finish(c);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.starts_with("nettune: agent: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_malformed_frame_is_answered_and_end_of_input_is_a_clean_exit() {
    let mut c = raw();
    let mut w = c.stdin.take().unwrap();
    let mut r = c.stdout.take().unwrap();
    proto::write_preamble(&mut w).unwrap();
    w.write_all(&5u32.to_be_bytes()).unwrap();
    w.write_all(b"{nope").unwrap();
    proto::write_frame(
        &mut w,
        &serde_json::json!({"type": "inspect", "root": 7}),
        MAX_REQUEST,
    )
    .unwrap();
    proto::write_frame(&mut w, &Request::Hello, MAX_REQUEST).unwrap();
    drop(w);
    proto::read_preamble(&mut r).unwrap();
    for _ in 0..2 {
        let m: Response = proto::read_msg(&mut r, MAX_RESPONSE).unwrap();
        assert!(
            matches!(
                m,
                Response::Error {
                    kind: ErrorKind::BadRequest,
                    ..
                }
            ),
            "{m:?}"
        );
    }
    let m: Response = proto::read_msg(&mut r, MAX_RESPONSE).unwrap();
    assert!(matches!(m, Response::Hello { .. }), "{m:?}");
    assert_eq!(finish(c), (Some(0), String::new()));
}

#[test]
fn a_controller_gone_mid_answer_is_a_quiet_exit() {
    let mut c = raw();
    let mut w = c.stdin.take().unwrap();
    let r = c.stdout.take().unwrap();
    drop(r);
    proto::write_preamble(&mut w).unwrap();
    let q = Request::Inspect {
        root: Some(fixture("c4-8xlarge")),
        iface: vec![],
    };
    proto::write_frame(&mut w, &q, MAX_REQUEST).unwrap();
    drop(w);
    assert_eq!(finish(c), (Some(0), String::new()));
}

#[test]
fn another_protocol_version_is_refused_naming_both() {
    let mut c = raw();
    let mut w = c.stdin.take().unwrap();
    let mut r = c.stdout.take().unwrap();
    let mut pre = b"NTAG".to_vec();
    pre.extend_from_slice(&99u16.to_be_bytes());
    w.write_all(&pre).unwrap();
    w.flush().unwrap();
    proto::read_preamble(&mut r).unwrap();
    let m: Response = proto::read_msg(&mut r, MAX_RESPONSE).unwrap();
    assert!(
        matches!(&m, Response::Error { kind: ErrorKind::Version, message } if message.contains("v99") && message.contains("v1")),
        "{m:?}"
    );
    let (code, err) = finish(c);
    assert_eq!(code, Some(1), "{err}");
}

#[test]
fn a_transport_that_is_not_an_agent_is_named_with_its_stderr() {
    // `nettune agent` without --stdio: clap's usage error on stderr, no preamble.
    #[derive(Debug)]
    struct NoStdio;
    impl fleet::Transport for NoStdio {
        fn argv(&self) -> Result<Vec<std::ffi::OsString>, fleet::transport::TransportError> {
            Ok(vec![EXE.into(), "agent".into()])
        }
        fn describe(&self) -> String {
            "broken".into()
        }
    }
    let e = Agent::connect(&NoStdio, "0.1.0", T)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("broken: the agent pipe closed"), "{e}");
    assert!(e.contains("--stdio"), "{e}");
}

/// A network namespace `ntag-<pid>-<name>`, deleted on drop.
struct Ns(String);

impl Ns {
    fn new(name: &str) -> Ns {
        let n = format!("ntag-{}-{name}", std::process::id());
        let st = Command::new("ip")
            .args(["netns", "add", &n])
            .status()
            .unwrap();
        assert!(st.success(), "ip netns add {n}");
        Ns(n)
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn a_namespace_through_ip_netns_exec() {
    if !lab::require_root("agent_stdio::a_namespace_through_ip_netns_exec") {
        return;
    }
    let ns = Ns::new("a");
    let t = Netns {
        name: ns.0.clone(),
        exe: PathBuf::from(EXE),
    };
    let mut a = Agent::connect(&t, "0.1.0", T).unwrap();
    assert_eq!(a.name(), format!("netns {}", ns.0));
    let (v, _) = a
        .json(
            &Request::Inspect {
                root: None,
                iface: vec![],
            },
            T,
        )
        .unwrap();
    // A fresh namespace has only its loopback.
    let names: Vec<&str> = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["name"].as_str())
        .collect();
    assert_eq!(names, ["lo"], "{v}");
    let (v, code) = a
        .json(
            &Request::Doctor {
                seconds: Some(0.2),
                root: None,
                profile: None,
                bdp: None,
                allowance: None,
            },
            T,
        )
        .unwrap();
    assert!(v["findings"].is_array(), "{v}");
    assert!(code <= 2);
    drop(a);
    drop(ns);
}

/// A private sshd on a free loopback port (root only), killed on drop.
struct Sshd {
    child: std::process::Child,
    port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &std::path::Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "ssh-keygen {}", path.display());
}

/// Start sshd with only `dir`'s host key and authorized key, listening on
/// 127.0.0.1; `None` (with the reason printed) when it cannot run here.
fn sshd(dir: &std::path::Path) -> Option<Sshd> {
    let have = |p: &str| std::path::Path::new(p).exists();
    if !have("/usr/sbin/sshd") || !have("/run/sshd") {
        eprintln!(
            "skipping: no /usr/sbin/sshd or no /run/sshd (its privilege separation directory)"
        );
        return None;
    }
    keygen(&dir.join("host"));
    keygen(&dir.join("client"));
    std::fs::copy(dir.join("client.pub"), dir.join("authorized_keys")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = dir.join("sshd_config");
    std::fs::write(
        &cfg,
        format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\n\
             PidFile {}\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n",
            dir.join("host").display(),
            dir.join("authorized_keys").display(),
            dir.join("sshd.pid").display(),
        ),
    )
    .unwrap();
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(&cfg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let d = Sshd { child, port };
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "sshd did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(d)
}

#[test]
fn ssh_to_a_loopback_sshd_with_a_multiplexed_connection() {
    if !lab::require_root("agent_stdio::ssh_to_a_loopback_sshd_with_a_multiplexed_connection") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let Some(d) = sshd(t.path()) else {
        return;
    };
    let control = t.path().join("cm-%C").display().to_string();
    let s = fleet::Ssh {
        user: Some("root".into()),
        port: Some(d.port),
        identity: Some(t.path().join("client")),
        // hermetic: not the machine's ~/.ssh/config or known_hosts
        extra: vec![
            "-F".into(),
            "/dev/null".into(),
            "-o".into(),
            format!(
                "UserKnownHostsFile={}",
                t.path().join("known_hosts").display()
            ),
            "-o".into(),
            "StrictHostKeyChecking=accept-new".into(),
        ],
        control_path: control.clone(),
        remote_exe: EXE.into(),
        ..fleet::Ssh::new("127.0.0.1")
    };
    let root = fixture("c4-8xlarge");
    let want = cli_json(&["inspect", "--json", "--root", root.to_str().unwrap()]);
    for round in 0..2 {
        // the second session goes through the first one's master connection
        let mut a = Agent::connect(&s, "0.1.0", T).unwrap();
        assert_eq!(a.name(), format!("ssh root@127.0.0.1:{}", d.port));
        let (v, code) = a
            .json(
                &Request::Inspect {
                    root: Some(root.clone()),
                    iface: vec![],
                },
                T,
            )
            .unwrap();
        assert_eq!((v, i32::from(code)), want, "round {round}");
    }
    let sockets = std::fs::read_dir(t.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("cm-")
        })
        .count();
    assert_eq!(sockets, 1, "one master connection");
    // A key sshd does not know: BatchMode fails at once, ssh's reason quoted.
    keygen(&t.path().join("stranger"));
    let bad = fleet::Ssh {
        identity: Some(t.path().join("stranger")),
        control_path: t.path().join("other-%C").display().to_string(),
        ..s.clone()
    };
    let e = Agent::connect(&bad, "0.1.0", T).unwrap_err().to_string();
    assert!(e.contains("Permission denied"), "{e}");
    // A host without nettune on its PATH: the shell's reason is quoted; then
    // this binary is copied there (a test version, removed afterwards) and runs.
    let missing = fleet::Ssh {
        remote_exe: "nettune-not-installed-here".into(),
        ..s.clone()
    };
    let e = Agent::connect(&missing, "0.1.0", T)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not found"), "{e}");
    let version = format!("0.0.0-agent-test-{}", std::process::id());
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let cache = home.join(fleet::install::INSTALL_DIR);
    let had_cache = cache.exists();
    let copied = home.join(fleet::install::remote_path(&version));
    let installed = fleet::install::install(&s, std::path::Path::new(EXE), &version, T);
    let run = installed.as_ref().map(|i| {
        let mut a = Agent::connect(i, "0.1.0", T).unwrap();
        a.json(
            &Request::Inspect {
                root: Some(root.clone()),
                iface: vec![],
            },
            T,
        )
        .unwrap()
    });
    let same = std::fs::read(&copied).ok() == std::fs::read(EXE).ok();
    let _ = std::fs::remove_file(&copied);
    if !had_cache {
        let _ = std::fs::remove_dir(&cache);
    }
    let (v, code) = run.unwrap();
    assert_eq!((v, i32::from(code)), want, "the copy answers");
    assert!(same, "the copy is this binary");
    // End the master (ControlPersist would keep it 60 s).
    let _ = Command::new("ssh")
        .args(["-F", "/dev/null", "-o"])
        .arg(format!("ControlPath={control}"))
        .args([
            "-O",
            "exit",
            "-p",
            &d.port.to_string(),
            "-l",
            "root",
            "127.0.0.1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    drop(d);
}

/// Whether process `pid` still runs (a zombie counts as gone).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The children of `pid` (from /proc/*/stat).
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|x| x.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_server_an_agent_started_goes_when_the_agent_is_killed() {
    let mut c = raw();
    let mut w = c.stdin.take().unwrap();
    let mut r = c.stdout.take().unwrap();
    proto::write_preamble(&mut w).unwrap();
    proto::read_preamble(&mut r).unwrap();
    let serve = serde_json::json!({"type": "serve", "port": 0, "lifetime": 600});
    proto::write_frame(&mut w, &serve, MAX_REQUEST).unwrap();
    let m: Response = proto::read_msg(&mut r, MAX_RESPONSE).unwrap();
    assert!(matches!(m, Response::Json { .. }), "{m:?}");
    let kids = children(c.id());
    assert_eq!(kids.len(), 1, "one nettune serve child: {kids:?}");
    let server = kids[0];
    assert!(running(server));
    // SIGKILL: the agent cannot stop its server itself.
    c.kill().unwrap();
    c.wait().unwrap();
    let end = Instant::now() + T;
    while running(server) {
        assert!(
            Instant::now() < end,
            "nettune serve {server} outlived its agent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An apply whose plan writes a knob the host lacks is answered with the
/// error kind `knob_absent`, as `nettune apply` exits 5 for it: the
/// controller's executor tells it from other failures by the kind, never by
/// the message (issue 36). The copy is left as it was.
#[test]
fn an_absent_knob_is_answered_as_its_own_kind() {
    let c = copy("c4-8xlarge");
    let mut a = local();
    let (plan, _) = a
        .json(
            &Request::Plan {
                profile: "throughput".into(),
                root: Some(c.root.clone()),
                iface: vec![],
                cpus: None,
                exclude_cpus: None,
                bdp: None,
            },
            T,
        )
        .unwrap();
    // A sysctl the plan writes, removed from the copy since.
    let path = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["target"]["path"].as_str())
        .find(|p| p.starts_with("/proc/sys/"))
        .unwrap()
        .to_string();
    std::fs::remove_file(c.root.join(path.trim_start_matches('/'))).unwrap();
    let before = tree(&c.root);
    let req = Request::Apply {
        plan,
        root: Some(c.root.clone()),
        state_dir: Some(c.state.clone()),
        force: true,
        replan: false,
        confirm_within: None,
        dry_run: false,
    };
    let e = a.json(&req, T).unwrap_err();
    assert!(
        matches!(&e, AgentError::Remote { kind: ErrorKind::KnobAbsent, message, .. } if message.contains(&path)),
        "{e}"
    );
    assert_eq!(fleet::fanout::Failure::from(e).kind, "knob_absent");
    assert_same(&before, &tree(&c.root));
}
