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
    /// Interfaces (loopback omitted).
    #[serde(deserialize_with = "interfaces")]
    pub interfaces: Vec<IfaceFacts>,
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

/// Facts from a snapshot.
pub fn from_snapshot(s: &HostSnapshot) -> HostFacts {
    let interfaces = s
        .interfaces
        .iter()
        .filter(|i| i.name != "lo")
        .map(|i| {
            let mut irqs: Vec<IrqAffinity> = s
                .irqs
                .iter()
                .filter(|q| q.interface.as_deref() == Some(i.name.as_str()))
                .map(|q| IrqAffinity {
                    irq: q.number.0,
                    cpus: q
                        .effective_affinity
                        .as_ref()
                        .or(q.smp_affinity.as_ref())
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
    }
}
