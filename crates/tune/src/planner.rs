//! The planner: a pure function from a host snapshot, a profile and options
//! to an ordered [`Plan`]. It checks the options, places the queues of each
//! interface ([`crate::placement`]) and runs the enabled rules of
//! [`crate::rules::CATALOGUE`] in order.

use crate::context::{Ctx, Nic};
use crate::placement::physical_cores;
use crate::profile::Profile;
use crate::rules::{RuleId, CATALOGUE};
use model::plan::{HostExtras, NetnsScope, Plan, PlanOptions, PLAN_SCHEMA_VERSION};
use model::snapshot::{HostSnapshot, Interface};
use model::CpuSet;
use thiserror::Error;

pub use crate::context::is_netns_sysctl;
pub use crate::rules::coalesce::DRIVERS_RX_USECS_1_DYNAMIC;
pub use crate::rules::socket_buffers::SOCKET_BUFFER_MAX;

/// Inputs the planner refuses.
#[derive(Debug, Error, PartialEq)]
pub enum PlanError {
    /// `--cpus`/`--exclude-cpus` names CPUs that are not online.
    #[error("{flag} {given}: CPUs {outside} are not online (online: {online})")]
    CpusNotOnline {
        /// The flag.
        flag: &'static str,
        /// The list given.
        given: String,
        /// The offending CPUs.
        outside: String,
        /// Online CPUs.
        online: String,
    },
    /// No CPU is left after `--cpus`, `--exclude-cpus` and isolation.
    #[error(
        "no usable CPU left (online {online}, isolated {isolated}, after --cpus/--exclude-cpus)"
    )]
    NoUsableCpu {
        /// Online CPUs.
        online: String,
        /// Isolated CPUs.
        isolated: String,
    },
    /// `--iface` names an interface the host does not have.
    #[error("interface `{name}` not found (interfaces: {known})")]
    UnknownIface {
        /// Name given.
        name: String,
        /// Interfaces present.
        known: String,
    },
    /// A level of the profile's `[levels]` the host cannot take.
    #[error("profile {profile}: levels.{level}")]
    Level {
        /// The profile's name.
        profile: String,
        /// The level and why.
        level: crate::levels::NotApplicable,
    },
}

/// Compute the plan. Pure: everything comes from the arguments.
pub fn plan(
    snap: &HostSnapshot,
    extras: &HostExtras,
    profile: &Profile,
    opts: &PlanOptions,
) -> Result<Plan, PlanError> {
    let usable = usable_cpus(snap, opts)?;
    let ifaces = selected_ifaces(snap, opts)?;
    let scope = opts.netns.unwrap_or(extras.scope);
    let reserved = opts.exclude_cpus.union(&snap.cpu.isolated);
    let cores = physical_cores(&snap.cpus, &snap.nodes, &usable, &reserved);
    let mut cx = Ctx::new(snap, extras, profile, opts, scope, cores);
    opening_notes(&mut cx, ifaces.is_empty());
    cx.place_all(&ifaces);

    let enabled = || CATALOGUE.iter().filter(|r| profile.enabled(r.id()));
    for iface in &ifaces {
        let mut nic = Nic::new(&mut cx, iface);
        for rule in enabled() {
            rule.plan_iface(&mut cx, &mut nic);
        }
    }
    for rule in enabled() {
        rule.plan_placed(&mut cx);
    }
    if let Some(t) = &snap.owners.tuned {
        cx.scope_note(format!(
            "tuned is active (profile {}): it also writes sysctls, governor and coalescing and may undo this plan",
            t.active_profile.as_deref().unwrap_or("unknown")
        ));
    }
    for rule in enabled() {
        rule.plan_host(&mut cx, &ifaces);
    }

    let (mut changes, mut notes) = cx.finish();
    if !profile.levels.is_empty() {
        // The profile's exact levels win over a rule's change of the same target.
        let cp = crate::levels::cell_plan(snap, scope, &profile.levels).map_err(|level| {
            PlanError::Level {
                profile: profile.name.clone(),
                level,
            }
        })?;
        changes.retain(|c| !cp.plan.changes.iter().any(|l| l.target == c.target));
        changes.extend(cp.plan.changes);
        if !cp.bench_args.is_empty() {
            notes.push(model::plan::PlanNote {
                rule: "levels".into(),
                message: format!(
                    "not a host setting, for the application: nettune bench {}",
                    cp.bench_args.join(" ")
                ),
            });
        }
    }
    changes.sort_by_key(|c| c.phase);
    let mut plan = header(snap, profile, opts, scope);
    plan.changes = changes;
    plan.notes = notes;
    Ok(plan)
}

/// A plan of no changes made for `snap` with `profile` and `opts` in
/// `scope`: the header [`plan`] writes (the host's fingerprint and name, the
/// profile, the options), for changes chosen elsewhere (doctor's fixes).
pub fn header(
    snap: &HostSnapshot,
    profile: &Profile,
    opts: &PlanOptions,
    scope: NetnsScope,
) -> Plan {
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        profile: profile.name.clone(),
        profile_toml: profile.toml.clone(),
        fingerprint: snap.fingerprint(),
        hostname: snap.source.hostname.clone(),
        options: opts.clone(),
        scope,
        changes: Vec::new(),
        notes: Vec::new(),
    }
}

/// Online CPUs within `--cpus`, without `--exclude-cpus` and isolated CPUs.
fn usable_cpus(snap: &HostSnapshot, opts: &PlanOptions) -> Result<CpuSet, PlanError> {
    let online = &snap.cpu.online;
    let mut usable = online.clone();
    if let Some(c) = &opts.cpus {
        let outside = c.difference(online);
        if !outside.is_empty() {
            return Err(PlanError::CpusNotOnline {
                flag: "--cpus",
                given: c.to_list(),
                outside: outside.to_list(),
                online: online.to_list(),
            });
        }
        usable = usable.intersection(c);
    }
    let outside = opts.exclude_cpus.difference(online);
    if !outside.is_empty() {
        return Err(PlanError::CpusNotOnline {
            flag: "--exclude-cpus",
            given: opts.exclude_cpus.to_list(),
            outside: outside.to_list(),
            online: online.to_list(),
        });
    }
    usable = usable.difference(&opts.exclude_cpus);
    usable = usable.difference(&snap.cpu.isolated);
    if usable.is_empty() {
        return Err(PlanError::NoUsableCpu {
            online: online.to_list(),
            isolated: snap.cpu.isolated.to_list(),
        });
    }
    Ok(usable)
}

/// `--iface`, or every interface with a driver except `lo`.
fn selected_ifaces<'a>(
    snap: &'a HostSnapshot,
    opts: &PlanOptions,
) -> Result<Vec<&'a Interface>, PlanError> {
    if opts.ifaces.is_empty() {
        return Ok(snap
            .interfaces
            .iter()
            .filter(|i| i.driver.is_some() && i.name != "lo")
            .collect());
    }
    opts.ifaces
        .iter()
        .map(|n| {
            snap.interface(n).ok_or_else(|| PlanError::UnknownIface {
                name: n.clone(),
                known: snap
                    .interfaces
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        })
        .collect()
}

/// Notes on the scope and the CPUs left out, before any rule runs.
fn opening_notes(cx: &mut Ctx<'_>, no_iface: bool) {
    let (snap, opts) = (cx.snap, cx.opts);
    if cx.scope == NetnsScope::Child {
        cx.scope_note(
            "child network namespace: global knobs (net.core buffers/backlog/budget/busy-poll, rps_sock_flow_entries, irqbalance, governor, PM QoS, module parameters) are left out; IRQ affinity only for the selected interfaces' IRQs".into(),
        );
    }
    if !snap.cpu.isolated.is_empty() {
        cx.note(
            RuleId::IrqAffinity,
            format!(
                "isolated CPUs {} are left out of IRQ, RPS and XPS placement",
                snap.cpu.isolated.to_list()
            ),
        );
    }
    if !opts.exclude_cpus.is_empty() {
        cx.note(
            RuleId::IrqAffinity,
            format!(
                "CPUs {} are reserved for the application (--exclude-cpus)",
                opts.exclude_cpus.to_list()
            ),
        );
    }
    if no_iface {
        cx.scope_note(
            "no interface with a device driver: nothing per-interface to tune (use --iface)".into(),
        );
    }
}
