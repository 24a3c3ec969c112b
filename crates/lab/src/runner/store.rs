//! The results directory: atomic writes and reading it back for `--resume`.

use std::fs;
use std::io::Write;
use std::path::Path;

use model::results::{CellStatus, ExperimentResults, RESULTS_FILE};

use super::RunError;

/// Name of the copy of the experiment file inside a results directory.
pub const EXPERIMENT_FILE: &str = "experiment.toml";

/// Largest results file read back, bytes.
const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// Write `bytes` to `path` through a temporary file in the same directory
/// and a rename, so a reader (or a crash) never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let err = |source| RunError::Io {
        path: path.to_path_buf(),
        source,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let mut f = fs::File::create(&tmp).map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    drop(f);
    fs::rename(&tmp, path).map_err(err)
}

/// Read `DIR/results.json` for `--resume`, refusing when `DIR/experiment.toml`
/// differs from `experiment_text` (the file changed since the run began).
/// Interrupted and failed cells go back to pending; done and n/a cells stay.
pub fn load_for_resume(dir: &Path, experiment_text: &str) -> Result<ExperimentResults, RunError> {
    let copy = dir.join(super::EXPERIMENT_FILE);
    let old = fs::read_to_string(&copy).map_err(|source| RunError::Io {
        path: copy.clone(),
        source,
    })?;
    if old != experiment_text {
        return Err(RunError::Resume(format!(
            "{}: the experiment file differs from the one this run began with; start a new run (--out) or restore the file",
            copy.display()
        )));
    }
    let path = dir.join(RESULTS_FILE);
    let len = fs::metadata(&path)
        .map_err(|source| RunError::Io {
            path: path.clone(),
            source,
        })?
        .len();
    if len > MAX_RESULTS_BYTES {
        return Err(RunError::Resume(format!(
            "{}: {len} bytes, more than {MAX_RESULTS_BYTES}",
            path.display()
        )));
    }
    let text = fs::read_to_string(&path).map_err(|source| RunError::Io {
        path: path.clone(),
        source,
    })?;
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
