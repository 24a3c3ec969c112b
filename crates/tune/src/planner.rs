//! The planner: a pure function from a host snapshot, a profile and options
//! to an ordered [`Plan`].

use crate::profile::{rule, CoalesceIntent, Profile};
use model::plan::{
    Change, EthtoolGroup, HostExtras, NetnsScope, Phase, Plan, PlanNote, PlanOptions, Target,
    ValueFormat, PLAN_SCHEMA_VERSION,
};
use model::snapshot::{HostSnapshot, Interface, QueueKind};
use model::CpuSet;
use std::collections::{BTreeMap, BTreeSet};
use thiserror::Error;

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
}

/// Drivers whose `rx-usecs 1` means dynamic ITR (their adaptive mode; 0 = off,
/// 2 and up = a fixed interval in µs).
pub const DRIVERS_RX_USECS_1_DYNAMIC: [&str; 2] = ["ixgbe", "ixgbevf"];

#[derive(Debug, Clone, Copy)]
struct Core {
    cpu: u32,
    node: u32,
}

struct Ctx<'a> {
    snap: &'a HostSnapshot,
    extras: &'a HostExtras,
    profile: &'a Profile,
    opts: &'a PlanOptions,
    scope: NetnsScope,
    bits: u32,
    changes: Vec<Change>,
    notes: Vec<PlanNote>,
    /// Global knobs left out in a child namespace: (rule, knob) -> targets.
    left_out: BTreeMap<(String, String), Vec<String>>,
}

impl Ctx<'_> {
    fn note(&mut self, rule_id: &str, message: String) {
        self.notes.push(PlanNote {
            rule: rule_id.into(),
            message,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        phase: Phase,
        rule_id: &str,
        knob: &str,
        target: Target,
        before: Option<String>,
        after: String,
        reason: String,
        global: bool,
    ) {
        if global && self.scope == NetnsScope::Child {
            let e = self
                .left_out
                .entry((rule_id.to_string(), knob.to_string()))
                .or_default();
            e.push(target.describe());
            return;
        }
        self.changes.push(Change {
            phase,
            knob: knob.into(),
            target,
            before,
            after,
            rule: rule_id.into(),
            reason,
            source: rule(rule_id).map_or("", |r| r.source).into(),
        });
    }

    fn sysctl(&mut self, phase: Phase, rule_id: &str, key: &str, after: String, reason: String) {
        let before = self.snap.sysctls.get(key).cloned();
        if before.is_none() {
            self.note(
                rule_id,
                format!("{key}: n/a (not in the snapshot; knob absent on this kernel)"),
            );
            return;
        }
        if before
            .as_deref()
            .is_some_and(|b| ValueFormat::Text.same(b, &after))
        {
            return;
        }
        let global = !is_netns_sysctl(key);
        self.push(
            phase,
            rule_id,
            key,
            Target::File {
                path: format!("/proc/sys/{}", key.replace('.', "/")),
                format: ValueFormat::Text,
            },
            before,
            after,
            reason,
            global,
        );
    }
}

/// Whether a sysctl is per network namespace (the rest of `net.core` is global).
pub fn is_netns_sysctl(key: &str) -> bool {
    if let Some(rest) = key.strip_prefix("net.core.") {
        return matches!(rest, "somaxconn" | "xfrm_acq_expires" | "xfrm_aevent_etime");
    }
    key.starts_with("net.ipv4.") || key.starts_with("net.ipv6.") || key.starts_with("net.unix.")
}

/// Compute the plan. Pure: everything comes from the arguments.
pub fn plan(
    snap: &HostSnapshot,
    extras: &HostExtras,
    profile: &Profile,
    opts: &PlanOptions,
) -> Result<Plan, PlanError> {
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
    let ifaces: Vec<&Interface> = if opts.ifaces.is_empty() {
        snap.interfaces
            .iter()
            .filter(|i| i.driver.is_some() && i.name != "lo")
            .collect()
    } else {
        let mut v = Vec::new();
        for n in &opts.ifaces {
            match snap.interface(n) {
                Some(i) => v.push(i),
                None => {
                    return Err(PlanError::UnknownIface {
                        name: n.clone(),
                        known: snap
                            .interfaces
                            .iter()
                            .map(|i| i.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
                }
            }
        }
        v
    };
    let scope = opts.netns.unwrap_or(extras.scope);
    let mut cx = Ctx {
        snap,
        extras,
        profile,
        opts,
        scope,
        bits: snap.cpu.mask_bits(),
        changes: Vec::new(),
        notes: Vec::new(),
        left_out: BTreeMap::new(),
    };
    if scope == NetnsScope::Child {
        cx.note(
            "scope",
            "child network namespace: global knobs (net.core buffers/backlog/budget/busy-poll, rps_sock_flow_entries, irqbalance, governor, PM QoS, module parameters) are left out; IRQ affinity only for the selected interfaces' IRQs".into(),
        );
    }
    if !snap.cpu.isolated.is_empty() {
        cx.note(
            "irq-affinity",
            format!(
                "isolated CPUs {} are left out of IRQ, RPS and XPS placement",
                snap.cpu.isolated.to_list()
            ),
        );
    }
    if !opts.exclude_cpus.is_empty() {
        cx.note(
            "irq-affinity",
            format!(
                "CPUs {} are reserved for the application (--exclude-cpus)",
                opts.exclude_cpus.to_list()
            ),
        );
    }
    if ifaces.is_empty() {
        cx.note(
            "scope",
            "no interface with a device driver: nothing per-interface to tune (use --iface)".into(),
        );
    }

    let reserved = opts.exclude_cpus.union(&snap.cpu.isolated);
    let cores = physical_cores(snap, &usable, &reserved);
    let mut node_used: BTreeMap<u32, usize> = BTreeMap::new();
    let mut any_affinity = false;

    for iface in &ifaces {
        plan_iface(&mut cx, iface, &cores, &mut node_used, &mut any_affinity);
    }

    // irqbalance: stated as a change before the affinity phase.
    if profile.enabled("irqbalance") {
        if let Some(p) = &snap.owners.irqbalance {
            if any_affinity {
                cx.push(
                    Phase::Irqbalance,
                    "irqbalance",
                    "irqbalance",
                    Target::Service {
                        name: "irqbalance".into(),
                    },
                    Some("running".into()),
                    "stopped".into(),
                    format!(
                        "irqbalance (pid {}) would overwrite the IRQ placement below",
                        p.pid
                    ),
                    true,
                );
            } else {
                cx.note(
                    "irqbalance",
                    format!(
                        "irqbalance (pid {}) is running; left alone, since this plan places no IRQ",
                        p.pid
                    ),
                );
            }
        }
    }
    if let Some(t) = &snap.owners.tuned {
        cx.note(
            "scope",
            format!(
                "tuned is active (profile {}): it also writes sysctls, governor and coalescing and may undo this plan",
                t.active_profile.as_deref().unwrap_or("unknown")
            ),
        );
    }

    plan_sysctls(&mut cx, &ifaces);
    plan_cpu(&mut cx);

    for ((rule_id, knob), targets) in std::mem::take(&mut cx.left_out) {
        let what = if targets.len() == 1 {
            targets[0].clone()
        } else {
            format!("{knob} on {} targets ({} ...)", targets.len(), targets[0])
        };
        cx.note(
            &rule_id,
            format!(
                "{what} left out: a global knob, and the snapshot is of a child network namespace"
            ),
        );
    }
    let mut changes = std::mem::take(&mut cx.changes);
    changes.sort_by_key(|c| c.phase);
    Ok(Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        profile: profile.name.clone(),
        profile_toml: profile.toml.clone(),
        fingerprint: snap.fingerprint(),
        hostname: snap.source.hostname.clone(),
        options: opts.clone(),
        scope,
        changes,
        notes: cx.notes,
    })
}

/// One representative CPU per physical core (the lowest usable SMT thread),
/// ascending. A core with a reserved (excluded or isolated) thread is left
/// out whole: an IRQ on the sibling would share the application's core.
fn physical_cores(snap: &HostSnapshot, usable: &CpuSet, reserved: &CpuSet) -> Vec<Core> {
    let mut seen: BTreeSet<u32> = BTreeSet::new();
    let mut out = Vec::new();
    for c in &snap.cpus {
        let id = c.id.0;
        if !usable.contains(id) || seen.contains(&id) {
            continue;
        }
        let mut sib = c.siblings.clone();
        sib.insert(id);
        for s in sib.iter() {
            seen.insert(s);
        }
        if !sib.intersection(reserved).is_empty() {
            continue;
        }
        let rep = sib.intersection(usable).first().unwrap_or(id);
        let node = c
            .node
            .map(|n| n.0)
            .or_else(|| {
                snap.nodes
                    .iter()
                    .find(|n| n.cpus.contains(id))
                    .map(|n| n.id.0)
            })
            .unwrap_or(0);
        out.push(Core { cpu: rep, node });
    }
    out.sort_by_key(|c| c.cpu);
    out
}

fn node_cores(cores: &[Core], node: u32) -> Vec<u32> {
    cores
        .iter()
        .filter(|c| c.node == node)
        .map(|c| c.cpu)
        .collect()
}

fn set_of(cpus: &[u32]) -> CpuSet {
    cpus.iter().copied().collect()
}

/// Queue IRQs of an interface grouped by queue index, ascending.
fn queue_irqs(snap: &HostSnapshot, iface: &Interface) -> Vec<(u32, Vec<u32>)> {
    let mut by_q: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for irq in &snap.irqs {
        let owned = irq.interface.as_deref() == Some(iface.name.as_str())
            || iface.irqs.contains(&irq.number);
        if !owned {
            continue;
        }
        if let Some(q) = irq.queue {
            if q.kind != QueueKind::Other {
                if let Some(ix) = q.index {
                    by_q.entry(ix).or_default().push(irq.number.0);
                }
            }
        }
    }
    by_q.into_iter().collect()
}

/// The NIC's node when known and present.
fn nic_node(snap: &HostSnapshot, iface: &Interface) -> Option<u32> {
    let n = iface.numa_node?;
    let n = u32::try_from(n).ok()?;
    snap.nodes.iter().any(|x| x.id.0 == n).then_some(n)
}

/// Nodes ordered by distance from `from` (then id).
fn nodes_by_distance(snap: &HostSnapshot, from: u32) -> Vec<u32> {
    let idx = snap.nodes.iter().position(|n| n.id.0 == from);
    let mut v: Vec<(u32, u32)> = snap
        .nodes
        .iter()
        .map(|n| {
            let d = idx
                .and_then(|i| n.distances.get(i).copied())
                .unwrap_or(if n.id.0 == from { 10 } else { 20 });
            (d, n.id.0)
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

fn plan_iface(
    cx: &mut Ctx<'_>,
    iface: &Interface,
    cores: &[Core],
    node_used: &mut BTreeMap<u32, usize>,
    any_affinity: &mut bool,
) {
    let snap = cx.snap;
    let profile = cx.profile;
    let name = iface.name.as_str();
    let qirqs = queue_irqs(snap, iface);
    let node = nic_node(snap, iface);
    let multi_node = snap.nodes.len() > 1;
    let scope_cores: Vec<u32> = match node {
        Some(n) => node_cores(cores, n),
        None => cores.iter().map(|c| c.cpu).collect(),
    };

    // Channels.
    if profile.enabled("channels") {
        if let Some(ch) = iface.ethtool.channels.value() {
            if let (Some(cur), Some(max)) = (ch.combined, ch.combined_max) {
                let want = max.min(scope_cores.len() as u32).max(1);
                if want > cur {
                    cx.push(
                        Phase::Channels,
                        "channels",
                        "combined",
                        Target::Ethtool {
                            iface: name.into(),
                            group: EthtoolGroup::Channels,
                            attr: "combined".into(),
                        },
                        Some(cur.to_string()),
                        want.to_string(),
                        format!(
                            "{name}: {cur} combined channels for {} usable physical cores{} (max {max}); IRQs are re-read and placed after this",
                            scope_cores.len(),
                            node.map(|n| format!(" of node {n}")).unwrap_or_default()
                        ),
                        false,
                    );
                }
            }
        }
    }

    // IRQ placement: queue index -> CPU.
    let mut placement: BTreeMap<u32, (u32, u32)> = BTreeMap::new(); // q -> (cpu, node)
    if !qirqs.is_empty() {
        let n = qirqs.len();
        let order: Vec<u32> = match node {
            Some(home) => {
                let home_n = node_cores(cores, home).len();
                if home_n < n {
                    cx.note(
                        "irq-affinity",
                        format!(
                            "{name}: node {home} has {home_n} usable physical cores for {n} queue IRQs; the rest spread to the nearest nodes"
                        ),
                    );
                }
                nodes_by_distance(snap, home)
            }
            None => {
                if multi_node {
                    cx.note(
                        "irq-affinity",
                        format!(
                            "{name}: numa_node is {} (unknown): queue IRQs are spread across nodes, one physical core each",
                            iface.numa_node.map_or("absent".to_string(), |v| v.to_string())
                        ),
                    );
                }
                snap.nodes.iter().map(|n| n.id.0).collect()
            }
        };
        let order = if order.is_empty() { vec![0] } else { order };
        let mut pools: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &nd in &order {
            pools.insert(nd, node_cores(cores, nd));
        }
        let total: usize = pools.values().map(|v| v.len()).sum();
        if total < n {
            cx.note(
                "irq-affinity",
                format!(
                    "{name}: {n} queue IRQs but {total} usable physical cores: some cores take more than one queue"
                ),
            );
        }
        let mut next_node = 0usize;
        for (qi, (q, _)) in qirqs.iter().enumerate() {
            let pick = |nd: u32, used: &BTreeMap<u32, usize>| -> Option<u32> {
                let pool = pools.get(&nd)?;
                if pool.is_empty() {
                    return None;
                }
                let u = used.get(&nd).copied().unwrap_or(0);
                if u < pool.len() || total < n {
                    Some(pool[u % pool.len()])
                } else {
                    None
                }
            };
            let mut chosen = None;
            if node.is_some() {
                for &nd in &order {
                    if let Some(c) = pick(nd, node_used) {
                        chosen = Some((c, nd));
                        break;
                    }
                }
            } else {
                for k in 0..order.len() {
                    let nd = order[(next_node + k) % order.len()];
                    if let Some(c) = pick(nd, node_used) {
                        chosen = Some((c, nd));
                        next_node = (next_node + k + 1) % order.len();
                        break;
                    }
                }
            }
            let (cpu, nd) = match chosen {
                Some(x) => x,
                None => {
                    // Every core already has a queue (other NICs): wrap.
                    let c = cores[qi % cores.len().max(1)];
                    (c.cpu, c.node)
                }
            };
            *node_used.entry(nd).or_insert(0) += 1;
            placement.insert(*q, (cpu, nd));
        }
    }

    if profile.enabled("irq-affinity") {
        for (q, irqs) in &qirqs {
            let Some(&(cpu, nd)) = placement.get(q) else {
                continue;
            };
            for &irq in irqs {
                let cur = snap
                    .irq(model::IrqNumber(irq))
                    .and_then(|i| i.smp_affinity.clone());
                let want = CpuSet::single(cpu);
                if cur.as_ref() == Some(&want) {
                    continue;
                }
                let irq_name = snap
                    .irq(model::IrqNumber(irq))
                    .map(|i| i.name.clone())
                    .unwrap_or_default();
                let why = match node {
                    Some(h) if h == nd => format!("physical core of node {nd}, the NIC's node"),
                    Some(h) => format!("node {h} is full; nearest node {nd}"),
                    None if multi_node => format!("node unknown: spread, node {nd}"),
                    None => "one node".to_string(),
                };
                cx.push(
                    Phase::IrqAffinity,
                    "irq-affinity",
                    "smp_affinity_list",
                    Target::IrqAffinity {
                        irq,
                        iface: name.into(),
                    },
                    cur.map(|c| c.to_list()),
                    cpu.to_string(),
                    format!("{irq_name} (queue {q}) -> CPU {cpu}: {why}, SMT siblings left out"),
                    false,
                );
                *any_affinity = true;
            }
        }
    }

    // RPS.
    let nrx = iface.rx_queues.len();
    let mut rps_on = false;
    if profile.enabled("rps") && nrx > 0 {
        let has_irqs = !qirqs.is_empty();
        let want_rps = !has_irqs || nrx < scope_cores.len();
        for rxq in &iface.rx_queues {
            let Some(cur) = rxq.rps_cpus.clone() else {
                continue;
            };
            let (mask, why) = if !want_rps {
                (
                    CpuSet::new(),
                    format!(
                        "{name}: {nrx} RX queues for {} usable physical cores: RSS already spreads, RPS off",
                        scope_cores.len()
                    ),
                )
            } else if let Some(&(irq_cpu, nd)) = placement.get(&rxq.index) {
                let mut m = set_of(&node_cores(cores, nd));
                let mut excl = "";
                if profile.settings.rps_exclude_irq_cpu && m.len() > 1 {
                    m.remove(irq_cpu);
                    excl = ", without the IRQ CPU";
                }
                (
                    m.clone(),
                    format!(
                        "{name} rx-{}: {nrx} RX queues < {} cores; physical cores of node {nd} (IRQ on CPU {irq_cpu}){excl}: {}",
                        rxq.index,
                        scope_cores.len(),
                        m.to_list()
                    ),
                )
            } else {
                let m = set_of(&scope_cores);
                let why = if has_irqs {
                    format!(
                        "{name} rx-{}: no IRQ for this queue; all usable physical cores",
                        rxq.index
                    )
                } else {
                    format!(
                        "{name} rx-{}: no queue IRQs (virtual device): receive work runs on the sending CPU; RPS spreads it over the usable physical cores",
                        rxq.index
                    )
                };
                (m, why)
            };
            if mask.is_empty() && cur.is_empty() {
                continue;
            }
            if !mask.is_empty() {
                rps_on = true;
            }
            if mask == cur {
                continue;
            }
            cx.push(
                Phase::Steering,
                "rps",
                "rps_cpus",
                Target::File {
                    path: format!("/sys/class/net/{name}/queues/rx-{}/rps_cpus", rxq.index),
                    format: ValueFormat::Mask,
                },
                Some(cur.to_mask_groups(cx.bits.div_ceil(32))),
                mask.to_mask_groups(cx.bits.div_ceil(32)),
                why,
                false,
            );
        }
    }

    // RFS.
    if profile.enabled("rfs") && rps_on {
        let entries = profile.settings.rfs_entries;
        if let Some(cur) = snap.sysctls.get("net.core.rps_sock_flow_entries").cloned() {
            let cur_n: u64 = cur.trim().parse().unwrap_or(0);
            if cur_n < u64::from(entries) {
                cx.push(
                    Phase::Steering,
                    "rfs",
                    "net.core.rps_sock_flow_entries",
                    Target::File {
                        path: "/proc/sys/net/core/rps_sock_flow_entries".into(),
                        format: ValueFormat::Text,
                    },
                    Some(cur),
                    entries.to_string(),
                    format!("RFS global flow table: {entries} entries"),
                    true,
                );
            }
        } else {
            cx.note(
                "rfs",
                "net.core.rps_sock_flow_entries: n/a (not in the snapshot)".into(),
            );
        }
        let per = prev_pow2(u64::from(entries) / nrx.max(1) as u64);
        for rxq in &iface.rx_queues {
            let Some(cur) = rxq.rps_flow_cnt else {
                continue;
            };
            if cur == per {
                continue;
            }
            cx.push(
                Phase::Steering,
                "rfs",
                "rps_flow_cnt",
                Target::File {
                    path: format!("/sys/class/net/{name}/queues/rx-{}/rps_flow_cnt", rxq.index),
                    format: ValueFormat::Text,
                },
                Some(cur.to_string()),
                per.to_string(),
                format!(
                    "{name} rx-{}: {entries} entries / {nrx} queues, rounded down to a power of two as the kernel keeps it",
                    rxq.index
                ),
                false,
            );
        }
    }

    // XPS.
    let ntx = iface.tx_queues.len();
    if profile.enabled("xps") && ntx > 1 {
        let virt_spread: Vec<CpuSet> = if qirqs.is_empty() {
            let mut v = vec![CpuSet::new(); ntx];
            if scope_cores.len() >= ntx {
                for (i, c) in scope_cores.iter().enumerate() {
                    v[i % ntx].insert(*c);
                }
            } else if !scope_cores.is_empty() {
                for (i, s) in v.iter_mut().enumerate() {
                    s.insert(scope_cores[i % scope_cores.len()]);
                }
            }
            v
        } else {
            Vec::new()
        };
        for (i, txq) in iface.tx_queues.iter().enumerate() {
            let Some(cur) = txq.xps_cpus.clone() else {
                continue;
            };
            let (want, why) = if qirqs.is_empty() {
                let w = virt_spread.get(i).cloned().unwrap_or_default();
                let why = format!(
                    "{name} tx-{}: no queue IRQs: each usable physical core transmits on one queue ({})",
                    txq.index,
                    w.to_list()
                );
                (w, why)
            } else if let Some(&(cpu, _)) = placement.get(&txq.index) {
                (
                    CpuSet::single(cpu),
                    format!(
                        "{name} tx-{}: mirrors the queue's IRQ on CPU {cpu}",
                        txq.index
                    ),
                )
            } else {
                continue;
            };
            if want.is_empty() || want == cur {
                continue;
            }
            cx.push(
                Phase::Steering,
                "xps",
                "xps_cpus",
                Target::File {
                    path: format!("/sys/class/net/{name}/queues/tx-{}/xps_cpus", txq.index),
                    format: ValueFormat::Mask,
                },
                Some(cur.to_mask_groups(cx.bits.div_ceil(32))),
                want.to_mask_groups(cx.bits.div_ceil(32)),
                why,
                false,
            );
        }
    }

    plan_coalesce(cx, iface);
    plan_rings(cx, iface);
    plan_module(cx, iface);
}

fn prev_pow2(v: u64) -> u64 {
    if v == 0 {
        0
    } else {
        1u64 << (63 - v.leading_zeros())
    }
}

fn plan_coalesce(cx: &mut Ctx<'_>, iface: &Interface) {
    let profile = cx.profile;
    if !profile.enabled("coalesce") || profile.settings.coalesce == CoalesceIntent::Keep {
        return;
    }
    let name = iface.name.as_str();
    let Some(co) = iface.ethtool.coalesce.value() else {
        if iface.driver.is_some() {
            cx.note(
                "coalesce",
                format!("{name}: coalescing not reported by the driver; left alone"),
            );
        }
        return;
    };
    let driver = iface.driver.as_deref().unwrap_or("");
    let itr_driver = DRIVERS_RX_USECS_1_DYNAMIC.contains(&driver);
    let us = profile.settings.coalesce_usecs;
    let mut want: Vec<(&str, u64, String)> = Vec::new();
    match profile.settings.coalesce {
        CoalesceIntent::LowLatency => {
            for a in ["adaptive-rx", "adaptive-tx"] {
                if co.contains_key(a) {
                    want.push((
                        a,
                        0,
                        format!("{name}: adaptive moderation off for steady low latency"),
                    ));
                }
            }
            for a in ["rx-usecs", "tx-usecs"] {
                let Some(&cur) = co.get(a) else {
                    continue;
                };
                // Already at or below the target: lower is lower latency,
                // except ixgbe(vf)'s 1, which means dynamic ITR.
                let dynamic = itr_driver && cur == 1;
                if cur <= u64::from(us) && !dynamic {
                    continue;
                }
                {
                    let why = if itr_driver {
                        format!("{name} ({driver}): fixed {us} µs interval; for {driver} rx-usecs 0 = no throttling and 1 = dynamic ITR")
                    } else {
                        format!("{name}: low fixed {us} µs interrupt delay")
                    };
                    want.push((a, u64::from(us), why));
                }
            }
        }
        CoalesceIntent::Adaptive => {
            let mut adaptive = false;
            for a in ["adaptive-rx", "adaptive-tx"] {
                if co.contains_key(a) {
                    adaptive = true;
                    want.push((
                        a,
                        1,
                        format!("{name}: adaptive moderation follows the load"),
                    ));
                }
            }
            if !adaptive && co.contains_key("rx-usecs") {
                if itr_driver {
                    want.push((
                        "rx-usecs",
                        1,
                        format!("{name} ({driver}): rx-usecs 1 selects dynamic ITR (the driver's adaptive mode; 0 = off, 2+ = fixed µs)"),
                    ));
                } else {
                    let cur = co.get("rx-usecs").copied().unwrap_or(0);
                    if cur < u64::from(us) {
                        want.push((
                            "rx-usecs",
                            u64::from(us),
                            format!(
                                "{name}: no adaptive mode; {us} µs batches interrupts under load"
                            ),
                        ));
                    }
                }
            }
        }
        CoalesceIntent::Keep => {}
    }
    for (attr, v, why) in want {
        let cur = co.get(attr).copied();
        if cur == Some(v) {
            continue;
        }
        cx.push(
            Phase::Coalescing,
            "coalesce",
            attr,
            Target::Ethtool {
                iface: name.into(),
                group: EthtoolGroup::Coalesce,
                attr: attr.into(),
            },
            cur.map(|c| c.to_string()),
            v.to_string(),
            why,
            false,
        );
    }
}

fn plan_rings(cx: &mut Ctx<'_>, iface: &Interface) {
    if !cx.profile.enabled("rings") {
        return;
    }
    let name = iface.name.as_str();
    let Some(r) = iface.ethtool.rings.value() else {
        return;
    };
    let s = &iface.stats;
    // Counters from sysfs: saturate rather than overflow.
    let rx_drops = s
        .rx_dropped
        .unwrap_or(0)
        .saturating_add(s.rx_missed_errors.unwrap_or(0))
        .saturating_add(s.rx_fifo_errors.unwrap_or(0));
    let tx_drops = s.tx_dropped.unwrap_or(0);
    let mut any = false;
    for (attr, cur, max, drops) in [
        ("rx", r.rx, r.rx_max, rx_drops),
        ("tx", r.tx, r.tx_max, tx_drops),
    ] {
        let (Some(cur), Some(max)) = (cur, max) else {
            continue;
        };
        if drops == 0 || cur >= max {
            continue;
        }
        any = true;
        cx.push(
            Phase::Coalescing,
            "rings",
            attr,
            Target::Ethtool {
                iface: name.into(),
                group: EthtoolGroup::Rings,
                attr: attr.into(),
            },
            Some(cur.to_string()),
            max.to_string(),
            format!("{name}: {drops} {attr} drops/misses so far; ring {cur} raised to its maximum {max}"),
            false,
        );
    }
    if !any && rx_drops == 0 && tx_drops == 0 {
        cx.note(
            "rings",
            format!("{name}: no drops in the snapshot; rings left at their size"),
        );
    }
}

fn plan_module(cx: &mut Ctx<'_>, iface: &Interface) {
    if !cx.profile.enabled("module-params") {
        return;
    }
    let name = iface.name.as_str();
    let driver = iface.driver.as_deref().unwrap_or("");
    match driver {
        "e1000" | "e1000e" => {
            let v = cx.profile.settings.interrupt_throttle_rate;
            if cx
                .changes
                .iter()
                .any(|c| matches!(&c.target, Target::ModuleParam { module, .. } if module == driver))
            {
                return;
            }
            cx.push(
                Phase::Modules,
                "module-params",
                "InterruptThrottleRate",
                Target::ModuleParam {
                    module: driver.into(),
                    param: "InterruptThrottleRate".into(),
                },
                None,
                v.to_string(),
                format!("{name} ({driver}): InterruptThrottleRate={v} (0 off, 1 dynamic, 3 conservative); a snippet to review, effective on module reload"),
                true,
            );
        }
        "ixgbe" | "ixgbevf" => cx.note(
            "module-params",
            format!("{name} ({driver}): the in-tree driver has no InterruptThrottleRate; coalescing goes through ethtool rx-usecs instead"),
        ),
        _ => {}
    }
}

fn plan_sysctls(cx: &mut Ctx<'_>, ifaces: &[&Interface]) {
    let profile = cx.profile;
    let st = profile.settings.clone();
    if profile.enabled("socket-buffers") {
        let speed = ifaces.iter().filter_map(|i| i.speed_mbps).max();
        let (bdp, how) = match (&cx.opts.bdp, speed) {
            (Some(b), _) => (
                Some(b.bytes()),
                format!("--bdp {} bit/s x {} µs", b.rate_bps, b.rtt_us),
            ),
            (None, Some(mbps)) => (
                Some(link_bdp_bytes(mbps, st.default_rtt_us)),
                format!("link {mbps} Mbit/s x default RTT {} µs", st.default_rtt_us),
            ),
            (None, None) => (None, String::new()),
        };
        match bdp {
            None => cx.note(
                "socket-buffers",
                "no link speed and no --bdp RATE,RTT: socket buffers left alone".into(),
            ),
            Some(bdp) => {
                // `as` saturates (and maps NaN to 0); the factor is 0.5..16 anyway.
                let want = (bdp as f64 * st.buffer_factor).ceil() as u64;
                let buf = want.min(SOCKET_BUFFER_MAX);
                let mut why = format!("BDP {bdp} B ({how}) x {} = {want} B", st.buffer_factor);
                if buf < want {
                    why.push_str(&format!(
                        ", clamped to {buf} B (INT_MAX, the most the kernel takes)"
                    ));
                }
                for key in ["net.core.rmem_max", "net.core.wmem_max"] {
                    if let Some(cur) = cx.snap.sysctls.get(key) {
                        let c: u64 = cur.trim().parse().unwrap_or(0);
                        if c >= buf {
                            continue;
                        }
                    }
                    cx.sysctl(
                        Phase::Sysctls,
                        "socket-buffers",
                        key,
                        buf.to_string(),
                        why.clone(),
                    );
                }
                for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
                    let Some(cur) = cx.snap.sysctls.get(key).cloned() else {
                        cx.note(
                            "socket-buffers",
                            format!("{key}: n/a (not in the snapshot)"),
                        );
                        continue;
                    };
                    let parts: Vec<u64> = cur
                        .split_whitespace()
                        .filter_map(|p| p.parse().ok())
                        .collect();
                    if parts.len() != 3 || parts[2] >= buf {
                        continue;
                    }
                    let after = format!("{} {} {}", parts[0], parts[1], buf);
                    cx.sysctl(
                        Phase::Sysctls,
                        "socket-buffers",
                        key,
                        after,
                        format!("{why}; min and default kept"),
                    );
                }
            }
        }
    }
    if profile.enabled("backlog") {
        match cx.extras.softnet {
            None => cx.note(
                "backlog",
                "softnet counters not read: backlog and budget left alone".into(),
            ),
            Some(sn) => {
                if sn.dropped > 0 {
                    let cur = sysctl_u64(cx, "net.core.netdev_max_backlog");
                    if cur.is_some_and(|c| c < u64::from(st.netdev_max_backlog)) {
                        cx.sysctl(
                            Phase::Sysctls,
                            "backlog",
                            "net.core.netdev_max_backlog",
                            st.netdev_max_backlog.to_string(),
                            format!("{} softnet drops (backlog full)", sn.dropped),
                        );
                    }
                }
                if sn.time_squeeze > 0 {
                    for (key, v) in [
                        ("net.core.netdev_budget", st.netdev_budget),
                        ("net.core.netdev_budget_usecs", st.netdev_budget_usecs),
                    ] {
                        if sysctl_u64(cx, key).is_some_and(|c| c < u64::from(v)) {
                            cx.sysctl(
                                Phase::Sysctls,
                                "backlog",
                                key,
                                v.to_string(),
                                format!("{} time_squeeze events (budget ran out)", sn.time_squeeze),
                            );
                        }
                    }
                }
                if sn.dropped == 0 && sn.time_squeeze == 0 {
                    cx.note(
                        "backlog",
                        "no softnet drops or time_squeeze: backlog and budget left alone".into(),
                    );
                }
            }
        }
    }
    if profile.enabled("busy-poll") {
        for key in ["net.core.busy_poll", "net.core.busy_read"] {
            cx.sysctl(
                Phase::Sysctls,
                "busy-poll",
                key,
                st.busy_poll_us.to_string(),
                format!(
                    "poll the device queue up to {} µs before sleeping",
                    st.busy_poll_us
                ),
            );
        }
    }
}

/// Largest socket buffer size the kernel takes: `net.core.rmem_max`/`wmem_max`
/// and each value of `net.ipv4.tcp_rmem`/`tcp_wmem` are C ints, so a larger
/// number is refused with EINVAL.
pub const SOCKET_BUFFER_MAX: u64 = i32::MAX as u64;

/// Bytes in flight at `mbps` Mbit/s over `rtt_us` µs, saturating instead of
/// overflowing (the speed comes from sysfs, the RTT from a profile).
fn link_bdp_bytes(mbps: u64, rtt_us: u64) -> u64 {
    // Mbit/s x µs = bits; / 8 = bytes. Exact in u128 for any u64 inputs.
    let bits = u128::from(mbps) * u128::from(rtt_us);
    u64::try_from(bits / 8).unwrap_or(u64::MAX)
}

fn sysctl_u64(cx: &Ctx<'_>, key: &str) -> Option<u64> {
    cx.snap.sysctls.get(key).and_then(|v| v.trim().parse().ok())
}

fn plan_cpu(cx: &mut Ctx<'_>) {
    let profile = cx.profile;
    let snap = cx.snap;
    if profile.enabled("governor") {
        let want = profile.settings.governor.clone();
        let with: Vec<_> = snap
            .cpus
            .iter()
            .filter(|c| c.online && c.governor.is_some())
            .collect();
        if with.is_empty() {
            cx.note(
                "governor",
                "no cpufreq scaling_governor (typical of VMs): governor skipped".into(),
            );
        }
        for c in with {
            let cur = c.governor.clone().unwrap_or_default();
            if cur == want {
                continue;
            }
            cx.push(
                Phase::Cpu,
                "governor",
                "scaling_governor",
                Target::File {
                    path: format!(
                        "/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor",
                        c.id.0
                    ),
                    format: ValueFormat::Text,
                },
                Some(cur),
                want.clone(),
                format!("cpu{}: full clock, no ramp-up delay", c.id.0),
                true,
            );
        }
    }
    if profile.enabled("pm-qos") {
        let v = profile.settings.pm_qos_resume_latency_us.to_string();
        if cx.extras.pm_qos.is_empty() {
            cx.note(
                "pm-qos",
                "no pm_qos_resume_latency_us files (no cpuidle driver, typical of VMs): PM QoS skipped".into(),
            );
        }
        let pm: Vec<(u32, String)> = cx
            .extras
            .pm_qos
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        for (cpu, cur) in pm {
            if !snap.cpu.online.contains(cpu) || cur == v {
                continue;
            }
            cx.push(
                Phase::Cpu,
                "pm-qos",
                "pm_qos_resume_latency_us",
                Target::File {
                    path: format!(
                        "/sys/devices/system/cpu/cpu{cpu}/power/pm_qos_resume_latency_us"
                    ),
                    format: ValueFormat::Text,
                },
                Some(cur),
                v.clone(),
                format!("cpu{cpu}: idle states slower than {v} µs to exit are avoided"),
                true,
            );
        }
    }
}
