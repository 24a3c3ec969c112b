//! The agent's drops requests: `drops_start` opens the watcher of
//! `nettune drops` (`host::drops_run`) on this host's kernel for one run,
//! `drops_finish` stops it and answers its drops by reason
//! (docs/schema/drops-run.json) under this host's name. The watch is held
//! by [`fleet::serve::drops::DropsSlot`]: one per session, stopped by a
//! second start, its lifetime, or the session's end ([`stop_drops`]).

use fleet::proto::Request;
use fleet::serve::drops::{DropsSlot, Finish};
use model::drops::run::RunDrops;

/// This agent's (this session's) watch.
static DROPS: DropsSlot = DropsSlot::new();

/// `drops_start` and `drops_finish`.
pub(super) fn drops_answer(q: Request) -> anyhow::Result<(serde_json::Value, u8)> {
    let ok = crate::exit::OK;
    Ok(match q {
        Request::DropsStart { lifetime } => (DROPS.start(lifetime, open), ok),
        Request::DropsFinish => (serde_json::to_value(DROPS.finish(&host_name())?)?, ok),
        other => anyhow::bail!("{}: not a drops request", other.name()),
    })
}

/// The session ended: its watch goes with it.
pub(super) fn stop_drops() {
    DROPS.stop();
}

/// The live host's watcher, or the line saying why it cannot run.
fn open() -> Result<Finish, String> {
    let w = host::drops_run::watch_run(&host::Root::live());
    if let Err(why) = w.opened() {
        return Err(why.to_string());
    }
    Ok(Box::new(move |host: &str| RunDrops::of(host, &w.finish())))
}

/// This host's name (its kernel's), for the entry.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "agent".to_string())
}
