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
//!
//! The checksum catches damage, not tampering (anyone can recompute it), so
//! rollback also checks every target a journal names before it restores
//! anything (`apply::targets`). A journal is read only if it is a regular
//! file of at most [`MAX_JOURNAL`] bytes.
//!
//! `STATE/lock` is `flock(2)`ed exclusively by apply and rollback
//! ([`StateDir::lock`]); it holds the holder's pid.

use crate::error::HostError;
use crate::root::read_regular;
use model::plan::{Plan, Target};
use model::snapshot::{Fnv64, QueueRef};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Largest journal or stored plan read: 16 MiB (a plan of a large host is
/// well under 1 MiB).
pub const MAX_JOURNAL: u64 = 16 << 20;

/// How an apply ended, as its `end` record says (`"applied"`, `"stopped"`,
/// `"failed"` in the journal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    /// It wrote its whole plan.
    Applied,
    /// It stopped after a channel change (the rest of its plan was stale);
    /// what it wrote is in force.
    Stopped,
    /// It failed (and was rolled back, or not).
    Failed,
}

impl EndStatus {
    /// The name as in the journal and `history --json`.
    pub fn name(self) -> &'static str {
        match self {
            EndStatus::Applied => "applied",
            EndStatus::Stopped => "stopped",
            EndStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for EndStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A journal problem, naming the file.
#[derive(Debug, Error)]
pub enum JournalError {
    /// I/O on the state directory (the OS error is in the message, not a
    /// `source()`, so an error chain does not repeat it).
    #[error("{path}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// OS error.
        error: std::io::Error,
    },
    /// A journal file that is not a regular file, or too large.
    #[error(transparent)]
    Read(#[from] HostError),
    /// Another apply or rollback holds the state directory's lock.
    #[error("{path}: locked by another nettune apply or rollback ({}); it was not waited for: try again when it has finished", holder(*.pid))]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// The holder's pid, when it could be read.
        pid: Option<u32>,
    },
    /// The generation number would overflow.
    #[error("{0}: no generation number left")]
    Full(PathBuf),
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

impl JournalError {
    /// Whether the OS refused access (EACCES/EPERM): not root, most often.
    pub fn permission_denied(&self) -> bool {
        match self {
            JournalError::Io { error, .. } => error.kind() == std::io::ErrorKind::PermissionDenied,
            JournalError::Read(HostError::PermissionDenied { .. }) => true,
            _ => false,
        }
    }
}

fn holder(pid: Option<u32>) -> String {
    match pid {
        Some(p) => format!("pid {p}"),
        None => "pid unknown".into(),
    }
}

pub(crate) fn io(path: &Path, e: std::io::Error) -> JournalError {
    JournalError::Io {
        path: path.to_path_buf(),
        error: e,
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
        /// For an IRQ's affinity: the queue the IRQ served when it was
        /// written, so rollback and verify find that queue's IRQ after the
        /// kernel renumbered it (absent in older journals and for IRQs whose
        /// queue is unknown: the number is used as it is).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queue: Option<QueueRef>,
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
        /// How it ended.
        status: EndStatus,
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
        /// Knobs that could not be restored (`rollback --force` closed the
        /// generation without them), each as `knob (target): error`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unrestored: Vec<String>,
        /// Why, when nettune rolled it back by itself (a confirm deadline
        /// passed, `crate::confirm`); absent for a rollback asked for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
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
    /// How the apply ended; `None` while it runs or after a crash.
    pub fn ended(&self) -> Option<EndStatus> {
        self.records.iter().find_map(|r| match r {
            Record::End { status, .. } => Some(*status),
            _ => None,
        })
    }

    /// Whether the apply finished consistently: it wrote its whole plan
    /// (`applied`) or stopped on purpose after a channel change (`stopped`).
    pub fn finished(&self) -> bool {
        matches!(self.ended(), Some(EndStatus::Applied | EndStatus::Stopped))
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
        let p = self.dir.join("plan.json");
        let bytes = read_regular(&p, &p, MAX_JOURNAL).ok()?;
        serde_json::from_slice(&bytes).ok()
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

    /// `STATE/confirm`: pending confirmations (`crate::confirm`).
    pub fn confirm_dir(&self) -> PathBuf {
        self.dir.join("confirm")
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
            .filter_map(|e| e.file_name().to_str().and_then(parse_id))
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Read and check one generation.
    pub fn load(&self, id: u32) -> Result<Generation, JournalError> {
        let dir = self.gens_dir().join(format!("{id:06}"));
        let path = dir.join("journal.log");
        let text = match read_regular(&path, &path, MAX_JOURNAL) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => {
                if dir.exists() {
                    return Err(JournalError::Corrupt {
                        path,
                        line: 0,
                        why: "journal.log missing".into(),
                    });
                }
                return Err(JournalError::NoGeneration(id));
            }
            Err(e) => return Err(e.into()),
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
        let gens = self.gens_dir();
        let id = self
            .ids()?
            .last()
            .copied()
            .unwrap_or(0)
            .checked_add(1)
            .ok_or_else(|| JournalError::Full(gens.clone()))?;
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

    /// Take the state directory's exclusive lock (`STATE/lock`, `flock(2)`),
    /// creating the directory. Fails at once, naming the holder's pid, when
    /// another process holds it; the kernel drops it when the holder exits,
    /// even on SIGKILL. Held until the returned guard is dropped.
    pub fn lock(&self) -> Result<StateLock, JournalError> {
        use rustix::fs::{FlockOperation, Mode, OFlags};
        fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        let path = self.dir.join("lock");
        let fd = rustix::fs::open(
            &path,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io(&path, e.into()))?;
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let pid = read_regular(&path, &path, 64)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .and_then(|s| s.trim().parse().ok());
                return Err(JournalError::Locked { path, pid });
            }
            Err(e) => return Err(io(&path, e.into())),
        }
        let mut file = fs::File::from(fd);
        file.set_len(0).map_err(|e| io(&path, e))?;
        writeln!(file, "{}", std::process::id()).map_err(|e| io(&path, e))?;
        Ok(StateLock { _file: file })
    }

    /// Reopen a generation's journal for appending (rollback records).
    pub fn writer(&self, id: u32) -> Result<JournalWriter, JournalError> {
        JournalWriter::open(
            id,
            self.gens_dir().join(format!("{id:06}")).join("journal.log"),
        )
    }
}

/// The exclusive lock on a state directory; released when dropped.
#[derive(Debug)]
pub struct StateLock {
    _file: fs::File,
}

/// A generation directory name: six to ten ASCII digits.
fn parse_id(s: &str) -> Option<u32> {
    if (6..=10).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// Re-exported: the one date formatter is in [`model::time`].
pub use model::time::format_utc;

/// Write a state file through the one writer ([`crate::files::write_atomic`]:
/// a new temporary file, synced, renamed over `path`; a link planted there
/// is replaced, never followed).
pub(crate) fn write_durable(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    crate::files::write_atomic(path, bytes).map_err(JournalError::Read)
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), JournalError> {
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
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            &path,
            OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| io(&path, e.into()))?;
        // O_NOFOLLOW refused a link; a FIFO or device node is refused too.
        let st = rustix::fs::fstat(&fd).map_err(|e| io(&path, e.into()))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(JournalError::Read(HostError::Refused {
                path,
                why: "not a regular file; the journal is not appended to it",
            }));
        }
        Ok(JournalWriter {
            id,
            path,
            file: fs::File::from(fd),
        })
    }

    /// Append one record and fsync it (one `write(2)` per line).
    pub fn append(&mut self, r: &Record) -> Result<(), JournalError> {
        let json = serde_json::to_string(r).map_err(|e| JournalError::Io {
            path: self.path.clone(),
            error: std::io::Error::other(e),
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
            queue: None,
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

    /// Journals written before statuses were typed and IRQ records carried
    /// their queue read as they did.
    #[test]
    fn journals_of_earlier_versions_still_read() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("generations/000001");
        fs::create_dir_all(&d).unwrap();
        let lines = [
            r#"{"op":"begin","generation":1,"at":1795460068,"profile":"throughput","fingerprint":"f","root":"/"}"#,
            r#"{"op":"before","seq":0,"target":{"kind":"irq_affinity","irq":266,"iface":"eth0"},"knob":"smp_affinity_list","original":"0-35\n","intended":"0"}"#,
            r#"{"op":"done","seq":0}"#,
            r#"{"op":"end","status":"stopped","at":1795460069,"error":"stopped after the channel change"}"#,
        ];
        let text: String = lines
            .iter()
            .map(|j| format!("{} {j}\n", checksum(j)))
            .collect();
        fs::write(d.join("journal.log"), text).unwrap();
        let g = StateDir::new(t.path()).load(1).unwrap();
        assert_eq!(g.ended(), Some(EndStatus::Stopped));
        assert!(g.finished());
        assert!(matches!(&g.records[1], Record::Before { queue: None, .. }));
        // A status no nettune writes is a corrupt journal, not a guess.
        let bad = r#"{"op":"end","status":"done","at":1,"error":null}"#;
        fs::write(
            d.join("journal.log"),
            format!(
                "{} {}\n{} {bad}\n",
                checksum(lines[0]),
                lines[0],
                checksum(bad)
            ),
        )
        .unwrap();
        let e = StateDir::new(t.path()).load(1).unwrap_err();
        assert!(matches!(e, JournalError::Corrupt { line: 2, .. }), "{e}");
    }

    #[test]
    fn the_lock_is_exclusive_and_names_its_holder() {
        let t = tempfile::tempdir().unwrap();
        let sd = StateDir::new(t.path().join("state"));
        let held = sd.lock().unwrap();
        // flock locks belong to the open file description: a second open in
        // the same process conflicts like another process would.
        match sd.lock() {
            Err(JournalError::Locked { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("{other:?}"),
        }
        drop(held);
        sd.lock().unwrap();
    }

    #[test]
    fn generation_ids_are_digits_only() {
        assert_eq!(parse_id("000012"), Some(12));
        for bad in ["+00012", "12", "00001a", "-000001", "99999999999"] {
            assert_eq!(parse_id(bad), None, "{bad}");
        }
    }
}
