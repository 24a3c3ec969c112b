//! The namespace lab: network namespaces joined by multi-queue veth pairs,
//! for tests, benchmarks and experiments that must never touch the host's own
//! interfaces or sysctls.
//!
//! Addresses come from 198.18.0.0/15, the range RFC 2544 reserves for
//! benchmarking, one /30 per pair. Every [`Netns`] is deleted on drop, after
//! killing the processes still inside it.

use std::net::Ipv4Addr;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use thiserror::Error;

mod delay;
mod netns_exec;
mod session;
pub mod sshd;
mod topo;
pub use delay::{
    DelayLine, DelaySpec, DelayStats, DirStats, ADDR_A, ADDR_B, BATCH, FORWARDER_NICE,
    STALL_MARGIN, TUN_TXQUEUELEN, UNLIMITED_RATE_BITS,
};
pub use netns_exec::NetnsExecutor;
pub use session::{LabSession, LoopbackServer, DEFAULT_LISTEN_TIMEOUT, SERVE_PORT};
pub use topo::{
    bdp_of, lab_info, probe_netem, DelayMechanism, Lab, LabSpec, Link, MechanismChoice, Reaped,
    SourcePool, MARKER_DIR, MAX_HOSTS,
};

/// A lab operation that failed.
#[derive(Debug, Error)]
pub enum LabError {
    /// A command ran and exited non-zero.
    #[error("`{cmd}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        cmd: String,
        /// Exit status text.
        status: String,
        /// What it printed on stderr (trimmed).
        stderr: String,
    },
    /// A command could not be started.
    #[error("`{cmd}`: {source}")]
    Spawn {
        /// The command line.
        cmd: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A [`LabSpec`] field out of its allowed range.
    #[error("lab spec: {field} = {value} is out of range (allowed: {allowed})")]
    Spec {
        /// The field (`hosts`, `queues`, `rate`, `loss`...).
        field: &'static str,
        /// The value given.
        value: String,
        /// The allowed range, in words.
        allowed: &'static str,
    },
    /// Delay, jitter or loss was asked for and neither netem nor the
    /// userspace delay line can provide it (or netem was required and the
    /// kernel has none).
    #[error("lab spec asks for {asked}, but no delay mechanism can provide it: {reason}")]
    NoDelayMechanism {
        /// What was asked for (`delay 50 ms`, `loss 1 %`...).
        asked: String,
        /// Why: what the netem probe said and, where it was tried, why the
        /// userspace delay line failed.
        reason: String,
    },
    /// The userspace delay line could not be set up.
    #[error("delay line: {what}: {source}")]
    DelayLine {
        /// What was being done (`open TUN ntdl1x0a`...).
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file of the lab (an ssh fleet's keys, configs, logs) could not be
    /// read or written; the error names it.
    #[error(transparent)]
    File(#[from] host::HostError),
    /// An sshd of an [`sshd::SshFleet`] did not start or does not listen.
    #[error("sshd of {host}: {reason}; its log ends:\n{log}")]
    Sshd {
        /// Which host: `hI (ADDR, namespace NS)`.
        host: String,
        /// What went wrong (exited, not listening in time).
        reason: String,
        /// The last lines of its log.
        log: String,
    },
    /// A lab marker file under the marker directory could not be handled.
    #[error("lab marker {path}: {source}")]
    Marker {
        /// The marker file or directory.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl From<LabError> for runner::exec::ExecError {
    fn from(e: LabError) -> Self {
        runner::exec::ExecError::Setup(Box::new(e))
    }
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// Gate for tests that need root: true when root; otherwise prints why the
/// test skips and returns false. Under `CI=true` a non-root run panics, since
/// CI always runs as root and a silent skip there would hide a failure.
pub fn require_root(test: &str) -> bool {
    if is_root() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: needs root for network namespaces, and CI=true runs as root");
    }
    eprintln!("skipping {test}: needs root (creates network namespaces)");
    false
}

/// Gate for tests that need `programs` (names on PATH or absolute paths):
/// true when all are there; otherwise prints which is missing and returns
/// false. Under `CI=true` a missing one panics, as in [`require_root`]: CI
/// installs them (`.ci/run`), so a skip there would hide a failure. `what`
/// names the package(s) in the message.
pub fn require_programs(test: &str, programs: &[&str], what: &str) -> bool {
    let Some(missing) = programs.iter().find(|p| !have(p)) else {
        return true;
    };
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: needs {missing} ({what}), and CI=true installs it");
    }
    eprintln!("skipping {test}: {missing} is not installed ({what})");
    false
}

/// Whether `program` is on PATH.
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn render(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|s| s.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run a command to completion; non-zero exit is an error carrying stderr.
pub fn run(cmd: &mut Command) -> Result<Output, LabError> {
    let text = render(cmd);
    let out = cmd.output().map_err(|source| LabError::Spawn {
        cmd: text.clone(),
        source,
    })?;
    if !out.status.success() {
        return Err(LabError::Command {
            cmd: text,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

/// Run a command and return its stdout as text.
pub fn run_text(cmd: &mut Command) -> Result<String, LabError> {
    Ok(String::from_utf8_lossy(&run(cmd)?.stdout).into_owned())
}

/// One sequence for every namespace and lab name this process makes, so a
/// lab `P-PID-N` (hosts `P-PID-N-hI`) never shares `N` with a [`Netns`].
pub(crate) static SEQ: AtomicU32 = AtomicU32::new(0);

/// A network namespace owned by this process, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Create `PREFIX-PID-SEQ` with its loopback up. Use a prefix unique to
    /// the test suite (e.g. `ntstat`), so leftovers are easy to attribute.
    pub fn create(prefix: &str) -> Result<Netns, LabError> {
        Netns::create_named(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// Create the namespace `name` exactly, with its loopback up.
    pub(crate) fn create_named(name: String) -> Result<Netns, LabError> {
        run(Command::new("ip").args(["netns", "add", &name]))?;
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A command that runs `program` inside the namespace (`ip netns exec`).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// `ip -n NAME ARGS...`.
    pub fn ip(&self, args: &[&str]) -> Result<String, LabError> {
        run_text(Command::new("ip").arg("-n").arg(&self.name).args(args))
    }

    /// Run a shell script inside the namespace and return its stdout.
    pub fn sh(&self, script: &str) -> Result<String, LabError> {
        run_text(self.command("sh").args(["-c", script]))
    }

    /// Start a long-running process inside the namespace; it is killed when
    /// the returned guard (or the namespace) drops.
    pub fn spawn(&self, program: &str, args: &[&str]) -> Result<ChildGuard, LabError> {
        self.spawn_env(program, args, &[])
    }

    /// [`Netns::spawn`] with extra environment variables (e.g. the lab's
    /// `NETTUNE_TOKEN`, which stays out of `ps`).
    pub fn spawn_env(
        &self,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<ChildGuard, LabError> {
        let mut c = self.command(program);
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        c.envs(env.iter().copied());
        let text = render(&c);
        let child = c
            .spawn()
            .map_err(|source| LabError::Spawn { cmd: text, source })?;
        Ok(ChildGuard(Some(child)))
    }

    /// Read a sysctl of this namespace (`net.ipv4.tcp_rmem`).
    pub fn sysctl(&self, key: &str) -> Result<String, LabError> {
        Ok(self
            .sh(&format!("cat /proc/sys/{}", key.replace('.', "/")))?
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Ok(pids) = run_text(Command::new("ip").args(["netns", "pids", &self.name])) {
            for pid in pids.split_whitespace() {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}

/// SIGKILL every descendant of `pid` (children, theirs...), found by the
/// parent pid in `/proc/*/stat`. Call it while `pid` is an unreaped child of
/// this process, so that it cannot be another process's reused pid.
pub(crate) fn kill_descendants(pid: u32) {
    let links: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let rest = stat.get(stat.rfind(')')?.checked_add(1)?..)?;
            Some((p, rest.split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while let Some(&parent) = found.get(i) {
        let kids: Vec<u32> = links
            .iter()
            .filter(|&&(p, pp)| pp == parent && !found.contains(&p))
            .map(|&(p, _)| p)
            .collect();
        found.extend(kids);
        i += 1;
    }
    for p in found.iter().skip(1) {
        let _ = Command::new("kill")
            .args(["-9", &p.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// A child process killed (SIGKILL) and reaped on drop.
#[derive(Debug)]
pub struct ChildGuard(Option<Child>);

impl ChildGuard {
    /// Wrap a child.
    pub fn new(child: Child) -> Self {
        ChildGuard(Some(child))
    }

    /// The child, e.g. to read its pipes.
    pub fn child(&mut self) -> Option<&mut Child> {
        self.0.as_mut()
    }

    /// Wait for the child and return its output (stdout/stderr if piped).
    pub fn wait_output(mut self) -> Result<Output, LabError> {
        let child = self.0.take().ok_or_else(|| LabError::Command {
            cmd: "wait".into(),
            status: "no child".into(),
            stderr: String::new(),
        })?;
        child.wait_with_output().map_err(|source| LabError::Spawn {
            cmd: "wait".into(),
            source,
        })
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One end of a veth link.
#[derive(Debug, Clone)]
pub struct End {
    /// Interface name inside its namespace.
    pub iface: String,
    /// IPv4 address (in 198.18.0.0/15).
    pub addr: Ipv4Addr,
}

/// Two namespaces joined by a multi-queue veth pair: the lab's two hosts.
#[derive(Debug)]
pub struct TwoHosts {
    /// Link end in `a`.
    pub a_end: End,
    /// Link end in `b`.
    pub b_end: End,
    /// The "client" namespace.
    pub a: Netns,
    /// The "server" namespace.
    pub b: Netns,
}

static PAIR: AtomicU32 = AtomicU32::new(0);

impl TwoHosts {
    /// Create namespaces `PREFIX-...-a/b` joined by veth `nt0` (in a) and
    /// `nt1` (in b), each with `queues` RX and TX queues, addressed and up.
    pub fn create(prefix: &str, queues: u32) -> Result<TwoHosts, LabError> {
        let a = Netns::create(prefix)?;
        let b = Netns::create(prefix)?;
        let n =
            (std::process::id().wrapping_mul(64) + PAIR.fetch_add(1, Ordering::Relaxed)) % 32768;
        let (a_end, b_end) = veth(&a, "nt0", &b, "nt1", queues, n)?;
        Ok(TwoHosts { a_end, b_end, a, b })
    }
}

/// The two host addresses of /30 number `slot` (mod 32768) of 198.18.0.0/15.
pub(crate) fn slot_addrs(slot: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + (slot % 32768) * 4;
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// Join `a` and `b` with a veth pair `a_if` (in a) / `b_if` (in b), each with
/// `queues` RX and TX queues, addressed from /30 number `slot` of
/// 198.18.0.0/15 (`slot` below 32768), and up.
fn veth(
    a: &Netns,
    a_if: &str,
    b: &Netns,
    b_if: &str,
    queues: u32,
    slot: u32,
) -> Result<(End, End), LabError> {
    let (addr_a, addr_b) = slot_addrs(slot);
    let q = queues.max(1).to_string();
    a.ip(&[
        "link",
        "add",
        a_if,
        "numtxqueues",
        &q,
        "numrxqueues",
        &q,
        "type",
        "veth",
        "peer",
        "name",
        b_if,
        "netns",
        b.name(),
        "numtxqueues",
        &q,
        "numrxqueues",
        &q,
    ])?;
    a.ip(&["addr", "add", &format!("{addr_a}/30"), "dev", a_if])?;
    b.ip(&["addr", "add", &format!("{addr_b}/30"), "dev", b_if])?;
    a.ip(&["link", "set", a_if, "up"])?;
    b.ip(&["link", "set", b_if, "up"])?;
    Ok((
        End {
            iface: a_if.into(),
            addr: addr_a,
        },
        End {
            iface: b_if.into(),
            addr: addr_b,
        },
    ))
}

/// IPv6 addresses of a [`TwoHosts`] link, from [`TwoHosts::add_ipv6`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Pair {
    /// Address of `nt0` in `a`.
    pub a: std::net::Ipv6Addr,
    /// Address of `nt1` in `b`.
    pub b: std::net::Ipv6Addr,
}

impl TwoHosts {
    /// Whether IPv6 is enabled in both namespaces
    /// (`net.ipv6.conf.all.disable_ipv6` is 0 and `/proc/net/if_inet6` exists).
    pub fn ipv6_enabled(&self) -> bool {
        [&self.a, &self.b].iter().all(|ns| {
            ns.sh("cat /proc/sys/net/ipv6/conf/all/disable_ipv6 && test -e /proc/net/if_inet6")
                .is_ok_and(|v| v.trim() == "0")
        })
    }

    /// Give the veth ends IPv6 addresses in a /64 of fd00:198:18::/48 (a
    /// unique local range) derived from their IPv4 /30, with `nodad` so they
    /// are usable at once (no duplicate address detection delay).
    pub fn add_ipv6(&self) -> Result<Ipv6Pair, LabError> {
        let n = u32::from(self.a_end.addr) >> 2;
        let net = |host: u16| {
            std::net::Ipv6Addr::new(0xfd00, 0x198, 0x18, (n & 0xffff) as u16, 0, 0, 0, host)
        };
        let pair = Ipv6Pair {
            a: net(1),
            b: net(2),
        };
        self.a.ip(&[
            "-6",
            "addr",
            "add",
            &format!("{}/64", pair.a),
            "dev",
            &self.a_end.iface,
            "nodad",
        ])?;
        self.b.ip(&[
            "-6",
            "addr",
            "add",
            &format!("{}/64", pair.b),
            "dev",
            &self.b_end.iface,
            "nodad",
        ])?;
        Ok(pair)
    }

    /// Add one more IPv6 address (with `nodad`) to `a`'s link end, e.g. to
    /// send from an address that is not the test's.
    pub fn add_ipv6_to_a(&self, addr: std::net::Ipv6Addr) -> Result<(), LabError> {
        self.a.ip(&[
            "-6",
            "addr",
            "add",
            &format!("{addr}/64"),
            "dev",
            &self.a_end.iface,
            "nodad",
        ])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_skips_outside_ci_and_fails_in_ci() {
        let gate = || require_programs("lab::gate", &["sh", "/nonexistent/nettune-x"], "none");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            assert!(std::panic::catch_unwind(gate).is_err());
        } else {
            assert!(!gate());
        }
        assert!(require_programs("lab::gate", &["sh"], "none"));
    }

    #[test]
    fn two_hosts_ping_and_clean_up() {
        if !require_root("lab::two_hosts_ping_and_clean_up") {
            return;
        }
        let names;
        {
            let lab = TwoHosts::create("ntlab", 2).unwrap();
            names = (lab.a.name().to_string(), lab.b.name().to_string());
            let out = lab
                .a
                .sh(&format!("ping -c1 -W1 {}", lab.b_end.addr))
                .unwrap();
            assert!(out.contains("1 received"), "{out}");
            let q = lab.b.sh("ls /sys/class/net/nt1/queues").unwrap();
            assert!(q.contains("rx-1") && q.contains("tx-1"), "{q}");
        }
        let list = run_text(Command::new("ip").args(["netns", "list"])).unwrap();
        let left: Vec<&str> = list
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| *n == names.0 || *n == names.1)
            .collect();
        assert!(left.is_empty(), "{left:?} left in {list}");
    }
}
