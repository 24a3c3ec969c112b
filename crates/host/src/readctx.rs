//! The read context of a snapshot: reads through a [`Root`], turning every
//! failure into a [`Note`] naming the file, and (for `capture`) recording
//! each path touched.

use crate::{HostError, Root};
use model::snapshot::Note;
use model::ParseError;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How a path was touched while reading a snapshot (for `capture`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// A file was read.
    File(PathBuf),
    /// A directory was listed.
    Dir(PathBuf),
    /// A symlink's target was read.
    Link(PathBuf),
}

/// Reads through a root, collecting notes and (optionally) the paths touched.
pub(crate) struct Ctx<'a> {
    pub(crate) root: &'a Root,
    notes: RefCell<Vec<Note>>,
    log: Option<RefCell<BTreeSet<Access>>>,
}

fn is_einval(e: &HostError) -> bool {
    e.errno() == Some(rustix::io::Errno::INVAL)
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(root: &'a Root, record: bool) -> Self {
        Ctx {
            root,
            notes: RefCell::new(Vec::new()),
            log: record.then(|| RefCell::new(BTreeSet::new())),
        }
    }

    pub(crate) fn record(&self, a: Access) {
        if let Some(l) = &self.log {
            l.borrow_mut().insert(a);
        }
    }

    /// Record a file as read without reading it (for `capture`).
    pub(crate) fn touch(&self, path: impl AsRef<Path>) {
        self.record(Access::File(path.as_ref().to_path_buf()));
    }

    /// Add a note about `path`.
    pub(crate) fn note(&self, path: impl AsRef<Path>, message: impl Into<String>) {
        self.notes.borrow_mut().push(Note {
            path: path.as_ref().display().to_string(),
            message: message.into(),
        });
    }

    pub(crate) fn note_err(&self, e: &HostError) {
        let path = e.path().map(Path::to_path_buf).unwrap_or_default();
        let full = e.to_string();
        let p = path.display().to_string();
        let msg = full
            .strip_prefix(&p)
            .map(|m| m.trim_start_matches(':').trim().to_string())
            .unwrap_or(full);
        self.note(path, msg);
    }

    /// Trimmed text of a file that should exist: any failure is noted.
    pub(crate) fn req(&self, path: impl AsRef<Path>) -> Option<String> {
        let path = path.as_ref();
        self.record(Access::File(path.to_path_buf()));
        match self.root.read_trim(path) {
            Ok(s) => Some(s),
            Err(e) => {
                self.note_err(&e);
                None
            }
        }
    }

    /// Trimmed text of a file that may be absent: absence (ENOENT, or EINVAL as
    /// sysfs gives for unknown values) is silent, other failures are noted.
    pub(crate) fn opt(&self, path: impl AsRef<Path>) -> Option<String> {
        let path = path.as_ref();
        self.record(Access::File(path.to_path_buf()));
        match self.root.read_trim(path) {
            Ok(s) => Some(s),
            Err(e) if e.is_not_found() || is_einval(&e) => None,
            Err(e) => {
                self.note_err(&e);
                None
            }
        }
    }

    pub(crate) fn parse_text<T>(
        &self,
        path: &Path,
        text: Option<String>,
        f: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Option<T> {
        let text = text?;
        match f(&text) {
            Ok(v) => Some(v),
            Err(source) => {
                self.note_err(&HostError::Parse {
                    path: path.to_path_buf(),
                    source,
                });
                None
            }
        }
    }

    /// Parse a file that should exist.
    pub(crate) fn req_parse<T>(
        &self,
        path: impl AsRef<Path>,
        f: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Option<T> {
        let path = path.as_ref();
        let t = self.req(path);
        self.parse_text(path, t, f)
    }

    /// Parse a file that may be absent.
    pub(crate) fn opt_parse<T>(
        &self,
        path: impl AsRef<Path>,
        f: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Option<T> {
        let path = path.as_ref();
        let t = self.opt(path);
        self.parse_text(path, t, f)
    }

    /// Entries of a directory that should exist.
    pub(crate) fn list_req(&self, path: impl AsRef<Path>) -> Option<Vec<String>> {
        let path = path.as_ref();
        self.record(Access::Dir(path.to_path_buf()));
        match self.root.list(path) {
            Ok(v) => Some(v),
            Err(e) => {
                self.note_err(&e);
                None
            }
        }
    }

    /// Network interfaces under `/sys/class/net` (see [`Root::list_interfaces`]).
    pub(crate) fn interfaces(&self) -> Option<Vec<String>> {
        self.record(Access::Dir("/sys/class/net".into()));
        match self.root.list_interfaces() {
            Ok(v) => Some(v),
            Err(e) => {
                self.note_err(&e);
                None
            }
        }
    }

    /// Entries of a directory that may be absent.
    pub(crate) fn list_opt(&self, path: impl AsRef<Path>) -> Option<Vec<String>> {
        let path = path.as_ref();
        self.record(Access::Dir(path.to_path_buf()));
        match self.root.list(path) {
            Ok(v) => Some(v),
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                self.note_err(&e);
                None
            }
        }
    }

    /// Last component of a symlink's target, if the link exists.
    pub(crate) fn link_opt(&self, path: impl AsRef<Path>) -> Option<String> {
        let path = path.as_ref();
        self.record(Access::Link(path.to_path_buf()));
        match self.root.link_name(path) {
            Ok(s) => Some(s),
            Err(e) if e.is_not_found() || is_einval(&e) => None,
            Err(e) => {
                self.note_err(&e);
                None
            }
        }
    }

    /// The final component of the real directory `path` resolves to.
    pub(crate) fn resolved_name(&self, path: impl AsRef<Path>) -> Option<String> {
        let path = path.as_ref();
        self.record(Access::Dir(path.to_path_buf()));
        let real = if self.root.is_live() {
            std::fs::canonicalize(path).ok()?
        } else {
            self.root.resolve(path).ok()?
        };
        if !real.exists() {
            return None;
        }
        real.file_name().map(|s| s.to_string_lossy().into_owned())
    }

    pub(crate) fn into_parts(self) -> (Vec<Note>, Vec<Access>) {
        let log = self
            .log
            .map(|l| l.into_inner().into_iter().collect())
            .unwrap_or_default();
        (self.notes.into_inner(), log)
    }
}
