//! [`NetnsExecutor`]: the [`Executor`] of a [`Lab`]. Every call runs the
//! `nettune` binary inside a host's namespace (`ip netns exec NS nettune ...`),
//! under a total deadline (the process is killed when it passes), with its
//! stdout and stderr read into bounded buffers. Each host has its own journal
//! state directory, in a temporary directory the executor owns and removes on
//! drop, so `apply` and `rollback` in one namespace never see another's
//! journal (nor the machine's own `/var/lib/nettune`).

use crate::Lab;
use model::bench::result::BenchResult;
use model::findings::Report;
use model::plan::Plan;
use model::snapshot::HostSnapshot;
use runner::exec::{
    apply_failed, parse, parse_report, DropsWatch, ExecError, Executor, HostId, LocalDrops,
    NotApplicableKind, THIS_MACHINE,
};
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most stdout kept from one call (a bench JSON with every interval fits
/// many times over); the rest is read and dropped.
pub const MAX_STDOUT: usize = 16 * 1024 * 1024;
/// Most stderr kept from one call.
pub const MAX_STDERR: usize = 64 * 1024;
/// Deadline of `inspect`, `plan`, `apply` and `rollback`.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);
/// Deadline of `doctor` beyond its sampling window (default 3 s).
pub const DOCTOR_SLACK: Duration = Duration::from_secs(60);

/// One host of the lab as the executor reaches it.
#[derive(Debug, Clone)]
struct HostInfo {
    /// Namespace name; `None` for the loopback host (this namespace).
    ns: Option<String>,
    /// Its lab address (what a client in another host connects to).
    addr: Ipv4Addr,
    /// Its journal state directory.
    state: PathBuf,
}

/// Runs `nettune` inside the namespaces of a [`Lab`].
#[derive(Debug)]
pub struct NetnsExecutor {
    exe: PathBuf,
    hosts: Vec<HostInfo>,
    dir: PathBuf,
    deadline: Duration,
    cancel: Option<Arc<AtomicBool>>,
    port: Option<u16>,
    token: Option<String>,
}

static DIRS: AtomicU32 = AtomicU32::new(0);

impl NetnsExecutor {
    /// An executor for `lab`'s hosts running the binary `exe` (the CLI passes
    /// `std::env::current_exe()`). Creates one state directory per host
    /// under a fresh temporary directory.
    pub fn new(lab: &Lab, exe: impl Into<PathBuf>) -> Result<NetnsExecutor, ExecError> {
        let dir = std::env::temp_dir().join(format!(
            "nettune-lab-{}-{}-{}",
            lab.name(),
            std::process::id(),
            DIRS.fetch_add(1, Ordering::Relaxed)
        ));
        let io = |what: String| move |source| ExecError::Io { what, source };
        std::fs::create_dir(&dir).map_err(io(format!("create {}", dir.display())))?;
        let mut ex = NetnsExecutor {
            exe: exe.into(),
            hosts: Vec::new(),
            dir,
            deadline: DEFAULT_DEADLINE,
            cancel: None,
            port: None,
            token: None,
        };
        for (i, ns) in lab.hosts().iter().enumerate() {
            let addr = lab.addr(i).ok_or_else(|| ExecError::Failed {
                what: format!("address of host h{i}"),
                code: None,
                stderr: "the lab has no link for it".into(),
            })?;
            let state = ex.dir.join(format!("h{i}"));
            std::fs::create_dir(&state).map_err(io(format!("create {}", state.display())))?;
            ex.hosts.push(HostInfo {
                ns: Some(ns.name().to_string()),
                addr,
                state,
            });
        }
        Ok(ex)
    }

    /// One host, this process's own namespace, reached over 127.0.0.1 at
    /// `port` (a `nettune serve --listen 127.0.0.1 --port PORT`): for the
    /// loopback-only benchmark, which measures and never tunes, so `apply`
    /// and `rollback` are [`ExecError::NotApplicable`] and `plan` runs
    /// read-only as usual.
    pub fn loopback(exe: impl Into<PathBuf>, port: u16) -> NetnsExecutor {
        NetnsExecutor {
            exe: exe.into(),
            hosts: vec![HostInfo {
                ns: None,
                addr: Ipv4Addr::LOCALHOST,
                state: PathBuf::new(),
            }],
            dir: PathBuf::new(),
            deadline: DEFAULT_DEADLINE,
            cancel: None,
            port: Some(port),
            token: None,
        }
    }

    /// Run every call with `NETTUNE_TOKEN` set to `token` (the lab's servers'
    /// token; in the environment, not in argv, so it stays out of `ps`).
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_string());
        self
    }

    /// Deadline of the calls that have none of their own (default 60 s).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Stop a running measurement (`bench`, `doctor`: its process is killed)
    /// and return [`ExecError::Cancelled`] once `flag` is set, e.g. by a
    /// SIGINT handler. `apply`, `rollback`, `plan` and `inspect` always run
    /// to their end (or deadline): a rollback after Ctrl-C must finish.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Host `host`'s journal state directory.
    pub fn state_dir(&self, host: HostId) -> Option<&Path> {
        self.hosts.get(host.0).map(|h| h.state.as_path())
    }

    /// Host `host`'s lab address.
    pub fn addr(&self, host: HostId) -> Option<Ipv4Addr> {
        self.hosts.get(host.0).map(|h| h.addr)
    }

    fn host(&self, host: HostId) -> Result<&HostInfo, ExecError> {
        self.hosts.get(host.0).ok_or(ExecError::NoHost(host))
    }

    /// Run `nettune ARGS` in `host`'s namespace within `deadline`; a
    /// `measure` call also stops on the cancel flag.
    fn call(
        &self,
        host: HostId,
        what: String,
        args: &[String],
        deadline: Duration,
        measure: bool,
    ) -> Result<Finished, ExecError> {
        use std::os::unix::process::CommandExt;
        let h = self.host(host)?;
        let mut cmd = match &h.ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(&self.exe);
                c
            }
            None => Command::new(&self.exe),
        };
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: a Ctrl-C on the terminal reaches the
            // caller, which decides (and rolls back), not the child.
            .process_group(0);
        if let Some(t) = &self.token {
            cmd.env("NETTUNE_TOKEN", t);
        }
        let cancel = if measure {
            self.cancel.as_deref()
        } else {
            None
        };
        run_bounded(&mut cmd, what, deadline, cancel)
    }

    /// A call whose non-zero exit is a failure; returns stdout.
    fn call_ok(
        &self,
        host: HostId,
        what: String,
        args: &[String],
        deadline: Duration,
    ) -> Result<String, ExecError> {
        let f = self.call(host, what.clone(), args, deadline, false)?;
        if f.code != Some(0) {
            return Err(ExecError::Failed {
                what,
                code: f.code,
                stderr: f.stderr,
            });
        }
        Ok(f.stdout)
    }
}

impl Drop for NetnsExecutor {
    fn drop(&mut self) {
        if self.dir.as_os_str().is_empty() {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A call that ran to its end.
#[derive(Debug)]
struct Finished {
    /// Exit code; `None` when a signal ended it.
    code: Option<i32>,
    stdout: String,
    /// Trimmed.
    stderr: String,
}

/// Read `r` to its end, keeping the first `max` bytes.
fn read_bounded(mut r: impl Read + Send + 'static, max: usize) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = max.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        kept
    })
}

/// Kill and reap a child (it may have exited already).
fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Run `cmd` (stdout and stderr piped) to its end, killing it when `deadline`
/// passes or `cancel` is set.
fn run_bounded(
    cmd: &mut Command,
    what: String,
    deadline: Duration,
    cancel: Option<&AtomicBool>,
) -> Result<Finished, ExecError> {
    let mut child = cmd.spawn().map_err(|source| ExecError::Io {
        what: what.clone(),
        source,
    })?;
    let out = child.stdout.take().map(|o| read_bounded(o, MAX_STDOUT));
    let err = child.stderr.take().map(|e| read_bounded(e, MAX_STDERR));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(source) => {
                kill(&mut child);
                return Err(ExecError::Io { what, source });
            }
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            kill(&mut child);
            return Err(ExecError::Cancelled);
        }
        if start.elapsed() >= deadline {
            kill(&mut child);
            return Err(ExecError::Timeout {
                what,
                after: deadline,
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // The pipes close when the process exits (a grandchild holding them
    // would block here; nettune starts none).
    let text = |h: Option<JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    Ok(Finished {
        code: status.code(),
        stdout: text(out),
        stderr: text(err).trim().to_string(),
    })
}

/// What a finished `nettune apply` says: the kind of its failure comes from
/// its exit status (a knob absent, not root), never from its words.
fn applied(what: String, f: Finished) -> Result<(), ExecError> {
    match f.code {
        Some(0) => Ok(()),
        code => Err(apply_failed(what, code, f.stderr)),
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl Executor for NetnsExecutor {
    fn hosts(&self) -> usize {
        self.hosts.len()
    }

    fn host_name(&self, host: HostId) -> String {
        match self.hosts.get(host.0) {
            Some(HostInfo { ns: Some(ns), .. }) => ns.clone(),
            Some(HostInfo { ns: None, .. }) => "loopback".into(),
            None => host.to_string(),
        }
    }

    fn bench(
        &mut self,
        client: HostId,
        server: HostId,
        args: &[String],
        deadline: Duration,
    ) -> Result<BenchResult, ExecError> {
        // To itself: over the host's loopback.
        let addr = if client == server {
            self.host(server)?;
            Ipv4Addr::LOCALHOST
        } else {
            self.host(server)?.addr
        };
        let mut full = vec!["bench".to_string(), addr.to_string()];
        full.extend(args.iter().cloned());
        if let Some(p) = self.port {
            full.extend(["--port".to_string(), p.to_string()]);
        }
        full.push("--json".into());
        let what = format!("bench on {client} to {server}");
        let f = self.call(client, what.clone(), &full, deadline, true)?;
        match f.code {
            Some(0) => parse(&what, &f.stdout),
            code => Err(ExecError::Failed {
                what,
                code,
                stderr: f.stderr,
            }),
        }
    }

    /// The namespaces share this machine's kernel: one watcher sees every
    /// namespace's drops (and the machine's own).
    fn watch_drops(&mut self, _client: HostId, _server: HostId) -> Box<dyn DropsWatch> {
        Box::new(LocalDrops::start(THIS_MACHINE))
    }

    fn inspect(&mut self, host: HostId) -> Result<HostSnapshot, ExecError> {
        let what = format!("inspect on {host}");
        let text = self.call_ok(
            host,
            what.clone(),
            &strings(&["inspect", "--json"]),
            self.deadline,
        )?;
        parse(&what, &text)
    }

    fn doctor(&mut self, host: HostId, args: &[String]) -> Result<Report, ExecError> {
        let what = format!("doctor on {host}");
        let sample = args
            .iter()
            .position(|a| a == "--sample")
            .and_then(|i| args.get(i + 1))
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 3600.0)
            .map_or(Duration::from_secs(3), Duration::from_secs_f64);
        let mut full = vec!["doctor".to_string()];
        full.extend(args.iter().cloned());
        full.push("--json".into());
        let f = self.call(host, what.clone(), &full, sample + DOCTOR_SLACK, true)?;
        match f.code {
            // Severity codes: ok, warnings, critical. The report is stdout.
            Some(0..=2) => parse_report(host, &f.stdout),
            code => Err(ExecError::Failed {
                what,
                code,
                stderr: f.stderr,
            }),
        }
    }

    fn plan(&mut self, host: HostId, args: &[String]) -> Result<Plan, ExecError> {
        let mut full = vec!["plan".to_string()];
        full.extend(args.iter().cloned());
        full.push("--json".into());
        let what = format!("plan on {host}");
        let text = self.call_ok(host, what.clone(), &full, self.deadline)?;
        parse(&what, &text)
    }

    fn apply(&mut self, host: HostId, plan: &Plan) -> Result<(), ExecError> {
        let h = self.host(host)?;
        if h.ns.is_none() {
            return Err(ExecError::not_applicable(
                NotApplicableKind::MeasureOnly,
                "loopback benchmark: this host is measured, never tuned",
            ));
        }
        let what = format!("apply on {host}");
        let file = h.state.with_extension("plan.json");
        let plan_json = serde_json::to_string(plan).map_err(|source| ExecError::Malformed {
            what: what.clone(),
            source,
        })?;
        host::files::write_atomic(&file, plan_json.as_bytes()).map_err(|e| ExecError::Io {
            what: format!("{what}: write {}", file.display()),
            source: std::io::Error::other(e),
        })?;
        // --force: the plan was made in this same namespace, whose
        // fingerprint may differ from the one the plan recorded only by the
        // namespace's own devices.
        let args = vec![
            "apply".to_string(),
            "--plan".into(),
            file.display().to_string(),
            "--yes".into(),
            "--force".into(),
            "--state-dir".into(),
            h.state.display().to_string(),
        ];
        let f = self.call(host, what.clone(), &args, self.deadline, false)?;
        applied(what, f)
    }

    fn rollback(&mut self, host: HostId) -> Result<(), ExecError> {
        let h = self.host(host)?;
        if h.ns.is_none() {
            // Nothing is ever applied there.
            return Ok(());
        }
        let state = h.state.display().to_string();
        self.call_ok(
            host,
            format!("rollback on {host}"),
            &strings(&["rollback", "--state-dir", &state]),
            self.deadline,
        )
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_past_its_deadline_is_killed() {
        let t = Instant::now();
        let r = run_bounded(
            Command::new("sleep")
                .arg("30")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            "sleep".into(),
            Duration::from_millis(200),
            None,
        );
        assert!(matches!(r, Err(ExecError::Timeout { .. })), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_cancelled_call_is_killed() {
        let flag = AtomicBool::new(true);
        let r = run_bounded(
            Command::new("sleep")
                .arg("30")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            "sleep".into(),
            Duration::from_secs(20),
            Some(&flag),
        );
        assert!(matches!(r, Err(ExecError::Cancelled)), "{r:?}");
    }

    #[test]
    fn output_is_bounded_and_exit_codes_kept() {
        // 20 MiB on stdout: only MAX_STDOUT kept, the rest drained.
        let f = run_bounded(
            Command::new("sh")
                .args(["-c", "head -c 20971520 /dev/zero; echo oops >&2; exit 4"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            "sh".into(),
            Duration::from_secs(20),
            None,
        )
        .unwrap();
        assert_eq!(f.stdout.len(), MAX_STDOUT);
        assert_eq!(f.stderr, "oops");
        assert_eq!(f.code, Some(4));
    }

    fn plan() -> Plan {
        Plan {
            schema_version: model::plan::PLAN_SCHEMA_VERSION,
            profile: "balanced".into(),
            profile_toml: None,
            fingerprint: "f".into(),
            hostname: None,
            options: Default::default(),
            scope: model::plan::NetnsScope::Child,
            changes: Vec::new(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn the_loopback_host_is_never_tuned() {
        let mut ex = NetnsExecutor::loopback("/bin/false", 5999);
        assert_eq!(ex.hosts(), 1);
        assert_eq!(ex.host_name(HostId(0)), "loopback");
        assert!(matches!(
            ex.apply(HostId(0), &plan()),
            Err(ExecError::NotApplicable {
                kind: NotApplicableKind::MeasureOnly,
                ..
            })
        ));
        assert!(ex.rollback(HostId(0)).is_ok());
        assert!(matches!(ex.inspect(HostId(1)), Err(ExecError::NoHost(_))));
    }

    #[test]
    fn apply_exit_statuses_are_typed_errors() {
        // A child that exits as `nettune apply` does for an absent knob, then
        // for a write refused for want of privileges; its words are not read
        // (they say the opposite).
        for (code, kind) in [
            (
                runner::exec::EXIT_KNOB_ABSENT,
                runner::exec::ErrorKind::KnobAbsent,
            ),
            (
                runner::exec::EXIT_NOT_ROOT,
                runner::exec::ErrorKind::NotRoot,
            ),
            (1, runner::exec::ErrorKind::Other),
        ] {
            let f = run_bounded(
                Command::new("sh")
                    .args([
                        "-c",
                        &format!("echo 'Permission denied; knob not found' >&2; exit {code}"),
                    ])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
                "apply on h1".into(),
                Duration::from_secs(20),
                None,
            )
            .unwrap();
            let e = applied("apply on h1".into(), f).unwrap_err();
            assert_eq!(e.kind(), kind, "exit {code}: {e:?}");
        }
    }

    #[test]
    fn output_that_is_not_the_type_is_malformed() {
        let e = parse::<HostSnapshot>("inspect on h1", "{\"not\": 1}").unwrap_err();
        assert!(matches!(e, ExecError::Malformed { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("inspect on h1: its JSON did not parse"),
            "{e}"
        );
    }
}
