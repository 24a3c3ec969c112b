//! The planner's rules, one file each: a unit type implementing [`Rule`].
//!
//! [`CATALOGUE`] lists them in phase order. Profiles (which rules exist and
//! their order), the plan's `rule` and `source` fields and the rationale
//! printed under a plan all come from it. To add a rule: a file here, a
//! [`RuleId`] variant (`model/src/plan/origin.rs`) and one line in [`CATALOGUE`] (docs/tune.md, "Adding a
//! rule").

use crate::context::{Ctx, Nic};
pub use model::plan::RuleId;
use model::snapshot::Interface;

mod backlog;
pub use backlog::SQUEEZE_PER_S;
mod busy_poll;
mod channels;
pub(crate) mod coalesce;
mod governor;
mod irq_affinity;
mod irqbalance;
mod module_params;
mod offloads;
mod pm_qos;
mod rfs;
mod rings;
mod rps;
pub(crate) mod socket_buffers;
mod xps;

/// Something that names a rule: a [`RuleId`] or its spelling (which names no
/// rule when unknown).
pub trait AsRuleId {
    /// The rule named, if any.
    fn rule_id(&self) -> Option<RuleId>;
}

impl AsRuleId for RuleId {
    fn rule_id(&self) -> Option<RuleId> {
        Some(*self)
    }
}

impl AsRuleId for &str {
    fn rule_id(&self) -> Option<RuleId> {
        RuleId::parse(self)
    }
}

/// A rule of the planner: what it is, why, where that comes from, and the
/// changes it plans.
///
/// The planner runs an enabled rule's methods in three steps, each over
/// [`CATALOGUE`] in order: [`plan_iface`](Rule::plan_iface) for every
/// selected interface, then [`plan_placed`](Rule::plan_placed) once every
/// interface is planned, then [`plan_host`](Rule::plan_host) for host-wide
/// knobs. A rule implements the steps it needs.
pub trait Rule: Sync {
    /// Its id.
    fn id(&self) -> RuleId;
    /// Rationale, one sentence.
    fn rationale(&self) -> &'static str;
    /// A public source: a kernel document, a driver README or a published article.
    fn source(&self) -> &'static str;
    /// Changes for one interface; its queues are already placed.
    fn plan_iface(&self, _cx: &mut Ctx<'_>, _nic: &mut Nic<'_>) {}
    /// Changes that depend on what the interface step decided
    /// ([`Ctx::any_affinity`]).
    fn plan_placed(&self, _cx: &mut Ctx<'_>) {}
    /// Host-wide changes; `ifaces` are the selected interfaces.
    fn plan_host(&self, _cx: &mut Ctx<'_>, _ifaces: &[&Interface]) {}
}

/// Every rule, in phase order: the order profiles list them, the planner
/// runs them and `plan` prints their rationale.
pub static CATALOGUE: &[&dyn Rule] = &[
    &irqbalance::Irqbalance,
    &channels::Channels,
    &irq_affinity::IrqAffinity,
    &rps::Rps,
    &rfs::Rfs,
    &xps::Xps,
    &coalesce::Coalesce,
    &rings::Rings,
    &offloads::Offloads,
    &socket_buffers::SocketBuffers,
    &backlog::Backlog,
    &busy_poll::BusyPoll,
    &governor::Governor,
    &pm_qos::PmQos,
    &module_params::ModuleParams,
];

/// The rule with id `id`.
pub fn find(id: RuleId) -> Option<&'static dyn Rule> {
    CATALOGUE.iter().copied().find(|r| r.id() == id)
}

/// Position of `id` in [`CATALOGUE`] (the end when absent).
pub fn position(id: RuleId) -> usize {
    CATALOGUE
        .iter()
        .position(|r| r.id() == id)
        .unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id has exactly one rule in the catalogue, and ids round-trip
    /// through their spelling and serde.
    #[test]
    fn catalogue_has_every_rule_once() {
        assert_eq!(CATALOGUE.len(), RuleId::ALL.len());
        for &id in RuleId::ALL {
            assert_eq!(CATALOGUE.iter().filter(|r| r.id() == id).count(), 1, "{id}");
            assert_eq!(RuleId::parse(id.as_str()), Some(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{id}\""));
            assert_eq!(serde_json::from_str::<RuleId>(&json).unwrap(), id);
            let r = find(id).unwrap();
            assert!(!r.rationale().is_empty() && !r.source().is_empty(), "{id}");
        }
        assert!(serde_json::from_str::<RuleId>("\"rpss\"").is_err());
    }
}
