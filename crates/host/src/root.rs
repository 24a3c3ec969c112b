//! [`Root`]: a directory that stands for `/`.
//!
//! Paths are given as they appear on a live host (`/sys/class/net/eth0/mtu`).
//! Under a fixture root, symlinks are resolved by hand so that an absolute or
//! relative link (`device -> ../../../virtio2`) stays inside the fixture.

use crate::error::HostError;
use std::fs;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// Maximum symlinks followed while resolving one path (the kernel uses 40).
const MAX_LINKS: usize = 40;

/// Largest file [`Root::read`] reads: 16 MiB. The biggest kernel text nettune
/// reads is `/proc/interrupts`, about 1 MiB on a host with hundreds of CPUs.
pub const MAX_READ: u64 = 16 << 20;

/// A root directory; `Root::live()` is `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
    live: bool,
}

impl Root {
    /// The live host's `/`.
    pub fn live() -> Self {
        Root {
            dir: PathBuf::from("/"),
            live: true,
        }
    }

    /// A directory that stands for `/` (a fixture or a captured tree).
    /// `/` itself gives [`Root::live`].
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        if dir == Path::new("/") {
            return Root::live();
        }
        Root { dir, live: false }
    }

    /// Whether this is the live `/`.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// The directory standing for `/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Map a host path to the real path, resolving symlinks inside the root.
    /// The final component is resolved too unless it is missing.
    pub fn resolve(&self, path: impl AsRef<Path>) -> Result<PathBuf, HostError> {
        let path = path.as_ref();
        if self.live {
            return Ok(Path::new("/").join(path));
        }
        let mut stack: Vec<std::ffi::OsString> = Vec::new();
        let mut pending: Vec<std::ffi::OsString> = components(path);
        pending.reverse();
        let mut links = 0;
        while let Some(c) = pending.pop() {
            if c == ".." {
                stack.pop();
                continue;
            }
            if c == "." {
                continue;
            }
            stack.push(c);
            let real = self.dir.join(stack.iter().collect::<PathBuf>());
            match fs::symlink_metadata(&real) {
                Ok(m) if m.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(HostError::SymlinkLoop {
                            path: path.to_path_buf(),
                        });
                    }
                    let target = fs::read_link(&real).map_err(|e| HostError::io(path, e))?;
                    stack.pop();
                    if target.is_absolute() {
                        stack.clear();
                    }
                    let mut t = components(&target);
                    t.reverse();
                    pending.extend(t);
                }
                _ => {}
            }
        }
        Ok(self.dir.join(stack.iter().collect::<PathBuf>()))
    }

    /// Resolve a path that apply, rollback or persist writes, creates or
    /// deletes. Stricter than [`Root::resolve`]: the path must be absolute and
    /// made of plain components (no `..`, `.` or empty ones), and under a
    /// fixture root every symlink met must stay inside the root by its own
    /// target: an absolute target, or a relative one climbing above the root,
    /// is refused rather than mapped inside. With `follow_last` false the
    /// final component is not resolved (to create, replace or remove a link).
    pub fn resolve_confined(
        &self,
        path: impl AsRef<Path>,
        follow_last: bool,
    ) -> Result<PathBuf, HostError> {
        let path = path.as_ref();
        check_plain(path)?;
        if self.live {
            return Ok(path.to_path_buf());
        }
        let mut stack: Vec<std::ffi::OsString> = Vec::new();
        let mut pending: Vec<std::ffi::OsString> = components(path);
        pending.reverse();
        let mut links = 0;
        // The last symlink followed: `..` past the top can only come from one.
        let mut via: (PathBuf, PathBuf) = (PathBuf::from("/"), PathBuf::new());
        let escape = |(link, target): (PathBuf, PathBuf)| HostError::LinkEscape {
            path: path.to_path_buf(),
            link,
            target,
        };
        while let Some(c) = pending.pop() {
            if c == ".." {
                if stack.pop().is_none() {
                    return Err(escape(via));
                }
                continue;
            }
            if c == "." {
                continue;
            }
            stack.push(c);
            if pending.is_empty() && !follow_last {
                break;
            }
            let real = self.dir.join(stack.iter().collect::<PathBuf>());
            match fs::symlink_metadata(&real) {
                Ok(m) if m.file_type().is_symlink() => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(HostError::SymlinkLoop {
                            path: path.to_path_buf(),
                        });
                    }
                    let target = fs::read_link(&real).map_err(|e| HostError::io(path, e))?;
                    via = (
                        Path::new("/").join(stack.iter().collect::<PathBuf>()),
                        target.clone(),
                    );
                    if target.is_absolute() || target.as_os_str().is_empty() {
                        return Err(escape(via));
                    }
                    stack.pop();
                    let mut t = components(&target);
                    t.reverse();
                    pending.extend(t);
                }
                Ok(_) => {}
                // Missing from here on: nothing more to follow.
                Err(_) => {
                    while let Some(c) = pending.pop() {
                        stack.push(c);
                    }
                    check_plain_os(&stack, path)?;
                }
            }
        }
        Ok(self.dir.join(stack.iter().collect::<PathBuf>()))
    }

    /// Read a whole file as text: only a regular file (as sysfs and procfs
    /// files are), at most [`MAX_READ`] bytes. A FIFO, device node, socket
    /// or directory is refused without blocking on it.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<String, HostError> {
        let path = path.as_ref();
        let real = self.resolve(path)?;
        let bytes = read_regular(&real, path, MAX_READ)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Read a file like [`Root::read`] into `buf` (cleared first), reusing its
    /// allocation; `Ok(false)` when the file does not exist.
    pub fn read_into(&self, path: impl AsRef<Path>, buf: &mut String) -> Result<bool, HostError> {
        let path = path.as_ref();
        buf.clear();
        let real = self.resolve(path)?;
        let f = match open_regular(&real, path) {
            Ok(f) => f,
            Err(e) if e.is_not_found() => return Ok(false),
            Err(e) => return Err(e),
        };
        let n = f
            .take(MAX_READ + 1)
            .read_to_string(buf)
            .map_err(|e| HostError::io(path, e))?;
        if n as u64 > MAX_READ {
            buf.clear();
            return Err(HostError::TooLarge {
                path: path.to_path_buf(),
                limit: MAX_READ,
            });
        }
        Ok(true)
    }

    /// Read a file and trim surrounding whitespace.
    pub fn read_trim(&self, path: impl AsRef<Path>) -> Result<String, HostError> {
        Ok(self.read(path)?.trim().to_string())
    }

    /// Read a file, mapping "not found" to `None`.
    pub fn read_opt(&self, path: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        match self.read_trim(path) {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Read a file and parse it with a pure parser, naming the file on failure.
    pub fn parse<T>(
        &self,
        path: impl AsRef<Path>,
        f: impl FnOnce(&str) -> Result<T, model::ParseError>,
    ) -> Result<T, HostError> {
        let path = path.as_ref();
        let text = self.read(path)?;
        f(&text).map_err(|source| HostError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The target of a symlink, as text (not resolved).
    pub fn read_link(&self, path: impl AsRef<Path>) -> Result<PathBuf, HostError> {
        let path = path.as_ref();
        let parent = path.parent().unwrap_or(Path::new("/"));
        let real = self
            .resolve(parent)?
            .join(path.file_name().unwrap_or_default());
        fs::read_link(&real).map_err(|e| HostError::io(path, e))
    }

    /// The final component of the resolved symlink target (e.g. a driver name).
    pub fn link_name(&self, path: impl AsRef<Path>) -> Result<String, HostError> {
        let t = self.read_link(path)?;
        Ok(t.file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default())
    }

    /// Entry names of a directory, sorted.
    pub fn list(&self, path: impl AsRef<Path>) -> Result<Vec<String>, HostError> {
        let path = path.as_ref();
        let real = self.resolve(path)?;
        let mut out: Vec<String> = fs::read_dir(&real)
            .map_err(|e| HostError::io(path, e))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        out.sort();
        Ok(out)
    }

    /// Network interfaces: the entries of `/sys/class/net` whose resolved
    /// target is a directory, sorted. Files there are not interfaces
    /// (`bonding_masters`, present on every host with bonding loaded).
    pub fn list_interfaces(&self) -> Result<Vec<String>, HostError> {
        let base = Path::new("/sys/class/net");
        let mut v = self.list(base)?;
        v.retain(|name| {
            self.resolve(base.join(name))
                .map(|p| p.is_dir())
                .unwrap_or(false)
        });
        Ok(v)
    }

    /// Whether the path exists (after resolving links).
    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        self.resolve(path).map(|p| p.exists()).unwrap_or(false)
    }

    /// Write `value` to an existing kernel file, as `echo value > path` does:
    /// one `write(2)`, no truncation or creation (sysfs and procfs files
    /// reject both). Fixture files are truncated so they read back like sysfs.
    ///
    /// The path is resolved with [`Root::resolve_confined`] and the last
    /// component is opened without following a symlink.
    pub fn write(&self, path: impl AsRef<Path>, value: &str) -> Result<(), HostError> {
        let path = path.as_ref();
        let real = self.resolve_confined(path, true)?;
        let mut f = open_for_write(&real, path, !self.live)?;
        let mut line = value.to_string();
        if !line.ends_with('\n') {
            line.push('\n');
        }
        f.write_all(line.as_bytes())
            .map_err(|e| HostError::io(path, e))
    }
}

/// Refuse a path that is not absolute or holds `..`, `.` or empty
/// components, or a NUL byte (plans and journals never name such paths).
pub fn check_plain(path: &Path) -> Result<(), HostError> {
    use std::os::unix::ffi::OsStrExt;
    let refused = |why| HostError::Refused {
        path: path.to_path_buf(),
        why,
    };
    let bytes = path.as_os_str().as_bytes();
    if !bytes.starts_with(b"/") {
        return Err(refused("not an absolute path"));
    }
    if bytes.contains(&0) {
        return Err(refused("holds a NUL byte"));
    }
    if bytes.len() > 4096 {
        return Err(refused("longer than 4096 bytes"));
    }
    for part in bytes[1..].split(|&b| b == b'/') {
        match part {
            b".." => return Err(refused("holds `..`")),
            b"." => return Err(refused("holds `.`")),
            b"" if bytes.len() > 1 => return Err(refused("holds an empty component")),
            _ => {}
        }
    }
    Ok(())
}

fn check_plain_os(stack: &[std::ffi::OsString], path: &Path) -> Result<(), HostError> {
    if stack.iter().any(|c| c == ".." || c == ".") {
        return Err(HostError::Escape {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// What kind of non-regular file `m` describes.
fn kind(m: &fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("directory")
    } else if t.is_fifo() {
        Some("FIFO")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else if t.is_socket() {
        Some("socket")
    } else {
        Some("not a file")
    }
}

fn not_regular(m: &fs::Metadata, shown: &Path) -> Result<(), HostError> {
    match kind(m) {
        None => Ok(()),
        Some(kind) => Err(HostError::NotRegular {
            path: shown.to_path_buf(),
            kind,
        }),
    }
}

/// Open a regular file for reading. The type is checked before opening (so
/// a device node is never opened) and again on the open file; the open is
/// non-blocking, so a FIFO swapped in between cannot block either.
fn open_regular(real: &Path, shown: &Path) -> Result<fs::File, HostError> {
    use rustix::fs::{Mode, OFlags};
    let m = fs::metadata(real).map_err(|e| HostError::io(shown, e))?;
    not_regular(&m, shown)?;
    let fd = rustix::fs::open(
        real,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| HostError::io(shown, e.into()))?;
    let f = fs::File::from(fd);
    let m = f.metadata().map_err(|e| HostError::io(shown, e))?;
    not_regular(&m, shown)?;
    Ok(f)
}

/// Read the regular file at `real` (named `shown` in errors), at most
/// `limit` bytes: a longer file is an error, not a truncated read.
pub fn read_regular(real: &Path, shown: &Path, limit: u64) -> Result<Vec<u8>, HostError> {
    let f = open_regular(real, shown)?;
    let mut buf = Vec::new();
    f.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| HostError::io(shown, e))?;
    if buf.len() as u64 > limit {
        return Err(HostError::TooLarge {
            path: shown.to_path_buf(),
            limit,
        });
    }
    Ok(buf)
}

/// Open an existing file for writing without following a symlink in its
/// last component, and refuse anything but a regular file (so a FIFO or a
/// device node planted in a fixture is not written). `truncate` for fixture
/// files; kernel files reject truncation.
pub(crate) fn open_for_write(
    real: &Path,
    shown: &Path,
    truncate: bool,
) -> Result<fs::File, HostError> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let m = fs::symlink_metadata(real).map_err(|e| HostError::io(shown, e))?;
    if m.file_type().is_symlink() {
        return Err(HostError::Escape {
            path: shown.to_path_buf(),
        });
    }
    not_regular(&m, shown)?;
    let fd = rustix::fs::open(real, flags, Mode::empty()).map_err(|e| {
        if e == rustix::io::Errno::LOOP {
            HostError::Escape {
                path: shown.to_path_buf(),
            }
        } else {
            HostError::io(shown, e.into())
        }
    })?;
    let f = fs::File::from(fd);
    let m = f.metadata().map_err(|e| HostError::io(shown, e))?;
    not_regular(&m, shown)?;
    if truncate {
        f.set_len(0).map_err(|e| HostError::io(shown, e))?;
    }
    Ok(f)
}

/// Normal and `..` components of a path, as owned strings (roots and `.` dropped).
pub(crate) fn components(p: &Path) -> Vec<std::ffi::OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_stay_inside_the_root() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        fs::create_dir_all(r.join("sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0")).unwrap();
        fs::create_dir_all(r.join("sys/class/net")).unwrap();
        fs::create_dir_all(r.join("sys/bus/virtio/drivers/virtio_net")).unwrap();
        fs::write(
            r.join("sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0/mtu"),
            "1500\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0",
            r.join("sys/class/net/eth0"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "/sys/bus/virtio/drivers/virtio_net",
            r.join("sys/devices/pci0000:00/0000:00:03.0/virtio2/driver"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../../virtio2",
            r.join("sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0/device"),
        )
        .unwrap();
        let root = Root::new(r);
        assert_eq!(root.read_trim("/sys/class/net/eth0/mtu").unwrap(), "1500");
        assert!(root.exists("/sys/class/net/eth0/device/driver"));
        assert_eq!(
            root.link_name("/sys/class/net/eth0/device/driver").unwrap(),
            "virtio_net"
        );
        assert!(root
            .resolve("/sys/../../../etc/passwd")
            .unwrap()
            .starts_with(r));
        assert!(matches!(
            root.read("/proc/nope"),
            Err(HostError::NotFound { .. })
        ));
        root.write("/sys/class/net/eth0/mtu", "9000").unwrap();
        assert_eq!(root.read("/sys/class/net/eth0/mtu").unwrap(), "9000\n");
        assert_eq!(root.list("/sys/class/net").unwrap(), vec!["eth0"]);
    }
}
