//! The confirm-deadline watchdog (docs/fleet.md, "Confirm deadline"): an
//! agent that applied a plan with `confirm_within` starts
//! `nettune agent --watchdog --root R --state-dir D --generation G` in a
//! session of its own (`setsid`), so neither the ssh connection dropping nor
//! the transport's process group being killed ends it. It waits for the
//! controller's `confirm` (the confirm file turning `confirmed`) and at the
//! deadline rolls the generation back through the journal, recording why.

use host::apply::Knobs;
use host::confirm::{self, ConfirmError, Status};
use host::journal::{now, JournalError};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

/// How often the watchdog looks at the confirm file.
const POLL: Duration = Duration::from_millis(200);
/// How long the agent waits for a started watchdog to say it is detached.
const READY_WITHIN: Duration = Duration::from_secs(10);
/// How long it retries a state directory locked by another apply or
/// rollback at the deadline before it leaves the rollback to the next agent
/// request.
const LOCKED_RETRIES: u32 = 300;

/// The file a watchdog writes (its pid) once it runs in its own session.
fn ready_path(state: &host::journal::StateDir, generation: u32) -> PathBuf {
    state
        .confirm_dir()
        .join(format!("{generation:06}.watchdog.ready"))
}

/// Start the watchdog of `generation` detached from this process's session;
/// its stderr goes to `STATE/confirm/GGGGGG.watchdog.log`. Returns its pid
/// once the watchdog has said it runs in a session of its own: until then a
/// killed transport group would take it along (setsid(1) is still in ours),
/// so the apply is not answered before.
pub(crate) fn spawn(
    root: &Path,
    state: &host::journal::StateDir,
    generation: u32,
) -> anyhow::Result<u32> {
    let exe = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("confirm watchdog: this program's path: {e}"))?;
    let log_path = state
        .confirm_dir()
        .join(format!("{generation:06}.watchdog.log"));
    let log = host::files::create_log(&log_path)?;
    let ready = ready_path(state, generation);
    match std::fs::remove_file(&ready) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => anyhow::bail!("{}: {e}", ready.display()),
    }
    // setsid(1) puts it in a new session and process group: a killed
    // transport (its whole group) or a hung-up ssh session does not reach it.
    let mut child = Command::new("setsid")
        .arg(exe)
        .args(["agent", "--watchdog", "--root"])
        .arg(root)
        .arg("--state-dir")
        .arg(state.path())
        .arg("--generation")
        .arg(generation.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| anyhow::anyhow!("confirm watchdog: running setsid: {e}"))?;
    let start = std::time::Instant::now();
    loop {
        if ready.exists() {
            return Ok(child.id());
        }
        // setsid(1) forks only when it leads its group; then its exit is fine.
        if let Ok(Some(st)) = child.try_wait() {
            if !st.success() {
                anyhow::bail!(
                    "confirm watchdog exited before it was ready ({st}); see {}",
                    log_path.display()
                );
            }
        }
        if start.elapsed() > READY_WITHIN {
            let _ = child.kill();
            anyhow::bail!(
                "confirm watchdog not ready within {READY_WITHIN:?}; see {}",
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run `nettune agent --watchdog`.
pub fn run(root: PathBuf, state_dir: Option<PathBuf>, generation: u32) -> anyhow::Result<ExitCode> {
    let (root, state) = crate::ops::journal::open(&root, state_dir.as_deref())?;
    // In a session of its own now (setsid exec'd us): tell the agent.
    let ready = ready_path(&state, generation);
    host::files::write_atomic(&ready, format!("{}\n", std::process::id()).as_bytes())?;
    let knobs = Knobs::open(&root, &state);
    let mut locked = 0u32;
    loop {
        let Some(p) = confirm::load(&state, generation)? else {
            anyhow::bail!(
                "generation {generation}: no confirm file in {}",
                state.confirm_dir().display()
            );
        };
        if p.status != Status::Pending {
            eprintln!("generation {generation}: {:?}", p.status);
            return Ok(ExitCode::SUCCESS);
        }
        let t = now();
        if t >= p.deadline {
            match confirm::expire(&knobs, &state, generation) {
                Ok(Some(_)) => {
                    eprintln!(
                        "generation {generation}: {}; rolled back",
                        confirm::reason(&p)
                    );
                    return Ok(ExitCode::SUCCESS);
                }
                Ok(None) => continue,
                Err(ConfirmError::Journal(JournalError::Locked { .. }))
                    if locked < LOCKED_RETRIES =>
                {
                    locked = locked.saturating_add(1);
                }
                Err(e) => return Err(e.into()),
            }
        }
        std::thread::sleep(POLL);
    }
}
