//! [`LiveEthtool`]: the running kernel. Reads over ethtool netlink (as
//! `inspect` does), writes with `ethtool -L/-G/-C` (the one place nettune runs
//! ethtool(8); the interface is a checked name that never starts with `-`).
//! The command line is [`knobpath::ethtool_set_args`], the spelling the
//! planner's `--script` output uses too. The driver's counters come from
//! the `SIOCETHTOOL` ioctl (see [`super::stats`]).

use super::{Ethtool, EthtoolAttr, NetlinkEthtool};
use crate::error::HostError;
use model::knobpath;
use model::snapshot::{EthtoolState, NicStats, Probe};
use std::path::PathBuf;
use std::process::Command;

/// The live host's ethtool.
#[derive(Debug, Clone, Default)]
pub struct LiveEthtool {
    netlink: NetlinkEthtool,
}

impl LiveEthtool {
    /// For the live host.
    pub fn new() -> Self {
        LiveEthtool {
            netlink: NetlinkEthtool::new(),
        }
    }
}

fn run(args: &[&str]) -> Result<String, HostError> {
    let what = format!("ethtool {}", args.join(" "));
    let out = Command::new("ethtool")
        .args(args)
        // `nettune serve`'s token is not for its children.
        .env_remove("NETTUNE_TOKEN")
        .output()
        .map_err(|e| not_installed(&what, e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(HostError::Io {
            path: PathBuf::from(what),
            error: std::io::Error::other(err),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A spawn error of `what`: a missing ethtool(8) says to install it (not
/// "not found", which for a knob means the knob is absent).
fn not_installed(what: &str, e: std::io::Error) -> HostError {
    if e.kind() == std::io::ErrorKind::NotFound {
        HostError::Io {
            path: PathBuf::from(what),
            error: std::io::Error::new(e.kind(), super::stats::NOT_INSTALLED),
        }
    } else {
        HostError::io(what, e)
    }
}

impl Ethtool for LiveEthtool {
    fn read(&self, iface: &str) -> EthtoolState {
        let mut st = self.netlink.state(iface);
        st.stats = super::stats::live_stats(iface, true);
        st
    }

    fn driver_stats(&self, iface: &str) -> Probe<NicStats> {
        super::stats::live_stats(iface, false)
    }

    fn set(&self, iface: &str, attr: EthtoolAttr, value: u64) -> Result<(), HostError> {
        crate::iface::check_iface(iface)?;
        let args = knobpath::ethtool_set_args(iface, attr.group(), attr.name(), &value.to_string());
        run(&args.each_ref().map(String::as_str)).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_ethtool_is_named_as_such() {
        let e = not_installed(
            "ethtool -L eth0 combined 4",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert_eq!(
            e.to_string(),
            "ethtool -L eth0 combined 4: install ethtool (not found in PATH)"
        );
        assert!(!e.is_not_found(), "not an absent knob");
    }
}
