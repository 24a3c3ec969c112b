//! Errors of OS access, each naming the path or facility involved.

use std::io;
use std::path::PathBuf;
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
    #[error("{path}: {source}")]
    Io {
        /// Path inside the root.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
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
    /// A path tried to leave the root (`..` or an absolute symlink out of a fixture).
    #[error("{path}: escapes the root directory")]
    Escape {
        /// Path inside the root.
        path: PathBuf,
    },
}

impl HostError {
    /// Classify an `io::Error` for `path`.
    pub fn io(path: impl Into<PathBuf>, e: io::Error) -> Self {
        let path = path.into();
        match e.kind() {
            io::ErrorKind::NotFound => HostError::NotFound { path },
            io::ErrorKind::PermissionDenied => HostError::PermissionDenied { path },
            _ => HostError::Io { path, source: e },
        }
    }

    /// The raw errno, when the error came from the OS.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            HostError::Io { source, .. } => source.raw_os_error(),
            HostError::PermissionDenied { .. } => Some(1),
            HostError::NotFound { .. } => Some(2),
            _ => None,
        }
    }

    /// Whether the error says the file is absent.
    pub fn is_not_found(&self) -> bool {
        matches!(self, HostError::NotFound { .. })
    }
}
