//! [`LiveEthtool`]: the running kernel. Reads over ethtool netlink (as
//! `inspect` does), writes with `ethtool -L/-G/-C` (the one place nettune runs
//! ethtool(8); the interface is a checked name that never starts with `-`).

use super::{Ethtool, EthtoolAttr, NetlinkEthtool};
use crate::error::HostError;
use model::plan::EthtoolGroup;
use model::snapshot::EthtoolState;
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

/// The ethtool(8) option that sets a group.
fn set_flag(group: EthtoolGroup) -> &'static str {
    match group {
        EthtoolGroup::Channels => "-L",
        EthtoolGroup::Rings => "-G",
        EthtoolGroup::Coalesce => "-C",
    }
}

fn run(args: &[&str]) -> Result<String, HostError> {
    let what = format!("ethtool {}", args.join(" "));
    let out = Command::new("ethtool")
        .args(args)
        .output()
        .map_err(|e| HostError::io(&what, e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(HostError::Io {
            path: PathBuf::from(what),
            error: std::io::Error::other(err),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Ethtool for LiveEthtool {
    fn read(&self, iface: &str) -> EthtoolState {
        self.netlink.state(iface)
    }

    fn set(&self, iface: &str, attr: EthtoolAttr, value: u64) -> Result<(), HostError> {
        super::super::apply::targets::check_iface(iface)?;
        run(&[
            set_flag(attr.group()),
            iface,
            attr.cli_name(),
            &attr.cli_value(value),
        ])
        .map(|_| ())
    }
}
