//! Plans and snapshots of a root: what `nettune plan`, `inspect`, `profile
//! show`, `apply --replan` and the agent's `plan` and `inspect` run.

use host::Root;
use model::plan::{Plan, PlanNote, PlanOptions};
use model::snapshot::HostSnapshot;
use model::text::{printable, Printable};
use std::path::Path;
use tune::profile::Profile;

/// Check and open `--root`.
pub fn open_root(dir: &Path) -> anyhow::Result<Root> {
    if !dir.is_dir() {
        anyhow::bail!("--root {}: not a directory", dir.display());
    }
    Ok(Root::new(dir))
}

/// The snapshot `inspect --json` prints: `root` read, only the `iface`
/// interfaces (all when empty). `nettune agent` answers `inspect` with it.
pub fn snapshot(root: &Path, iface: &[String]) -> anyhow::Result<HostSnapshot> {
    let snap = host::read_snapshot(&open_root(root)?);
    filter(snap, iface)
}

/// Keep only the named interfaces (all when `names` is empty).
pub fn filter(mut snap: HostSnapshot, names: &[String]) -> anyhow::Result<HostSnapshot> {
    if names.is_empty() {
        return Ok(snap);
    }
    for n in names {
        if snap.interface(n).is_none() {
            let have: Vec<&str> = snap.interfaces.iter().map(|i| i.name.as_str()).collect();
            anyhow::bail!(
                "no interface {} (have: {})",
                Printable(n),
                printable(&have.join(", "))
            );
        }
    }
    snap.interfaces.retain(|i| names.contains(&i.name));
    Ok(snap)
}

/// Facts beyond the snapshot (namespace, softnet totals, PM QoS files),
/// read by host; `apply` re-plans with the same.
pub use host::extras::read_extras;

/// Snapshot the root and plan with `profile`.
pub fn make_plan(
    root: &Root,
    profile: &Profile,
    opts: PlanOptions,
) -> anyhow::Result<(Plan, HostSnapshot)> {
    let snap = host::read_snapshot(root);
    let extras = read_extras(root, &snap);
    let mut plan = tune::plan(&snap, &extras, profile, &opts)?;
    rtt_note(&mut plan);
    Ok((plan, snap))
}

/// The changes after the channels phase, planned again from the host as it is
/// now (the channel change renumbered IRQs and added or removed queues), with
/// the plan's own profile and options: what `apply` and the agent's `apply`
/// resume a paused generation with.
pub fn replan_later(
    root: &Root,
    plan: &Plan,
) -> Result<Vec<model::plan::Change>, host::apply::ReplanError> {
    let profile = match &plan.profile_toml {
        Some(t) => tune::profile::parse_user(t, &plan.profile)?,
        None => super::profile::load(&plan.profile)?,
    };
    let snap = host::read_snapshot(root);
    let extras = read_extras(root, &snap);
    let fresh = tune::plan(&snap, &extras, &profile, &plan.options)?;
    Ok(fresh
        .changes
        .into_iter()
        .filter(|c| c.phase > model::plan::Phase::Channels)
        .collect())
}

/// A note in the plan saying where `--bdp`'s RTT came from.
pub fn rtt_note(plan: &mut Plan) {
    let Some(m) = &plan.options.rtt_measured else {
        return;
    };
    let how = match m.method.as_str() {
        "nettune" => "the p50 of a 1-byte tcp-rr against nettune serve",
        _ => "the median of ICMP echo replies",
    };
    plan.notes.push(PlanNote {
        rule: "bdp".into(),
        message: format!(
            "RTT to {} ({}) measured: {} µs, {how} ({} sample(s)); --bdp uses it",
            m.host, m.address, m.median_us, m.samples
        ),
    });
}
