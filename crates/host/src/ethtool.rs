//! Ethtool settings of an interface (channels, rings, coalescing, features,
//! permanent MAC) behind one trait, [`Ethtool`], that reads and writes, so a
//! fixture stands in for the kernel in `inspect`, `capture` and `apply` alike.
//!
//! * live host: [`LiveEthtool`] reads over ethtool netlink (kernel 5.6+,
//!   [`NetlinkEthtool`]) and writes with `ethtool -L/-G/-C`;
//! * fixture root: [`FixtureEthtool`] reads `ethtool/<iface>.json` beside
//!   `sys/` and `proc/` (the shape of [`EthtoolState`] as
//!   `nettune inspect --json` prints it) and edits it in place.
//!
//! The attributes apply reads and sets are [`EthtoolAttr`]: a group and a
//! name checked once against the names ethtool and the kernel use.

mod attr;
mod fixture;
pub mod ioctl;
mod live;
pub mod stats;

use crate::error::HostError;
use crate::Root;
use model::snapshot::{EthtoolState, NicStats, Probe};

pub use crate::netlink::NetlinkEthtool;
pub use attr::{ChannelAttr, CoalesceAttr, EthtoolAttr, RingAttr};
pub use fixture::{json_span, FixtureEthtool};
pub use live::LiveEthtool;

/// Reads and sets ethtool state.
pub trait Ethtool {
    /// The state of `iface`. Never fails as a whole: each part is a [`Probe`].
    fn read(&self, iface: &str) -> EthtoolState;

    /// One attribute's current value; `None` when the driver does not report
    /// it. The default takes it from [`Ethtool::read`].
    fn get(&self, iface: &str, attr: EthtoolAttr) -> Result<Option<u64>, HostError> {
        attr.value_in(iface, &self.read(iface))
    }

    /// The driver's counters of `iface` alone (`ethtool -S`, without the
    /// standard groups): what the sampler reads every interval. The default
    /// takes them from [`Ethtool::read`].
    fn driver_stats(&self, iface: &str) -> Probe<NicStats> {
        self.read(iface).stats
    }

    /// Set one attribute.
    fn set(&self, iface: &str, attr: EthtoolAttr, value: u64) -> Result<(), HostError>;
}

/// Reads nothing (every probe is [`Probe::Absent`]) and sets nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEthtool;

impl Ethtool for NoEthtool {
    fn read(&self, _iface: &str) -> EthtoolState {
        EthtoolState::default()
    }

    fn set(&self, iface: &str, attr: EthtoolAttr, _value: u64) -> Result<(), HostError> {
        Err(HostError::NotFound {
            path: attr.describe(iface).into(),
        })
    }
}

/// Path of an interface's ethtool file inside a fixture, as shown in notes.
pub fn fixture_path(iface: &str) -> String {
    format!("ethtool/{iface}.json")
}

/// Helpers on [`EthtoolState`].
pub trait EthtoolStateExt {
    /// Every probe failed with `message`.
    fn error(message: String) -> Self;
    /// Messages of the probes that failed (not unsupported, not absent).
    fn errors(&self) -> Vec<String>;
}

impl EthtoolStateExt for EthtoolState {
    fn error(message: String) -> Self {
        EthtoolState {
            driver: Probe::Error {
                message: message.clone(),
            },
            channels: Probe::Error {
                message: message.clone(),
            },
            rings: Probe::Error {
                message: message.clone(),
            },
            coalesce: Probe::Error {
                message: message.clone(),
            },
            features: Probe::Error {
                message: message.clone(),
            },
            perm_mac: None,
            stats: Probe::Error { message },
        }
    }

    fn errors(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |m: Option<&String>| {
            if let Some(m) = m {
                if !out.contains(m) {
                    out.push(m.clone());
                }
            }
        };
        push(err(&self.driver));
        push(err(&self.channels));
        push(err(&self.rings));
        push(err(&self.coalesce));
        push(err(&self.features));
        push(err(&self.stats));
        out
    }
}

fn err<T>(p: &Probe<T>) -> Option<&String> {
    match p {
        Probe::Error { message } => Some(message),
        _ => None,
    }
}

/// The ethtool of a root: netlink and `ethtool(8)` on the live host, the
/// JSON files under a fixture. The one place that choice is made for ethtool.
pub fn default_source(root: &Root) -> Box<dyn Ethtool> {
    if root.is_live() {
        Box::new(LiveEthtool::new())
    } else {
        Box::new(FixtureEthtool::new(root))
    }
}
