//! [`EthtoolAttr`]: an ethtool attribute checked once, when a plan or
//! journal names it, against the names the kernel's ethtool netlink API and
//! the snapshot use; the rest of apply never handles its name as a string.

use crate::error::HostError;
use crate::netlink::COALESCE_NAMES;
use model::knobpath;
use model::plan::EthtoolGroup;
use model::snapshot::{EthtoolState, Probe};
use std::path::PathBuf;

/// A channel count (`ethtool -l/-L`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelAttr {
    /// `combined`.
    Combined,
    /// `rx`.
    Rx,
    /// `tx`.
    Tx,
    /// `other`.
    Other,
}

/// A ring size (`ethtool -g/-G`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RingAttr {
    /// `rx`.
    Rx,
    /// `tx`.
    Tx,
    /// `rx_mini` (`rx-mini` for ethtool(8)).
    RxMini,
    /// `rx_jumbo` (`rx-jumbo` for ethtool(8)).
    RxJumbo,
}

/// A coalescing parameter (`ethtool -c/-C`), by ethtool's name
/// (`rx-usecs`, `adaptive-rx`...): one of the kernel's
/// `ETHTOOL_A_COALESCE_*` attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CoalesceAttr {
    name: &'static str,
}

/// An ethtool attribute nettune reads and sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EthtoolAttr {
    /// A channel count.
    Channels(ChannelAttr),
    /// A ring size.
    Rings(RingAttr),
    /// A coalescing parameter.
    Coalesce(CoalesceAttr),
    /// An offload (`ethtool -k/-K`), by the kernel's feature name; its
    /// value is 1 when active, 0 when not.
    Features(FeatureAttr),
}

/// An offload nettune may turn back on ([`knobpath::ETHTOOL_FEATURES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FeatureAttr {
    name: &'static str,
}

const CHANNELS: [(ChannelAttr, &str); 4] = [
    (ChannelAttr::Combined, "combined"),
    (ChannelAttr::Rx, "rx"),
    (ChannelAttr::Tx, "tx"),
    (ChannelAttr::Other, "other"),
];

const RINGS: [(RingAttr, &str); 4] = [
    (RingAttr::Rx, "rx"),
    (RingAttr::Tx, "tx"),
    (RingAttr::RxMini, "rx_mini"),
    (RingAttr::RxJumbo, "rx_jumbo"),
];

fn ethtool_err(what: String, msg: String) -> HostError {
    HostError::Io {
        path: PathBuf::from(what),
        error: std::io::Error::other(msg),
    }
}

impl EthtoolAttr {
    /// Check `name` for `group`: channels `combined`, `rx`, `tx`, `other`;
    /// rings `rx`, `tx`, `rx_mini`, `rx_jumbo`; coalescing by ethtool's names
    /// (`rx-usecs`, `adaptive-rx`, ... as `ethtool --json -c` prints them).
    pub fn parse(group: EthtoolGroup, name: &str) -> Result<Self, HostError> {
        let found = match group {
            EthtoolGroup::Channels => CHANNELS
                .iter()
                .find(|(_, n)| *n == name)
                .map(|(a, _)| EthtoolAttr::Channels(*a)),
            EthtoolGroup::Rings => RINGS
                .iter()
                .find(|(_, n)| *n == name)
                .map(|(a, _)| EthtoolAttr::Rings(*a)),
            EthtoolGroup::Coalesce => COALESCE_NAMES
                .iter()
                .find(|(_, n, _)| *n == name)
                .map(|&(_, name, _)| EthtoolAttr::Coalesce(CoalesceAttr { name })),
            EthtoolGroup::Features => knobpath::ETHTOOL_FEATURES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(name, _)| EthtoolAttr::Features(FeatureAttr { name })),
        };
        found.ok_or_else(|| HostError::BadName {
            what: "ethtool attribute",
            name: name.chars().take(80).collect(),
            rule: match group {
                EthtoolGroup::Channels => "channels are combined, rx, tx or other",
                EthtoolGroup::Rings => "rings are rx, tx, rx_mini or rx_jumbo",
                EthtoolGroup::Coalesce => {
                    "coalescing parameters are ethtool's names, such as rx-usecs or adaptive-rx"
                }
                EthtoolGroup::Features => {
                    "offloads are rx-checksum, rx-gro, tx-tcp-segmentation or tx-generic-segmentation"
                }
            },
        })
    }

    /// The settings group.
    pub fn group(self) -> EthtoolGroup {
        match self {
            EthtoolAttr::Channels(_) => EthtoolGroup::Channels,
            EthtoolAttr::Rings(_) => EthtoolGroup::Rings,
            EthtoolAttr::Coalesce(_) => EthtoolGroup::Coalesce,
            EthtoolAttr::Features(_) => EthtoolGroup::Features,
        }
    }

    /// The name as in plans, snapshots and fixture files (`rx_mini`, `rx-usecs`).
    pub fn name(self) -> &'static str {
        match self {
            EthtoolAttr::Channels(a) => CHANNELS.iter().find(|(x, _)| *x == a).map_or("", |p| p.1),
            EthtoolAttr::Rings(a) => RINGS.iter().find(|(x, _)| *x == a).map_or("", |p| p.1),
            EthtoolAttr::Coalesce(c) => c.name,
            EthtoolAttr::Features(f) => f.name,
        }
    }

    /// The name as ethtool(8) takes it on the command line (`rx-mini`).
    pub fn cli_name(self) -> String {
        knobpath::ethtool_cli_attr(self.group(), self.name())
    }

    /// Whether ethtool(8) takes it as `on|off` (`adaptive-rx`, `cqe-mode-rx`,
    /// every offload).
    pub fn is_switch(self) -> bool {
        knobpath::ethtool_is_switch(self.group(), self.name())
    }

    /// The target as messages name it, `ethtool rings eth0 rx`.
    pub fn describe(self, iface: &str) -> String {
        format!("ethtool {} {iface} {}", self.group().name(), self.name())
    }

    /// Its value in `st`; `None` when the driver does not report it, an
    /// error when the probe of its group failed.
    pub fn value_in(self, iface: &str, st: &EthtoolState) -> Result<Option<u64>, HostError> {
        let failed = |m: &str| {
            ethtool_err(
                format!("ethtool {} {iface}", self.group().name()),
                m.to_string(),
            )
        };
        match self {
            EthtoolAttr::Channels(a) => match &st.channels {
                Probe::Ok { value: c } => Ok(match a {
                    ChannelAttr::Combined => c.combined,
                    ChannelAttr::Rx => c.rx,
                    ChannelAttr::Tx => c.tx,
                    ChannelAttr::Other => c.other,
                }
                .map(u64::from)),
                Probe::Error { message } => Err(failed(message)),
                _ => Ok(None),
            },
            EthtoolAttr::Rings(a) => match &st.rings {
                Probe::Ok { value: r } => Ok(match a {
                    RingAttr::Rx => r.rx,
                    RingAttr::Tx => r.tx,
                    RingAttr::RxMini => r.rx_mini,
                    RingAttr::RxJumbo => r.rx_jumbo,
                }
                .map(u64::from)),
                Probe::Error { message } => Err(failed(message)),
                _ => Ok(None),
            },
            EthtoolAttr::Coalesce(c) => match &st.coalesce {
                Probe::Ok { value } => Ok(value.get(c.name).copied()),
                Probe::Error { message } => Err(failed(message)),
                _ => Ok(None),
            },
            EthtoolAttr::Features(f) => match &st.features {
                Probe::Ok { value } => Ok(value.get(f.name).map(|x| u64::from(x.active))),
                Probe::Error { message } => Err(failed(message)),
                _ => Ok(None),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_once_per_group() {
        let a = EthtoolAttr::parse(EthtoolGroup::Rings, "rx_mini").unwrap();
        assert_eq!(a, EthtoolAttr::Rings(RingAttr::RxMini));
        assert_eq!((a.name(), a.cli_name().as_str()), ("rx_mini", "rx-mini"));
        let c = EthtoolAttr::parse(EthtoolGroup::Coalesce, "adaptive-rx").unwrap();
        assert!(c.is_switch());
        let cqe = EthtoolAttr::parse(EthtoolGroup::Coalesce, "cqe-mode-rx").unwrap();
        assert!(cqe.is_switch());
        let us = EthtoolAttr::parse(EthtoolGroup::Coalesce, "rx-usecs").unwrap();
        assert!(!us.is_switch());
        assert_eq!(us.cli_name(), "rx-usecs");
        assert_eq!(
            EthtoolAttr::parse(EthtoolGroup::Channels, "combined")
                .unwrap()
                .describe("eth0"),
            "ethtool channels eth0 combined"
        );
        for (g, bad) in [
            (EthtoolGroup::Channels, "rx_mini"),
            (EthtoolGroup::Rings, "combined"),
            (EthtoolGroup::Rings, "rx-mini"),
            (EthtoolGroup::Coalesce, "rx_usecs"),
            (EthtoolGroup::Coalesce, "-C"),
            (EthtoolGroup::Coalesce, ""),
        ] {
            let e = EthtoolAttr::parse(g, bad).unwrap_err();
            assert!(matches!(e, HostError::BadName { .. }), "{bad}: {e}");
        }
    }
}
