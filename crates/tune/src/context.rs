//! The planning context the rules share: the inputs ([`Ctx`]), what one
//! interface looks like to them ([`Nic`]), and the changes and notes they
//! produce.

use crate::placement::{self, Allotment, Core, Demand, Placed};
use crate::profile::Profile;
use crate::rules::{self, RuleId};
use model::knobpath;
use model::plan::{
    Change, HostExtras, NetnsScope, Phase, PlanNote, PlanOptions, Target, ValueFormat,
};
use model::snapshot::{HostSnapshot, Interface, IrqMapping, QueueKind};
use std::collections::BTreeMap;

/// The planner's state while the rules run. Rules read the inputs and add
/// changes and notes through the methods; the order of both is the order in
/// which rules run (changes are sorted by phase at the end, stably).
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The host.
    pub snap: &'a HostSnapshot,
    /// Facts beyond the snapshot.
    pub extras: &'a HostExtras,
    /// The profile.
    pub profile: &'a Profile,
    /// The options.
    pub opts: &'a PlanOptions,
    /// Namespace scope (global knobs are left out in a child).
    pub scope: NetnsScope,
    /// Width of CPU masks, in bits.
    pub bits: u32,
    /// Physical cores usable for IRQs.
    pub cores: Vec<Core>,
    /// Where each interface's queues go, by name (`Ctx::place_all`).
    pub allotments: BTreeMap<String, Allotment>,
    /// Whether any IRQ affinity change was planned.
    pub any_affinity: bool,
    changes: Vec<Change>,
    notes: Vec<PlanNote>,
    /// Global knobs left out in a child namespace: (rule, knob) -> targets.
    /// Keyed by the rule's id string so notes come out in id order.
    left_out: BTreeMap<(&'static str, String), Vec<String>>,
}

impl<'a> Ctx<'a> {
    /// A context with no changes yet.
    pub(crate) fn new(
        snap: &'a HostSnapshot,
        extras: &'a HostExtras,
        profile: &'a Profile,
        opts: &'a PlanOptions,
        scope: NetnsScope,
        cores: Vec<Core>,
    ) -> Self {
        Ctx {
            snap,
            extras,
            profile,
            opts,
            scope,
            bits: snap.cpu.mask_bits(),
            cores,
            allotments: BTreeMap::new(),
            any_affinity: false,
            changes: Vec::new(),
            notes: Vec::new(),
            left_out: BTreeMap::new(),
        }
    }

    /// Place the queues of all `ifaces` at once ([`placement::allocate`]),
    /// weighing each NIC by [`nic_weight`]; [`Nic::new`] then reads its share.
    pub(crate) fn place_all(&mut self, ifaces: &[&Interface]) {
        let snap = self.snap;
        let irqs: Vec<u64> = ifaces.iter().map(|i| since_boot_irqs(snap, i)).collect();
        let any_counts = irqs.iter().any(|&n| n > 0);
        let demands: Vec<Demand> = ifaces
            .iter()
            .zip(&irqs)
            .map(|(i, &n)| Demand {
                queues: queue_irqs(snap, i).into_iter().map(|(q, _)| q).collect(),
                home: nic_node(snap, i),
                weight: nic_weight(i, any_counts.then_some(n)),
            })
            .collect();
        let out = placement::allocate(&demands, &self.cores, &snap.nodes);
        self.allotments = ifaces.iter().map(|i| i.name.clone()).zip(out).collect();
    }

    /// Changes planned so far.
    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    /// A note of rule `rule`.
    pub fn note(&mut self, rule: RuleId, message: String) {
        self.note_as(rule.as_str(), message);
    }

    /// A note about the plan's scope (namespace, interfaces, other tuners),
    /// shown as `[scope]`.
    pub fn scope_note(&mut self, message: String) {
        self.note_as("scope", message);
    }

    fn note_as(&mut self, rule: &str, message: String) {
        self.notes.push(PlanNote {
            rule: rule.into(),
            message,
        });
    }

    /// The IRQs whose affinity the plan sets so far.
    pub(crate) fn placed_irqs(&self) -> std::collections::BTreeSet<u32> {
        self.changes
            .iter()
            .filter_map(|c| match c.target {
                Target::IrqAffinity { irq, .. } => Some(irq),
                _ => None,
            })
            .collect()
    }

    /// A change of rule `rule`, with the rule's source. A `global` knob in a
    /// child namespace is left out and summarised in a note at the end.
    #[allow(clippy::too_many_arguments)] // one argument per field of a Change
    pub fn push(
        &mut self,
        phase: Phase,
        rule: RuleId,
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
                .entry((rule.as_str(), knob.to_string()))
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
            rule: model::plan::Origin::Rule(rule),
            reason,
            source: rules::find(rule).map_or("", |r| r.source()).into(),
        });
    }

    /// Set sysctl `key` unless the snapshot lacks it (a note) or has the value.
    pub fn sysctl(&mut self, phase: Phase, rule: RuleId, key: &str, after: String, reason: String) {
        let before = self.snap.sysctls.get(key).cloned();
        if before.is_none() {
            self.note(
                rule,
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
            rule,
            key,
            Target::File {
                path: knobpath::sysctl_path(key),
                format: ValueFormat::Text,
            },
            before,
            after,
            reason,
            global,
        );
    }

    /// Sysctl `key` of the snapshot as a number.
    pub fn sysctl_u64(&self, key: &str) -> Option<u64> {
        self.snap
            .sysctls
            .get(key)
            .and_then(|v| v.trim().parse().ok())
    }

    /// The changes (in the order planned) and the notes, with one note per
    /// knob left out in a child namespace.
    pub(crate) fn finish(mut self) -> (Vec<Change>, Vec<PlanNote>) {
        for ((rule, knob), targets) in std::mem::take(&mut self.left_out) {
            let what = if targets.len() == 1 {
                targets[0].clone()
            } else {
                format!("{knob} on {} targets ({} ...)", targets.len(), targets[0])
            };
            self.note_as(
                rule,
                format!(
                    "{what} left out: a global knob, and the snapshot is of a child network namespace"
                ),
            );
        }
        (self.changes, self.notes)
    }
}

/// Whether a sysctl is per network namespace (the rest of `net.core` is global).
pub fn is_netns_sysctl(key: &str) -> bool {
    if let Some(rest) = key.strip_prefix("net.core.") {
        return matches!(rest, "somaxconn" | "xfrm_acq_expires" | "xfrm_aevent_etime");
    }
    key.starts_with("net.ipv4.") || key.starts_with("net.ipv6.") || key.starts_with("net.unix.")
}

/// One interface as the per-interface rules see it: its queue IRQs, its node,
/// the cores in scope and where each queue's IRQs go.
#[derive(Debug)]
pub struct Nic<'a> {
    /// The interface.
    pub iface: &'a Interface,
    /// Its name.
    pub name: &'a str,
    /// Queue IRQs by queue index, ascending.
    pub qirqs: Vec<(u32, Vec<u32>)>,
    /// The NIC's node when known and present.
    pub node: Option<u32>,
    /// Whether the host has more than one node.
    pub multi_node: bool,
    /// Cores of the NIC's node (all cores when the node is unknown).
    pub scope_cores: Vec<u32>,
    /// Queue index -> where its IRQs go.
    pub placement: BTreeMap<u32, Placed>,
    /// Whether RPS is on for some queue after the `rps` rule (RFS needs it).
    pub rps_on: bool,
}

impl<'a> Nic<'a> {
    /// Read `iface` and place its queues (notes under `irq-affinity` say
    /// when a node is too small, the node unknown or cores are shared). The
    /// placement is made whether or not `irq-affinity` runs: RPS and XPS
    /// follow it.
    pub(crate) fn new(cx: &mut Ctx<'_>, iface: &'a Interface) -> Self {
        let snap = cx.snap;
        let name = iface.name.as_str();
        let qirqs = queue_irqs(snap, iface);
        let node = nic_node(snap, iface);
        let multi_node = snap.nodes.len() > 1;
        let scope_cores: Vec<u32> = match node {
            Some(n) => placement::node_cores(&cx.cores, n),
            None => cx.cores.iter().map(|c| c.cpu).collect(),
        };
        let mut nic = Nic {
            iface,
            name,
            qirqs,
            node,
            multi_node,
            scope_cores,
            placement: BTreeMap::new(),
            rps_on: false,
        };
        nic.place(cx);
        nic
    }

    fn place(&mut self, cx: &mut Ctx<'_>) {
        if self.qirqs.is_empty() {
            if self.iface.driver.is_some() {
                cx.note(
                    RuleId::IrqAffinity,
                    format!(
                        "{}: no queue IRQs to pin ({}); its IRQs are left where they are",
                        self.name,
                        no_irq_reason(self.iface)
                    ),
                );
            }
            return;
        }
        if let Some(m) = self.iface.irq_mapping.filter(|m| m.inferred()) {
            cx.note(
                RuleId::IrqAffinity,
                format!("{}: queue IRQs {}", self.name, m.describe()),
            );
        }
        let (name, n) = (self.name, self.qirqs.len());
        if cx.cores.is_empty() {
            cx.note(
                RuleId::IrqAffinity,
                format!("{name}: no usable physical core (each has an excluded or isolated SMT thread): queue IRQs left where they are"),
            );
            return;
        }
        let a = cx.allotments.get(name).cloned().unwrap_or_default();
        if self.node.is_none() && self.multi_node {
            cx.note(
                RuleId::IrqAffinity,
                format!(
                    "{name}: numa_node is {} (unknown): queue IRQs are spread across nodes, one physical core each",
                    self.iface.numa_node.map_or("absent".to_string(), |v| v.to_string())
                ),
            );
        }
        let pool = a.pool_cores;
        match self.node {
            Some(home) if a.off_home => cx.note(
                RuleId::IrqAffinity,
                format!(
                    "{name}: node {home} has no usable physical core: its queue IRQs go to the nearest node {}",
                    a.pool_nodes.first().copied().unwrap_or(home)
                ),
            ),
            Some(home) if pool < n => {
                let per = n.div_ceil(pool.max(1));
                cx.note(
                    RuleId::IrqAffinity,
                    format!(
                        "{name}: node {home} has {pool} usable physical cores for {n} queue IRQs: stacked on them, up to {per} per core, not sent to a remote node (a remote core costs every packet a trip across the interconnect); or lower the queues to the local cores: ethtool -L {name} combined {pool}"
                    ),
                );
            }
            _ if pool < n => cx.note(
                RuleId::IrqAffinity,
                format!(
                    "{name}: {n} queue IRQs but {pool} usable physical cores: some cores take more than one queue"
                ),
            ),
            _ => {}
        }
        if a.shared > 0 {
            let why = match self.iface.operstate.as_deref() {
                Some(s) if !link_up(Some(s)) => format!("its link is {s}"),
                _ => "it carries less traffic (interrupts since boot, link speed)".to_string(),
            };
            cx.note(
                RuleId::IrqAffinity,
                format!(
                    "{name}: shares {} of its cores with busier NICs placed first: {why}",
                    a.shared
                ),
            );
        }
        self.placement = a.placed;
    }
}

/// Whether `operstate` counts as a link that carries traffic (`up`, or
/// `unknown` as virtual and some drivers report; absent: assumed up).
fn link_up(operstate: Option<&str>) -> bool {
    !matches!(
        operstate,
        Some("down" | "lowerlayerdown" | "notpresent" | "dormant")
    )
}

/// Interrupts of `iface`'s queue IRQs since boot, all CPUs.
fn since_boot_irqs(snap: &HostSnapshot, iface: &Interface) -> u64 {
    queue_irqs(snap, iface)
        .iter()
        .flat_map(|(_, irqs)| irqs)
        .filter_map(|&n| snap.irq(model::IrqNumber(n)))
        .flat_map(|i| i.per_cpu.iter())
        .fold(0u64, |a, &b| a.saturating_add(b))
}

/// How much a NIC weighs in placement: 0 for a link that is down; else its
/// interrupts since boot (plus 1, so an idle link outweighs a down one) when
/// some NIC has counts (`irqs`), else its speed in Mbit/s (1000 unknown).
pub fn nic_weight(iface: &Interface, irqs: Option<u64>) -> u64 {
    if !link_up(iface.operstate.as_deref()) {
        return 0;
    }
    match irqs {
        Some(n) => n.saturating_add(1),
        None => iface.speed_mbps.unwrap_or(1000).max(1),
    }
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

/// Why a NIC with a driver has no queue IRQs, in words.
pub(crate) fn no_irq_reason(iface: &Interface) -> String {
    let driver = iface.driver.as_deref().unwrap_or("?");
    match (driver, iface.irq_mapping) {
        ("hv_netvsc", _) => {
            "hv_netvsc receives through VMBus channels, not per-queue IRQs".to_string()
        }
        (_, Some(IrqMapping::Ambiguous)) => {
            format!("{driver}: more unnamed vectors than queues, so none is taken for a queue")
        }
        _ => format!("{driver}: no IRQ of the device names or serves a queue"),
    }
}
