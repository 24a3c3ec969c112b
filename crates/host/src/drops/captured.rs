//! The drop counts of a capture: `capture --samples` writes the watcher's
//! cumulative [`DropCounts`] into each sample's `drops.json`; `--root`
//! reads them back.

use super::{DropsError, DROPS_FILE};
use crate::capture::{read_index, SAMPLES_DIR};
use crate::{HostError, Root};
use model::drops::{DropCounts, Unavailable};
use std::path::{Path, PathBuf};

/// One sample's recorded drop counts.
#[derive(Debug, Clone)]
pub struct CapturedDrops {
    /// The sample's time, ns (monotonic, as the index says).
    pub at: u64,
    /// The sample's directory (its own `proc/net/dev` is there).
    pub dir: PathBuf,
    /// The cumulative counts.
    pub counts: DropCounts,
}

/// The drop counts a capture recorded, one per sample that has them:
/// [`Unavailable::NotCaptured`] when none has.
pub fn read_captured(root: &Root) -> Result<Vec<CapturedDrops>, DropsError> {
    let index = read_index(root)
        .map_err(DropsError::Host)?
        .ok_or(DropsError::Unavailable(Unavailable::NotCaptured))?;
    let mut out = Vec::new();
    for e in &index.samples {
        let shown = PathBuf::from(SAMPLES_DIR).join(&e.dir).join(DROPS_FILE);
        let path = root.dir().join(&shown);
        let bytes = match crate::root::read_regular(&path, &shown, crate::root::MAX_READ) {
            Ok(b) => b,
            Err(err) if err.is_not_found() => continue,
            Err(err) => return Err(DropsError::Host(err)),
        };
        let c: DropCounts = serde_json::from_slice(&bytes).map_err(|err| {
            DropsError::Host(HostError::Io {
                path: shown.clone(),
                error: std::io::Error::other(err),
            })
        })?;
        if c.schema_version != model::drops::DROPS_SCHEMA_VERSION {
            return Err(DropsError::Host(HostError::Io {
                path: shown,
                error: std::io::Error::other(format!(
                    "schema_version {} (this nettune reads {})",
                    c.schema_version,
                    model::drops::DROPS_SCHEMA_VERSION
                )),
            }));
        }
        out.push(CapturedDrops {
            at: e.at,
            dir: root.dir().join(SAMPLES_DIR).join(&e.dir),
            counts: c,
        });
    }
    if out.is_empty() {
        return Err(DropsError::Unavailable(Unavailable::NotCaptured));
    }
    Ok(out)
}

/// Write `counts` as a capture sample's `drops.json` into `dir`.
pub fn write_counts(dir: &crate::files::OutDir, counts: &DropCounts) -> Result<(), HostError> {
    let mut text = serde_json::to_string_pretty(counts).unwrap_or_default();
    text.push('\n');
    dir.write(Path::new(DROPS_FILE), text.as_bytes())
}
