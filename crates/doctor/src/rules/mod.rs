//! Every finding rule of the workspace, one file each: a unit type
//! implementing [`DoctorRule`], listed once in [`CATALOGUE`]. A rule looks
//! at doctor's context ([`DoctorRule::check`]), at a part of the snapshot
//! alone ([`DoctorRule::scope`] and [`DoctorRule::observe`]: `inspect`'s
//! findings, [`crate::snapshot`]), or both (`irq-remote-node`, `rps-off`).
//!
//! To add a rule: a file here with the unit type, a [`FindingId`] variant in
//! `model/src/finding_id.rs` and one line in [`CATALOGUE`]; a fixture test that fires it
//! and one that does not (`docs/doctor.md`, "Adding a rule").

use crate::finding::{Finding, Severity};
use crate::input::Cx;
use crate::snapshot::{At, Scope};
use model::findings::FindingId;
use tune::RuleId;

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
mod drops_by_reason;
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
// (rules that look at the snapshot alone: `inspect`'s findings)
mod irq_affinity_spans_nodes;
mod irq_on_isolated_cpu;
mod irqbalance_running;
mod irqs_on_one_cpu;
mod irqs_on_smt_siblings;
mod nic_rx_drops;
mod numa_node_unknown;
mod rfs_half_configured;
mod rps_includes_irq_cpu;
mod rps_on_irq_sibling;
mod tuned;

/// A diagnosis rule's id: the one finding id of the workspace
/// ([`FindingId`]), named for the callers that only see doctor's rules.
pub type DoctorId = FindingId;

/// A rule could not run; the reason names what it lacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip(pub String);

impl From<model::doctor_facts::MissingFact> for Skip {
    fn from(m: model::doctor_facts::MissingFact) -> Skip {
        Skip(m.to_string())
    }
}

impl Skip {
    /// A skip with `reason`.
    pub fn because(reason: impl Into<String>) -> Skip {
        Skip(reason.into())
    }
}

/// A finding rule: what it is, why, where that comes from, and its checks:
/// doctor's ([`DoctorRule::check`]) and the snapshot's alone
/// ([`DoctorRule::observe`], run by `inspect` when [`DoctorRule::scope`] is
/// set).
pub trait DoctorRule: Sync {
    /// Its stable id.
    fn id(&self) -> FindingId;
    /// The usual severity of its findings (a finding may raise or lower it).
    fn severity(&self) -> Severity;
    /// What it detects, in a few words.
    fn title(&self) -> &'static str;
    /// Why it matters, one or two sentences.
    fn rationale(&self) -> &'static str;
    /// A public source: a kernel document, a driver README or a published article.
    fn source(&self) -> &'static str;
    /// Push doctor's findings; `Err(Skip)` when an input it needs is missing
    /// (then nothing pushed is kept). None by default: a rule of the snapshot
    /// alone reaches doctor through the rules that read its findings
    /// ([`Cx::host_findings`]).
    fn check(&self, _cx: &Cx<'_>, _out: &mut Vec<Finding>) -> Result<(), Skip> {
        Ok(())
    }
    /// The part of the snapshot [`DoctorRule::observe`] looks at; `None`
    /// (the default) for a rule that needs doctor's context.
    fn scope(&self) -> Option<Scope> {
        None
    }
    /// Push the findings the snapshot shows by itself at `at` (always of
    /// [`DoctorRule::scope`]): `inspect`'s, and [`Cx::host_findings`].
    fn observe(&self, _at: At<'_>, _out: &mut Vec<Finding>) {}
    /// The planner rules whose changes are this rule's advice, with why a
    /// profile may turn them off; when the profile the user asked for turns
    /// all of them off, the rule is skipped with that reason rather than
    /// advise what the profile avoids. Empty: advice that is no plan's.
    fn advises(&self) -> (&'static [RuleId], &'static str) {
        (&[], "")
    }
}

/// Why `rule` is skipped under the profile the user asked for: it avoids
/// every planner rule whose change is the rule's advice.
pub fn avoided_by_profile(rule: &dyn DoctorRule, cx: &Cx<'_>) -> Option<Skip> {
    let (rules, why) = rule.advises();
    if rules.is_empty() || !rules.iter().all(|r| cx.profile_avoids(*r)) {
        return None;
    }
    let names: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
    Some(Skip::because(format!(
        "the {} profile avoids {} ({why})",
        cx.plan_profile,
        names.join(" and ")
    )))
}

/// Every rule, in the order its findings are reported within a severity
/// (doctor's and, for the rules with a [`Scope`], `inspect`'s: consecutive
/// rules of one per-item scope run item by item, see [`crate::snapshot`]).
pub static CATALOGUE: &[&dyn DoctorRule] = &[
    &softirq_concentrated::SoftirqConcentrated,
    // (rules of the snapshot, in the order `inspect` reports them)
    &irqbalance_running::IrqbalanceRunning,
    &tuned::Tuned,
    &numa_node_unknown::NumaNodeUnknown,
    &irq_remote_node::IrqRemoteNode,
    &irq_affinity_spans_nodes::IrqAffinitySpansNodes,
    &irq_on_isolated_cpu::IrqOnIsolatedCpu,
    &irqs_on_one_cpu::IrqsOnOneCpu,
    &irqs_on_smt_siblings::IrqsOnSmtSiblings,
    &rps_on_irq_sibling::RpsOnIrqSibling,
    &rps_includes_irq_cpu::RpsIncludesIrqCpu,
    &rps_off::RpsOff,
    &rfs_half_configured::RfsHalfConfigured,
    &nic_rx_drops::NicRxDrops,
    // (diagnosis rules)
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
    &drops_by_reason::DropsByReason,
];

/// The rule with id `id`.
pub fn find(id: FindingId) -> Option<&'static dyn DoctorRule> {
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

/// Snapshot findings of rule `id` ([`DoctorRule::observe`]).
pub(crate) fn host_findings<'c>(
    cx: &'c Cx<'_>,
    id: FindingId,
) -> impl Iterator<Item = &'c Finding> {
    cx.host_findings.iter().filter(move |f| f.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_has_every_rule_once() {
        for id in CATALOGUE.iter().map(|r| r.id()) {
            assert_eq!(CATALOGUE.iter().filter(|r| r.id() == id).count(), 1, "{id}");
            assert_eq!(FindingId::parse(id.as_str()), Some(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{id}\""));
            assert_eq!(serde_json::from_str::<FindingId>(&json).unwrap(), id);
            let r = find(id).unwrap();
            assert!(
                !r.rationale().is_empty() && !r.source().is_empty() && !r.title().is_empty(),
                "{id}"
            );
        }
        assert!(serde_json::from_str::<FindingId>("\"rps-offf\"").is_err());
    }

    /// Every finding id names exactly one rule of the one catalogue; the
    /// snapshot rules (those `inspect` runs) are in it too.
    #[test]
    fn every_finding_id_has_one_rule() {
        for &id in FindingId::ALL {
            let n = CATALOGUE.iter().filter(|r| r.id() == id).count();
            assert_eq!(n, 1, "{id} has {n} rules");
        }
        assert_eq!(CATALOGUE.len(), FindingId::ALL.len());
        for id in [
            FindingId::IrqRemoteNode,
            FindingId::RpsOff,
            FindingId::Tuned,
        ] {
            assert!(find(id).and_then(|r| r.scope()).is_some(), "{id}");
        }
    }
}
