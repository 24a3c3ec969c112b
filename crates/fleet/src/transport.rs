//! Transports: each only starts `nettune agent --stdio` at the other end
//! and hands back its stdin and stdout. Authentication is the transport's
//! (ssh's keys and agent, the Kubernetes API's); nettune opens no port.
//! A QEMU guest's agent ([`GuestSocket`]) is already running behind a unix
//! socket of this machine: that transport connects instead of spawning.

use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use thiserror::Error;

/// The agent's arguments after the program.
pub const AGENT_ARGS: [&str; 2] = ["agent", "--stdio"];
/// The program the remote transports (ssh, kubectl) run: found on the
/// remote `PATH`.
pub const REMOTE_EXE: &str = "nettune";
/// ssh's `ControlPath` unless one is given: one master per
/// (local host, remote host, port, user), `%C` being ssh's hash of them.
pub const DEFAULT_CONTROL_PATH: &str = "~/.ssh/nettune-%C";
/// ssh's `ControlPersist`: seconds the master connection outlives its last session.
pub const CONTROL_PERSIST_S: u32 = 60;
/// Bytes of the agent's (or the transport's) stderr kept for error messages.
pub const MAX_STDERR: usize = 64 * 1024;

/// A transport that cannot start.
#[derive(Debug, Error)]
pub enum TransportError {
    /// A name that would be read as an option or split by a shell.
    #[error("{what} {value:?}: {why}")]
    BadName {
        /// Which field (`ssh host`, `netns name`...).
        what: &'static str,
        /// The value.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A guest's agent socket could not be reached.
    #[error("cannot reach the guest's agent at {socket}: {source}")]
    Connect {
        /// The unix socket.
        socket: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The program could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program (`ssh`, `kubectl`, `ip`, the nettune binary).
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A started agent: the child and its pipes. The caller owns the child
/// (see `client::Agent`, which kills it on drop).
pub struct AgentPipe {
    /// The transport's process (`ssh`, `kubectl`, `ip`, or the agent
    /// itself); `None` for a guest's socket, where no process is started.
    pub child: Option<Child>,
    /// The agent's stdin (a child's pipe, or the guest's socket).
    pub stdin: Box<dyn Write + Send>,
    /// The agent's stdout.
    pub stdout: Box<dyn Read + Send>,
    /// The first [`MAX_STDERR`] bytes of its stderr so far (read by a
    /// thread that drains the rest); `None` where there is no stderr.
    pub stderr: Option<Arc<Mutex<Vec<u8>>>>,
}

impl fmt::Debug for AgentPipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentPipe")
            .field("child", &self.child)
            .finish_non_exhaustive()
    }
}

fn child_pipes(
    stdin: ChildStdin,
    stdout: ChildStdout,
) -> (Box<dyn Write + Send>, Box<dyn Read + Send>) {
    (Box::new(stdin), Box::new(stdout))
}

/// Something that starts `nettune agent --stdio` and gives its pipe.
pub trait Transport: fmt::Debug + Send + Sync {
    /// The program and its arguments.
    fn argv(&self) -> Result<Vec<OsString>, TransportError>;
    /// The host as people name it (`netns lab-a`, `ssh root@b:2222`).
    fn describe(&self) -> String;
    /// Start the agent (stdin, stdout and stderr piped; its own process
    /// group, so a Ctrl-C reaches the controller, which decides).
    fn spawn(&self) -> Result<AgentPipe, TransportError> {
        use std::os::unix::process::CommandExt;
        let argv = self.argv()?;
        let Some((prog, rest)) = argv.split_first() else {
            return Err(TransportError::BadName {
                what: "transport",
                value: self.describe(),
                why: "no program to run",
            });
        };
        let program = prog.to_string_lossy().into_owned();
        let mut child = Command::new(prog)
            .args(rest)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|source| TransportError::Spawn {
                program: program.clone(),
                source,
            })?;
        let (Some(stdin), Some(stdout), Some(err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(TransportError::Spawn {
                program,
                source: std::io::Error::other("a pipe was not created"),
            });
        };
        let (stdin, stdout) = child_pipes(stdin, stdout);
        Ok(AgentPipe {
            child: Some(child),
            stdin,
            stdout,
            stderr: Some(drain_bounded(err, MAX_STDERR)),
        })
    }
}

/// Read `r` to its end on a thread, keeping its first `max` bytes. The
/// thread is never joined: an ssh master (`ControlPersist`) may hold the
/// pipe open long after the session.
pub fn drain_bounded(mut r: impl Read + Send + 'static, max: usize) -> Arc<Mutex<Vec<u8>>> {
    let kept = Arc::new(Mutex::new(Vec::new()));
    let k = Arc::clone(&kept);
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Ok(mut k) = k.lock() {
                        let room = max.saturating_sub(k.len());
                        k.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
            }
        }
    });
    kept
}

/// Refuse an empty name, one that an option parser would take for an
/// option, or one with whitespace or control characters (split or shown
/// wrongly by a remote shell or a terminal).
fn check_name(what: &'static str, v: &str) -> Result<(), TransportError> {
    let why = if v.is_empty() {
        Some("empty")
    } else if v.starts_with('-') {
        Some("starts with '-' (would be read as an option)")
    } else if v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("contains whitespace or a control character")
    } else {
        None
    };
    match why {
        Some(why) => Err(TransportError::BadName {
            what,
            value: v.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

/// The remote program: a command name or path a remote shell runs as one
/// word (letters, digits and `/._+-`).
fn check_remote_exe(v: &str) -> Result<(), TransportError> {
    check_name("remote nettune", v)?;
    if !v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._+-".contains(c))
    {
        return Err(TransportError::BadName {
            what: "remote nettune",
            value: v.to_string(),
            why: "only letters, digits and / . _ + - (a remote shell reads it)",
        });
    }
    Ok(())
}

fn agent_args(v: &mut Vec<OsString>) {
    v.extend(AGENT_ARGS.iter().map(OsString::from));
}

/// How a fleet names a host in its errors: the inventory name first, the
/// transport (address, socket, pod) as detail: `web-1 (ssh root@10.0.0.5)`,
/// `g1 (guest /run/g1/agent.sock)`; the name alone when the transport says
/// nothing more (a netns host named after its namespace still shows both).
pub fn host_label(host: &str, transport: &str) -> String {
    if host.is_empty() {
        transport.to_string()
    } else if transport.is_empty() || transport == host {
        host.to_string()
    } else {
        format!("{host} ({transport})")
    }
}

/// A transport under the inventory name of its host: it starts the agent as
/// `inner` does, and [`Transport::describe`] is [`host_label`], so every
/// error of a session through it (a session names itself by `describe`)
/// names the host first and the address or socket after.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    /// The inventory name.
    pub host: &'a str,
    /// How the host is reached.
    pub inner: &'a dyn Transport,
}

impl Transport for Named<'_> {
    fn argv(&self) -> Result<Vec<OsString>, TransportError> {
        self.inner.argv()
    }
    fn describe(&self) -> String {
        host_label(self.host, &self.inner.describe())
    }
    fn spawn(&self) -> Result<AgentPipe, TransportError> {
        self.inner.spawn()
    }
}

/// This host: the controller's own binary as a child.
#[derive(Debug, Clone)]
pub struct Local {
    /// The nettune binary.
    pub exe: PathBuf,
}

impl Local {
    /// The running binary (`std::env::current_exe`).
    pub fn current() -> std::io::Result<Local> {
        Ok(Local {
            exe: std::env::current_exe()?,
        })
    }
}

impl Transport for Local {
    fn argv(&self) -> Result<Vec<OsString>, TransportError> {
        let mut v = vec![self.exe.clone().into_os_string()];
        agent_args(&mut v);
        Ok(v)
    }
    fn describe(&self) -> String {
        "local".to_string()
    }
}

/// A network namespace of this host: `ip netns exec NAME nettune agent --stdio`
/// (the lab's hosts and the tests).
#[derive(Debug, Clone)]
pub struct Netns {
    /// The namespace (`ip netns list`).
    pub name: String,
    /// The nettune binary (this host's).
    pub exe: PathBuf,
}

impl Transport for Netns {
    fn argv(&self) -> Result<Vec<OsString>, TransportError> {
        check_name("netns name", &self.name)?;
        if self.name.contains('/') {
            return Err(TransportError::BadName {
                what: "netns name",
                value: self.name.clone(),
                why: "contains '/'",
            });
        }
        let mut v: Vec<OsString> = ["ip", "netns", "exec", &self.name]
            .iter()
            .map(OsString::from)
            .collect();
        v.push(self.exe.clone().into_os_string());
        agent_args(&mut v);
        Ok(v)
    }
    fn describe(&self) -> String {
        format!("netns {}", self.name)
    }
}

/// A host reached with the system OpenSSH client: the user's
/// `~/.ssh/config`, keys and agent; `BatchMode` (never a password prompt);
/// one multiplexed master connection per host (`ControlMaster=auto`).
#[derive(Debug, Clone)]
pub struct Ssh {
    /// Host name, address or `~/.ssh/config` alias.
    pub host: String,
    /// `-l USER`.
    pub user: Option<String>,
    /// `-p PORT`.
    pub port: Option<u16>,
    /// `-J JUMP` (a bastion).
    pub jump: Option<String>,
    /// `-i FILE`.
    pub identity: Option<PathBuf>,
    /// More ssh options, placed before the host (e.g. `-o`, `StrictHostKeyChecking=yes`).
    pub extra: Vec<String>,
    /// `ControlPath` ([`DEFAULT_CONTROL_PATH`] by default).
    pub control_path: String,
    /// The remote program ([`REMOTE_EXE`] by default).
    pub remote_exe: String,
}

impl Ssh {
    /// `host` with the defaults.
    pub fn new(host: impl Into<String>) -> Ssh {
        Ssh {
            host: host.into(),
            user: None,
            port: None,
            jump: None,
            identity: None,
            extra: Vec::new(),
            control_path: DEFAULT_CONTROL_PATH.to_string(),
            remote_exe: REMOTE_EXE.to_string(),
        }
    }
}

impl Transport for Ssh {
    fn argv(&self) -> Result<Vec<OsString>, TransportError> {
        check_name("ssh host", &self.host)?;
        check_remote_exe(&self.remote_exe)?;
        if self.control_path.is_empty() || self.control_path.chars().any(|c| c.is_control()) {
            return Err(TransportError::BadName {
                what: "ssh ControlPath",
                value: self.control_path.clone(),
                why: "empty or with a control character",
            });
        }
        let mut v: Vec<OsString> = vec!["ssh".into()];
        for o in [
            "BatchMode=yes".to_string(),
            "ControlMaster=auto".to_string(),
            format!("ControlPath={}", self.control_path),
            format!("ControlPersist={CONTROL_PERSIST_S}"),
        ] {
            v.push("-o".into());
            v.push(o.into());
        }
        if let Some(p) = self.port {
            v.push("-p".into());
            v.push(p.to_string().into());
        }
        if let Some(u) = &self.user {
            check_name("ssh user", u)?;
            v.push("-l".into());
            v.push(u.into());
        }
        if let Some(j) = &self.jump {
            check_name("ssh jump host", j)?;
            v.push("-J".into());
            v.push(j.into());
        }
        if let Some(i) = &self.identity {
            v.push("-i".into());
            v.push(i.clone().into_os_string());
        }
        v.extend(self.extra.iter().map(OsString::from));
        v.push(self.host.clone().into());
        v.push("--".into());
        v.push(self.remote_exe.clone().into());
        agent_args(&mut v);
        Ok(v)
    }
    fn describe(&self) -> String {
        let mut s = String::from("ssh ");
        if let Some(u) = &self.user {
            s.push_str(u);
            s.push('@');
        }
        s.push_str(&self.host);
        if let Some(p) = self.port {
            s.push_str(&format!(":{p}"));
        }
        s
    }
}

/// A pod's container reached through the Kubernetes API:
/// `kubectl exec -i POD -c CONTAINER -- nettune agent --stdio`.
#[derive(Debug, Clone)]
pub struct Kubectl {
    /// The pod.
    pub pod: String,
    /// `-n NAMESPACE` (kubectl's current one when `None`).
    pub namespace: Option<String>,
    /// `-c CONTAINER`.
    pub container: String,
    /// `--context` (kubectl's current one when `None`).
    pub context: Option<String>,
    /// The program in the container ([`REMOTE_EXE`] by default).
    pub remote_exe: String,
}

impl Kubectl {
    /// `pod`, container `nettune`, the current namespace and context.
    pub fn new(pod: impl Into<String>) -> Kubectl {
        Kubectl {
            pod: pod.into(),
            namespace: None,
            container: "nettune".to_string(),
            context: None,
            remote_exe: REMOTE_EXE.to_string(),
        }
    }
}

impl Transport for Kubectl {
    fn argv(&self) -> Result<Vec<OsString>, TransportError> {
        check_name("pod", &self.pod)?;
        check_name("container", &self.container)?;
        check_remote_exe(&self.remote_exe)?;
        let mut v: Vec<OsString> = vec!["kubectl".into()];
        if let Some(c) = &self.context {
            check_name("kubectl context", c)?;
            v.push("--context".into());
            v.push(c.into());
        }
        if let Some(n) = &self.namespace {
            check_name("kubernetes namespace", n)?;
            v.push("-n".into());
            v.push(n.into());
        }
        for a in ["exec", "-i", &self.pod, "-c", &self.container, "--"] {
            v.push(a.into());
        }
        v.push(self.remote_exe.clone().into());
        agent_args(&mut v);
        Ok(v)
    }
    fn describe(&self) -> String {
        match &self.namespace {
            Some(n) => format!("pod {n}/{}", self.pod),
            None => format!("pod {}", self.pod),
        }
    }
}

/// A QEMU guest's agent (docs/guests.md): QEMU joins the guest's
/// `nettune` virtio-serial port to the unix socket `socket` on this
/// machine, and the guest's init runs `nettune agent --stdio` on the port
/// once the host has connected and sent one byte ([`GUEST_WAKE`]). Nothing
/// is spawned here; the socket is closed (both ways) when the session drops
/// its writer, so QEMU sees the disconnect and the guest's agent ends.
#[derive(Debug, Clone)]
pub struct GuestSocket {
    /// QEMU's unix socket for the guest's agent port.
    pub socket: PathBuf,
}

/// The byte a guest transport sends on connecting: the guest's init starts
/// the agent when it arrives (its port reads end-of-file while no host is
/// connected, so it cannot wait on the port alone).
pub const GUEST_WAKE: u8 = b'\n';

/// The guest socket's writing half: shuts the whole socket down when
/// dropped, which ends the reading half's read too.
struct ClosingStream(UnixStream);

impl Write for ClosingStream {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Drop for ClosingStream {
    fn drop(&mut self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

impl Transport for GuestSocket {
    /// No program: this transport connects to a socket ([`Transport::spawn`]).
    fn argv(&self) -> Result<Vec<OsString>, TransportError> {
        Ok(Vec::new())
    }
    fn describe(&self) -> String {
        format!("guest {}", self.socket.display())
    }
    fn spawn(&self) -> Result<AgentPipe, TransportError> {
        let err = |source| TransportError::Connect {
            socket: self.socket.display().to_string(),
            source,
        };
        let mut s = UnixStream::connect(&self.socket).map_err(err)?;
        s.write_all(&[GUEST_WAKE]).map_err(err)?;
        let reader = s.try_clone().map_err(err)?;
        Ok(AgentPipe {
            child: None,
            stdin: Box::new(ClosingStream(s)),
            stdout: Box::new(reader),
            stderr: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_socket_gets_the_wake_byte_and_sees_the_close() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("agent.sock");
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let t = GuestSocket {
            socket: path.clone(),
        };
        let pipe = t.spawn().unwrap();
        assert!(pipe.child.is_none());
        let (mut server, _) = l.accept().unwrap();
        let mut b = [0u8; 1];
        server.read_exact(&mut b).unwrap();
        assert_eq!(b[0], GUEST_WAKE);
        // Dropping the writer alone closes the socket: the guest's side
        // reads end-of-file while the session's reader is still alive.
        let AgentPipe { stdin, stdout, .. } = pipe;
        drop(stdin);
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        drop(stdout);
        let e = GuestSocket {
            socket: d.path().join("none.sock"),
        }
        .spawn()
        .unwrap_err();
        assert!(e.to_string().contains("none.sock"), "{e}");
    }

    fn text(t: &dyn Transport) -> Vec<String> {
        t.argv()
            .unwrap()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn ssh_argv_is_batch_multiplexed_and_ends_with_the_agent() {
        assert_eq!(
            text(&Ssh::new("b")).join(" "),
            "ssh -o BatchMode=yes -o ControlMaster=auto -o ControlPath=~/.ssh/nettune-%C \
             -o ControlPersist=60 b -- nettune agent --stdio"
        );
        let s = Ssh {
            user: Some("root".into()),
            port: Some(2222),
            jump: Some("bastion".into()),
            identity: Some("/k/id_ed25519".into()),
            extra: vec!["-o".into(), "StrictHostKeyChecking=yes".into()],
            control_path: "/run/cm/%C".into(),
            remote_exe: "/usr/local/bin/nettune".into(),
            ..Ssh::new("10.0.0.2")
        };
        assert_eq!(
            text(&s).join(" "),
            "ssh -o BatchMode=yes -o ControlMaster=auto -o ControlPath=/run/cm/%C \
             -o ControlPersist=60 -p 2222 -l root -J bastion -i /k/id_ed25519 \
             -o StrictHostKeyChecking=yes 10.0.0.2 -- /usr/local/bin/nettune agent --stdio"
        );
        assert_eq!(s.describe(), "ssh root@10.0.0.2:2222");
    }

    #[test]
    fn names_that_are_options_or_shell_words_are_refused() {
        for bad in ["-oProxyCommand=x", "", "a b", "a\nb"] {
            let e = Ssh::new(bad).argv().unwrap_err();
            assert!(e.to_string().starts_with("ssh host"), "{e}");
        }
        let e = Ssh {
            remote_exe: "nettune;rm -rf /".into(),
            ..Ssh::new("b")
        }
        .argv()
        .unwrap_err();
        assert!(e.to_string().contains("remote nettune"), "{e}");
        let e = Ssh {
            user: Some("-x".into()),
            ..Ssh::new("b")
        }
        .argv()
        .unwrap_err();
        assert!(e.to_string().contains("ssh user"), "{e}");
        assert!(Kubectl::new("--all").argv().is_err());
        assert!(Netns {
            name: "../x".into(),
            exe: "/bin/nettune".into()
        }
        .argv()
        .is_err());
    }

    #[test]
    fn kubectl_argv() {
        assert_eq!(
            text(&Kubectl::new("web-0")).join(" "),
            "kubectl exec -i web-0 -c nettune -- nettune agent --stdio"
        );
        let k = Kubectl {
            namespace: Some("prod".into()),
            context: Some("east".into()),
            container: "tuner".into(),
            ..Kubectl::new("web-0")
        };
        assert_eq!(
            text(&k).join(" "),
            "kubectl --context east -n prod exec -i web-0 -c tuner -- nettune agent --stdio"
        );
        assert_eq!(k.describe(), "pod prod/web-0");
    }

    #[test]
    fn netns_and_local_argv() {
        let n = Netns {
            name: "lab-a".into(),
            exe: "/usr/bin/nettune".into(),
        };
        assert_eq!(
            text(&n).join(" "),
            "ip netns exec lab-a /usr/bin/nettune agent --stdio"
        );
        let l = Local {
            exe: "/usr/bin/nettune".into(),
        };
        assert_eq!(text(&l).join(" "), "/usr/bin/nettune agent --stdio");
    }

    #[test]
    fn a_named_transport_puts_the_host_first() {
        let guest = GuestSocket {
            socket: "/run/g1/agent.sock".into(),
        };
        let g = Named {
            host: "g1",
            inner: &guest,
        };
        assert_eq!(g.describe(), "g1 (guest /run/g1/agent.sock)");
        assert!(g.argv().unwrap().is_empty());
        let netns = Netns {
            name: "lab-a".into(),
            exe: "/usr/bin/nettune".into(),
        };
        let n = Named {
            host: "a",
            inner: &netns,
        };
        assert_eq!(n.describe(), "a (netns lab-a)");
        assert_eq!(text(&n), text(&netns));
        assert_eq!(host_label("", "local"), "local");
        assert_eq!(host_label("x", "x"), "x");
    }

    #[test]
    fn a_missing_program_is_named() {
        let l = Local {
            exe: "/nonexistent/nettune".into(),
        };
        let e = l.spawn().unwrap_err();
        assert!(e.to_string().contains("/nonexistent/nettune"), "{e}");
    }
}
