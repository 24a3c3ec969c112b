//! The errors of a guest: each names the guest, the file or the package.

use std::path::PathBuf;
use std::time::Duration;
use thiserror::Error;

/// Something a guest could not do.
#[derive(Debug, Error)]
pub enum GuestError {
    /// QEMU is not installed.
    #[error("no QEMU: {program} not found; install the Debian package qemu-system-x86")]
    NoQemu {
        /// The program looked for.
        program: String,
    },
    /// The guest kernel is not in the cache.
    #[error("no guest kernel in {}: run .ci/guest-kernel (it fetches the Debian package linux-image-6.1.0-*-amd64 with apt-get download and unpacks it there)", cache.display())]
    NoKernel {
        /// The cache directory.
        cache: PathBuf,
    },
    /// busybox-static is not installed.
    #[error("no static busybox at {}: install the Debian package busybox-static", path.display())]
    NoBusybox {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A driver module the guest needs is not in the kernel package.
    #[error("{}: module {module} is not in modules.dep (run depmod, from the Debian package kmod, as .ci/guest-kernel does)", dep.display())]
    NoModule {
        /// The module's name.
        module: String,
        /// The `modules.dep` read.
        dep: PathBuf,
    },
    /// A name that cannot be a guest's (it becomes a file name and a QEMU id).
    #[error("guest name {name:?}: {why}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A machine description QEMU would refuse.
    #[error("guest {guest}: {why}")]
    BadMachine {
        /// The guest.
        guest: String,
        /// What is wrong.
        why: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `ldd` gave a line this crate does not understand, or a library it could not find.
    #[error("ldd {}: {why}", program.display())]
    Ldd {
        /// The program.
        program: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// QEMU could not be started.
    #[error("guest {guest}: cannot run {program}: {source}")]
    Spawn {
        /// The guest.
        guest: String,
        /// The QEMU program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The guest did not say it was ready within the deadline; QEMU was killed.
    #[error(
        "guest {guest}: not ready within {after:?}, killed; the end of its console:\n{console}"
    )]
    BootTimeout {
        /// The guest.
        guest: String,
        /// The deadline.
        after: Duration,
        /// The last lines of its console.
        console: String,
    },
    /// Another process holds the directory ([`crate::claim::DirLock`]).
    #[error("{} is in use by another `nettune guest up` ({holder}): give this one its own --dir and --base-port", dir.display())]
    DirInUse {
        /// The directory.
        dir: PathBuf,
        /// `pid N` from its lock file, or `pid unknown`.
        holder: String,
    },
    /// A UDP port of the star cannot be bound on 127.0.0.1.
    #[error("UDP port {port} on 127.0.0.1: {os_error} (another `nettune guest up`, or another program?); choose a --base-port that leaves {first}..={last} free")]
    PortInUse {
        /// The port.
        port: u16,
        /// The star's first port.
        first: u16,
        /// The star's last port.
        last: u16,
        /// bind(2)'s error, said in the message (not a `source`: the
        /// binary prints a chain, which would say it twice).
        os_error: std::io::Error,
    },
    /// QEMU ended before the guest was ready.
    #[error("guest {guest}: QEMU exited ({status}) before the guest was ready; the end of its console:\n{console}")]
    Exited {
        /// The guest.
        guest: String,
        /// QEMU's exit status.
        status: String,
        /// The last lines of its console (and QEMU's own messages).
        console: String,
    },
}

impl GuestError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> GuestError {
        let path = path.into();
        move |source| GuestError::Io { path, source }
    }
}
