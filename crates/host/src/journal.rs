//! The rollback journal: one directory per apply ("generation") under the
//! state directory, each with the plan and an append-only, checksummed,
//! fsynced log of original values written *before* each knob is touched.
//!
//! ```text
//! STATE/generations/000001/plan.json
//! STATE/generations/000001/journal.log   # "<fnv64 hex> <json record>\n" per line
//! ```
//!
//! The journal is the truth: rollback restores every `before` record in
//! reverse, so it works after a crash in the middle of an apply. A line whose
//! checksum or JSON does not match makes the whole journal corrupt, and
//! rollback refuses to touch anything.

use model::plan::{Plan, Target};
use model::snapshot::Fnv64;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A journal problem, naming the file.
#[derive(Debug, Error)]
pub enum JournalError {
    /// I/O on the state directory.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// A line failed its checksum or did not parse.
    #[error("{path}:{line}: corrupt journal ({why}); refusing to roll back from it, nothing was touched")]
    Corrupt {
        /// The journal file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was wrong.
        why: String,
    },
    /// No such generation.
    #[error("generation {0} not found in the journal")]
    NoGeneration(u32),
}

fn io(path: &Path, e: std::io::Error) -> JournalError {
    JournalError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// One journal record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Record {
    /// An apply started.
    Begin {
        /// Generation number.
        generation: u32,
        /// Unix time, seconds.
        at: u64,
        /// Profile name.
        profile: String,
        /// Snapshot fingerprint of the plan.
        fingerprint: String,
        /// The root directory applied to.
        root: String,
    },
    /// About to write `target`; `original` is the exact text it held
    /// (`None` = the file did not exist and is created by nettune).
    Before {
        /// Sequence number within the generation.
        seq: u32,
        /// What is written.
        target: Target,
        /// Knob name for messages.
        knob: String,
        /// The original value (raw text for files).
        original: Option<String>,
        /// The value to write.
        intended: String,
    },
    /// The write of `seq` was read back and matched.
    Done {
        /// Sequence number.
        seq: u32,
    },
    /// The kernel refused `seq` for good (managed IRQ: EIO/EPERM); not changed.
    Unchangeable {
        /// Sequence number.
        seq: u32,
        /// The error.
        error: String,
    },
    /// The write of `seq` was refused, so the knob kept its original value
    /// (rollback skips it).
    WriteFailed {
        /// Sequence number.
        seq: u32,
        /// The error.
        error: String,
    },
    /// The apply ended.
    End {
        /// `applied` or `failed`.
        status: String,
        /// Unix time, seconds.
        at: u64,
        /// Error message when failed.
        #[serde(default)]
        error: Option<String>,
    },
    /// The generation was rolled back.
    RolledBack {
        /// Unix time, seconds.
        at: u64,
    },
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn checksum(json: &str) -> String {
    let mut h = Fnv64::new();
    h.write(json.as_bytes());
    format!("{:016x}", h.finish())
}

/// The state directory holding all generations.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

/// A generation read back from disk.
#[derive(Debug, Clone)]
pub struct Generation {
    /// Number.
    pub id: u32,
    /// Its directory.
    pub dir: PathBuf,
    /// Records in order.
    pub records: Vec<Record>,
}

impl Generation {
    /// Whether an `End` record exists.
    pub fn ended(&self) -> Option<&str> {
        self.records.iter().find_map(|r| match r {
            Record::End { status, .. } => Some(status.as_str()),
            _ => None,
        })
    }

    /// Whether it was rolled back.
    pub fn rolled_back(&self) -> bool {
        self.records
            .iter()
            .any(|r| matches!(r, Record::RolledBack { .. }))
    }

    /// Whether its changes are in force (not rolled back).
    pub fn active(&self) -> bool {
        !self.rolled_back()
    }

    /// The `Begin` record fields: (time, profile).
    pub fn begin(&self) -> Option<(u64, &str)> {
        self.records.iter().find_map(|r| match r {
            Record::Begin { at, profile, .. } => Some((*at, profile.as_str())),
            _ => None,
        })
    }

    /// The plan stored with it.
    pub fn plan(&self) -> Option<Plan> {
        let text = fs::read_to_string(self.dir.join("plan.json")).ok()?;
        serde_json::from_str(&text).ok()
    }
}

impl StateDir {
    /// A state directory (created on first apply).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateDir { dir: dir.into() }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn gens_dir(&self) -> PathBuf {
        self.dir.join("generations")
    }

    /// Generation numbers present, ascending.
    pub fn ids(&self) -> Result<Vec<u32>, JournalError> {
        let d = self.gens_dir();
        let rd = match fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&d, e)),
        };
        let mut ids: Vec<u32> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Read and check one generation.
    pub fn load(&self, id: u32) -> Result<Generation, JournalError> {
        let dir = self.gens_dir().join(format!("{id:06}"));
        let path = dir.join("journal.log");
        let text = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if dir.exists() {
                    return Err(JournalError::Corrupt {
                        path,
                        line: 0,
                        why: "journal.log missing".into(),
                    });
                }
                return Err(JournalError::NoGeneration(id));
            }
            Err(e) => return Err(io(&path, e)),
        };
        let text = String::from_utf8(text).map_err(|_| JournalError::Corrupt {
            path: path.clone(),
            line: 0,
            why: "not UTF-8".into(),
        })?;
        let mut records = Vec::new();
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let corrupt = |why: &str| JournalError::Corrupt {
                path: path.clone(),
                line: i + 1,
                why: why.into(),
            };
            let body = line
                .strip_suffix('\n')
                .ok_or_else(|| corrupt("truncated line"))?;
            let (sum, json) = body.split_once(' ').ok_or_else(|| corrupt("no checksum"))?;
            if checksum(json) != sum {
                return Err(corrupt("checksum mismatch"));
            }
            let r: Record = serde_json::from_str(json).map_err(|e| corrupt(&e.to_string()))?;
            records.push(r);
        }
        if !matches!(records.first(), Some(Record::Begin { .. })) {
            return Err(JournalError::Corrupt {
                path,
                line: 1,
                why: "does not start with a begin record".into(),
            });
        }
        Ok(Generation { id, dir, records })
    }

    /// Every generation, ascending; the first corrupt one is an error.
    pub fn load_all(&self) -> Result<Vec<Generation>, JournalError> {
        self.ids()?.into_iter().map(|id| self.load(id)).collect()
    }

    /// Start a new generation: write the plan and the `Begin` record durably.
    pub fn begin(&self, plan: &Plan, root: &str) -> Result<JournalWriter, JournalError> {
        let id = self.ids()?.last().copied().unwrap_or(0) + 1;
        let gens = self.gens_dir();
        fs::create_dir_all(&gens).map_err(|e| io(&gens, e))?;
        let dir = gens.join(format!("{id:06}"));
        fs::create_dir(&dir).map_err(|e| io(&dir, e))?;
        let plan_path = dir.join("plan.json");
        let text = serde_json::to_string_pretty(plan).unwrap_or_default();
        write_durable(&plan_path, text.as_bytes())?;
        sync_dir(&gens)?;
        let mut w = JournalWriter::open(id, dir.join("journal.log"))?;
        sync_dir(&dir)?;
        w.append(&Record::Begin {
            generation: id,
            at: now(),
            profile: plan.profile.clone(),
            fingerprint: plan.fingerprint.clone(),
            root: root.into(),
        })?;
        Ok(w)
    }

    /// Reopen a generation's journal for appending (rollback records).
    pub fn writer(&self, id: u32) -> Result<JournalWriter, JournalError> {
        JournalWriter::open(
            id,
            self.gens_dir().join(format!("{id:06}")).join("journal.log"),
        )
    }
}

fn write_durable(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    let mut f = fs::File::create(path).map_err(|e| io(path, e))?;
    f.write_all(bytes).map_err(|e| io(path, e))?;
    f.sync_all().map_err(|e| io(path, e))
}

fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| io(dir, e))
}

/// Appends records, each fsynced before `append` returns.
#[derive(Debug)]
pub struct JournalWriter {
    /// Generation number.
    pub id: u32,
    path: PathBuf,
    file: fs::File,
}

impl JournalWriter {
    fn open(id: u32, path: PathBuf) -> Result<Self, JournalError> {
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        Ok(JournalWriter { id, path, file })
    }

    /// Append one record and fsync it (one `write(2)` per line).
    pub fn append(&mut self, r: &Record) -> Result<(), JournalError> {
        let json = serde_json::to_string(r).map_err(|e| JournalError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        let line = format!("{} {json}\n", checksum(&json));
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| io(&self.path, e))?;
        self.file.sync_data().map_err(|e| io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::plan::{NetnsScope, PlanOptions, ValueFormat};

    fn plan() -> Plan {
        Plan {
            schema_version: 1,
            profile: "throughput".into(),
            profile_toml: None,
            fingerprint: "ab".into(),
            hostname: None,
            options: PlanOptions::default(),
            scope: NetnsScope::Init,
            changes: vec![],
            notes: vec![],
        }
    }

    #[test]
    fn records_round_trip_and_corruption_is_detected() {
        let t = tempfile::tempdir().unwrap();
        let sd = StateDir::new(t.path());
        let mut w = sd.begin(&plan(), "/x").unwrap();
        w.append(&Record::Before {
            seq: 0,
            target: Target::File {
                path: "/proc/sys/net/core/rmem_max".into(),
                format: ValueFormat::Text,
            },
            knob: "net.core.rmem_max".into(),
            original: Some("212992\n".into()),
            intended: "1000".into(),
        })
        .unwrap();
        let g = sd.load(1).unwrap();
        assert_eq!(g.records.len(), 2);
        assert!(g.ended().is_none() && g.active());
        assert_eq!(sd.begin(&plan(), "/x").unwrap().id, 2);
        let p = t.path().join("generations/000001/journal.log");
        let text = fs::read_to_string(&p).unwrap().replace("212992", "212993");
        fs::write(&p, text).unwrap();
        let e = sd.load(1).unwrap_err().to_string();
        assert!(e.contains("journal.log:2") && e.contains("checksum"), "{e}");
    }
}
