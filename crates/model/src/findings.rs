//! Findings: odd things a [`HostSnapshot`] shows by itself (an IRQ on a
//! remote node, every queue on one CPU, RPS on SMT siblings, irqbalance
//! running...). Pure: no I/O, deterministic order.
//!
//! These are observations with evidence, not a plan; `tune` decides what to do.

use crate::cpuset::CpuSet;
use crate::snapshot::{HostSnapshot, Interface, Irq, QueueKind};
use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Likely costs performance or will undo tuning.
    Warn,
    /// Worth knowing; may be intended.
    Info,
}

/// One observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// Stable identifier of the rule (`irq-remote-node`).
    pub code: String,
    /// What it is about (`ens1f0`, `irqbalance`).
    pub subject: String,
    /// One sentence with the evidence.
    pub message: String,
}

fn finding(sev: Severity, code: &str, subject: &str, message: String) -> Finding {
    Finding {
        severity: sev,
        code: code.to_string(),
        subject: subject.to_string(),
        message,
    }
}

/// CPUs an IRQ is delivered to: `effective_affinity` when the kernel shows
/// it, else `smp_affinity`.
pub fn irq_cpus(irq: &Irq) -> Option<&CpuSet> {
    irq.effective_affinity
        .as_ref()
        .filter(|s| !s.is_empty())
        .or(irq.smp_affinity.as_ref())
}

/// Nodes holding any CPU of `cpus`.
pub fn nodes_of(s: &HostSnapshot, cpus: &CpuSet) -> CpuSet {
    let mut out = CpuSet::new();
    for n in &s.nodes {
        if !n.cpus.intersection(cpus).is_empty() {
            out.insert(n.id.0);
        }
    }
    out
}

/// Queue IRQs of an interface (IRQs whose name names a data queue), ascending.
pub fn queue_irqs<'a>(s: &'a HostSnapshot, i: &Interface) -> Vec<&'a Irq> {
    i.irqs
        .iter()
        .filter_map(|n| s.irq(*n))
        .filter(|q| q.queue.is_some_and(|r| r.kind != QueueKind::Other))
        .collect()
}

fn siblings_of(s: &HostSnapshot, cpu: u32) -> CpuSet {
    s.cpu(cpu)
        .map(|c| {
            let mut x = c.siblings.clone();
            x.remove(cpu);
            x
        })
        .unwrap_or_default()
}

fn queue_label(irq: &Irq) -> String {
    match irq.queue {
        Some(q) => match (q.kind, q.index) {
            (QueueKind::Combined, Some(i)) => format!("queue {i}"),
            (QueueKind::Rx, Some(i)) => format!("rx queue {i}"),
            (QueueKind::Tx, Some(i)) => format!("tx queue {i}"),
            _ => irq.name.clone(),
        },
        None => irq.name.clone(),
    }
}

/// Everything odd the snapshot shows, warnings first, then by subject order
/// of discovery (interfaces by name).
pub fn findings(s: &HostSnapshot) -> Vec<Finding> {
    use Severity::*;
    let mut out = Vec::new();
    let multi_node = s.nodes.iter().filter(|n| !n.cpus.is_empty()).count() > 1;
    let online = &s.cpu.online;

    if let Some(p) = &s.owners.irqbalance {
        out.push(finding(
            Warn,
            "irqbalance-running",
            "irqbalance",
            format!(
                "irqbalance is running (pid {}): it rewrites IRQ affinity and will undo manual placement",
                p.pid
            ),
        ));
    }
    if let Some(t) = &s.owners.tuned {
        let msg = match (&t.process, &t.active_profile) {
            (Some(p), Some(prof)) => format!("tuned is running (pid {}) with profile {prof}: it sets sysctls, governors and coalescing", p.pid),
            (Some(p), None) => format!("tuned is running (pid {}): it sets sysctls, governors and coalescing", p.pid),
            (None, Some(prof)) => format!("tuned is not running but its active profile is {prof}: settings from it may persist"),
            (None, None) => "tuned state is present".to_string(),
        };
        out.push(finding(Info, "tuned", "tuned", msg));
    }

    for i in &s.interfaces {
        if i.pci_address.is_none() && i.irqs.is_empty() {
            continue;
        }
        let name = i.name.as_str();
        let qirqs = queue_irqs(s, i);
        let nic_node = i.numa_node.filter(|n| *n >= 0);
        if i.numa_node == Some(-1) {
            if multi_node {
                out.push(finding(
                    Warn,
                    "numa-node-unknown",
                    name,
                    format!("{name}: device numa_node is -1 (unknown) on a {}-node host: which node is local cannot be told from the kernel", s.nodes.len()),
                ));
            } else {
                out.push(finding(
                    Info,
                    "numa-node-unknown",
                    name,
                    format!(
                        "{name}: device numa_node is -1 (unknown); harmless on a single-node host"
                    ),
                ));
            }
        }
        let node_cpus = nic_node.and_then(|n| s.nodes.iter().find(|x| x.id.0 == n as u32));
        for irq in &qirqs {
            let Some(cpus) = irq_cpus(irq) else { continue };
            if let Some(node) = node_cpus {
                let remote = cpus.difference(&node.cpus);
                if !remote.is_empty() && multi_node {
                    out.push(finding(
                        Warn,
                        "irq-remote-node",
                        name,
                        format!(
                            "{name} {}: IRQ {} runs on CPU {} (node {}), but {name} is on node {}",
                            queue_label(irq),
                            irq.number.0,
                            remote.to_list(),
                            nodes_of(s, &remote).to_list(),
                            node.id.0
                        ),
                    ));
                }
            } else if multi_node && irq.effective_affinity.is_none() {
                let nodes = nodes_of(s, cpus);
                if nodes.len() > 1 {
                    out.push(finding(
                        Info,
                        "irq-affinity-spans-nodes",
                        name,
                        format!(
                            "{name} {}: IRQ {} may run on CPUs {} across nodes {}; the kernel shows no effective_affinity to tell which",
                            queue_label(irq),
                            irq.number.0,
                            cpus.to_list(),
                            nodes.to_list()
                        ),
                    ));
                }
            }
            let bad = cpus.intersection(&s.cpu.isolated.union(&s.cpu.nohz_full));
            if !bad.is_empty() {
                out.push(finding(
                    Warn,
                    "irq-on-isolated-cpu",
                    name,
                    format!(
                        "{name} {}: IRQ {} may run on isolated/nohz_full CPU {}",
                        queue_label(irq),
                        irq.number.0,
                        bad.to_list()
                    ),
                ));
            }
        }
        // Every queue IRQ on one CPU, by affinity or by where the counts landed.
        if qirqs.len() >= 2 {
            let singles: Vec<u32> = qirqs
                .iter()
                .filter_map(|q| irq_cpus(q).filter(|c| c.len() == 1).and_then(|c| c.first()))
                .collect();
            let mut counted = CpuSet::new();
            let mut total = 0;
            for q in &qirqs {
                for (cpu, n) in q.per_cpu.iter().enumerate() {
                    if *n > 0 {
                        counted.insert(cpu as u32);
                        total += n;
                    }
                }
            }
            if singles.len() == qirqs.len() && singles.iter().all(|c| *c == singles[0]) {
                out.push(finding(
                    Warn,
                    "irqs-on-one-cpu",
                    name,
                    format!(
                        "{name}: all {} queue IRQs are affine to CPU {}",
                        qirqs.len(),
                        singles[0]
                    ),
                ));
            } else if counted.len() == 1 && online.len() > 1 {
                out.push(finding(
                    Warn,
                    "irqs-on-one-cpu",
                    name,
                    format!(
                        "{name}: all {total} interrupts of its {} queue IRQs so far were handled on CPU {}",
                        qirqs.len(),
                        counted.to_list()
                    ),
                ));
            }
            // Queue IRQs on SMT siblings of each other.
            let mut seen: Vec<(u32, &Irq)> = Vec::new();
            let mut pairs = Vec::new();
            for q in &qirqs {
                let Some(c) = irq_cpus(q).filter(|c| c.len() == 1).and_then(|c| c.first()) else {
                    continue;
                };
                let sib = siblings_of(s, c);
                if let Some((oc, oq)) = seen.iter().find(|(oc, _)| sib.contains(*oc)) {
                    pairs.push(format!(
                        "IRQ {} (CPU {c}) / IRQ {} (CPU {oc})",
                        q.number.0, oq.number.0
                    ));
                }
                seen.push((c, q));
            }
            if !pairs.is_empty() {
                out.push(finding(
                    Info,
                    "irqs-on-smt-siblings",
                    name,
                    format!(
                        "{name}: {} queue IRQ pairs sit on SMT siblings of one core, which share its execution units: {}",
                        pairs.len(),
                        pairs.join(", ")
                    ),
                ));
            }
        }
        // RPS relative to the IRQ CPU of the same queue.
        for q in &i.rx_queues {
            let Some(rps) = q.rps_cpus.as_ref().filter(|r| !r.is_empty()) else {
                continue;
            };
            let irq = qirqs.iter().find(|irq| {
                irq.queue.is_some_and(|r| {
                    r.index == Some(q.index)
                        && matches!(r.kind, QueueKind::Combined | QueueKind::Rx)
                })
            });
            let Some(irq) = irq else { continue };
            let Some(c) = irq_cpus(irq)
                .filter(|c| c.len() == 1)
                .and_then(|c| c.first())
            else {
                continue;
            };
            let sib = siblings_of(s, c).intersection(rps);
            if !sib.is_empty() {
                out.push(finding(
                    Warn,
                    "rps-on-irq-sibling",
                    name,
                    format!(
                        "{name} rx-{}: RPS CPUs {} include CPU {}, the SMT sibling of IRQ {}'s CPU {c}",
                        q.index,
                        rps.to_list(),
                        sib.to_list(),
                        irq.number.0
                    ),
                ));
            }
            if rps.contains(c) {
                out.push(finding(
                    Info,
                    "rps-includes-irq-cpu",
                    name,
                    format!(
                        "{name} rx-{}: RPS CPUs {} include CPU {c}, which already takes IRQ {}",
                        q.index,
                        rps.to_list(),
                        irq.number.0
                    ),
                ));
            }
        }
        // Fewer RX queues than CPUs and no RPS: receive work stays on few CPUs.
        let rxq = qirqs
            .iter()
            .filter(|q| q.queue.is_some_and(|r| r.kind != QueueKind::Tx))
            .count();
        let rps_any = i
            .rx_queues
            .iter()
            .any(|q| q.rps_cpus.as_ref().is_some_and(|r| !r.is_empty()));
        if rxq > 0 && rxq < online.len() && !rps_any {
            out.push(finding(
                Info,
                "few-queues-no-rps",
                name,
                format!(
                    "{name}: {rxq} RX queue IRQ(s) for {} online CPUs and RPS is off on every queue: at most {rxq} CPU(s) do receive processing",
                    online.len()
                ),
            ));
        }
        let flow_cnt: u64 = i.rx_queues.iter().filter_map(|q| q.rps_flow_cnt).sum();
        let entries: u64 = s
            .sysctls
            .get("net.core.rps_sock_flow_entries")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if entries > 0 && flow_cnt == 0 {
            out.push(finding(
                Warn,
                "rfs-half-configured",
                name,
                format!("{name}: net.core.rps_sock_flow_entries is {entries} but rps_flow_cnt is 0 on every queue, so RFS is off"),
            ));
        } else if entries == 0
            && flow_cnt > 0
            && s.sysctls.contains_key("net.core.rps_sock_flow_entries")
        {
            out.push(finding(
                Warn,
                "rfs-half-configured",
                name,
                format!("{name}: rps_flow_cnt is set but net.core.rps_sock_flow_entries is 0, so RFS is off"),
            ));
        }
        for (label, v) in [
            ("rx_missed_errors", i.stats.rx_missed_errors),
            ("rx_fifo_errors", i.stats.rx_fifo_errors),
        ] {
            if let Some(v) = v.filter(|v| *v > 0) {
                out.push(finding(
                    Info,
                    "nic-rx-drops",
                    name,
                    format!("{name}: {label} is {v} since boot: the NIC ran out of RX descriptors or buffer"),
                ));
            }
        }
    }
    out.sort_by_key(|f| f.severity);
    out
}
