//! Errors of OS access, each naming the path or facility involved.

use rustix::io::Errno;
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// What went wrong reading or writing a kernel file.
#[derive(Debug, Error)]
pub enum HostError {
    /// The file does not exist (knob absent on this kernel or device).
    #[error("{path}: not found")]
    NotFound {
        /// Path as seen inside the root (e.g. `/proc/irq/5/smp_affinity`).
        path: PathBuf,
    },
    /// Permission denied (EACCES/EPERM).
    #[error("{path}: permission denied")]
    PermissionDenied {
        /// Path inside the root.
        path: PathBuf,
    },
    /// Any other I/O error (EIO from a managed IRQ, EINVAL, EBUSY...).
    ///
    /// The OS error is part of the message and deliberately not a `source()`,
    /// so an error chain (`{:#}`) does not print it twice.
    #[error("{path}: {error}")]
    Io {
        /// Path inside the root.
        path: PathBuf,
        /// The OS error.
        error: io::Error,
    },
    /// The file was read but its content did not parse.
    #[error("{path}: {source}")]
    Parse {
        /// Path inside the root.
        path: PathBuf,
        /// What the parser said.
        #[source]
        source: model::ParseError,
    },
    /// A path tried to leave the root (`..` past the top, or a symlink whose
    /// target lies outside a fixture root when writing).
    #[error("{path}: escapes the root directory")]
    Escape {
        /// Path inside the root.
        path: PathBuf,
    },
    /// A symlink met while resolving a path to write leads out of a fixture
    /// root (an absolute target, or `..` above the root).
    #[error("{path}: escapes the root directory through the symlink {link} -> {target}")]
    LinkEscape {
        /// Path inside the root.
        path: PathBuf,
        /// The symlink, as a path inside the root.
        link: PathBuf,
        /// Its target.
        target: PathBuf,
    },
    /// More than 40 symlinks met while resolving (a loop).
    #[error("{path}: too many levels of symbolic links")]
    SymlinkLoop {
        /// Path inside the root.
        path: PathBuf,
    },
    /// A FIFO, device node, socket or directory where a kernel text file was
    /// expected: not opened for reading, so it can neither block nor stream.
    #[error("{path}: not a regular file ({kind}); not read")]
    NotRegular {
        /// Path inside the root.
        path: PathBuf,
        /// `FIFO`, `character device`, `block device`, `socket`, `directory`.
        kind: &'static str,
    },
    /// A file longer than the read cap.
    #[error("{path}: larger than {limit} bytes; not read")]
    TooLarge {
        /// Path inside the root.
        path: PathBuf,
        /// The cap in bytes.
        limit: u64,
    },
    /// A plan or journal names a file nettune does not write (outside the
    /// kernel's `/proc/sys`, `/sys`, `/proc/irq`, or not one of the files
    /// `--persist` creates), or a path holding `..`, `.` or empty components.
    #[error("{path}: refused: {why}")]
    Refused {
        /// The path as the plan or journal gives it.
        path: PathBuf,
        /// Why.
        why: &'static str,
    },
    /// A plan names an IRQ of an interface that the host now gives other
    /// IRQs (the kernel renumbered them since the plan was made): writing it
    /// would move some other device's interrupt.
    #[error("{path}: IRQ {irq} is not an IRQ of {iface} on this host now (its IRQs: {now}); the plan is stale, make it again")]
    NotIfaceIrq {
        /// The IRQ's affinity file.
        path: PathBuf,
        /// The IRQ.
        irq: u32,
        /// The interface.
        iface: String,
        /// The interface's IRQs now, as a list.
        now: String,
    },
    /// A name that becomes a file name or a command argument (module,
    /// parameter, interface, service, ethtool attribute) is not valid.
    #[error("{what} {name:?} is not a valid name ({rule})")]
    BadName {
        /// What the name is (`module`, `interface`...).
        what: &'static str,
        /// The name as given.
        name: String,
        /// The rule it breaks.
        rule: &'static str,
    },
}

impl HostError {
    /// Classify an `io::Error` for `path`.
    pub fn io(path: impl Into<PathBuf>, e: io::Error) -> Self {
        let path = path.into();
        match e.kind() {
            io::ErrorKind::NotFound => HostError::NotFound { path },
            io::ErrorKind::PermissionDenied => HostError::PermissionDenied { path },
            _ if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
                HostError::SymlinkLoop { path }
            }
            _ => HostError::Io { path, error: e },
        }
    }

    /// The errno, when the error came from the OS (`EPERM` for any
    /// permission error, `ENOENT` for an absent file).
    pub fn errno(&self) -> Option<Errno> {
        match self {
            HostError::Io { error, .. } => error.raw_os_error().map(Errno::from_raw_os_error),
            HostError::PermissionDenied { .. } => Some(Errno::PERM),
            HostError::NotFound { .. } => Some(Errno::NOENT),
            _ => None,
        }
    }

    /// [`HostError::errno`] as a number.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.errno().map(Errno::raw_os_error)
    }

    /// Whether the error says the file is absent.
    pub fn is_not_found(&self) -> bool {
        matches!(self, HostError::NotFound { .. })
    }

    /// The path the error names (`None` for a bad name).
    pub fn path(&self) -> Option<&Path> {
        match self {
            HostError::NotFound { path }
            | HostError::PermissionDenied { path }
            | HostError::Io { path, .. }
            | HostError::Parse { path, .. }
            | HostError::Escape { path }
            | HostError::LinkEscape { path, .. }
            | HostError::SymlinkLoop { path }
            | HostError::NotRegular { path, .. }
            | HostError::TooLarge { path, .. }
            | HostError::Refused { path, .. }
            | HostError::NotIfaceIrq { path, .. } => Some(path),
            HostError::BadName { .. } => None,
        }
    }
}
