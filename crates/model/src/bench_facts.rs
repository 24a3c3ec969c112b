//! Host facts reported with every `bench` result: kernel, CPUs, congestion
//! control, interfaces with their MTU, queues, offloads, interrupt
//! moderation and IRQ affinities. Made from a [`HostSnapshot`] (the same
//! data `nettune inspect` shows) by [`from_snapshot`]; `host` reads them
//! (`host::snapshot::read_bench_facts`), the engine carries them.

use crate::snapshot::{HostSnapshot, Probe};
use serde::{Deserialize, Serialize};

/// One IRQ of an interface and the CPUs that serve it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqAffinity {
    /// IRQ number.
    pub irq: u32,
    /// Effective affinity (else smp_affinity), as a cpulist.
    pub cpus: String,
}

/// One network interface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaceFacts {
    /// Name.
    pub name: String,
    /// Driver, if any.
    pub driver: Option<String>,
    /// MTU.
    pub mtu: Option<u32>,
    /// operstate.
    pub operstate: Option<String>,
    /// RX queues.
    pub rx_queues: u32,
    /// TX queues.
    pub tx_queues: u32,
    /// Offloads that are on (`ethtool -k` names), when ethtool could read them.
    #[serde(default, deserialize_with = "offloads")]
    pub offloads_on: Vec<String>,
    /// Interrupt moderation (`ethtool -c`): the attributes the driver
    /// reports, by ethtool's names (`rx-usecs`, `adaptive-rx`, ...; booleans
    /// 0/1); empty when the driver has none or ethtool could not read them.
    #[serde(default, deserialize_with = "coalesce")]
    pub coalesce: std::collections::BTreeMap<String, u64>,
    /// IRQs and their affinities.
    #[serde(deserialize_with = "irqs")]
    pub irqs: Vec<IrqAffinity>,
}

/// What the result carries about each host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Hostname.
    pub hostname: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Online CPUs (cpulist).
    pub cpus_online: Option<String>,
    /// Count of online CPUs.
    pub ncpus: u32,
    /// `net.ipv4.tcp_congestion_control` of the network namespace.
    pub congestion_control: Option<String>,
    /// Interfaces (loopback omitted, unless it is the path interface).
    #[serde(deserialize_with = "interfaces")]
    pub interfaces: Vec<IfaceFacts>,
    /// The interface the test's traffic used on this host (`lo` when the
    /// peer is this host), found from the control connection's addresses
    /// ([`path_interface`]); its facts are in `interfaces`. Absent when
    /// unknown (an older peer, an address no interface holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_interface: Option<String>,
}

impl HostFacts {
    /// The facts of the path interface, when known and listed.
    pub fn path(&self) -> Option<&IfaceFacts> {
        let name = self.path_interface.as_deref()?;
        self.interfaces.iter().find(|i| i.name == name)
    }
}

/// The interface the traffic between `local` (this host's end of a
/// connection) and `peer` used: `lo` when either is a loopback address, the
/// two are equal, or `is_own(peer)` (the peer is one of this host's
/// addresses: the kernel delivers it over loopback); else the interface
/// holding `local` (`holder`).
pub fn path_interface(
    local: std::net::IpAddr,
    peer: std::net::IpAddr,
    is_own: impl Fn(std::net::IpAddr) -> bool,
    holder: impl Fn(std::net::IpAddr) -> Option<String>,
) -> Option<String> {
    let (local, peer) = (local.to_canonical(), peer.to_canonical());
    if local.is_loopback() || peer.is_loopback() || local == peer || is_own(peer) {
        return Some("lo".into());
    }
    holder(local)
}

// A peer's facts are read with caps on their lists (crate::bounded).
fn offloads<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    crate::bounded::vec_at_most(d, crate::bounded::MAX_OFFLOADS)
}
fn coalesce<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, u64>, D::Error> {
    crate::bounded::map_at_most(d, crate::bounded::MAX_COALESCE)
}
fn irqs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<IrqAffinity>, D::Error> {
    crate::bounded::vec_at_most(d, crate::bounded::MAX_IRQS)
}
fn interfaces<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<IfaceFacts>, D::Error> {
    crate::bounded::vec_at_most(d, crate::bounded::MAX_INTERFACES)
}

/// Facts from a snapshot (no path interface).
pub fn from_snapshot(s: &HostSnapshot) -> HostFacts {
    from_snapshot_on(s, None)
}

/// Facts from a snapshot, with `path` the interface the test used (listed
/// even when it is `lo`).
pub fn from_snapshot_on(s: &HostSnapshot, path: Option<&str>) -> HostFacts {
    let interfaces = s
        .interfaces
        .iter()
        .filter(|i| i.name != "lo" || path == Some("lo"))
        .map(|i| {
            let mut irqs: Vec<IrqAffinity> = s
                .irqs
                .iter()
                .filter(|q| q.interface.as_deref() == Some(i.name.as_str()))
                .map(|q| IrqAffinity {
                    irq: q.number.0,
                    cpus: crate::findings::irq_cpus(q)
                        .map(|c| c.to_list())
                        .unwrap_or_default(),
                })
                .collect();
            irqs.sort_by_key(|q| q.irq);
            let offloads_on = match &i.ethtool.features {
                Probe::Ok { value } => value
                    .iter()
                    .filter(|(_, f)| f.active)
                    .map(|(n, _)| n.clone())
                    .collect(),
                _ => Vec::new(),
            };
            let coalesce = match &i.ethtool.coalesce {
                Probe::Ok { value } => value.clone(),
                _ => Default::default(),
            };
            IfaceFacts {
                coalesce,
                name: i.name.clone(),
                driver: i.driver.clone(),
                mtu: i.mtu,
                operstate: i.operstate.clone(),
                rx_queues: i.rx_queues.len() as u32,
                tx_queues: i.tx_queues.len() as u32,
                offloads_on,
                irqs,
            }
        })
        .collect();
    HostFacts {
        hostname: s.source.hostname.clone(),
        kernel: s.source.kernel.clone(),
        cpus_online: Some(s.cpu.online.to_list()),
        ncpus: s.cpu.online.len() as u32,
        congestion_control: s.sysctls.get("net.ipv4.tcp_congestion_control").cloned(),
        interfaces,
        path_interface: path.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    /// `bench` over 127.0.0.1 printed eth0's MTU and driver as the path's:
    /// the path is chosen from the connection's addresses.
    #[test]
    fn the_path_interface_follows_the_addresses() {
        let own = |a: IpAddr| a == ip("10.0.0.5") || a == ip("10.0.1.5");
        let holder =
            |a: IpAddr| (a == ip("10.0.0.5") || a == ip("10.0.1.5")).then(|| format!("eth-{a}"));
        let path = |l: &str, p: &str| path_interface(ip(l), ip(p), own, holder);
        assert_eq!(path("127.0.0.1", "127.0.0.1").as_deref(), Some("lo"));
        assert_eq!(path("::1", "::1").as_deref(), Some("lo"));
        assert_eq!(
            path("::ffff:127.0.0.1", "::ffff:127.0.0.1").as_deref(),
            Some("lo")
        );
        // To one of this host's own addresses: over lo.
        assert_eq!(path("10.0.0.5", "10.0.0.5").as_deref(), Some("lo"));
        assert_eq!(path("10.0.0.5", "10.0.1.5").as_deref(), Some("lo"));
        // To another host: the interface holding the local address.
        assert_eq!(
            path("10.0.0.5", "10.0.0.9").as_deref(),
            Some("eth-10.0.0.5")
        );
        assert_eq!(
            path("::ffff:10.0.0.5", "10.0.0.9").as_deref(),
            Some("eth-10.0.0.5")
        );
        // An address no interface holds: unknown.
        assert_eq!(path("10.9.9.9", "10.0.0.9"), None);
    }

    #[test]
    fn old_peers_facts_parse() {
        let f: HostFacts = serde_json::from_str(
            r#"{"hostname":null,"kernel":null,"cpus_online":null,"ncpus":1,
                "congestion_control":null,"interfaces":[]}"#,
        )
        .unwrap_or_default();
        assert_eq!((f.ncpus, f.path_interface), (1, None));
    }
}
