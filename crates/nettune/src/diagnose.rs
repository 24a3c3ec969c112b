//! The doctor rules wired to the host: what `nettune doctor` reads, and the
//! hook `bench --doctor` and `serve` hand the engine (which samples the
//! window but neither reads these facts nor runs the rules).

use doctor::collect::HostRead;
use doctor::Report;
use engine::diagnosis::{DoctorHook, DropsRecorder, DropsRun, RunDropsResult, SHORT_WINDOW};
use host::sampler::Sample;
use host::Root;

/// Read what doctor needs from the host under `root`: snapshot, extras,
/// `/proc/net/sockstat` and the applied plan of the journal. Nothing here
/// fails: what cannot be read is left out (and listed as unreadable).
pub fn read_host(root: &Root) -> HostRead {
    let snapshot = host::read_snapshot(root);
    let extras = host::extras::read_extras(root, &snapshot);
    let mut unreadable = Vec::new();
    let sockstat = match host::sockstat::read_sockstat(root) {
        Ok(s) => s,
        Err(e) => {
            unreadable.push((host::sockstat::SOCKSTAT.to_string(), e.to_string()));
            None
        }
    };
    let facts = host::doctor_facts::read_doctor_facts(root, &snapshot);
    HostRead {
        facts,
        snapshot,
        extras,
        sockstat,
        applied: applied_plan(root),
        unreadable,
    }
}

/// The plan of the newest finished generation still in force in the
/// journal under the root, if any (a missing or unreadable journal is none).
pub fn applied_plan(root: &Root) -> Option<model::plan::Plan> {
    let dir = host::apply::default_state_dir(root, None).ok()?;
    let gens = host::journal::StateDir::new(dir).load_all().ok()?;
    gens.iter()
        .rev()
        .find(|g| g.finished() && g.active())
        .and_then(|g| g.plan())
}

/// The doctor report of the host under `root` over the window sampled in
/// `samples` (time order), with the drops by reason over the run.
pub fn diagnose(root: &Root, samples: Vec<Sample>, drops: RunDropsResult) -> Report {
    let mut input = read_host(root).into_input();
    if samples.len() < 2 {
        input.no_samples = SHORT_WINDOW.to_string();
    }
    input.samples = samples;
    input.drops = drops;
    doctor::diagnose(&input)
}

/// The `skb:kfree_skb` watcher over each run, as the engine's recorder.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveDrops;

/// One run's watch.
struct Watching(host::drops_run::RunWatch);

impl DropsRecorder for LiveDrops {
    fn start(&self, root: &Root) -> Box<dyn DropsRun> {
        Box::new(Watching(host::drops_run::watch_run(root)))
    }
}

impl DropsRun for Watching {
    fn finish(self: Box<Self>) -> RunDropsResult {
        self.0.finish()
    }
}

/// [`diagnose`] as the engine's hook, with drops by reason over each run.
pub fn hook() -> DoctorHook {
    DoctorHook::new(diagnose).with_drops(LiveDrops)
}
