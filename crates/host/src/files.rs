//! Files a command is handed or writes: the one bounded reader and the one
//! atomic writer that `experiment`, `lab`, `report`, `apply --plan` and the
//! token files use.
//!
//! Reading: only a regular file, at most a given number of bytes, never
//! blocking (a FIFO or device node named as input is refused at once).
//! Writing: a new temporary file next to the target (created with
//! `O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing planted there is opened) and a
//! rename over the final name, so a symlink planted at that name is replaced
//! itself, never written through, and a reader never sees half a file.
//! Output directories are created without following a symlink at their last
//! component.

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::HostError;

/// Read the regular file `path`, at most `limit` bytes: a FIFO, device node,
/// socket or directory is refused without blocking on it, and a longer file
/// is an error (naming the file), not a truncated read.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, HostError> {
    crate::root::read_regular(path, path, limit)
}

/// [`read_bounded`] as UTF-8 text; other bytes are an error naming the file.
pub fn read_bounded_text(path: &Path, limit: u64) -> Result<String, HostError> {
    String::from_utf8(read_bounded(path, limit)?).map_err(|_| HostError::Io {
        path: path.to_path_buf(),
        error: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
    })
}

/// Temporary files made by this process, for unique names.
static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Why a name on the way to an output is refused.
const NOT_A_DIR: &str =
    "is a symlink or not a directory; nothing is written through it (remove it or name another directory)";

/// Write `bytes` to `path` atomically: into a new temporary file in the same
/// directory (never an existing file, never through a symlink), synced, then
/// renamed over `path`. A symlink at `path` is replaced, not followed. An
/// existing directory, FIFO, device node or socket at `path` (or a symlink
/// to one, such as `/dev/stdout` or `/dev/null`) is refused: writing there
/// would replace a special file rather than write into it. The directory
/// holding `path` is taken as given (the caller named it).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HostError> {
    let mut w = AtomicFile::create(path)?;
    w.write_all(bytes).map_err(|e| HostError::io(path, e))?;
    w.commit()
}

/// A directory nettune writes into, held open. Every directory and file
/// under it is reached from this descriptor one component at a time with
/// `O_NOFOLLOW | O_DIRECTORY` (`openat`), created with `mkdirat` where
/// missing: a symlink, or anything but a directory, on the way is refused,
/// naming it, so nothing planted under an output directory redirects a
/// write. Files are written by [`OutDir::write`] (temporary file + rename
/// in the same directory, see [`write_atomic`]).
#[derive(Debug)]
pub struct OutDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl OutDir {
    /// Create `dir` (its parents as needed) or take the existing one,
    /// refusing a symlink or a non-directory at its last component (see
    /// [`create_out_dir`]). The path above it is taken as given.
    pub fn create(dir: &Path) -> Result<OutDir, HostError> {
        create_out_dir(dir)?;
        let fd =
            rustix::fs::open(dir, dir_flags(), Mode::empty()).map_err(|e| refused_or_io(dir, e))?;
        Ok(OutDir {
            fd,
            path: dir.to_path_buf(),
        })
    }

    /// The directory's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `rel` under this one, created component by component
    /// where missing; a symlink or non-directory on the way is refused.
    /// `rel` must be relative and plain (no `..`).
    pub fn subdir(&self, rel: &Path) -> Result<OutDir, HostError> {
        let mut cur: Option<OutDir> = None;
        for c in plain_components(&self.path, rel)? {
            let parent = cur.as_ref().unwrap_or(self);
            let path = parent.path.join(c);
            let fd = match rustix::fs::openat(&parent.fd, c, dir_flags(), Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(&parent.fd, c, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(HostError::io(&path, e.into())),
                    }
                    rustix::fs::openat(&parent.fd, c, dir_flags(), Mode::empty())
                        .map_err(|e| refused_or_io(&path, e))?
                }
                Err(e) => return Err(refused_or_io(&path, e)),
            };
            cur = Some(OutDir { fd, path });
        }
        match cur {
            Some(d) => Ok(d),
            None => Ok(OutDir {
                fd: rustix::io::dup(&self.fd).map_err(|e| HostError::io(&self.path, e.into()))?,
                path: self.path.clone(),
            }),
        }
    }

    /// The directory holding `rel` (created as [`OutDir::subdir`]) and
    /// `rel`'s last component.
    fn parent_of<'r>(&self, rel: &'r Path) -> Result<(OutDir, &'r OsStr), HostError> {
        let name = rel
            .file_name()
            .ok_or_else(|| refused(&self.path.join(rel), "names no file"))?;
        let dir = self.subdir(rel.parent().unwrap_or(Path::new("")))?;
        Ok((dir, name))
    }

    /// Write `bytes` to `rel` under this directory atomically (the one
    /// writer: see [`write_atomic`] for what is refused at the final name).
    pub fn write(&self, rel: &Path, bytes: &[u8]) -> Result<(), HostError> {
        let mut w = self.create_file(rel)?;
        w.write_all(bytes)
            .map_err(|e| HostError::io(self.path.join(rel), e))?;
        w.commit()
    }

    /// Start writing `rel` under this directory; [`AtomicFile::commit`]
    /// puts it in place.
    pub fn create_file(&self, rel: &Path) -> Result<AtomicFile, HostError> {
        let (dir, name) = self.parent_of(rel)?;
        AtomicFile::create_at(dir, name)
    }

    /// Make `rel` a symlink to `target` (a capture recreating the live
    /// tree's links). A link already there with that target is kept and
    /// `false` returned; anything else there but a directory is replaced
    /// atomically (a new link renamed over it), never followed.
    pub fn symlink(&self, rel: &Path, target: &Path) -> Result<bool, HostError> {
        let (dir, name) = self.parent_of(rel)?;
        let shown = dir.path.join(name);
        if let Ok(old) = rustix::fs::readlinkat(&dir.fd, name, Vec::new()) {
            if old.as_bytes() == target.as_os_str().as_bytes() {
                return Ok(false);
            }
        }
        let mut last = Errno::EXIST;
        for _ in 0..16 {
            let tmp = tmp_name(name);
            match rustix::fs::symlinkat(target, &dir.fd, &tmp) {
                Ok(()) => {
                    return match rustix::fs::renameat(&dir.fd, &tmp, &dir.fd, name) {
                        Ok(()) => Ok(true),
                        Err(e) => {
                            let _ = rustix::fs::unlinkat(&dir.fd, &tmp, AtFlags::empty());
                            Err(refused_or_io(&shown, e))
                        }
                    };
                }
                Err(Errno::EXIST) => last = Errno::EXIST,
                Err(e) => return Err(HostError::io(&shown, e.into())),
            }
        }
        Err(HostError::io(&shown, last.into()))
    }
}

/// Open `path` as a log that a child process appends to over time (it
/// cannot be written atomically): truncated, created `O_NOFOLLOW` (a planted
/// symlink is refused, never followed) and refused unless a regular file.
pub fn create_log(path: &Path) -> Result<fs::File, HostError> {
    let fd = rustix::fs::open(
        path,
        OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::TRUNC
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| match e {
        Errno::LOOP => refused(path, "is a symlink; not written through"),
        e => HostError::io(path, e.into()),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| HostError::io(path, e.into()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(refused(path, "not a regular file; no log written to it"));
    }
    Ok(fs::File::from(fd))
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn refused(path: &Path, why: &'static str) -> HostError {
    HostError::Refused {
        path: path.to_path_buf(),
        why,
    }
}

/// `ELOOP`/`ENOTDIR` from an `O_NOFOLLOW | O_DIRECTORY` open: a symlink or
/// a non-directory where a directory was expected.
fn refused_or_io(path: &Path, e: Errno) -> HostError {
    match e {
        Errno::LOOP | Errno::NOTDIR | Errno::ISDIR => refused(path, NOT_A_DIR),
        e => HostError::io(path, e.into()),
    }
}

/// The normal components of `rel`; an absolute path, `..` or `.` is refused.
fn plain_components<'r>(base: &Path, rel: &'r Path) -> Result<Vec<&'r OsStr>, HostError> {
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(refused(
                &base.join(rel),
                "not a plain relative path (absolute, `.` or `..`)",
            )),
        })
        .collect()
}

/// A fresh temporary name next to `name`, within NAME_MAX.
fn tmp_name(name: &OsStr) -> OsString {
    let stem: Vec<u8> = name.as_bytes().iter().take(200).copied().collect();
    let stem = String::from_utf8_lossy(&stem).into_owned();
    let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    OsString::from(format!(
        ".{stem}.{}.{seq}.{nanos:x}.tmp",
        std::process::id()
    ))
}

/// A file being written atomically: [`AtomicFile::commit`] renames it into
/// place; dropped without it, the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<fs::File>,
    dir: OutDir,
    tmp: OsString,
    name: OsString,
}

impl AtomicFile {
    /// Start writing `path` (see [`write_atomic`] for what is refused).
    pub fn create(path: &Path) -> Result<AtomicFile, HostError> {
        let name = path
            .file_name()
            .ok_or_else(|| refused(path, "names no file"))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // The caller named this directory: followed as given.
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| HostError::io(dir, e.into()))?;
        let dir = OutDir {
            fd,
            path: dir.to_path_buf(),
        };
        AtomicFile::create_at(dir, name)
    }

    /// Start writing `name` in `dir`: refuse a special file (or a link to
    /// one) at `name`, then create a new temporary file there with
    /// `O_CREAT | O_EXCL | O_NOFOLLOW`.
    fn create_at(dir: OutDir, name: &OsStr) -> Result<AtomicFile, HostError> {
        let shown = dir.path.join(name);
        if let Ok(st) = rustix::fs::statat(&dir.fd, name, AtFlags::empty()) {
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                return Err(refused(
                    &shown,
                    "not a regular file (a directory, device, FIFO or socket, or a link to one); not replaced (use `-` for stdout)",
                ));
            }
        }
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let mut last = Errno::EXIST;
        for _ in 0..16 {
            let tmp = tmp_name(name);
            match rustix::fs::openat(&dir.fd, &tmp, flags, Mode::from_raw_mode(0o644)) {
                Ok(fd) => {
                    return Ok(AtomicFile {
                        file: Some(fs::File::from(fd)),
                        dir,
                        tmp,
                        name: name.to_os_string(),
                    })
                }
                // Something already has that name (planted or not): another.
                Err(Errno::EXIST) => last = Errno::EXIST,
                Err(e) => return Err(HostError::io(&shown, e.into())),
            }
        }
        Err(HostError::io(&shown, last.into()))
    }

    /// Sync the data and rename the temporary file over the final name.
    pub fn commit(mut self) -> Result<(), HostError> {
        let shown = self.dir.path.join(&self.name);
        let Some(f) = self.file.take() else {
            return Ok(());
        };
        f.sync_all().map_err(|e| HostError::io(&shown, e))?;
        drop(f);
        rustix::fs::renameat(&self.dir.fd, &self.tmp, &self.dir.fd, &self.name)
            .map_err(|e| HostError::io(&shown, e.into()))?;
        // Renamed: nothing left for Drop to remove.
        self.tmp = OsString::new();
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(std::io::Error::other("already committed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.tmp.is_empty() {
            let _ = rustix::fs::unlinkat(&self.dir.fd, &self.tmp, AtFlags::empty());
        }
    }
}

/// Create the output directory `dir` (its parents as needed) or take the
/// existing one, refusing a symlink or anything but a directory at its last
/// component: root never writes its results through a link planted under an
/// expected name (a `nettune-report` in a shared working directory).
pub fn create_out_dir(dir: &Path) -> Result<(), HostError> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| HostError::io(parent, e))?;
    }
    // mkdir(2) never follows a symlink at the last component.
    match fs::create_dir(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(HostError::io(dir, e)),
    }
    let m = fs::symlink_metadata(dir).map_err(|e| HostError::io(dir, e))?;
    if m.file_type().is_symlink() {
        return Err(HostError::Refused {
            path: dir.to_path_buf(),
            why: "is a symlink; not written through (name the directory itself)",
        });
    }
    if !m.is_dir() {
        return Err(HostError::Refused {
            path: dir.to_path_buf(),
            why: "exists and is not a directory",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_planted_symlink_is_replaced_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let target = t.path().join("report.html");
        symlink(&victim, &target).unwrap();
        write_atomic(&target, b"report").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!fs::symlink_metadata(&target)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&target).unwrap(), "report");
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(t.path()).unwrap().collect();
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn special_files_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let e = write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(matches!(e, HostError::Refused { .. }), "{e}");
        let e = write_atomic(t.path(), b"x").unwrap_err();
        assert!(matches!(e, HostError::Refused { .. }), "{e}");
    }

    #[test]
    fn a_fifo_is_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("results.json");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let e = read_bounded(&fifo, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        assert!(e.to_string().contains("results.json"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
    }

    #[test]
    fn out_dir_symlink_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let out = t.path().join("nettune-report");
        symlink(&elsewhere, &out).unwrap();
        assert!(matches!(
            create_out_dir(&out),
            Err(HostError::Refused { .. })
        ));
        let fresh = t.path().join("a/b");
        create_out_dir(&fresh).unwrap();
        create_out_dir(&fresh).unwrap();
        assert!(fresh.is_dir());
    }
}

/// Whether this process's standard output is a pipe or socket whose reader
/// has gone (`| head` finished). A `BrokenPipe` error is a quiet end only
/// when this holds; one from a peer's socket is a real error.
pub fn stdout_closed() -> bool {
    reader_gone(std::io::stdout())
}

/// Whether `fd`, the writing end of a pipe or a socket, has no reader left:
/// `poll` reports `POLLERR`/`POLLHUP` on it at once.
pub fn reader_gone(fd: impl std::os::fd::AsFd) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match poll(&mut fds, Some(&zero)) {
        Ok(_) => fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP),
        Err(_) => false,
    }
}

#[cfg(test)]
mod reader_tests {
    #[test]
    fn a_pipe_whose_reader_closed_is_gone_and_an_open_one_is_not() {
        let (r, w) = std::io::pipe().unwrap();
        assert!(!super::reader_gone(&w));
        drop(r);
        assert!(super::reader_gone(&w));
    }
}
