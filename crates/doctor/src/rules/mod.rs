//! The diagnosis rules, one file each: a unit type implementing
//! [`DoctorRule`], listed once in [`CATALOGUE`].
//!
//! To add a rule: a file here with the unit type, a [`DoctorId`] variant in
//! `doctor_ids!` and one line in [`CATALOGUE`]; a fixture test that fires it
//! and one that does not (`docs/doctor.md`, "Adding a rule").

use crate::finding::{Finding, Severity};
use crate::input::Cx;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

mod buffers_below_bdp;
mod coalesce_mismatch;
mod irq_owner_conflict;
mod irq_remote_node;
mod irq_stacked;
mod listen_drops;
mod rps_off;
mod softirq_concentrated;
mod softnet_drops;
mod tcp_reordering;
mod timewait_exhaustion;
mod udp_rcvbuf_errors;
// (rules of the doctor framework above, of other units below)
mod app_on_irq_cpu;
mod bdp_from_sockets;
mod boot_override;
mod bufferbloat;
mod cloud_allowance;
mod conntrack_full;
mod cpu_power;
mod enhanced_networking_off;
mod iface_drop_ratio;
mod link_saturated;
mod nic_drops;
mod offload_off;
mod ring_small;
mod syn_queue_overflow;
mod tcp_memory_pressure;
mod tcp_resets;
mod udp_sndbuf_errors;

/// Declares [`DoctorId`] with its kebab-case ids, from one list.
macro_rules! doctor_ids {
    ($($(#[$doc:meta])* $variant:ident => $id:literal,)*) => {
        /// A rule's stable id; JSON and the human output spell it in kebab-case.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DoctorId {
            $($(#[$doc])* $variant,)*
        }

        impl DoctorId {
            /// Every id.
            pub const ALL: &'static [DoctorId] = &[$(DoctorId::$variant,)*];

            /// The id's spelling (`softirq-concentrated`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(DoctorId::$variant => $id,)*
                }
            }

            /// The id spelled `s`, if there is one.
            pub fn parse(s: &str) -> Option<DoctorId> {
                match s {
                    $($id => Some(DoctorId::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

doctor_ids! {
    /// NET_RX softirq time concentrated on few CPUs while others idle.
    SoftirqConcentrated => "softirq-concentrated",
    /// Fewer RX queues than usable cores and RPS off.
    RpsOff => "rps-off",
    /// A queue IRQ on a NUMA node other than the NIC's.
    IrqRemoteNode => "irq-remote-node",
    /// Several queue IRQs of one NIC on one CPU or on SMT siblings.
    IrqStacked => "irq-stacked",
    /// softnet backlog drops or time_squeeze growing.
    SoftnetDrops => "softnet-drops",
    /// UDP RcvbufErrors growing.
    UdpRcvbufErrors => "udp-rcvbuf-errors",
    /// irqbalance or tuned owning knobs a plan (or a hand) also sets.
    IrqOwnerConflict => "irq-owner-conflict",
    /// TCP ListenOverflows/ListenDrops growing.
    ListenDrops => "listen-drops",
    /// Ephemeral ports held by TIME_WAIT.
    TimewaitExhaustion => "timewait-exhaustion",
    /// Retransmits that are reordering, not loss.
    TcpReordering => "tcp-reordering",
    /// Socket buffer maxima below the BDP.
    BuffersBelowBdp => "buffers-below-bdp",
    /// Coalescing against the goal.
    CoalesceMismatch => "coalesce-mismatch",
    // (ids of the doctor framework above, of other units below)
    /// NIC receive drops (missed, no buffer, FIFO).
    NicDrops => "nic-drops",
    /// RX ring well below its maximum while the NIC drops.
    RingSmall => "ring-small",
    /// The cloud instance's allowance counters rise.
    CloudAllowance => "cloud-allowance",
    /// Power saving on CPUs under a latency goal.
    CpuPower => "cpu-power",
    /// A cloud guest on a paravirtual NIC where SR-IOV/ENA/gVNIC is offered.
    EnhancedNetworkingOff => "enhanced-networking-off",
    /// A busy network process pinned to the NIC's interrupt CPUs or a remote node.
    AppOnIrqCpu => "app-on-irq-cpu",
    /// Checksum, GRO, TSO or GSO off where supported.
    OffloadOff => "offload-off",
    /// A deep FIFO qdisc where fq_codel or fq is available.
    Bufferbloat => "bufferbloat",
    /// Boot-time configuration overrides a knob the plan sets.
    BootOverride => "boot-override",
    /// Conntrack table near full or dropping.
    ConntrackFull => "conntrack-full",
    /// TCP memory near tcp_mem or orphans near tcp_max_orphans.
    TcpMemoryPressure => "tcp-memory-pressure",
    /// An interface's drops >= 2 % of its packets.
    IfaceDropRatio => "iface-drop-ratio",
    /// SYN queues full: TCPReqQFullDrop / TCPReqQFullDoCookies growing.
    SynQueueOverflow => "syn-queue-overflow",
    /// TCP resets sent, established resets or failed attempts at a high rate.
    TcpResets => "tcp-resets",
    /// UDP SndbufErrors growing.
    UdpSndbufErrors => "udp-sndbuf-errors",
    /// Traffic near the link speed.
    LinkSaturated => "link-saturated",
}

impl fmt::Display for DoctorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DoctorId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DoctorId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DoctorId::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown doctor rule `{s}`")))
    }
}

/// A rule could not run; the reason names what it lacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip(pub String);

impl Skip {
    /// A skip with `reason`.
    pub fn because(reason: impl Into<String>) -> Skip {
        Skip(reason.into())
    }
}

/// A diagnosis rule: what it is, why, where that comes from, and its check.
pub trait DoctorRule: Sync {
    /// Its stable id.
    fn id(&self) -> DoctorId;
    /// The usual severity of its findings (a finding may raise or lower it).
    fn severity(&self) -> Severity;
    /// What it detects, in a few words.
    fn title(&self) -> &'static str;
    /// Why it matters, one or two sentences.
    fn rationale(&self) -> &'static str;
    /// A public source: a kernel document, a driver README or a published article.
    fn source(&self) -> &'static str;
    /// Push findings; `Err(Skip)` when an input it needs is missing (then
    /// nothing pushed is kept).
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip>;
}

/// Every rule, in the order its findings are reported within a severity.
pub static CATALOGUE: &[&dyn DoctorRule] = &[
    &softirq_concentrated::SoftirqConcentrated,
    &rps_off::RpsOff,
    &irq_remote_node::IrqRemoteNode,
    &irq_stacked::IrqStacked,
    &softnet_drops::SoftnetDrops,
    &udp_rcvbuf_errors::UdpRcvbufErrors,
    &irq_owner_conflict::IrqOwnerConflict,
    &listen_drops::ListenDrops,
    &timewait_exhaustion::TimewaitExhaustion,
    &tcp_reordering::TcpReordering,
    &buffers_below_bdp::BuffersBelowBdp,
    &coalesce_mismatch::CoalesceMismatch,
    // (rules of the doctor framework above, of other units below)
    &nic_drops::NicDrops,
    &ring_small::RingSmall,
    &cloud_allowance::CloudAllowance,
    &cpu_power::CpuPower,
    &enhanced_networking_off::EnhancedNetworkingOff,
    &app_on_irq_cpu::AppOnIrqCpu,
    &offload_off::OffloadOff,
    &bufferbloat::Bufferbloat,
    &boot_override::BootOverride,
    &conntrack_full::ConntrackFull,
    &tcp_memory_pressure::TcpMemoryPressure,
    &iface_drop_ratio::IfaceDropRatio,
    &syn_queue_overflow::SynQueueOverflow,
    &tcp_resets::TcpResets,
    &udp_sndbuf_errors::UdpSndbufErrors,
    &link_saturated::LinkSaturated,
];

/// The rule with id `id`.
pub fn find(id: DoctorId) -> Option<&'static dyn DoctorRule> {
    CATALOGUE.iter().copied().find(|r| r.id() == id)
}

/// Sum of counters that a capture may make hostile: saturates instead of
/// overflowing.
pub(crate) fn sat_sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0, u64::saturating_add)
}

/// Sysctl `key` of the snapshot as read, `?` when it was not read.
pub(crate) fn sysctl(cx: &Cx<'_>, key: &str) -> String {
    cx.snap()
        .sysctls
        .get(key)
        .map_or_else(|| "?".to_string(), |v| v.trim().to_string())
}

/// `n` with `unit`, and an `s` unless it is 1 (`3 IRQs`).
pub(crate) fn plural(n: usize, unit: &str) -> String {
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// Snapshot findings of `model::findings` rule `code`.
pub(crate) fn host_findings<'c>(
    cx: &'c Cx<'_>,
    code: model::findings::FindingId,
) -> impl Iterator<Item = &'c model::findings::Finding> {
    cx.host_findings.iter().filter(move |f| f.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_has_every_rule_once() {
        assert_eq!(CATALOGUE.len(), DoctorId::ALL.len());
        for &id in DoctorId::ALL {
            assert_eq!(CATALOGUE.iter().filter(|r| r.id() == id).count(), 1, "{id}");
            assert_eq!(DoctorId::parse(id.as_str()), Some(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{id}\""));
            assert_eq!(serde_json::from_str::<DoctorId>(&json).unwrap(), id);
            let r = find(id).unwrap();
            assert!(
                !r.rationale().is_empty() && !r.source().is_empty() && !r.title().is_empty(),
                "{id}"
            );
        }
        assert!(serde_json::from_str::<DoctorId>("\"rps-offf\"").is_err());
    }
}
