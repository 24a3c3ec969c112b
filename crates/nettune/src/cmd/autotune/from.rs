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

/// `--from DIR`: the accepted levels of `DIR/results.json` (or of an
/// older `DIR/outcome.json`), or one line naming the file.
pub(super) fn read_from(dir: &std::path::Path) -> Result<Vec<(Knob, Level)>, String> {
    let (path, doc) = at::read_results(dir).map_err(|e| match e {
        at::ReadResultsError::Read { path, source } => format!(
            "--from {}: cannot read it: {source} (a directory written by `nettune autotune --out DIR`)",
            path.display()
        ),
        e => format!("--from {e}"),
    })?;
    let bad = |what: String| format!("--from {}: {what}", path.display());
    if doc.interrupted && doc.accepted.is_empty() {
        return Err(bad(
            "that run was interrupted before it proved anything".into()
        ));
    }
    doc.accepted
        .iter()
        .map(|a| {
            at::space::parse_change(&format!("{}={}", a.knob, a.level))
                .map_err(|e| bad(e.to_string()))
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
