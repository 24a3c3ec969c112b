//! The files apply creates and rollback removes: the `--persist` unit, plan
//! and link (through [`Root::resolve_confined`], never following a symlink in
//! the last component) and the modprobe.d snippets in the state directory
//! (file names built from checked names, so they stay in that directory).

use crate::error::HostError;
use crate::root::{read_regular, Root};
use model::plan::CreatedKind;
use std::fs;
use std::io::{ErrorKind, Write};
use std::path::Path;

/// Largest created file or snippet read back (a plan copy of a big host is
/// well under this).
const MAX_CREATED: u64 = 16 << 20;

/// Create (or replace) the regular file `real` with `bytes`: a symlink, FIFO
/// or device node in its place is refused, not followed or opened.
fn create_file(real: &Path, shown: &Path, bytes: &[u8]) -> Result<(), HostError> {
    use rustix::fs::{Mode, OFlags};
    match fs::symlink_metadata(real) {
        Ok(m) if !m.file_type().is_file() => {
            return Err(HostError::NotRegular {
                path: shown.to_path_buf(),
                kind: if m.file_type().is_symlink() {
                    "symlink"
                } else {
                    "not a regular file"
                },
            })
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(HostError::io(shown, e)),
    }
    let fd = rustix::fs::open(
        real,
        OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::TRUNC
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| HostError::io(shown, e.into()))?;
    let mut f = fs::File::from(fd);
    f.write_all(bytes).map_err(|e| HostError::io(shown, e))
}

/// Read a regular file that must not be a symlink; `None` when absent.
fn read_file_nofollow(real: &Path, shown: &Path) -> Result<Option<String>, HostError> {
    match fs::symlink_metadata(real) {
        Ok(m) if m.file_type().is_symlink() => Err(HostError::NotRegular {
            path: shown.to_path_buf(),
            kind: "symlink",
        }),
        Ok(_) => {
            let b = read_regular(real, shown, MAX_CREATED)?;
            Ok(Some(String::from_utf8_lossy(&b).into_owned()))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HostError::io(shown, e)),
    }
}

/// The current content (file), link target (symlink) or `""` (directory).
pub(crate) fn read_created(
    root: &Root,
    path: &str,
    what: CreatedKind,
) -> Result<Option<String>, HostError> {
    let shown = Path::new(path);
    match what {
        CreatedKind::File => read_file_nofollow(&root.resolve_confined(path, false)?, shown),
        CreatedKind::Symlink => match fs::read_link(root.resolve_confined(path, false)?) {
            Ok(t) => Ok(Some(t.to_string_lossy().into_owned())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HostError::io(shown, e)),
        },
        CreatedKind::Dir => Ok(root
            .resolve_confined(path, true)?
            .is_dir()
            .then(String::new)),
    }
}

/// Create `path` as `what` with `value` (content or link target).
pub(crate) fn write_created(
    root: &Root,
    path: &str,
    what: CreatedKind,
    value: &str,
) -> Result<(), HostError> {
    let shown = Path::new(path);
    let real = root.resolve_confined(path, false)?;
    match what {
        CreatedKind::File => create_file(&real, shown, value.as_bytes()),
        CreatedKind::Symlink => {
            match fs::symlink_metadata(&real) {
                Ok(m) if m.is_dir() => {
                    return Err(HostError::NotRegular {
                        path: shown.to_path_buf(),
                        kind: "directory",
                    })
                }
                // unlink(2) removes a link itself, never its target.
                Ok(_) => fs::remove_file(&real).map_err(|e| HostError::io(shown, e))?,
                Err(_) => {}
            }
            std::os::unix::fs::symlink(value, &real).map_err(|e| HostError::io(shown, e))
        }
        CreatedKind::Dir => fs::create_dir(&real).map_err(|e| HostError::io(shown, e)),
    }
}

/// Remove what apply created at `path` (absent is fine).
pub(crate) fn remove_created(root: &Root, path: &str, what: CreatedKind) -> Result<(), HostError> {
    let shown = Path::new(path);
    let real = root.resolve_confined(path, false)?;
    let r = match what {
        CreatedKind::Dir => fs::remove_dir(&real),
        _ => fs::remove_file(&real),
    };
    match r {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(HostError::io(shown, e)),
        _ => Ok(()),
    }
}

/// A snippet's current text; `None` when absent.
pub(crate) fn read_snippet(dir: &Path, name: &str) -> Result<Option<String>, HostError> {
    let p = dir.join(name);
    read_file_nofollow(&p, &p)
}

/// Write a snippet, creating the directory; a symlink in place of the
/// directory or the file is refused.
pub(crate) fn write_snippet(dir: &Path, name: &str, text: &str) -> Result<(), HostError> {
    fs::create_dir_all(dir).map_err(|e| HostError::io(dir, e))?;
    let m = fs::symlink_metadata(dir).map_err(|e| HostError::io(dir, e))?;
    if !m.is_dir() {
        return Err(HostError::NotRegular {
            path: dir.to_path_buf(),
            kind: "not a directory",
        });
    }
    let p = dir.join(name);
    create_file(&p, &p, text.as_bytes())
}

/// Remove a snippet (absent is fine).
pub(crate) fn remove_snippet(dir: &Path, name: &str) -> Result<(), HostError> {
    let p = dir.join(name);
    match fs::remove_file(&p) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(HostError::io(p, e)),
        _ => Ok(()),
    }
}
