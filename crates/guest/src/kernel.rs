//! The guest kernel: Debian's `linux-image-VERSION-amd64` unpacked (not
//! installed) in a cache directory by `.ci/guest-kernel`.

use crate::error::GuestError;
use std::path::{Path, PathBuf};

/// The cache unless `NETTUNE_GUEST_CACHE` names another.
pub const DEFAULT_CACHE: &str = "/var/cache/nettune-guest";
/// The environment variable naming the cache.
pub const CACHE_ENV: &str = "NETTUNE_GUEST_CACHE";
/// Longest `kernel` file read (one version line).
const MAX_VERSION: usize = 128;

/// An unpacked kernel package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// Its release, e.g. `6.1.0-57-amd64` (`uname -r` in the guest).
    pub release: String,
    /// The unpacked package's root.
    pub root: PathBuf,
}

impl Kernel {
    /// The kernel of the cache directory `cache`: its `kernel` file names the
    /// release, unpacked under `linux-image-RELEASE/`.
    pub fn in_cache(cache: &Path) -> Result<Kernel, GuestError> {
        let none = || GuestError::NoKernel {
            cache: cache.to_path_buf(),
        };
        let text = std::fs::read_to_string(cache.join("kernel")).map_err(|_| none())?;
        let release = parse_release(&text).ok_or_else(none)?;
        let k = Kernel {
            root: cache.join(format!("linux-image-{release}")),
            release,
        };
        if !k.vmlinuz().is_file() || !k.modules_dep().is_file() {
            return Err(none());
        }
        Ok(k)
    }

    /// The kernel of the cache named by `NETTUNE_GUEST_CACHE`, else [`DEFAULT_CACHE`].
    pub fn from_env() -> Result<Kernel, GuestError> {
        Kernel::in_cache(&cache_dir())
    }

    /// `boot/vmlinuz-RELEASE`.
    pub fn vmlinuz(&self) -> PathBuf {
        self.root
            .join("boot")
            .join(format!("vmlinuz-{}", self.release))
    }

    /// `lib/modules/RELEASE/`.
    pub fn modules_dir(&self) -> PathBuf {
        self.root.join("lib/modules").join(&self.release)
    }

    /// `lib/modules/RELEASE/modules.dep` (written by depmod).
    pub fn modules_dep(&self) -> PathBuf {
        self.modules_dir().join("modules.dep")
    }
}

/// The cache directory: `NETTUNE_GUEST_CACHE` or [`DEFAULT_CACHE`].
pub fn cache_dir() -> PathBuf {
    std::env::var_os(CACHE_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_CACHE), PathBuf::from)
}

/// The release on the first line of a `kernel` file: letters, digits, `.`,
/// `_` and `-` only (it becomes a path component).
pub fn parse_release(text: &str) -> Option<String> {
    let line = text.lines().next()?.trim();
    let ok = !line.is_empty()
        && line.len() <= MAX_VERSION
        && !line.starts_with('.')
        && line
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    ok.then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_one_safe_path_component() {
        assert_eq!(
            parse_release("6.1.0-57-amd64\n").as_deref(),
            Some("6.1.0-57-amd64")
        );
        for bad in ["", "\n", "../x", "a/b", "..", "6.1 x"] {
            assert_eq!(parse_release(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn an_empty_cache_names_the_package_and_the_script() {
        let d = tempfile::tempdir().unwrap();
        let e = Kernel::in_cache(d.path()).unwrap_err().to_string();
        assert!(e.contains("linux-image-6.1.0-*-amd64"), "{e}");
        assert!(e.contains(".ci/guest-kernel"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
