//! The driver's own counters on the live host: the `ETH_SS_STATS` set read
//! in-process with the `SIOCETHTOOL` ioctl ([`super::ioctl`], what
//! `ethtool -S IF` does), and the standard groups from
//! `ethtool -S IF --all-groups`, run with a deadline and parsed by
//! `model::parse::ethtool_stats`.
//!
//! Why the ioctl and not netlink: the driver's counters (per-queue packets
//! and drops, ENA's allowance counters) are the `ETH_SS_STATS` string set,
//! whose *values* only the `ETHTOOL_GSTATS` ioctl returns; ethtool netlink's
//! `ETHTOOL_MSG_STATS_GET` carries only the standard groups (eth-phy,
//! eth-mac, eth-ctrl, rmon), which few virtual and cloud NICs implement and
//! which have no per-queue counters. The ioctl's `unsafe` lives in the
//! audited `nettune-sys` crate. When the ioctl is refused (seccomp, an LSM),
//! [`driver_counters`] runs `ethtool -S IF` instead and says so; its text
//! has kept the same shape since ethtool 2.x. The standard groups come from
//! ethtool(8) (`--all-groups`, ethtool 5.13+) only in one-shot reads
//! ([`live_stats`] with `standard`); an older ethtool simply yields none.

use super::ioctl::{IoctlStats, Refused};
use crate::iface::check_iface;
use model::parse::ethtool_stats::{parse_ethtool_stats, NicStats};
use model::snapshot::Probe;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest one `ethtool -S` may run before it is killed.
pub const ETHTOOL_DEADLINE: Duration = Duration::from_secs(2);

/// Most bytes of ethtool output read (mlx5 with many channels prints a few
/// hundred KiB); the rest is discarded and the read reported as an error.
pub const MAX_OUTPUT: u64 = 4 << 20;

/// What nettune says when ethtool(8) is not on `PATH`: a missing tool to
/// install, not a device that lacks the feature.
pub const NOT_INSTALLED: &str = "install ethtool (not found in PATH)";

/// ethtool(8) exits with the errno; EOPNOTSUPP is "no stats available".
const EXIT_EOPNOTSUPP: i32 = 94;

/// What a bounded run of a program gave.
#[derive(Debug)]
pub(crate) struct Ran {
    /// Exit code, `None` when killed by a signal.
    pub code: Option<i32>,
    /// Standard output (at most [`MAX_OUTPUT`] bytes).
    pub stdout: Vec<u8>,
    /// Standard error (at most 64 KiB).
    pub stderr: Vec<u8>,
    /// Output was longer than the cap.
    pub truncated: bool,
}

/// Why a bounded run failed.
#[derive(Debug)]
pub(crate) enum RunError {
    /// The program is not installed.
    NotFound,
    /// It could not be started or waited for.
    Io(std::io::Error),
    /// It ran past the deadline and was killed.
    Timeout(Duration),
}

fn reader<R: Read + Send + 'static>(
    r: Option<R>,
    cap: u64,
) -> std::thread::JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let Some(r) = r else {
            return (out, false);
        };
        let mut r = r.take(cap.saturating_add(1));
        let _ = r.read_to_end(&mut out);
        let truncated = out.len() as u64 > cap;
        out.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
        // Drain the rest so the child never blocks on a full pipe.
        let _ = std::io::copy(&mut r.into_inner(), &mut std::io::sink());
        (out, truncated)
    })
}

/// Run `program args` with no stdin, killing it at `deadline`; `program` is
/// looked up in `path` instead of the process's `PATH` when given (tests: an
/// empty directory).
pub(crate) fn run_bounded(
    program: &str,
    args: &[&str],
    deadline: Duration,
    path: Option<&std::ffi::OsStr>,
) -> Result<Ran, RunError> {
    let mut cmd = Command::new(program);
    if let Some(p) = path {
        // A PATH set on the Command is the one the program is looked up in.
        cmd.env("PATH", p);
    }
    let mut child = match cmd
        .args(args)
        .env("LC_ALL", "C")
        // `nettune serve`'s token is not for its children.
        .env_remove("NETTUNE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(RunError::NotFound),
        Err(e) => return Err(RunError::Io(e)),
    };
    let out = reader(child.stdout.take(), MAX_OUTPUT);
    let err = reader(child.stderr.take(), 64 << 10);
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if start.elapsed() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(RunError::Timeout(deadline));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(RunError::Io(e));
            }
        }
    };
    let (stdout, truncated) = out.join().unwrap_or_default();
    let (stderr, _) = err.join().unwrap_or_default();
    let status = status?;
    Ok(Ran {
        code: status.code(),
        stdout,
        stderr,
        truncated,
    })
}

fn describe(iface: &str, all_groups: bool) -> String {
    if all_groups {
        format!("ethtool -S {iface} --all-groups")
    } else {
        format!("ethtool -S {iface}")
    }
}

/// Run one `ethtool -S` and parse it.
fn one(iface: &str, all_groups: bool, deadline: Duration) -> Probe<NicStats> {
    one_in(iface, all_groups, deadline, None)
}

/// [`one`], with ethtool looked up in `path` when given.
fn one_in(
    iface: &str,
    all_groups: bool,
    deadline: Duration,
    path: Option<&std::ffi::OsStr>,
) -> Probe<NicStats> {
    let what = describe(iface, all_groups);
    let args: &[&str] = if all_groups {
        &["-S", iface, "--all-groups"]
    } else {
        &["-S", iface]
    };
    let ran = match run_bounded("ethtool", args, deadline, path) {
        Ok(r) => r,
        // An error, not "unsupported": the device may well have counters,
        // and the fix is on this machine.
        Err(RunError::NotFound) => {
            return Probe::Error {
                message: format!("{what}: {NOT_INSTALLED}"),
            }
        }
        Err(RunError::Io(e)) => {
            return Probe::Error {
                message: format!("{what}: {e}"),
            }
        }
        Err(RunError::Timeout(d)) => {
            return Probe::Error {
                message: format!("{what}: no answer within {} s, killed", d.as_secs_f64()),
            }
        }
    };
    let stderr = String::from_utf8_lossy(&ran.stderr).trim().to_string();
    match ran.code {
        Some(0) => {}
        Some(EXIT_EOPNOTSUPP) => {
            return Probe::Unsupported {
                reason: format!("{iface}: the driver reports no statistics (EOPNOTSUPP)"),
            }
        }
        Some(c) => {
            return Probe::Error {
                message: format!("{what}: exit status {c}: {stderr}"),
            }
        }
        None => {
            return Probe::Error {
                message: format!("{what}: killed by a signal"),
            }
        }
    }
    if ran.truncated {
        return Probe::Error {
            message: format!("{what}: more than {MAX_OUTPUT} bytes of output"),
        };
    }
    match parse_ethtool_stats(&String::from_utf8_lossy(&ran.stdout)) {
        Ok(s) => Probe::Ok { value: s },
        Err(e) => Probe::Error {
            message: format!("{what}: {e}"),
        },
    }
}

/// The driver counters of `iface` by running `ethtool -S IF` (one fork):
/// the fallback when the ioctl is refused.
pub fn ethtool_s(iface: &str) -> Probe<NicStats> {
    if let Err(e) = check_iface(iface) {
        return Probe::Error {
            message: e.to_string(),
        };
    }
    one(iface, false, ETHTOOL_DEADLINE)
}

/// The driver counters of `iface` through `io` (the ioctl); when the ioctl
/// is refused, through `ethtool -S IF`, with a note saying so.
pub fn driver_counters(io: &mut IoctlStats, iface: &str) -> (Probe<NicStats>, Option<String>) {
    match io.read(iface) {
        Ok(p) => (p, None),
        Err(Refused(e)) => (
            ethtool_s(iface),
            Some(format!(
                "driver counters: the SIOCETHTOOL ioctl is refused ({e}); ran ethtool -S instead"
            )),
        ),
    }
}

/// The driver counters of `iface` (the ioctl, else `ethtool -S`), and when
/// `standard` also the standard groups (`ethtool -S IF --all-groups`; an
/// ethtool(8) older than 5.13 refuses the flag, which leaves them empty
/// rather than failing the probe).
pub fn live_stats(iface: &str, standard: bool) -> Probe<NicStats> {
    if let Err(e) = check_iface(iface) {
        return Probe::Error {
            message: e.to_string(),
        };
    }
    let (mut p, _) = driver_counters(&mut IoctlStats::new(), iface);
    if standard {
        if let Probe::Ok { value } = &mut p {
            if let Probe::Ok { value: s } = one(iface, true, ETHTOOL_DEADLINE) {
                value.standard = s.standard;
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_run_kills_at_the_deadline() {
        let t = Instant::now();
        let r = run_bounded("sleep", &["5"], Duration::from_millis(100), None);
        assert!(matches!(r, Err(RunError::Timeout(_))), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(3));
        assert!(matches!(
            run_bounded("nettune-no-such-program", &[], ETHTOOL_DEADLINE, None),
            Err(RunError::NotFound)
        ));
        let r = run_bounded(
            "sh",
            &["-c", "echo hi; echo oops >&2; exit 3"],
            ETHTOOL_DEADLINE,
            None,
        )
        .unwrap();
        assert_eq!((r.code, r.stdout.as_slice()), (Some(3), &b"hi\n"[..]));
        assert_eq!(r.stderr, b"oops\n");
    }

    #[test]
    fn a_missing_ethtool_says_install_it_not_unsupported() {
        let empty = tempfile::tempdir().unwrap();
        let p = one_in(
            "eth0",
            false,
            ETHTOOL_DEADLINE,
            Some(empty.path().as_os_str()),
        );
        match p {
            Probe::Error { message } => assert_eq!(
                message,
                "ethtool -S eth0: install ethtool (not found in PATH)"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bounded_run_caps_output_without_blocking() {
        let r = run_bounded(
            "sh",
            &["-c", "head -c 6000000 /dev/zero"],
            Duration::from_secs(10),
            None,
        )
        .unwrap();
        assert!(r.truncated);
        assert_eq!(r.stdout.len() as u64, MAX_OUTPUT);
        assert_eq!(r.code, Some(0));
    }

    #[test]
    fn bad_names_never_reach_ethtool() {
        assert!(matches!(live_stats("-h", false), Probe::Error { .. }));
        assert!(matches!(live_stats("a/b", false), Probe::Error { .. }));
    }
}
