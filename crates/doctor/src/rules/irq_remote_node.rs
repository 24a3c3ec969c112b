//! `irq-remote-node`: a queue IRQ served on a NUMA node other than the NIC's,
//! one finding per NIC. Judged on the present: the effective affinity (the
//! mask on kernels without it) and, with samples, where the window's
//! interrupts landed; since-boot counts only support.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use crate::snapshot::{At, Scope};
use model::findings::{irq_cpus, nodes_of, queue_label};
use tune::RuleId;

/// Queue IRQs on a remote node.
#[derive(Debug)]
pub struct IrqRemoteNode;

impl DoctorRule for IrqRemoteNode {
    fn id(&self) -> FindingId {
        FindingId::IrqRemoteNode
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "queue IRQ on a remote NUMA node"
    }
    fn rationale(&self) -> &'static str {
        "an interrupt served on a remote node reaches the NIC's descriptors and packet buffers across the interconnect, costing latency and memory bandwidth on every packet"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (NUMA topology and PCI bus: local_cpulist); Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/networking/scaling.rst"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::QueueIrq)
    }
    /// `inspect`'s look: each queue IRQ delivered to CPUs outside the NIC's
    /// node, by its affinity alone.
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::QueueIrq(cx, irq) = at else { return };
        let (Some(cpus), Some(node)) = (irq_cpus(irq), cx.node) else {
            return;
        };
        let remote = cpus.difference(&node.cpus);
        if remote.is_empty() || !cx.host.multi_node {
            return;
        }
        let name = cx.name();
        out.push(cx.finding(
            self,
            format!(
                "{name} {}: IRQ {} runs on CPU {} (node {}), but {name} is on node {}",
                queue_label(irq),
                irq.number.0,
                remote.to_list(),
                nodes_of(cx.host.s, &remote).to_list(),
                node.id.0
            ),
        ));
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let s = cx.snap();
        if s.nodes.iter().filter(|n| !n.cpus.is_empty()).count() < 2 {
            return Ok(());
        }
        for i in &s.interfaces {
            let Some(remote) = remote_irqs(cx, i) else {
                continue;
            };
            if remote.is_empty() {
                continue;
            }
            let name = i.name.as_str();
            let node = i
                .numa_node
                .map_or_else(|| "?".to_string(), |n| n.to_string());
            let free = free_local_cores(cx, name);
            let mut f = crate::finding::from_rule(
                self,
                name,
                format!(
                    "{name}: {} served off the NIC's node {node}",
                    super::plural(remote.len(), "queue IRQ")
                ),
            )
            .evidence(
                format!("{name} NUMA node"),
                node,
                format!("/sys/class/net/{name}/device/numa_node"),
            );
            for r in &remote {
                f = f.evidence("queue IRQ", &r.message, r.source);
            }
            match free {
                Some(free) if !free.is_empty() => {
                    f = f.evidence(
                        "local cores taking none of its queue IRQs",
                        free.to_list(),
                        "/sys/devices/system/node/nodeN/cpulist",
                    );
                }
                Some(_) => {
                    // Every local core already serves a queue: the remote
                    // ones are a spill of more queues than the node has cores.
                    f = f.severity(Severity::Info).evidence(
                        "local cores taking none of its queue IRQs",
                        "none (more queues than the node's cores)",
                        "/sys/devices/system/node/nodeN/cpulist",
                    );
                }
                None => {}
            }
            // A mask that allows remote CPUs, on a kernel without
            // effective_affinity, whose interrupts all landed locally so far:
            // the mask alone does not say the IRQ is served remotely.
            if cx.window.is_none() && remote.iter().all(|r| r.local_since_boot) {
                f = f.severity(Severity::Info).evidence(
                    "interrupts since boot (supporting only: they predate any change)",
                    "all on CPUs of the NIC's node",
                    "/proc/interrupts",
                );
            }
            let fix = cx.plan_fix(
                &[RuleId::IrqAffinity, RuleId::Irqbalance],
                Some(name),
                "Place each queue IRQ on a physical core of the NIC's node.",
                &format!("Write CPUs of /sys/class/net/{name}/device/local_cpulist to /proc/irq/N/smp_affinity_list, and keep irqbalance from undoing it."),
            );
            out.push(f.fix(fix));
        }
        Ok(())
    }
}

/// A queue IRQ judged to be served off its NIC's node.
struct Remote {
    message: String,
    /// The file the verdict comes from.
    source: &'static str,
    /// Mask-only verdict whose interrupts since boot all landed locally.
    local_since_boot: bool,
}

/// Queue IRQs of `i` served off its node, judged on the present: the
/// effective affinity when the kernel shows it, else the mask; with samples,
/// an IRQ whose interrupts in the window all landed on local CPUs is local.
/// `None` when the NIC's node is unknown.
fn remote_irqs(cx: &Cx<'_>, i: &model::snapshot::Interface) -> Option<Vec<Remote>> {
    let s = cx.snap();
    let nd = u32::try_from(i.numa_node?).ok()?;
    let node = s.nodes.iter().find(|n| n.id.0 == nd)?;
    let name = i.name.as_str();
    let mut out = Vec::new();
    for q in model::findings::queue_irqs(s, i) {
        let Some(cpus) = model::findings::irq_cpus(q) else {
            continue;
        };
        let remote = cpus.difference(&node.cpus);
        if remote.is_empty() {
            continue;
        }
        let effective = q.effective_affinity.as_ref().is_some_and(|e| !e.is_empty());
        let landed_local = |counts: &mut dyn Iterator<Item = (u32, u64)>| {
            let mut any = false;
            for (cpu, n) in counts {
                if n > 0 {
                    if !node.cpus.contains(cpu) {
                        return false;
                    }
                    any = true;
                }
            }
            any
        };
        if let Some(w) = &cx.window {
            if let Some(d) = w.total.irqs.iter().find(|d| d.irq == q.number) {
                if landed_local(&mut d.per_cpu.iter().map(|c| (c.cpu.0, c.count))) {
                    continue;
                }
            }
        }
        let local_since_boot = !effective
            && landed_local(
                &mut q
                    .per_cpu
                    .iter()
                    .enumerate()
                    .map(|(c, n)| (u32::try_from(c).unwrap_or(u32::MAX), *n)),
            );
        let (verb, source) = if effective {
            ("runs on", "/proc/irq/N/effective_affinity")
        } else {
            (
                "may run on (its mask; the kernel shows no effective_affinity)",
                "/proc/irq/N/smp_affinity_list",
            )
        };
        out.push(Remote {
            message: format!(
                "{name} {}: IRQ {} {verb} CPU {} (node {}), but {name} is on node {nd}",
                model::findings::queue_label(q),
                q.number.0,
                remote.to_list(),
                model::findings::nodes_of(s, &remote).to_list(),
            ),
            source,
            local_since_boot,
        });
    }
    Some(out)
}

/// Physical cores of `iface`'s node (usable ones, one CPU per core) on which
/// none of its locally served queue IRQs runs; `None` when the node is unknown.
fn free_local_cores(cx: &Cx<'_>, iface: &str) -> Option<model::CpuSet> {
    let s = cx.snap();
    let i = s.interface(iface)?;
    let node = u32::try_from(i.numa_node?).ok()?;
    let node = s.nodes.iter().find(|n| n.id.0 == node)?;
    let mut taken = model::CpuSet::new();
    for q in model::findings::queue_irqs(s, i) {
        // Only IRQs served wholly on the node take a local core: a mask
        // spanning both nodes (no effective_affinity) is not a placement.
        if let Some(c) = model::findings::irq_cpus(q).filter(|c| c.is_subset(&node.cpus)) {
            for cpu in c.iter() {
                taken.insert(cpu);
                if let Some(x) = s.cpu(cpu) {
                    taken = taken.union(&x.siblings);
                }
            }
        }
    }
    let mut free = model::CpuSet::new();
    let mut seen = model::CpuSet::new();
    for c in node.cpus.intersection(&cx.usable).iter() {
        if seen.contains(c) {
            continue;
        }
        seen.insert(c);
        if let Some(x) = s.cpu(c) {
            seen = seen.union(&x.siblings);
        }
        if !taken.contains(c) {
            free.insert(c);
        }
    }
    Some(free)
}
