//! [`SshFleet`]: one OpenSSH server per lab host, for tests that drive hosts
//! over ssh as a controller would (`ssh -F CONFIG hI CMD`). A private
//! directory (0700, removed on drop) holds a user key and `authorized_keys`,
//! a host key per host, `known_hosts`, each sshd's config, pid file and log,
//! and an `ssh_config` naming the hosts `hI` (I = lab index). Each sshd runs
//! in the foreground (`-D`) in its host's namespace, listening on that
//! host's lab address only; it and its sessions are killed on drop. The
//! machine's own sshd is never started or touched.

use crate::{require_programs, require_root, run, Lab, LabError};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The OpenSSH server binary (Debian's `openssh-server`).
pub const SSHD: &str = "/usr/sbin/sshd";
/// The port the servers listen on unless [`SshFleet::start_on`] says otherwise.
pub const DEFAULT_PORT: u16 = 2222;
/// How long [`SshFleet::start`] waits for all servers together to listen.
pub const READY_DEADLINE: Duration = Duration::from_secs(10);
const LOG_LIMIT: u64 = 1 << 20;

/// Gate for tests that run sshd in namespaces: root ([`require_root`]) and
/// `sshd`, `ssh`, `ssh-keygen` installed (skip with a reason, or panic under
/// `CI=true`, which installs them: see [`require_programs`]).
pub fn require_sshd(test: &str) -> bool {
    require_root(test) && require_programs(test, &[SSHD, "ssh", "ssh-keygen"], "openssh")
}

/// Remove fleet directories (`nettune-sshd-PID-N` in the temp directory)
/// whose owner PID is gone, left by runs that were killed; returns them.
/// (Their sshd processes went with the lab's namespaces: [`Lab::reap_stale`].)
pub fn reap_stale_dirs() -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let entries = std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten();
    for e in entries.flatten() {
        let name = e.file_name();
        let rest = name.to_str().and_then(|n| n.strip_prefix("nettune-sshd-"));
        let Some(pid) = rest.and_then(|r| r.split('-').next()?.parse::<u32>().ok()) else {
            continue;
        };
        // Only a directory, not a symlink to one (file_type does not follow).
        if !Path::new(&format!("/proc/{pid}")).exists()
            && e.file_type().is_ok_and(|t| t.is_dir())
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    removed
}

#[derive(Debug)]
struct Server {
    host: usize,
    addr: Ipv4Addr,
    ns: String,
    pid_file: PathBuf,
    log: PathBuf,
    /// `None` once stopped.
    child: Option<Child>,
}

/// One sshd per listed lab host, with keys, `known_hosts` and an
/// `ssh_config` made for this fleet; everything is removed on drop.
#[derive(Debug)]
pub struct SshFleet {
    dir: PathBuf,
    port: u16,
    servers: Vec<Server>,
    /// `known_hosts` line per host, in `servers` order.
    known: Vec<String>,
}

fn bad(field: &'static str, value: String, allowed: &'static str) -> LabError {
    LabError::Spec {
        field,
        value,
        allowed,
    }
}

fn io_err(path: &Path, e: std::io::Error) -> LabError {
    LabError::File(host::HostError::io(path, e))
}

fn write(path: &Path, text: &str) -> Result<(), LabError> {
    host::files::write_atomic(path, text.as_bytes()).map_err(LabError::File)
}

/// `ssh-keygen` a fresh passphrase-less ed25519 key at `path` (and
/// `path.pub`); returns the public key's `TYPE BASE64` (no comment).
fn keygen(path: &Path) -> Result<String, LabError> {
    // ssh-keygen asks before overwriting (and fails on the null stdin).
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(path.with_extension("pub"));
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "nettune-lab", "-f"])
        .arg(path)
        .stdin(Stdio::null()))?;
    let public = host::files::read_bounded_text(&path.with_extension("pub"), 64 * 1024);
    let public = public.map_err(LabError::File)?;
    let key: Vec<&str> = public.split_whitespace().take(2).collect();
    Ok(key.join(" "))
}

/// The last lines of a log, or why it could not be read.
fn log_tail(path: &Path) -> String {
    match host::files::read_bounded_text(path, LOG_LIMIT) {
        Ok(text) if text.trim().is_empty() => "(empty)".into(),
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(15)..].join("\n")
        }
        Err(e) => format!("(unreadable: {e})"),
    }
}

impl Server {
    /// Kill the sessions this sshd forked, then sshd itself, and reap it.
    /// The child is still ours (not yet waited for), so its pid and its
    /// children's parent links cannot belong to another process.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            crate::kill_descendants(child.id());
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn error(&self, reason: String) -> LabError {
        LabError::Sshd {
            host: format!("h{} ({}, namespace {})", self.host, self.addr, self.ns),
            reason,
            log: log_tail(&self.log),
        }
    }
}

impl SshFleet {
    /// Start one sshd on [`DEFAULT_PORT`] in each of `hosts` (lab indexes) of
    /// `lab`, and wait (at most [`READY_DEADLINE`]) until all listen.
    pub fn start(lab: &Lab, hosts: &[usize]) -> Result<SshFleet, LabError> {
        SshFleet::start_on(lab, hosts, DEFAULT_PORT)
    }

    /// [`SshFleet::start`] on `port`.
    pub fn start_on(lab: &Lab, hosts: &[usize], port: u16) -> Result<SshFleet, LabError> {
        reap_stale_dirs();
        let base = std::env::temp_dir();
        let base = base.canonicalize().unwrap_or(base);
        let dir = base.join(format!(
            "nettune-sshd-{}-{}",
            std::process::id(),
            crate::SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        // Paths go unquoted into sshd_config, where `%` is a token.
        let plain = dir.to_str().is_some_and(|s| {
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b))
        });
        if !plain {
            let allowed = "a TMPDIR path of letters, digits and / . _ -";
            return Err(bad("ssh dir", dir.display().to_string(), allowed));
        }
        if port == 0 {
            return Err(bad("ssh port", "0".into(), "1 to 65535"));
        }
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| io_err(&dir, e))?;
        // From here on, dropping `fleet` cleans up whatever was started.
        let mut fleet = SshFleet {
            dir,
            port,
            servers: Vec::new(),
            known: Vec::new(),
        };
        let user = keygen(&fleet.user_key())?;
        write(&fleet.dir.join("authorized_keys"), &format!("{user}\n"))?;
        std::fs::create_dir_all("/run/sshd").map_err(|e| io_err(Path::new("/run/sshd"), e))?;
        for (k, &host) in hosts.iter().enumerate() {
            let (Some(ns), Some(addr)) = (lab.hosts().get(host), lab.addr(host)) else {
                return Err(bad("ssh host", host.to_string(), "a lab host index"));
            };
            if hosts[..k].contains(&host) {
                return Err(bad("ssh host", format!("{host} twice"), "each once"));
            }
            let d = fleet.dir.join(format!("h{host}"));
            std::fs::create_dir(&d).map_err(|e| io_err(&d, e))?;
            let host_pub = keygen(&d.join("host_key"))?;
            let line = format!("{} {host_pub}", fleet.endpoint(addr));
            fleet.known.push(line);
            let (pid_file, log) = (d.join("sshd.pid"), d.join("sshd.log"));
            let config = d.join("sshd_config");
            write(&config, &fleet.sshd_config(addr, &d))?;
            let out = std::fs::File::options()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(|e| io_err(&log, e))?;
            let mut cmd = ns.command(SSHD);
            cmd.arg("-D").arg("-f").arg(&config).arg("-E").arg(&log);
            let text = format!("ip netns exec {} {SSHD} -D", ns.name());
            let child = cmd
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(out)
                .spawn()
                .map_err(|source| LabError::Spawn { cmd: text, source })?;
            fleet.servers.push(Server {
                host,
                addr,
                ns: ns.name().to_string(),
                pid_file,
                log,
                child: Some(child),
            });
        }
        fleet.write_known_hosts()?;
        write(&fleet.config(), &fleet.ssh_config(&fleet.user_key()))?;
        fleet.wait_ready()?;
        Ok(fleet)
    }

    /// `[ADDR]:PORT` as `known_hosts` spells a host (just `ADDR` on 22).
    fn endpoint(&self, addr: Ipv4Addr) -> String {
        if self.port == 22 {
            addr.to_string()
        } else {
            format!("[{addr}]:{}", self.port)
        }
    }

    fn sshd_config(&self, addr: Ipv4Addr, d: &Path) -> String {
        format!(
            "Port {port}\nListenAddress {addr}\nHostKey {dir}/host_key\n\
             AuthorizedKeysFile {auth}\nPidFile {dir}/sshd.pid\nStrictModes no\nUsePAM no\n\
             PubkeyAuthentication yes\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
             PrintMotd no\nUseDNS no\nMaxStartups 64\nMaxSessions 64\nLogLevel ERROR\n",
            port = self.port,
            dir = d.display(),
            auth = self.dir.join("authorized_keys").display(),
        )
    }

    fn ssh_config(&self, identity: &Path) -> String {
        let mut out = String::new();
        for s in &self.servers {
            out.push_str(&format!("Host h{}\n  HostName {}\n", s.host, s.addr));
        }
        out.push_str(&format!(
            "Host *\n  Port {}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
             UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  \
             StrictHostKeyChecking yes\n  CheckHostIP no\n  UpdateHostKeys no\n  \
             BatchMode yes\n  PasswordAuthentication no\n  ConnectTimeout 5\n  \
             ConnectionAttempts 1\n  ControlMaster no\n  ControlPath none\n",
            self.port,
            identity.display(),
            self.known_hosts().display(),
        ));
        out
    }

    fn write_known_hosts(&self) -> Result<(), LabError> {
        write(&self.known_hosts(), &format!("{}\n", self.known.join("\n")))
    }

    /// Poll until every server's pid file names a live sshd (sshd writes it
    /// after it listens), all within [`READY_DEADLINE`].
    fn wait_ready(&mut self) -> Result<(), LabError> {
        let deadline = Instant::now() + READY_DEADLINE;
        let mut ready = vec![false; self.servers.len()];
        loop {
            for (s, ok) in self.servers.iter_mut().zip(ready.iter_mut()) {
                if let Some(Ok(Some(status))) = s.child.as_mut().map(Child::try_wait) {
                    return Err(s.error(format!("sshd exited before listening ({status})")));
                }
                *ok = *ok || std::fs::read_to_string(&s.pid_file).is_ok_and(|t| !t.is_empty());
            }
            let Some(s) = ready.iter().position(|ok| !ok).map(|k| &self.servers[k]) else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                let why = format!("no {} after {READY_DEADLINE:?}", s.pid_file.display());
                return Err(s.error(format!("not listening on port {}: {why}", self.port)));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn server(&self, host: usize) -> Result<usize, LabError> {
        let k = self.servers.iter().position(|s| s.host == host);
        k.ok_or_else(|| bad("ssh host", host.to_string(), "a host of this ssh fleet"))
    }

    /// The fleet's private directory (removed on drop).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The generated `ssh_config`: `ssh -F CONFIG hI CMD` reaches host I.
    pub fn config(&self) -> PathBuf {
        self.dir.join("ssh_config")
    }

    /// The private key every server accepts (for root).
    pub fn user_key(&self) -> PathBuf {
        self.dir.join("user_key")
    }

    /// The `known_hosts` file with every server's host key.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.join("known_hosts")
    }

    /// The port every server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The lab indexes of the hosts running an sshd, in start order.
    pub fn hosts(&self) -> Vec<usize> {
        self.servers.iter().map(|s| s.host).collect()
    }

    /// The `ssh_config` alias of lab host `host`: `hI`.
    pub fn alias(host: usize) -> String {
        format!("h{host}")
    }

    /// The address the sshd of lab host `host` listens on.
    pub fn addr(&self, host: usize) -> Option<Ipv4Addr> {
        Some(self.servers.get(self.server(host).ok()?)?.addr)
    }

    /// The pid of the sshd of lab host `host`, while it runs.
    pub fn pid(&self, host: usize) -> Option<u32> {
        self.servers
            .get(self.server(host).ok()?)?
            .child
            .as_ref()
            .map(Child::id)
    }

    /// `ip netns exec FROM ssh -F CONFIG hI -- REMOTE...`: run `remote` on
    /// lab host `host` from the namespace `from` (e.g. the hub's). Its stdin
    /// is null unless the caller sets another.
    pub fn ssh(&self, from: &crate::Netns, host: usize, remote: &[&str]) -> Command {
        let mut c = from.command("ssh");
        c.arg("-F").arg(self.config()).arg(SshFleet::alias(host));
        c.arg("--").args(remote).stdin(Stdio::null());
        c
    }

    /// Kill the sshd of lab host `host` (and its sessions): connecting then
    /// fails with "Connection refused".
    pub fn stop(&mut self, host: usize) -> Result<(), LabError> {
        let k = self.server(host)?;
        self.servers[k].stop();
        Ok(())
    }

    /// Replace host `host`'s `known_hosts` entry with a key it does not
    /// have: connecting then fails with "Host key verification failed".
    pub fn wrong_host_key(&mut self, host: usize) -> Result<(), LabError> {
        let k = self.server(host)?;
        let other = keygen(&self.dir.join(format!("h{host}/impostor_key")))?;
        self.known[k] = format!("{} {other}", self.endpoint(self.servers[k].addr));
        self.write_known_hosts()
    }

    /// An `ssh_config` like [`SshFleet::config`] but with a fresh key no
    /// server accepts: connecting with it fails with "Permission denied".
    pub fn stranger_config(&self) -> Result<PathBuf, LabError> {
        let key = self.dir.join("stranger_key");
        keygen(&key)?;
        let path = self.dir.join("ssh_config.stranger");
        write(&path, &self.ssh_config(&key))?;
        Ok(path)
    }
}

impl Drop for SshFleet {
    fn drop(&mut self) {
        for s in &mut self.servers {
            s.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
