//! `--from DIR`: start from the setting an earlier run accepted.

use anyhow::Context;
use model::experiment::{Knob, Level};
use model::plan::NetnsScope;
use model::snapshot::HostSnapshot;
use runner::autotune as at;
use runner::exec::{Executor, HostId};

use super::search::snapshot;
use super::Args;
use crate::cmd::present::Ui;

/// Largest `--from DIR` results file read (as `report` reads results).
pub(super) const MAX_FROM_BYTES: u64 = 256 << 20;

/// `--from DIR`: the accepted levels of `DIR/results.json` (or of an
/// older `DIR/outcome.json`), or one line naming the file.
pub(super) fn read_from(dir: &std::path::Path) -> Result<Vec<(Knob, Level)>, String> {
    let path = [at::RESULTS_FILE, at::OLD_OUTCOME_FILE]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.exists())
        .unwrap_or_else(|| dir.join(at::RESULTS_FILE));
    let bad = |what: String| format!("--from {}: {what}", path.display());
    // A regular file only (a FIFO or /dev/zero is refused, not read), and
    // at most as large as any results file.
    let text = host::files::read_bounded_text(&path, MAX_FROM_BYTES).map_err(|e| {
        bad(format!(
            "cannot read it: {e} (a directory written by `nettune autotune --out DIR`)"
        ))
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Some(accepted) = doc["accepted"].as_array() else {
        return Err(bad("no `accepted` list".into()));
    };
    if doc["interrupted"].as_bool() == Some(true) && accepted.is_empty() {
        return Err(bad(
            "that run was interrupted before it proved anything".into()
        ));
    }
    accepted
        .iter()
        .map(|a| match (a["knob"].as_str(), a["level"].as_str()) {
            (Some(k), Some(l)) => {
                at::space::parse_change(&format!("{k}={l}")).map_err(|e| bad(e.to_string()))
            }
            _ => Err(bad("an accepted change without `knob` and `level`".into())),
        })
        .collect()
}

/// Apply the `--from` setting on the lab's hosts through their journals
/// (kept in `kept` for [`undo_from`]) and read their snapshots again: the
/// search starts from there.
pub(super) fn start_from(
    exec: &mut dyn Executor,
    ui: &Ui,
    snaps: &mut [(HostId, HostSnapshot)],
    setting: &[(Knob, Level)],
    args: &Args,
    kept: &mut Option<at::drive::Kept>,
) -> anyhow::Result<()> {
    let Some(dir) = &args.from else {
        return Ok(());
    };
    let k = at::drive::keep(exec, snaps, NetnsScope::Child, setting)
        .with_context(|| format!("applying the setting of --from {}", dir.display()))?;
    let names: Vec<String> = setting
        .iter()
        .map(|(k, l)| format!("{}={l}", k.name()))
        .collect();
    ui.line(&format!(
        "starting from {}: {} (on both hosts through their journals; rolled back at the end)",
        dir.display(),
        if names.is_empty() {
            "nothing accepted there".to_string()
        } else {
            names.join(", ")
        }
    ));
    *kept = Some(k);
    for (h, snap) in snaps.iter_mut() {
        *snap = snapshot(exec, *h)?;
    }
    Ok(())
}
