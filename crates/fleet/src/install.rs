//! Copying this nettune to an ssh host whose own is missing or another
//! version: the binary goes through the same (multiplexed) ssh connection
//! on stdin to `~/.cache/nettune/nettune-VERSION`, written to a temporary
//! name and renamed, so a session never runs a half-written file. The
//! controller decides when (the fleet commands' `--no-copy` forbids it).

use crate::transport::{drain_bounded, Ssh, Transport, TransportError, MAX_STDERR};
use model::text::printable_capped;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use thiserror::Error;

/// Where the copy goes, relative to the remote home directory (the working
/// directory of an ssh command), so no shell expansion is needed.
pub const INSTALL_DIR: &str = ".cache/nettune";

/// A copy that failed.
#[derive(Debug, Error)]
pub enum InstallError {
    /// The version is not a plain version string.
    #[error("version {0:?}: only letters, digits and . + - are allowed")]
    BadVersion(String),
    /// The local binary could not be read.
    #[error("{path}: {source}")]
    Local {
        /// The binary.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// ssh could not start.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The remote side failed (ssh's or the shell's message).
    #[error("{host}: copying nettune failed (exit {code:?}): {stderr}")]
    Remote {
        /// The host.
        host: String,
        /// ssh's exit code.
        code: Option<i32>,
        /// The end of its stderr.
        stderr: String,
    },
    /// Not done within the deadline (ssh was killed).
    #[error("{host}: copying nettune took longer than {after:?}")]
    Timeout {
        /// The host.
        host: String,
        /// The deadline.
        after: Duration,
    },
}

/// The remote path of version `version`'s copy.
pub fn remote_path(version: &str) -> String {
    format!("{INSTALL_DIR}/nettune-{version}")
}

/// The remote shell command that stores stdin as [`remote_path`] (mode 0700).
fn script(version: &str) -> String {
    let dst = remote_path(version);
    format!(
        "sh -c 'set -e; umask 077; mkdir -p {INSTALL_DIR}; t={INSTALL_DIR}/.nettune-{version}.$$; cat > \"$t\"; chmod 700 \"$t\"; mv -f \"$t\" {dst}'"
    )
}

/// The ssh argv of the copy: `ssh`'s options of `ssh` (the same master
/// connection), then the host and the storing command.
pub fn install_argv(ssh: &Ssh, version: &str) -> Result<Vec<String>, InstallError> {
    if version.is_empty()
        || !version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+-".contains(c))
    {
        return Err(InstallError::BadVersion(version.to_string()));
    }
    let mut v: Vec<String> = ssh
        .argv()?
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // Replace the agent command after `--` with the storing script.
    let Some(dash) = v.iter().rposition(|a| a == "--") else {
        return Err(InstallError::BadVersion(version.to_string()));
    };
    v.truncate(dash + 1);
    v.push(script(version));
    Ok(v)
}

/// Copy `exe` (this nettune, version `version`) to `ssh`'s host within
/// `deadline`; returns the transport that runs the copy.
pub fn install(
    ssh: &Ssh,
    exe: &Path,
    version: &str,
    deadline: Duration,
) -> Result<Ssh, InstallError> {
    use std::os::unix::process::CommandExt;
    let argv = install_argv(ssh, version)?;
    let host = ssh.describe();
    let mut file = File::open(exe).map_err(|source| InstallError::Local {
        path: exe.display().to_string(),
        source,
    })?;
    let (prog, rest) = argv
        .split_first()
        .ok_or_else(|| InstallError::BadVersion(version.into()))?;
    let mut child = Command::new(prog)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| TransportError::Spawn {
            program: prog.clone(),
            source,
        })?;
    let err = child.stderr.take().map(|e| drain_bounded(e, MAX_STDERR));
    if let Some(mut stdin) = child.stdin.take() {
        // A writer thread: a stalled ssh cannot hold the caller past the deadline.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut file, &mut stdin).and_then(|_| stdin.flush());
        });
    }
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(InstallError::Timeout {
                    host,
                    after: deadline,
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(source) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TransportError::Spawn {
                    program: prog.clone(),
                    source,
                }
                .into());
            }
        }
    };
    if !status.success() {
        std::thread::sleep(Duration::from_millis(20));
        let text = err
            .and_then(|e| {
                e.lock()
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            })
            .unwrap_or_default();
        return Err(InstallError::Remote {
            host,
            code: status.code(),
            stderr: printable_capped(&text, 600),
        });
    }
    Ok(Ssh {
        remote_exe: remote_path(version),
        ..ssh.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_goes_through_the_same_options_to_a_versioned_path() {
        let v = install_argv(&Ssh::new("b"), "0.1.0").unwrap();
        assert_eq!(
            v.join(" "),
            "ssh -o BatchMode=yes -o ControlMaster=auto -o ControlPath=~/.ssh/nettune-%C \
             -o ControlPersist=60 b -- sh -c 'set -e; umask 077; mkdir -p .cache/nettune; \
             t=.cache/nettune/.nettune-0.1.0.$$; cat > \"$t\"; chmod 700 \"$t\"; \
             mv -f \"$t\" .cache/nettune/nettune-0.1.0'"
        );
        assert!(matches!(
            install_argv(&Ssh::new("b"), "1.0'; rm -rf ~"),
            Err(InstallError::BadVersion(_))
        ));
        // the copied path is a remote program the Ssh transport accepts
        let s = Ssh {
            remote_exe: remote_path("0.1.0"),
            ..Ssh::new("b")
        };
        assert!(s.argv().is_ok());
    }
}
