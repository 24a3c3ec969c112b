//! [`LabSession`]: a [`Lab`] with `nettune serve` running in every host, for
//! `nettune lab` and `nettune experiment`. Starting one first removes the
//! labs of killed runs with the same prefix (and says what it removed);
//! dropping it kills the servers and removes the lab.

use crate::{ChildGuard, Lab, LabError, LabSpec, Netns, NetnsExecutor, Reaped};
use runner::exec::ExecError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The control port the servers listen on (nettune's default).
pub const SERVE_PORT: u16 = 5290;
/// Default bound on waiting for every server to listen.
pub const DEFAULT_LISTEN_TIMEOUT: Duration = Duration::from_secs(10);

/// A lab with a nettune server in each host; torn down on drop.
#[derive(Debug)]
pub struct LabSession {
    // Fields drop in order: the servers die before their namespaces go.
    servers: Vec<ChildGuard>,
    lab: Lab,
    exe: PathBuf,
    reaped: Vec<Reaped>,
    token: String,
}

impl LabSession {
    /// Reap stale labs named like `spec.prefix`, build the lab, start
    /// `EXE serve --quiet` in each host (with a token made for this lab, so
    /// its clients may force socket buffers past `net.core.rmem_max` as
    /// only a token holder may) and wait (at most `listen_timeout`)
    /// until each listens on [`SERVE_PORT`]. On any error what was built is
    /// removed again.
    pub fn start(
        spec: LabSpec,
        exe: impl Into<PathBuf>,
        listen_timeout: Duration,
    ) -> Result<LabSession, LabError> {
        let lab = Lab::build(spec)?;
        let reaped = lab.reaped().to_vec();
        let mut s = LabSession {
            servers: Vec::new(),
            lab,
            exe: exe.into(),
            reaped,
            token: lab_token(),
        };
        let exe = s.exe.display().to_string();
        for ns in s.lab.hosts() {
            let env = [(TOKEN_ENV, s.token.as_str())];
            s.servers
                .push(ns.spawn_env(&exe, &["serve", "--quiet"], &env)?);
        }
        let deadline = Instant::now() + listen_timeout;
        for i in 0..s.servers.len() {
            s.wait_listening(i, deadline, listen_timeout)?;
        }
        Ok(s)
    }

    /// Wait until host `i`'s server listens, failing when it exits or the
    /// deadline passes.
    fn wait_listening(
        &mut self,
        i: usize,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(), LabError> {
        let ns: &Netns = &self.lab.hosts()[i];
        let cmd = format!("{} serve --quiet in {}", self.exe.display(), ns.name());
        loop {
            if listening(ns, SERVE_PORT)? {
                return Ok(());
            }
            if let Some((status, stderr)) = exited(&mut self.servers[i]) {
                return Err(LabError::Command {
                    cmd,
                    status,
                    stderr,
                });
            }
            if Instant::now() >= deadline {
                return Err(LabError::Command {
                    cmd,
                    status: format!("not listening on port {SERVE_PORT} after {timeout:?}"),
                    stderr: String::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The lab.
    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// What was reaped at the start: the labs of killed runs.
    pub fn reaped(&self) -> &[Reaped] {
        &self.reaped
    }

    /// The binary the servers (and executors) run.
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    /// An executor for this lab's hosts, running the same binary.
    pub fn executor(&self) -> Result<NetnsExecutor, ExecError> {
        Ok(NetnsExecutor::new(&self.lab, &self.exe)?.with_token(&self.token))
    }

    /// Kill the servers and remove the lab now (as drop does).
    pub fn teardown(self) {
        drop(self);
    }
}

/// `nettune serve` on 127.0.0.1 at a free port of this namespace, for the
/// loopback-only benchmark (no root needed); killed on drop.
#[derive(Debug)]
pub struct LoopbackServer {
    server: ChildGuard,
    port: u16,
    exe: PathBuf,
    token: String,
}

impl LoopbackServer {
    /// Start `EXE serve --listen 127.0.0.1 --port P --quiet` on a port the
    /// kernel reports free, and wait (at most `listen_timeout`) until it
    /// listens.
    pub fn start(
        exe: impl Into<PathBuf>,
        listen_timeout: Duration,
    ) -> Result<LoopbackServer, LabError> {
        let exe = exe.into();
        let cmd = format!("{} serve --listen 127.0.0.1", exe.display());
        let spawn_err = |source| LabError::Spawn {
            cmd: cmd.clone(),
            source,
        };
        // A port free now; another process could take it before serve binds,
        // which serve then reports (and the wait below fails with it).
        let port = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map_err(spawn_err)?
            .port();
        let token = lab_token();
        let child = std::process::Command::new(&exe)
            .args(["serve", "--listen", "127.0.0.1", "--quiet", "--port"])
            .arg(port.to_string())
            .env(TOKEN_ENV, &token)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(spawn_err)?;
        let mut s = LoopbackServer {
            server: ChildGuard::new(child),
            port,
            exe,
            token,
        };
        let deadline = Instant::now() + listen_timeout;
        loop {
            let text = ["/proc/net/tcp", "/proc/net/tcp6"]
                .iter()
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .collect::<Vec<_>>()
                .join("\n");
            if listens_on(&text, port) {
                return Ok(s);
            }
            if let Some(status) = exited(&mut s.server) {
                return Err(LabError::Command {
                    cmd,
                    status: status.0,
                    stderr: status.1,
                });
            }
            if Instant::now() >= deadline {
                return Err(LabError::Command {
                    cmd,
                    status: format!("not listening on 127.0.0.1:{port} after {listen_timeout:?}"),
                    stderr: String::new(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// An executor whose one host is this namespace, over 127.0.0.1.
    pub fn executor(&self) -> NetnsExecutor {
        NetnsExecutor::loopback(&self.exe, self.port).with_token(&self.token)
    }
}

/// The environment variable `nettune serve` and `bench` take a token from.
const TOKEN_ENV: &str = "NETTUNE_TOKEN";

/// A fresh random token (128 bits, hex) for one lab's servers and clients:
/// with a token the servers let the lab's benches force socket buffers past
/// `net.core.rmem_max` (SO_RCVBUFFORCE), as the lab's UDP suite and
/// `--rcvbuf` fixes need inside namespaces, whose `rmem_max` is the
/// machine's own and is never raised.
fn lab_token() -> String {
    sys::random::random_bytes::<16>()
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// When the guarded child has exited: its status and (at most 4 KiB of) stderr.
fn exited(g: &mut ChildGuard) -> Option<(String, String)> {
    let c = g.child()?;
    let status = c.try_wait().ok()??;
    let mut stderr = String::new();
    if let Some(e) = c.stderr.as_mut() {
        use std::io::Read;
        let _ = e.take(4096).read_to_string(&mut stderr);
    }
    Some((status.to_string(), stderr.trim().to_string()))
}

/// Whether something in `ns` listens on TCP `port` (from `/proc/net/tcp*`
/// read inside the namespace: state 0A is LISTEN).
fn listening(ns: &Netns, port: u16) -> Result<bool, LabError> {
    let text = ns.sh("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null || true")?;
    Ok(listens_on(&text, port))
}

/// Whether `/proc/net/tcp` text has a LISTEN socket on `port`.
fn listens_on(proc_net_tcp: &str, port: u16) -> bool {
    let want = format!("{port:04X}");
    proc_net_tcp.lines().any(|l| {
        let mut f = l.split_whitespace();
        let local = f.nth(1);
        let state = f.nth(1);
        local.and_then(|a| a.rsplit_once(':')).map(|(_, p)| p) == Some(want.as_str())
            && state == Some("0A")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_state_is_read_from_proc_net_tcp() {
        // Linux 6.18, /proc/net/tcp and tcp6 with `nettune serve` on [::]:5290
        // and an established connection from port 5290 (not a listener).
        let text = "\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:14AA 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1 1
   0: 00000000000000000000000000000000:14AA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1
";
        assert!(listens_on(text, 5290));
        assert!(!listens_on(text, 5291));
        let only_established = text.lines().take(2).collect::<Vec<_>>().join("\n");
        assert!(!listens_on(&only_established, 5290));
        assert!(!listens_on("garbage\n:\n", 5290));
    }
}
