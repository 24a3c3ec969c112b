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

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
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

/// Write `bytes` to `path` atomically: into a new temporary file in the same
/// directory (never an existing file, never through a symlink), synced, then
/// renamed over `path`. A symlink at `path` is replaced, not followed. An
/// existing directory, FIFO, device node or socket at `path` (or a symlink
/// to one, such as `/dev/stdout` or `/dev/null`) is refused: writing there
/// would replace a special file rather than write into it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HostError> {
    let mut w = AtomicFile::create(path)?;
    w.write_all(bytes).map_err(|e| HostError::io(path, e))?;
    w.commit()
}

/// A file being written atomically: [`AtomicFile::commit`] renames it into
/// place; dropped without it, the temporary file is removed.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<fs::File>,
    tmp: PathBuf,
    path: PathBuf,
}

impl AtomicFile {
    /// Start writing `path` (see [`write_atomic`] for what is refused).
    pub fn create(path: &Path) -> Result<AtomicFile, HostError> {
        use rustix::fs::{Mode, OFlags};
        use std::os::unix::ffi::OsStrExt;
        if let Ok(m) = fs::metadata(path) {
            if !m.is_file() {
                return Err(HostError::Refused {
                    path: path.to_path_buf(),
                    why: "not a regular file (a directory, device, FIFO or socket, or a link to one); not replaced (use `-` for stdout)",
                });
            }
        }
        let name = path.file_name().ok_or_else(|| HostError::Refused {
            path: path.to_path_buf(),
            why: "names no file",
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // Keep the temporary name within NAME_MAX whatever the final one is.
        let stem: Vec<u8> = name.as_bytes().iter().take(200).copied().collect();
        let stem = String::from_utf8_lossy(&stem).into_owned();
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let mut last = None;
        for _ in 0..16 {
            let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let tmp = dir.join(format!(
                ".{stem}.{}.{seq}.{nanos:x}.tmp",
                std::process::id()
            ));
            match rustix::fs::open(&tmp, flags, Mode::from_raw_mode(0o644)) {
                Ok(fd) => {
                    return Ok(AtomicFile {
                        file: Some(fs::File::from(fd)),
                        tmp,
                        path: path.to_path_buf(),
                    })
                }
                // Something already has that name (planted or not): another.
                Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
                Err(e) => return Err(HostError::io(path, e.into())),
            }
        }
        let e = last.unwrap_or(rustix::io::Errno::EXIST);
        Err(HostError::io(path, e.into()))
    }

    /// Sync the data and rename the temporary file over the final name.
    pub fn commit(mut self) -> Result<(), HostError> {
        let Some(f) = self.file.take() else {
            return Ok(());
        };
        f.sync_all().map_err(|e| HostError::io(&self.path, e))?;
        drop(f);
        fs::rename(&self.tmp, &self.path).map_err(|e| HostError::io(&self.path, e))?;
        // Renamed: nothing left for Drop to remove.
        self.tmp = PathBuf::new();
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
        if !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
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
