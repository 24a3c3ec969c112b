//! Fanning a fleet command out: inventory transports to fleet transports,
//! a bounded pool of worker threads, and one session per host under a
//! per-host deadline, refreshing (or naming) an agent of another version.

use crate::client::{Agent, AgentError};
use crate::install::{install, remote_path, InstallError};
use crate::proto::{ErrorKind, Request};
use crate::transport::{GuestSocket, Kubectl, Local, Named, Netns, Ssh, Transport};
use model::inventory::Transport as InvTransport;
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How a fleet run reaches its hosts.
#[derive(Debug, Clone)]
pub struct Options {
    /// Hosts served at once (at least 1).
    pub parallel: usize,
    /// Each host's deadline: connecting, copying nettune and every request.
    pub deadline: Duration,
    /// May copy this nettune to an ssh host whose agent is missing or
    /// another version (`--no-copy` clears it).
    pub copy: bool,
    /// This controller's nettune version.
    pub version: String,
    /// This nettune binary (run by the local and netns transports, copied by ssh).
    pub exe: PathBuf,
}

/// One host to reach: its name, transport and per-host `--root`/`--state-dir`.
#[derive(Debug, Clone)]
pub struct Job {
    /// Inventory name.
    pub host: String,
    /// How to reach it.
    pub transport: InvTransport,
    /// `--root` on that host.
    pub root: Option<PathBuf>,
    /// `--state-dir` on that host.
    pub state_dir: Option<PathBuf>,
    /// The remote program of an ssh or kubectl host (its `nettune` label);
    /// `None`: `nettune` on the remote `PATH`.
    pub remote_exe: Option<String>,
}

/// Why a host failed, as reported: a short kind and the one-line reason
/// (ssh's own words, the agent's error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// `transport`, `version`, `timeout`, `protocol`, `remote`,
    /// `knob_absent` and `not_root` (an apply's typed failures), `install`,
    /// `refused` (a plan naming a target nettune does not plan), `limit`
    /// (the command's answers passed [`crate::ops::MAX_KEPT`]).
    pub kind: &'static str,
    /// The reason.
    pub message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<AgentError> for Failure {
    fn from(e: AgentError) -> Failure {
        let kind = match &e {
            AgentError::Transport { .. } => "transport",
            AgentError::Version { .. } => "version",
            AgentError::Timeout { .. } => "timeout",
            AgentError::Remote {
                kind: ErrorKind::KnobAbsent,
                ..
            } => "knob_absent",
            AgentError::Remote {
                kind: ErrorKind::NotRoot,
                ..
            } => "not_root",
            AgentError::Remote { .. } => "remote",
            AgentError::Proto { .. } | AgentError::Unexpected { .. } | AgentError::Ended { .. } => {
                "protocol"
            }
        };
        Failure {
            kind,
            message: e.to_string(),
        }
    }
}

impl From<InstallError> for Failure {
    fn from(e: InstallError) -> Failure {
        Failure {
            kind: "install",
            message: e.to_string(),
        }
    }
}

/// The fleet transport of an inventory host: the local and netns ones run
/// `exe`; a kubectl host without a container gets [`Kubectl::new`]'s; an
/// ssh or kubectl host runs `remote_exe` (its `nettune` label) when given.
pub fn transport_of(t: &InvTransport, exe: &Path, remote_exe: Option<&str>) -> Box<dyn Transport> {
    match t {
        InvTransport::Local => Box::new(Local {
            exe: exe.to_path_buf(),
        }),
        InvTransport::Netns { name } => Box::new(Netns {
            name: name.clone(),
            exe: exe.to_path_buf(),
        }),
        InvTransport::Ssh { .. } => Box::new(ssh_of(t, remote_exe).unwrap_or_else(|| Ssh::new(""))),
        InvTransport::Kubectl {
            pod,
            namespace,
            container,
            context,
        } => {
            let mut k = Kubectl::new(pod.clone());
            k.namespace.clone_from(namespace);
            if let Some(c) = container {
                k.container.clone_from(c);
            }
            k.context.clone_from(context);
            if let Some(r) = remote_exe {
                k.remote_exe = r.to_string();
            }
            Box::new(k)
        }
        InvTransport::Guest { socket } => Box::new(GuestSocket {
            socket: PathBuf::from(socket),
        }),
    }
}

/// The [`Ssh`] transport of an ssh inventory host (`None` for another
/// transport), running `remote_exe` when given.
pub fn ssh_of(t: &InvTransport, remote_exe: Option<&str>) -> Option<Ssh> {
    let InvTransport::Ssh {
        address,
        user,
        port,
        jump,
        identity_file,
        ssh_args,
    } = t
    else {
        return None;
    };
    let mut s = Ssh::new(address.clone());
    s.user.clone_from(user);
    s.port = *port;
    s.jump.clone_from(jump);
    s.identity = identity_file.as_ref().map(PathBuf::from);
    s.extra.clone_from(ssh_args);
    if let Some(r) = remote_exe {
        s.remote_exe = r.to_string();
    }
    Some(s)
}

/// Run `f` on every item with at most `parallel` at once (std threads);
/// the results are in the items' order.
pub fn fan_out<T, R, F>(items: &[T], parallel: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let workers = parallel.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let (Some(item), Some(slot)) = (items.get(i), slots.get(i)) else {
                    break;
                };
                let r = f(item);
                if let Ok(mut g) = slot.lock() {
                    *g = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .filter_map(|m| m.into_inner().ok().flatten())
        .collect()
}

/// A session with one host under its deadline.
#[derive(Debug)]
pub struct Session {
    agent: Agent,
    end: Instant,
    deadline: Duration,
}

impl Session {
    /// Connect to `job`'s host within `opts.deadline` (see [`connect_via`](Self::connect_via)).
    pub fn connect(job: &Job, opts: &Options) -> Result<Session, Failure> {
        let exe = job.remote_exe.as_deref();
        let first = transport_of(&job.transport, &opts.exe, exe);
        let ssh = ssh_of(&job.transport, exe);
        Session::connect_via(&job.host, first.as_ref(), ssh.as_ref(), opts)
    }

    /// [`connect`](Self::connect) to the host named `host` in the inventory
    /// with `first`; `ssh` is the host's ssh transport (the one a copy goes
    /// through), `None` for another kind. The session, and every failure of
    /// it, names the host by `host` first and its transport after
    /// ([`Named`]). An agent of another version (or protocol, or none) fails
    /// the host naming both versions, except on an ssh host: there a copy an
    /// earlier run made (`~/.cache/nettune/nettune-VERSION`) is tried, then
    /// (unless `--no-copy`) a new copy is made.
    pub fn connect_via(
        host: &str,
        first: &dyn Transport,
        ssh: Option<&Ssh>,
        opts: &Options,
    ) -> Result<Session, Failure> {
        let end = Instant::now() + opts.deadline;
        let session = |agent| Session {
            agent,
            end,
            deadline: opts.deadline,
        };
        let named = |inner| Named { host, inner };
        let failure = match Agent::connect(&named(first), &opts.version, left(end)) {
            Ok(a) if a.peer().nettune_version == opts.version => return Ok(session(a)),
            Ok(a) => Failure {
                kind: "version",
                message: format!(
                    "{}: the agent is nettune {}, this controller {}; install the same version there{}",
                    a.name(),
                    a.peer().nettune_version,
                    opts.version,
                    if ssh.is_some() { " (or drop --no-copy)" } else { "" }
                ),
            },
            Err(e) if ssh.is_some_and(|s| replaceable(&e, &s.remote_exe)) => e.into(),
            Err(e) => return Err(e.into()),
        };
        let Some(s) = ssh else {
            return Err(failure);
        };
        let cached = Ssh {
            remote_exe: remote_path(&opts.version),
            ..s.clone()
        };
        if let Ok(a) = Agent::connect(&named(&cached), &opts.version, left(end)) {
            if a.peer().nettune_version == opts.version {
                return Ok(session(a));
            }
        }
        if !opts.copy {
            return Err(failure);
        }
        Ok(session(refreshed(host, s, opts, end)?))
    }

    /// Give the session a fresh deadline of `deadline` from now: a
    /// long-lived session (`nettune experiment` on a fleet,
    /// [`crate::executor`]) bounds each step, not its whole life.
    pub fn renew(&mut self, deadline: Duration) {
        self.end = Instant::now() + deadline;
        self.deadline = deadline;
    }

    /// The agent's name ([`Transport::describe`]).
    pub fn name(&self) -> &str {
        self.agent.name()
    }

    /// What the agent said in its `hello` (its version, the requests it serves).
    pub fn peer(&self) -> &crate::client::PeerInfo {
        self.agent.peer()
    }

    /// One request within what is left of the host's deadline.
    pub fn json(&mut self, req: &Request) -> Result<(serde_json::Value, u8), Failure> {
        if Instant::now() >= self.end {
            return Err(Failure {
                kind: "timeout",
                message: format!(
                    "{}: {} not sent: the host's {:?} deadline passed",
                    self.agent.name(),
                    req.name(),
                    self.deadline
                ),
            });
        }
        Ok(self.agent.json(req, left(self.end))?)
    }
}

fn left(end: Instant) -> Duration {
    end.saturating_duration_since(Instant::now())
}

/// A failure a fresh copy of nettune may cure: another protocol version, or
/// a pipe that closed before the preamble because the remote program `exe`
/// is missing (`nettune: command not found`; bash's `/path/nettune: No such
/// file or directory` for a `nettune` label naming a missing path). The
/// line must name `exe`: ssh's own complaints (a missing identity file) are
/// not cured by a copy.
fn replaceable(e: &AgentError, exe: &str) -> bool {
    match e {
        AgentError::Version { .. } => true,
        AgentError::Proto { stderr, .. } => stderr.lines().any(|l| {
            l.contains(&format!("{exe}: "))
                && (l.contains("not found") || l.contains("No such file or directory"))
        }),
        _ => false,
    }
}

/// Copy this nettune to `s`'s host (named `host`) and connect to the copy.
fn refreshed(host: &str, s: &Ssh, opts: &Options, end: Instant) -> Result<Agent, Failure> {
    let copy = install(s, &opts.exe, &opts.version, left(end)).map_err(|e| Failure {
        kind: "install",
        // The copy's own errors name the ssh host only.
        message: format!("{host}: {e}"),
    })?;
    let named = Named { host, inner: &copy };
    let a = Agent::connect(&named, &opts.version, left(end))?;
    if a.peer().nettune_version != opts.version {
        return Err(Failure {
            kind: "version",
            message: format!(
                "{}: the copied agent says nettune {}, this controller {}",
                a.name(),
                a.peer().nettune_version,
                opts.version
            ),
        });
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fan_out_keeps_order_and_bounds_concurrency() {
        let items: Vec<u32> = (0..50).collect();
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let out = fan_out(&items, 4, |&i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 4);
        assert!(fan_out(&[] as &[u32], 0, |&i| i).is_empty());
    }

    #[test]
    fn inventory_transports_map_to_fleet_transports() {
        let exe = Path::new("/usr/bin/nettune");
        let t = InvTransport::Kubectl {
            pod: "p".into(),
            namespace: Some("n".into()),
            container: None,
            context: None,
        };
        assert_eq!(transport_of(&t, exe, None).describe(), "pod n/p");
        let argv = transport_of(&t, exe, None).argv().unwrap();
        assert!(argv.iter().any(|a| a == "nettune"), "{argv:?}");
        let s = InvTransport::Ssh {
            address: "10.0.0.5".into(),
            user: Some("ops".into()),
            port: Some(2222),
            jump: None,
            identity_file: Some("/k/id".into()),
            ssh_args: vec![],
        };
        assert_eq!(
            transport_of(&s, exe, None).describe(),
            "ssh ops@10.0.0.5:2222"
        );
        // the `nettune` label names the remote program
        let argv = transport_of(&s, exe, Some("/opt/nt/nettune"))
            .argv()
            .unwrap();
        let tail: Vec<_> = argv.iter().rev().take(3).collect();
        assert_eq!(tail, ["--stdio", "agent", "/opt/nt/nettune"], "{argv:?}");
        assert_eq!(
            transport_of(&InvTransport::Netns { name: "a".into() }, exe, None).describe(),
            "netns a"
        );
    }

    /// A fake agent: a shell that writes a preamble and a `hello` answer
    /// naming `version`, then waits for end of input.
    #[derive(Debug)]
    struct Fake {
        version: &'static str,
    }

    impl Transport for Fake {
        fn argv(&self) -> Result<Vec<std::ffi::OsString>, crate::transport::TransportError> {
            let hello = format!(
                r#"{{"type":"hello","version":{},"nettune_version":"{}","caps":[]}}"#,
                crate::proto::PROTO_VERSION,
                self.version
            );
            let mut bytes = b"NTAG".to_vec();
            bytes.extend_from_slice(&crate::proto::PROTO_VERSION.to_be_bytes());
            bytes.extend_from_slice(&u32::try_from(hello.len()).unwrap().to_be_bytes());
            bytes.extend_from_slice(hello.as_bytes());
            let esc: String = bytes.iter().map(|b| format!("\\{b:03o}")).collect();
            Ok(["sh", "-c", &format!("printf '{esc}'; cat >/dev/null")]
                .iter()
                .map(Into::into)
                .collect())
        }
        fn describe(&self) -> String {
            "fake".into()
        }
    }

    fn opts() -> Options {
        Options {
            parallel: 1,
            deadline: Duration::from_secs(10),
            copy: false,
            version: "0.1.0".into(),
            exe: PathBuf::from("/nonexistent/nettune"),
        }
    }

    #[test]
    fn an_agent_of_another_version_is_named_with_both_versions() {
        let ok = Session::connect_via("f", &Fake { version: "0.1.0" }, None, &opts());
        assert_eq!(ok.unwrap().name(), "f (fake)");
        let e = Session::connect_via("f", &Fake { version: "9.9.9" }, None, &opts()).unwrap_err();
        assert_eq!(e.kind, "version");
        assert_eq!(
            e.message,
            "f (fake): the agent is nettune 9.9.9, this controller 0.1.0; install the same version there"
        );
        // An ssh host with --no-copy: the same, and how to let it copy
        // (after trying an earlier copy: here ssh to a closed loopback port).
        let ssh = Ssh {
            port: Some(9),
            extra: vec!["-F".into(), "/dev/null".into()],
            control_path: "none".into(),
            ..Ssh::new("127.0.0.1")
        };
        let e =
            Session::connect_via("f", &Fake { version: "9.9.9" }, Some(&ssh), &opts()).unwrap_err();
        assert!(e.message.ends_with("(or drop --no-copy)"), "{e}");
    }

    #[test]
    fn only_a_missing_remote_program_is_cured_by_a_copy() {
        let proto = |stderr: &str| AgentError::Proto {
            agent: "ssh b".into(),
            source: crate::proto::ProtoError::Closed,
            stderr: stderr.into(),
        };
        let bash = "bash: line 1: nettune: command not found";
        assert!(replaceable(&proto(bash), "nettune"));
        assert!(replaceable(&proto("sh: 1: nettune: not found"), "nettune"));
        let path = "bash: line 1: /opt/nt/nettune: No such file or directory";
        assert!(replaceable(&proto(path), "/opt/nt/nettune"));
        let ssh = "Warning: Identity file /k/id not accessible: No such file or directory.\n\
                   ssh: connect to host b port 22: Connection refused";
        assert!(!replaceable(&proto(ssh), "nettune"));
        assert!(!replaceable(
            &proto("Permission denied (publickey)."),
            "nettune"
        ));
    }

    #[test]
    fn a_missing_program_fails_the_host_with_the_os_reason() {
        let opts = Options {
            parallel: 1,
            deadline: Duration::from_secs(5),
            copy: false,
            version: "0.1.0".into(),
            exe: PathBuf::from("/nonexistent/nettune"),
        };
        let job = Job {
            host: "l".into(),
            transport: InvTransport::Local,
            root: None,
            state_dir: None,
            remote_exe: None,
        };
        let e = Session::connect(&job, &opts).unwrap_err();
        assert_eq!(e.kind, "transport");
        assert!(e.message.contains("/nonexistent/nettune"), "{e}");
    }
}
