//! `nettune agent --stdio`: serve the agent protocol (docs/fleet.md) on
//! stdin and stdout for a controller that started it through a transport
//! (`ip netns exec`, ssh, `kubectl exec -i`, or as its own child). Each
//! request runs the code of the CLI command of the same name and answers
//! with the document its `--json` prints; nothing else is written to stdout.

use super::plan::{JournalArgs, PlanFlags, ScopeArg};
use fleet::proto::{ErrorKind, ProtoError, Request, Response};
use fleet::serve::ServeError;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  # What a controller runs; not for people: stdin and stdout carry frames
  ip netns exec lab-a nettune agent --stdio
  ssh -o BatchMode=yes host -- nettune agent --stdio
  kubectl exec -i web-0 -c nettune -- nettune agent --stdio

The protocol (/usr/share/doc/nettune/docs/fleet.md): a 6-byte preamble (NTAG,
version), then big-endian u32 length-prefixed JSON frames; requests up to 256 KiB,
answers up to 64 MiB. Requests: hello, inspect, doctor, plan, apply, rollback,
verify, history (each answered with the JSON of the command's --json), confirm,
clock, serve, stop_serve, bench (fleet bench), shutdown. An apply with confirm_within is rolled back by the host itself at the
deadline unless a confirm arrives in time. It exits 0 on end of input, shutdown or
a controller gone mid-answer; 1 with a line on stderr when the stream broke (an
oversized frame, another protocol version, not a nettune controller), after
telling the controller.";

/// Flags of `nettune agent`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Serve the protocol on stdin and stdout (the only mode; no port is opened).
    #[arg(long, required_unless_present = "watchdog")]
    pub stdio: bool,
    /// The confirm-deadline watchdog an apply with `confirm_within` starts.
    #[arg(long, hide = true, conflicts_with = "stdio", requires = "generation")]
    pub watchdog: bool,
    /// The watchdog's `--root`.
    #[arg(long, hide = true, default_value = "/")]
    pub root: PathBuf,
    /// The watchdog's `--state-dir`.
    #[arg(long, hide = true)]
    pub state_dir: Option<PathBuf>,
    /// The generation the watchdog waits on.
    #[arg(long, hide = true)]
    pub generation: Option<u32>,
}

/// The requests this agent serves beyond `hello` and `shutdown` (its `caps`).
pub const CAPS: &[&str] = &[
    "inspect",
    "doctor",
    "plan",
    "apply",
    "rollback",
    "verify",
    "history",
    "confirm",
    "clock",
    "serve",
    "stop_serve",
    "bench",
];

/// Run `nettune agent --stdio`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let (true, Some(g)) = (args.watchdog, args.generation) {
        return super::agent_watchdog::run(args.root, args.state_dir, g);
    }
    debug_assert!(args.stdio);
    if std::io::stdin().is_terminal() {
        anyhow::bail!(
            "agent --stdio: stdin is a terminal; the agent is started by a controller through ssh, kubectl exec -i or ip netns exec (/usr/share/doc/nettune/docs/fleet.md)"
        );
    }
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let served = fleet::serve::serve(
        &mut stdin,
        &mut stdout,
        env!("CARGO_PKG_VERSION"),
        CAPS,
        handle,
    );
    // A `serve` request's server ends with the session.
    stop_server();
    match served {
        Ok(_) => Ok(ExitCode::SUCCESS),
        // The controller went away while it was answered (killed on its
        // deadline): nobody is left to tell.
        Err(ServeError::Proto(ProtoError::Io(e))) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(anyhow::anyhow!("agent: {e}")),
    }
}

/// Answer one request: the command's JSON document and exit status, or
/// its one-line error. A panic in a command is an error answer, not the
/// end of the session.
pub fn handle(q: Request) -> Response {
    let name = q.name();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(q)));
    match r {
        Ok(Ok(Some((value, code)))) => Response::Json { value, code },
        Ok(Ok(None)) => Response::Error {
            kind: ErrorKind::Unsupported,
            message: format!(
                "this agent does not serve {name} (it serves {})",
                CAPS.join(", ")
            ),
        },
        Ok(Err(e)) => Response::Error {
            kind: ErrorKind::Failed,
            message: format!("{e:#}"),
        },
        Err(_) => Response::Error {
            kind: ErrorKind::Failed,
            message: format!("{name}: the agent's command panicked (its stderr has the message)"),
        },
    }
}

fn root_or_slash(root: Option<PathBuf>) -> PathBuf {
    root.unwrap_or_else(|| PathBuf::from("/"))
}

fn json(v: impl serde::Serialize) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::to_value(v)?)
}

/// `None` for a request this agent does not serve.
fn answer(q: Request) -> anyhow::Result<Option<(serde_json::Value, u8)>> {
    let ok = crate::exit::OK;
    Ok(Some(match q {
        Request::Inspect { root, iface } => {
            let snap = super::inspect::snapshot(&root_or_slash(root), &iface)?;
            (json(&snap)?, ok)
        }
        Request::Doctor {
            seconds,
            root,
            profile,
            bdp,
            allowance,
        } => {
            let args = super::doctor::Args {
                root,
                sample: seconds.map(|s| s.to_string()),
                bdp,
                allowance,
                profile,
                json: true,
            };
            let (report, _, _) = super::doctor::diagnose(&args)?;
            (json(&report)?, report.exit_code())
        }
        Request::Plan {
            profile,
            root,
            iface,
            cpus,
            exclude_cpus,
            bdp,
        } => {
            let root = super::plan::open_root(&root_or_slash(root))?;
            let flags = PlanFlags {
                iface,
                cpus,
                exclude_cpus,
                bdp,
                netns_scope: ScopeArg::Auto,
            };
            let (plan, _) = super::plan::make_plan(&root, &profile, &flags)?;
            (json(&plan)?, ok)
        }
        Request::Verify { root, state_dir } => {
            if let Ok((root, state)) = journal(root.clone(), state_dir.clone()).open() {
                expire_overdue(&root, &state);
            }
            let rep = super::verify::report(&journal(root, state_dir))?;
            let code = super::verify::exit_code(&rep);
            (json(super::Versioned::new(&rep))?, code)
        }
        Request::History { root, state_dir } => {
            let (root, state) = journal(root, state_dir).open()?;
            expire_overdue(&root, &state);
            let entries = super::history::entries(&state)?;
            (json(super::history::document(&entries))?, ok)
        }
        Request::Apply {
            plan,
            root,
            state_dir,
            force,
            replan,
            confirm_within,
            dry_run,
        } => {
            let root_path = root_or_slash(root.clone());
            let (root, state) = journal(root, state_dir).open()?;
            expire_overdue(&root, &state);
            let plan = model::plan::Plan::from_json_slice(&serde_json::to_vec(&plan)?)
                .map_err(|e| anyhow::anyhow!("the request's plan: {e}"))?;
            let plan = super::apply::check_plan(plan, "the request's plan", &root, force)?;
            if dry_run {
                // Reads only: each change against the value the host has now.
                let k = host::apply::Knobs::open(&root, &state);
                let changes = host::apply::preview(&k, &plan);
                (
                    serde_json::json!({
                        "schema_version": super::JSON_SCHEMA_VERSION,
                        "dry_run": true,
                        "changes": changes,
                    }),
                    ok,
                )
            } else if plan.changes.is_empty() {
                // `apply` says "Nothing to change" in words; no generation is made.
                (
                    serde_json::json!({ "schema_version": super::JSON_SCHEMA_VERSION, "changes": [] }),
                    ok,
                )
            } else {
                let report = super::apply::execute(&root, &state, &plan, &plan, force, replan)?;
                // Stopped after a channel change: the CLI prints the report and exits 1.
                let code = if report.stopped.is_some() {
                    crate::exit::ERROR
                } else {
                    ok
                };
                let mut doc = json(super::Versioned::new(&report))?;
                if let Some(within) = confirm_within {
                    let p = arm(&root, &root_path, &state, report.generation, within)?;
                    if let Some(o) = doc.as_object_mut() {
                        o.insert("confirm".into(), json(p)?);
                    }
                }
                (doc, code)
            }
        }
        Request::Confirm {
            root,
            state_dir,
            generation,
        } => {
            let (root, state) = journal(root, state_dir).open()?;
            let k = host::apply::Knobs::open(&root, &state);
            let p = host::confirm::confirm(&k, &state, generation)?;
            (json(super::Versioned::new(&p))?, ok)
        }
        Request::Rollback {
            root,
            state_dir,
            id,
            force,
        } => {
            let (root, state) = journal(root, state_dir).open()?;
            expire_overdue(&root, &state);
            let k = host::apply::Knobs::open(&root, &state);
            let res = host::apply::rollback(&k, &state, id, force);
            // A failed rollback prints its document too (`error` set) and exits 1.
            let code = if res.is_ok() { ok } else { crate::exit::ERROR };
            (json(super::rollback::document(&res))?, code)
        }
        q @ (Request::Clock
        | Request::Serve { .. }
        | Request::StopServe
        | Request::Bench { .. }) => bench_answer(q)?,
        // Answered by the protocol loop itself.
        Request::Hello | Request::Shutdown => return Ok(None),
    }))
}

fn journal(root: Option<PathBuf>, state_dir: Option<PathBuf>) -> JournalArgs {
    JournalArgs {
        root: root_or_slash(root),
        state_dir,
    }
}

/// Roll back the generations whose confirm deadline passed with nobody to
/// roll them back (the watchdog died: a reboot, a killed session). Run
/// before each request that names a journal; a failure here (a locked
/// state directory) is left to the request itself and the next one.
fn expire_overdue(root: &host::root::Root, state: &host::journal::StateDir) {
    let k = host::apply::Knobs::open(root, state);
    if let Err(e) = host::confirm::expire_overdue(&k, state) {
        eprintln!("nettune agent: confirm deadlines: {e}");
    }
}

/// Start the confirm deadline of `generation`: the confirm file, then the
/// watchdog. A watchdog that cannot start rolls the generation back at once
/// (nothing would roll it back at the deadline) and fails the request.
fn arm(
    root: &host::root::Root,
    root_path: &std::path::Path,
    state: &host::journal::StateDir,
    generation: u32,
    within: u32,
) -> anyhow::Result<host::confirm::Pending> {
    let k = host::apply::Knobs::open(root, state);
    let p = match host::confirm::start(state, generation, within) {
        Ok(p) => p,
        Err(e) => {
            let undone = host::apply::rollback(&k, state, Some(generation), false);
            anyhow::bail!(
                "generation {generation}: no confirm deadline could be set ({e}); {}",
                match undone {
                    Ok(_) => "it was rolled back".to_string(),
                    Err(r) => format!("rolling it back failed too: {r}"),
                }
            )
        }
    };
    match super::agent_watchdog::spawn(root_path, state, generation) {
        Ok(_) => Ok(p),
        Err(e) => {
            let why = format!("the confirm watchdog could not start: {e:#}");
            host::confirm::abandon(&k, state, generation, &why)?;
            anyhow::bail!("generation {generation} was rolled back: {why}")
        }
    }
}

/// The `nettune serve` a [`Request::Serve`] started: (child, its address).
static SERVER: std::sync::Mutex<Option<(std::process::Child, String)>> =
    std::sync::Mutex::new(None);

/// How long `serve` may take to say it listens.
const SERVE_READY: std::time::Duration = std::time::Duration::from_secs(10);
/// Time a bench child has beyond its start wait, warm-up and window.
const BENCH_SLACK: std::time::Duration = std::time::Duration::from_secs(60);
/// Most bench JSON read from the child (the agent's answer limit).
const MAX_BENCH_JSON: u64 = 64 << 20;

/// `clock`, `serve`, `stop_serve` and `bench` (fleet bench, docs/fleet.md).
fn bench_answer(q: Request) -> anyhow::Result<(serde_json::Value, u8)> {
    let ok = crate::exit::OK;
    Ok(match q {
        Request::Clock => (
            serde_json::json!({ "realtime_ns": fleet::clock::realtime_ns() }),
            ok,
        ),
        Request::Serve {
            port,
            max_duration,
            lifetime,
            token,
            clients,
        } => (
            start_server(port, max_duration, lifetime, token, clients)?,
            ok,
        ),
        Request::StopServe => (serde_json::json!({ "stopped": stop_server() }), ok),
        Request::Bench {
            server,
            args,
            start_at_unix_ns,
            token,
        } => run_bench(&server, &args, start_at_unix_ns, token)?,
        other => anyhow::bail!("{}: not a bench request", other.name()),
    })
}

/// Kill the `serve` child, if any; whether there was one.
fn stop_server() -> bool {
    let taken = SERVER.lock().ok().and_then(|mut g| g.take());
    match taken {
        Some((mut c, _)) => {
            let _ = c.kill();
            let _ = c.wait();
            true
        }
        None => false,
    }
}

/// Lines of a child's pipe on a channel (a thread drains it to its end).
fn lines_of(r: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(r).lines() {
            let Ok(l) = l else { return };
            let _ = tx.send(l);
        }
    });
    rx
}

/// Start `nettune serve --json --quiet` and wait for its `listening` line.
fn start_server(
    port: u16,
    max_duration: Option<u64>,
    lifetime: Option<u64>,
    token: Option<String>,
    clients: Option<u32>,
) -> anyhow::Result<serde_json::Value> {
    use std::process::{Command, Stdio};
    let mut g = SERVER
        .lock()
        .map_err(|_| anyhow::anyhow!("the server slot is poisoned"))?;
    if let Some((_, addr)) = g.as_ref() {
        anyhow::bail!("a server already runs here on {addr} (stop_serve first)");
    }
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("this nettune's path: {e}"))?;
    let mut cmd = Command::new(exe);
    // Its stdin is a pipe from this agent: when the agent goes, even by
    // SIGKILL, the server sees the end of input and stops.
    cmd.args(["serve", "--json", "--quiet", "--stop-on-stdin-eof"]);
    cmd.args(["--port", &port.to_string()]);
    if let Some(d) = max_duration {
        cmd.args(["--max-duration", &d.to_string()]);
    }
    if let Some(t) = token {
        cmd.env(super::serve::TOKEN_ENV, t);
    }
    if let Some(n) = clients.filter(|n| *n > 4) {
        // Clients sharing an address (NAT, one host) must not hit the
        // per-client limit of 4.
        cmd.args(["--max-tests-per-client", &n.to_string()]);
        cmd.args(["--max-sessions", &n.max(64).to_string()]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting nettune serve: {e}"))?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!("no pipes to nettune serve");
    };
    let lines = lines_of(out);
    let errs = lines_of(err);
    let listening = lines
        .recv_timeout(SERVE_READY)
        .ok()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter(|v| v["event"] == "listening");
    let Some(v) = listening else {
        let _ = child.kill();
        let _ = child.wait();
        let why: Vec<String> = errs.try_iter().collect();
        anyhow::bail!(
            "serve: nettune serve did not listen within {} s: {}",
            SERVE_READY.as_secs(),
            model::text::printable_capped(why.join(" ").trim(), 500)
        );
    };
    let address = v["address"].as_str().unwrap_or_default().to_string();
    let bound: Option<std::net::SocketAddr> = address.parse().ok();
    let pid = child.id();
    *g = Some((child, address.clone()));
    drop(g);
    if let Some(secs) = lifetime {
        // Past its lifetime the server goes, whatever the controller does.
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(secs));
            if let Ok(mut g) = SERVER.lock() {
                if g.as_ref().is_some_and(|(c, _)| c.id() == pid) {
                    if let Some((mut c, _)) = g.take() {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                }
            }
        });
    }
    Ok(serde_json::json!({
        "address": address,
        "port": bound.map(|a| a.port()),
    }))
}

/// `nettune bench SERVER ARGS --json [--start-at NS]` as a child of the
/// agent (whose stdout is the protocol), checked by the CLI's own parser
/// first and killed past its start wait, warm-up, window and a minute.
fn run_bench(
    server: &str,
    args: &[String],
    start_at: Option<u64>,
    token: Option<String>,
) -> anyhow::Result<(serde_json::Value, u8)> {
    use clap::Parser;
    use std::io::Read;
    use std::process::{Command, Stdio};
    if server.starts_with('-') || server.is_empty() {
        anyhow::bail!("{server:?} is not a server address");
    }
    let mut argv: Vec<String> = vec!["nettune".into(), "bench".into(), server.into()];
    argv.extend(args.iter().cloned());
    argv.push("--json".into());
    if let Some(at) = start_at {
        argv.extend(["--start-at".into(), at.to_string()]);
    }
    let parsed = crate::cli::Cli::try_parse_from(&argv).map_err(|e| {
        let text = e.to_string();
        let line = text.lines().next().unwrap_or("");
        anyhow::anyhow!("{}", line.strip_prefix("error: ").unwrap_or(line))
    })?;
    let crate::cli::Command::Bench(b) = parsed.command else {
        anyhow::bail!("not a bench command line");
    };
    if b.json_stream || b.csv {
        anyhow::bail!(
            "--json-stream and --csv are not for the agent (it answers with --json's document)"
        );
    }
    let wait = start_at
        .map(|at| at.saturating_sub(fleet::clock::realtime_ns()))
        .unwrap_or(0);
    let limit = std::time::Duration::from_nanos(wait)
        .checked_add(std::time::Duration::try_from_secs_f64(
            b.warmup + b.duration,
        )?)
        .and_then(|d| d.checked_add(BENCH_SLACK))
        .ok_or_else(|| anyhow::anyhow!("the run is too long"))?;
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("this nettune's path: {e}"))?;
    let mut cmd = Command::new(exe);
    if let Some(t) = token {
        cmd.env(super::serve::TOKEN_ENV, t);
    }
    let mut child = cmd
        .args(argv.iter().skip(1))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting nettune bench: {e}"))?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!("no pipes to nettune bench");
    };
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.take(MAX_BENCH_JSON).read_to_end(&mut b);
        b
    });
    let errs = lines_of(err);
    let end = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if std::time::Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stdout = reader.join().unwrap_or_default();
    // The child is gone: its stderr ends (or is a grandchild's, not waited on).
    let mut stderr: Vec<String> = Vec::new();
    while let Ok(l) = errs.recv_timeout(std::time::Duration::from_millis(200)) {
        stderr.push(l);
    }
    let why = || model::text::printable_capped(stderr.join(" ").trim(), 1000);
    let Some(status) = status else {
        anyhow::bail!("still running after {} s: killed", limit.as_secs());
    };
    let code = status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .unwrap_or(1);
    match serde_json::from_slice::<serde_json::Value>(&stdout) {
        Ok(v) if v.is_object() => Ok((v, code)),
        _ => anyhow::bail!("bench against {server} failed (exit {code}): {}", why()),
    }
}
