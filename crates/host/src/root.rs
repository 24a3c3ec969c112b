//! [`Root`]: a directory that stands for `/`.
//!
//! Paths are given as they appear on a live host (`/sys/class/net/eth0/mtu`).
//! Under a fixture root, symlinks are resolved by hand so that an absolute or
//! relative link (`device -> ../../../virtio2`) stays inside the fixture.

use crate::error::HostError;
use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// Maximum symlinks followed while resolving one path (the kernel uses 40).
const MAX_LINKS: usize = 40;

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
                        return Err(HostError::Escape {
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

    /// Read a whole file as text.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<String, HostError> {
        let path = path.as_ref();
        let real = self.resolve(path)?;
        let bytes = fs::read(&real).map_err(|e| HostError::io(path, e))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
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

    /// Whether the path exists (after resolving links).
    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        self.resolve(path).map(|p| p.exists()).unwrap_or(false)
    }

    /// Write `value` to an existing kernel file, as `echo value > path` does:
    /// one `write(2)`, no truncation or creation (sysfs and procfs files
    /// reject both). Fixture files are truncated so they read back like sysfs.
    pub fn write(&self, path: impl AsRef<Path>, value: &str) -> Result<(), HostError> {
        let path = path.as_ref();
        let real = self.resolve(path)?;
        let mut opts = fs::OpenOptions::new();
        opts.write(true);
        if !self.live {
            opts.truncate(true);
        }
        let mut f = opts.open(&real).map_err(|e| HostError::io(path, e))?;
        let mut line = value.to_string();
        if !line.ends_with('\n') {
            line.push('\n');
        }
        f.write_all(line.as_bytes())
            .map_err(|e| HostError::io(path, e))
    }
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
