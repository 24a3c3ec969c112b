//! Ethtool state of an interface (channels, rings, coalescing, features,
//! permanent MAC) behind [`EthtoolSource`], so fixtures and fakes can stand
//! in for the kernel.
//!
//! * live host: [`NetlinkEthtool`] (ethtool generic netlink, kernel 5.6+);
//! * fixture root: [`FixtureEthtool`] reads `ethtool/<iface>.json` beside
//!   `sys/` and `proc/`, in the shape of [`EthtoolState`] as
//!   `nettune inspect --json` prints it.

use crate::Root;
use model::snapshot::{EthtoolState, Probe};
use std::path::PathBuf;

pub use crate::netlink::NetlinkEthtool;

/// Where ethtool state comes from.
pub trait EthtoolSource {
    /// The state of `iface`. Never fails as a whole: each part is a [`Probe`].
    fn read(&self, iface: &str) -> EthtoolState;
}

/// Reads nothing: every probe is [`Probe::Absent`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEthtool;

impl EthtoolSource for NoEthtool {
    fn read(&self, _iface: &str) -> EthtoolState {
        EthtoolState::default()
    }
}

/// `ethtool/<iface>.json` under a fixture directory.
#[derive(Debug, Clone)]
pub struct FixtureEthtool {
    dir: PathBuf,
}

impl FixtureEthtool {
    /// Read from `<root>/ethtool/`.
    pub fn new(root: &Root) -> Self {
        FixtureEthtool {
            dir: root.dir().join("ethtool"),
        }
    }
}

/// Path of an interface's ethtool file inside a fixture, as shown in notes.
pub fn fixture_path(iface: &str) -> String {
    format!("ethtool/{iface}.json")
}

impl EthtoolSource for FixtureEthtool {
    fn read(&self, iface: &str) -> EthtoolState {
        let path = self.dir.join(format!("{iface}.json"));
        let shown = std::path::PathBuf::from(fixture_path(iface));
        let text = match crate::root::read_regular(&path, &shown, crate::root::MAX_READ) {
            Ok(t) => String::from_utf8_lossy(&t).into_owned(),
            Err(e) if e.is_not_found() => {
                return EthtoolState::default();
            }
            Err(e) => return EthtoolState::error(e.to_string()),
        };
        match serde_json::from_str::<EthtoolState>(&text) {
            Ok(s) => s,
            Err(e) => EthtoolState::error(format!("{}: not valid JSON: {e}", fixture_path(iface))),
        }
    }
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
            features: Probe::Error { message },
            perm_mac: None,
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
        out
    }
}

fn err<T>(p: &Probe<T>) -> Option<&String> {
    match p {
        Probe::Error { message } => Some(message),
        _ => None,
    }
}

/// The source `read_snapshot` uses: netlink live, JSON files under a fixture.
pub fn default_source(root: &Root) -> Box<dyn EthtoolSource> {
    if root.is_live() {
        Box::new(NetlinkEthtool::new())
    } else {
        Box::new(FixtureEthtool::new(root))
    }
}
