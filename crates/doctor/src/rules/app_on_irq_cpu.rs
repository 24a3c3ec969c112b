//! `app-on-irq-cpu`: one of the busiest network processes is pinned to CPUs
//! that take a NIC's queue IRQs or RPS work while other CPUs of the NIC's
//! node take none, or pinned to a node other than the NIC's.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{BenchFix, Finding, Fix, Severity, Workloads};
use crate::input::Cx;
use model::snapshot::{HostSnapshot, Interface, QueueKind};
use model::CpuSet;

/// A share of an IRQ's interrupts above which a CPU counts as serving it
/// (when its affinity does not name one CPU).
pub const IRQ_SHARE: f64 = 0.10;

/// The CPUs serving `iface`'s queue IRQs: the effective affinity, else the
/// affinity when it is not every online CPU, else the CPUs that took at
/// least [`IRQ_SHARE`] of its interrupts.
pub(crate) fn irq_cpus(s: &HostSnapshot, iface: &Interface) -> CpuSet {
    let mut out = CpuSet::new();
    for n in &iface.irqs {
        let Some(irq) = s.irq(*n) else { continue };
        if irq.queue.is_some_and(|q| q.kind == QueueKind::Other) || irq.queue.is_none() {
            continue;
        }
        if let Some(e) = irq.effective_affinity.as_ref().filter(|e| !e.is_empty()) {
            out = out.union(e);
            continue;
        }
        if let Some(a) = irq.smp_affinity.as_ref() {
            let a = a.intersection(&s.cpu.online);
            if !a.is_empty() && a != s.cpu.online {
                out = out.union(&a);
                continue;
            }
        }
        let total = irq.total();
        if total > 0 {
            for (c, v) in irq.per_cpu.iter().enumerate() {
                if *v as f64 >= total as f64 * IRQ_SHARE {
                    out.insert(c as u32);
                }
            }
        }
    }
    out
}

/// RPS CPUs of `iface`'s RX queues.
fn rps_cpus(iface: &Interface) -> CpuSet {
    iface
        .rx_queues
        .iter()
        .filter_map(|q| q.rps_cpus.as_ref())
        .fold(CpuSet::new(), |a, b| a.union(b))
}

/// A busy process on the CPUs of the NIC's interrupts.
#[derive(Debug)]
pub struct AppOnIrqCpu;

impl DoctorRule for AppOnIrqCpu {
    fn id(&self) -> FindingId {
        FindingId::AppOnIrqCpu
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "a busy network process shares CPUs with the NIC's interrupts or sits on a remote node"
    }
    fn rationale(&self) -> &'static str {
        "a process pinned to the CPU that runs the queue's IRQ and softirq competes with it for the same core, so neither reaches its rate; pinned to another node, every packet crosses the interconnect"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (NUMA locality: numactl, local_cpulist); Documentation/networking/scaling.rst (RFS: the application's CPU)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let procs = cx.input.facts.processes.get()?;
        let s = cx.snap();
        let multi = s.nodes.iter().filter(|n| !n.cpus.is_empty()).count() > 1;
        for iface in s
            .interfaces
            .iter()
            .filter(|i| i.driver.is_some() && !i.irqs.is_empty())
        {
            let name = iface.name.as_str();
            let busy = irq_cpus(s, iface).union(&rps_cpus(iface));
            let node = iface
                .numa_node
                .and_then(|n| u32::try_from(n).ok())
                .and_then(|n| s.nodes.iter().find(|x| x.id.0 == n));
            let local = match node {
                Some(n) if multi => n.cpus.intersection(&cx.usable),
                _ => cx.usable.clone(),
            };
            let free = local.difference(&busy);
            for p in procs.iter().filter(|p| p.cpu_ticks > 0) {
                let Some(allowed) = p.allowed.as_ref() else {
                    continue;
                };
                // Only a pinned process stays where it is; the scheduler moves the others.
                if allowed.is_empty() || s.cpu.online.is_subset(allowed) {
                    continue;
                }
                let on_irq = allowed.intersection(&busy);
                let remote = match node {
                    Some(n) if multi => allowed.intersection(&n.cpus).is_empty(),
                    _ => false,
                };
                if on_irq.is_empty() && !remote {
                    continue;
                }
                if !remote && free.is_empty() {
                    // Every local CPU serves the NIC: there is nowhere better to go.
                    continue;
                }
                let who = format!("{} (pid {})", p.comm, p.pid);
                let title = if remote {
                    format!(
                        "{who} is pinned to CPUs {} off {name}'s node",
                        allowed.to_list()
                    )
                } else {
                    format!(
                        "{who} is pinned to CPUs {} that take {name}'s interrupts",
                        allowed.to_list()
                    )
                };
                let mut f = crate::finding::from_rule(self, &p.comm, title)
                    .evidence(
                        format!("{who} allowed CPUs"),
                        allowed.to_list(),
                        format!("/proc/{}/status Cpus_allowed_list", p.pid),
                    )
                    .evidence(
                        format!("{who} CPU time, last CPU"),
                        format!(
                            "{} ticks, CPU {}",
                            p.cpu_ticks,
                            p.last_cpu.map_or("?".into(), |c| c.to_string())
                        ),
                        format!("/proc/{}/stat", p.pid),
                    )
                    .evidence(
                        format!("{who} inet sockets"),
                        p.sockets.to_string(),
                        format!("/proc/{}/fd, /proc/net/tcp", p.pid),
                    )
                    .evidence(
                        format!("CPUs serving {name}'s queue IRQs and RPS"),
                        if busy.is_empty() {
                            "none known".into()
                        } else {
                            busy.to_list()
                        },
                        "/proc/irq/*/smp_affinity, effective_affinity, /proc/interrupts, rps_cpus",
                    );
                if let Some(n) = node.filter(|_| multi) {
                    f = f.evidence(
                        format!("{name}'s NUMA node"),
                        format!("node {} (CPUs {})", n.id.0, n.cpus.to_list()),
                        format!("/sys/class/net/{name}/device/numa_node"),
                    );
                }
                let target = if free.is_empty() {
                    local.clone()
                } else {
                    free.clone()
                };
                out.push(f.fix(Fix {
                    text: format!(
                        "Move the process to CPUs of {name}'s node that take none of its interrupts ({}), or move the IRQs away from the process's CPUs with the plan.",
                        target.to_list()
                    ),
                    command: Some(cx.plan_command(Some(name))),
                    app: Some(format!(
                        "taskset -pc {} {} (or start it under `numactl --physcpubind {}`; for nettune bench: --cpus {})",
                        target.to_list(),
                        p.pid,
                        target.to_list(),
                        target.to_list()
                    )),
                    bench: Some(BenchFix::new(Workloads::All, &["--cpus", &target.to_list()])),
                    ..Fix::default()
                }));
            }
        }
        Ok(())
    }
}
