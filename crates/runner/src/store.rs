//! The results directory: atomic writes and reading it back for `--resume`.

use std::path::Path;

use model::results::{CellStatus, ExperimentResults, RESULTS_FILE};

use super::RunError;

/// Name of the copy of the experiment file inside a results directory.
pub const EXPERIMENT_FILE: &str = "experiment.toml";

/// Largest results file read back, bytes.
const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// Write `bytes` to `path` atomically with the one shared writer
/// ([`host::files::write_atomic`]): a new temporary file created without
/// following links, then a rename, so a symlink planted at `path` is
/// replaced, never written through, and a reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    host::files::write_atomic(path, bytes).map_err(RunError::from)
}

/// Create (or take) a directory of the results, refusing a symlink at its
/// last component ([`host::files::create_out_dir`]).
pub fn out_dir(dir: &Path) -> Result<(), RunError> {
    host::files::create_out_dir(dir).map_err(RunError::from)
}

/// Read `DIR/results.json` for `--resume`, refusing when `DIR/experiment.toml`
/// differs from `experiment_text` (the file changed since the run began).
/// Interrupted and failed cells go back to pending; done and n/a cells stay.
pub fn load_for_resume(dir: &Path, experiment_text: &str) -> Result<ExperimentResults, RunError> {
    let copy = dir.join(super::EXPERIMENT_FILE);
    let old = host::files::read_bounded_text(&copy, model::experiment::MAX_FILE_BYTES as u64)?;
    if old != experiment_text {
        return Err(RunError::Resume(format!(
            "{}: the experiment file differs from the one this run began with; start a new run (--out) or restore the file",
            copy.display()
        )));
    }
    let path = dir.join(RESULTS_FILE);
    let text = host::files::read_bounded_text(&path, MAX_RESULTS_BYTES)?;
    let mut r = ExperimentResults::from_json(&text)
        .map_err(|e| RunError::Resume(format!("{}: {e}", path.display())))?;
    for c in &mut r.cells {
        if matches!(
            c.status,
            CellStatus::Interrupted | CellStatus::Failed { .. }
        ) {
            c.status = CellStatus::Pending;
        }
    }
    Ok(r)
}
