//! What one `nettune guest up` holds while its guests run, so that a second
//! one fails at once with a sentence instead of overwriting the first one's
//! sockets and inventory or leaving QEMU to fail on a port: its directory
//! (an exclusive `flock(2)` on `DIR/lock`, released by the kernel when the
//! process ends however it ends) and the star's UDP ports on 127.0.0.1
//! (checked free before QEMU binds them; a program that takes one in
//! between still makes QEMU fail, naming the guest).

use crate::error::GuestError;
use rustix::fs::{flock, FlockOperation};
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};

/// The lock file's name in the directory.
pub const LOCK_FILE: &str = "lock";
/// The most of the lock file read back (a pid and a newline).
const MAX_PID_TEXT: u64 = 32;

/// A directory held by this process until the value is dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    path: PathBuf,
}

impl DirLock {
    /// Take `dir` (which must exist): [`GuestError::DirInUse`] naming the
    /// holder's pid when another process holds it.
    pub fn take(dir: &Path) -> Result<DirLock, GuestError> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(GuestError::io(&path))?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                let mut text = String::new();
                let _ = (&file).take(MAX_PID_TEXT).read_to_string(&mut text);
                let holder = text.trim();
                return Err(GuestError::DirInUse {
                    dir: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        "pid unknown".to_string()
                    } else {
                        format!("pid {holder}")
                    },
                });
            }
            Err(e) => return Err(GuestError::io(&path)(e.into())),
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(GuestError::io(&path))?;
        Ok(DirLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Check that every UDP port of `first..=last` on 127.0.0.1 can be bound
/// now: [`GuestError::PortInUse`] names the first that cannot.
pub fn ports_free(first: u16, last: u16) -> Result<(), GuestError> {
    for port in first..=last {
        if let Err(os_error) = UdpSocket::bind((Ipv4Addr::LOCALHOST, port)) {
            return Err(GuestError::PortInUse {
                port,
                first,
                last,
                os_error,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{ports_free, DirLock};
    use crate::GuestError;

    #[test]
    fn a_held_directory_is_refused_naming_its_holder_and_free_once_dropped() {
        let d = tempfile::tempdir().unwrap();
        let first = DirLock::take(d.path()).unwrap();
        let err = DirLock::take(d.path()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, GuestError::DirInUse { .. }), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        assert!(text.contains("--dir"), "{text}");
        assert!(text.contains(&d.path().display().to_string()), "{text}");
        drop(first);
        let again = DirLock::take(d.path()).unwrap();
        assert_eq!(again.path(), d.path().join("lock"));
    }

    #[test]
    fn a_port_in_use_is_named_with_the_range_to_move() {
        let held = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port();
        let err = ports_free(port, port).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, GuestError::PortInUse { port: p, .. } if p == port),
            "{text}"
        );
        assert!(text.contains("--base-port"), "{text}");
        // the OS's words are in the message once: no source for a chain to repeat
        assert!(std::error::Error::source(&err).is_none(), "{text}");
        drop(held);
        ports_free(port, port).unwrap();
    }
}
