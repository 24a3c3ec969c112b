//! `irq-remote-node`: a queue IRQ served on a NUMA node other than the NIC's
//! (from the snapshot finding of the same name), one finding per NIC.

use super::{host_findings, DoctorId, DoctorRule, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use model::findings::FindingId;
use std::collections::BTreeMap;
use tune::RuleId;

/// Queue IRQs on a remote node.
#[derive(Debug)]
pub struct IrqRemoteNode;

impl DoctorRule for IrqRemoteNode {
    fn id(&self) -> DoctorId {
        DoctorId::IrqRemoteNode
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
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides) (NUMA topology and PCI bus: local_cpulist); Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\"; Documentation/networking/scaling.rst"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let mut by_nic: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for hf in host_findings(cx, FindingId::IrqRemoteNode) {
            by_nic
                .entry(hf.subject.as_str())
                .or_default()
                .push(hf.message.as_str());
        }
        for (name, msgs) in by_nic {
            let node = cx
                .snap()
                .interface(name)
                .and_then(|i| i.numa_node)
                .map_or_else(|| "?".to_string(), |n| n.to_string());
            let free = free_local_cores(cx, name);
            let mut f = Finding::new(
                self,
                name,
                format!(
                    "{name}: {} served off the NIC's node {node}",
                    super::plural(msgs.len(), "queue IRQ")
                ),
            )
            .evidence(
                format!("{name} NUMA node"),
                node,
                format!("/sys/class/net/{name}/device/numa_node"),
            );
            for m in msgs {
                f = f.evidence("queue IRQ", m, "/proc/irq/N/effective_affinity");
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

/// Physical cores of `iface`'s node (usable ones, one CPU per core) on which
/// none of its queue IRQs may run; `None` when the node is unknown.
fn free_local_cores(cx: &Cx<'_>, iface: &str) -> Option<model::CpuSet> {
    let s = cx.snap();
    let i = s.interface(iface)?;
    let node = u32::try_from(i.numa_node?).ok()?;
    let node = s.nodes.iter().find(|n| n.id.0 == node)?;
    let mut taken = model::CpuSet::new();
    for q in model::findings::queue_irqs(s, i) {
        if let Some(c) = model::findings::irq_cpus(q) {
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
