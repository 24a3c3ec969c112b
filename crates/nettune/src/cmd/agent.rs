//! `nettune agent --stdio`: serve the agent protocol (docs/fleet.md) on
//! stdin and stdout for a controller that started it through a transport
//! (`ip netns exec`, ssh, `kubectl exec -i`, or as its own child). Each
//! request runs the code of the CLI command of the same name and answers
//! with the document its `--json` prints; nothing else is written to stdout.

mod bench;
mod drops;

use crate::ops;
use bench::{bench_answer, stop_server};
use drops::{drops_answer, stop_drops};
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
clock, serve, stop_serve, bench (fleet bench), drops_start, drops_finish (a run's
drops by reason), shutdown. An apply with confirm_within is rolled back by the host itself at the
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
    "drops_start",
    "drops_finish",
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
    // A `serve` request's server and a drops watch end with the session.
    stop_server();
    stop_drops();
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
            // An apply's typed failures travel as kinds, as `nettune apply`
            // tells them by its exit status.
            kind: match name {
                "apply" => match crate::exit::of_apply(&e) {
                    crate::exit::KNOB_ABSENT => ErrorKind::KnobAbsent,
                    crate::exit::NOT_ROOT => ErrorKind::NotRoot,
                    _ => ErrorKind::Failed,
                },
                _ => ErrorKind::Failed,
            },
            message: format!("{e:#}"),
        },
        Err(_) => Response::Error {
            kind: ErrorKind::Failed,
            message: format!("{name}: the agent's command panicked (its stderr has the message)"),
        },
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

fn root_or_slash(root: Option<PathBuf>) -> PathBuf {
    root.unwrap_or_else(|| PathBuf::from("/"))
}

fn json(v: impl serde::Serialize) -> anyhow::Result<serde_json::Value> {
    Ok(serde_json::to_value(v)?)
}

/// The agent's `doctor`: its request checked as `nettune doctor` checks its flags.
fn doctor_report(
    seconds: Option<f64>,
    root: Option<PathBuf>,
    profile: Option<String>,
    bdp: Option<String>,
    allowance: Option<String>,
) -> anyhow::Result<doctor::Report> {
    let sample = seconds
        .map(ops::doctor::sample_seconds)
        .transpose()
        .map_err(|why| anyhow::anyhow!("seconds: {why:#}"))?;
    let req = ops::doctor::DoctorRequest::parse(
        root,
        sample,
        profile.as_deref(),
        bdp.as_deref(),
        allowance.as_deref(),
    )?;
    Ok(ops::doctor::diagnose(&req)?.report)
}

/// `None` for a request this agent does not serve.
fn answer(q: Request) -> anyhow::Result<Option<(serde_json::Value, u8)>> {
    let ok = crate::exit::OK;
    Ok(Some(match q {
        Request::Inspect { root, iface } => {
            let snap = ops::plan::snapshot(&root_or_slash(root), &iface)?;
            (json(&snap)?, ok)
        }
        Request::Doctor {
            seconds,
            root,
            profile,
            bdp,
            allowance,
        } => {
            let report = doctor_report(seconds, root, profile, bdp, allowance)?;
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
            let root = ops::plan::open_root(&root_or_slash(root))?;
            let req = ops::plan::PlanRequest {
                ifaces: &iface,
                cpus: cpus.as_deref(),
                exclude_cpus: exclude_cpus.as_deref(),
                bdp: bdp.as_deref(),
                netns: None,
            };
            let profile = ops::profile::load(&profile)?;
            let (plan, _) = ops::plan::make_plan(&root, &profile, ops::plan::options(&req)?)?;
            (json(&plan)?, ok)
        }
        Request::Verify { root, state_dir } => {
            let (root, state) = ops::journal::open(&root_or_slash(root), state_dir.as_deref())?;
            expire_overdue(&root, &state);
            let rep = ops::journal::report(&root, &state)?;
            let code = ops::journal::exit_code(&rep);
            (json(ops::Versioned::new(&rep))?, code)
        }
        Request::History { root, state_dir } => {
            let (root, state) = ops::journal::open(&root_or_slash(root), state_dir.as_deref())?;
            expire_overdue(&root, &state);
            let entries = ops::journal::entries(&state)?;
            (json(ops::journal::history_document(&entries))?, ok)
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
            let (root, state) = ops::journal::open(&root_or_slash(root), state_dir.as_deref())?;
            expire_overdue(&root, &state);
            let plan = model::plan::Plan::from_json_slice(&serde_json::to_vec(&plan)?)
                .map_err(|e| anyhow::anyhow!("the request's plan: {e}"))?;
            host::apply::check_plan(&plan, "the request's plan", &root, force)?;
            if dry_run {
                // Reads only: each change against the value the host has now.
                let k = host::apply::Knobs::open(&root, &state);
                let changes = host::apply::preview(&k, &plan);
                (
                    serde_json::json!({
                        "schema_version": ops::JSON_SCHEMA_VERSION,
                        "dry_run": true,
                        "changes": changes,
                    }),
                    ok,
                )
            } else if plan.changes.is_empty() {
                // `apply` says "Nothing to change" in words; no generation is made.
                (
                    serde_json::json!({ "schema_version": ops::JSON_SCHEMA_VERSION, "changes": [] }),
                    ok,
                )
            } else {
                let k = host::apply::Knobs::open(&root, &state);
                let mut again = || ops::plan::replan_later(&root, &plan);
                let report = host::apply::apply_replanning(
                    &k,
                    &state,
                    &plan,
                    host::apply::ApplyOptions::from_env(force),
                    replan.then_some(&mut again as host::apply::Replan<'_>),
                )?;
                // Stopped after a channel change: the CLI prints the report and exits 1.
                let code = if report.stopped.is_some() {
                    crate::exit::ERROR
                } else {
                    ok
                };
                let mut doc = json(ops::Versioned::new(&report))?;
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
            let (root, state) = ops::journal::open(&root_or_slash(root), state_dir.as_deref())?;
            let k = host::apply::Knobs::open(&root, &state);
            let p = host::confirm::confirm(&k, &state, generation)?;
            (json(ops::Versioned::new(&p))?, ok)
        }
        Request::Rollback {
            root,
            state_dir,
            id,
            force,
        } => {
            let (root, state) = ops::journal::open(&root_or_slash(root), state_dir.as_deref())?;
            expire_overdue(&root, &state);
            let k = host::apply::Knobs::open(&root, &state);
            let res = host::apply::rollback(&k, &state, id, force);
            // A failed rollback prints its document too (`error` set) and exits 1.
            let code = if res.is_ok() { ok } else { crate::exit::ERROR };
            (json(ops::journal::rollback_document(&res))?, code)
        }
        q @ (Request::Clock
        | Request::Serve { .. }
        | Request::StopServe
        | Request::Bench { .. }) => bench_answer(q)?,
        q @ (Request::DropsStart { .. } | Request::DropsFinish) => drops_answer(q)?,
        // Answered by the protocol loop itself.
        Request::Hello | Request::Shutdown => return Ok(None),
    }))
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
