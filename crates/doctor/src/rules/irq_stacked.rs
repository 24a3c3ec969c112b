//! `irq-stacked`: several RX queue IRQs of one NIC served by one CPU, or on
//! SMT siblings of each other. Judged on the present: the current affinity
//! (effective, else the mask) and, with samples, where the window's
//! interrupts landed; since-boot counts predate any change and are not used.
//! Stacking is info when the NIC has more RX queue IRQs than physical cores
//! of its node (unavoidable).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use model::findings::{irq_next_cpus, queue_irqs, siblings_of};
use model::snapshot::{HostSnapshot, Irq, QueueKind};
use std::collections::BTreeMap;
use tune::RuleId;

/// Several queue IRQs of one NIC on one CPU or one core.
#[derive(Debug)]
pub struct IrqStacked;

impl DoctorRule for IrqStacked {
    fn id(&self) -> FindingId {
        FindingId::IrqStacked
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "queue IRQs stacked on one CPU or core"
    }
    fn rationale(&self) -> &'static str {
        "several queues exist to spread receive work over cores; served by one CPU (or two SMT siblings sharing a core's execution units) they get one core's worth of work and that core becomes the bottleneck"
    }
    fn source(&self) -> &'static str {
        "y_uuki's ixgbevf test on EC2 (\"EC2でSR-IOVを使うときのNICドライバパラメータ検証\", blog.yuuk.io, 2014-03-20, http://blog.yuuk.io/entry/2014/03/20/085600) (one CPU at 59 % softirq while others idle); Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/networking/scaling.rst (RSS)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let s = cx.snap();
        for i in &s.interfaces {
            let rx: Vec<&Irq> = queue_irqs(s, i)
                .into_iter()
                .filter(|q| {
                    q.queue
                        .is_some_and(|r| matches!(r.kind, QueueKind::Combined | QueueKind::Rx))
                })
                .collect();
            // One RX queue and its TX queue on one CPU is not stacking.
            if rx.len() < 2 {
                continue;
            }
            let name = i.name.as_str();
            let mut msgs = affinity_stacking(s, name, &rx, cx.cores);
            if msgs.is_empty() {
                if let Some(m) = window_stacking(cx, name, &rx) {
                    msgs.push(m);
                }
            }
            if msgs.is_empty() {
                continue;
            }
            let mut f = crate::finding::from_rule(
                self,
                name,
                format!("{name}: queue IRQs share a CPU or a core"),
            );
            for m in msgs {
                f = f.evidence(
                    "placement",
                    m,
                    "/proc/irq/N/effective_affinity, /sys/devices/system/cpu/cpuN/topology",
                );
            }
            // More RX queue IRQs than physical cores of the NIC's node: some
            // core must take two (a remote one would cost more).
            let local = cx.iface_cores(i);
            if rx.len() > local {
                f = f.severity(Severity::Info).evidence(
                    "unavoidable",
                    format!(
                        "{} RX queue IRQs for {local} usable physical cores of the NIC's node; or lower the queues: ethtool -L {name} combined {local}",
                        rx.len()
                    ),
                    "/sys/devices/system/node/nodeN/cpulist",
                );
            }
            let fix = cx.plan_fix(
                &[RuleId::IrqAffinity, RuleId::Irqbalance],
                Some(name),
                "Give each RX queue IRQ its own physical core of the NIC's node.",
                "Write one physical core per queue IRQ to /proc/irq/N/smp_affinity_list.",
            );
            out.push(f.fix(fix));
        }
        Ok(())
    }
}

/// Stacking by the current affinity (effective, else the mask; the mask
/// while a move is pending, [`irq_next_cpus`]) of the RX queue IRQs `rx`: all on one CPU, several on one CPU, or on SMT siblings
/// of one core.
fn affinity_stacking(s: &HostSnapshot, name: &str, rx: &[&Irq], cores: usize) -> Vec<String> {
    let singles: Vec<(u32, &Irq)> = rx
        .iter()
        .filter_map(|q| {
            irq_next_cpus(q)
                .filter(|c| c.len() == 1)
                .and_then(|c| c.first())
                .map(|c| (c, *q))
        })
        .collect();
    let mut out = Vec::new();
    if singles.len() == rx.len() && singles.iter().all(|(c, _)| *c == singles[0].0) {
        out.push(format!(
            "{name}: all {} queue IRQs are affine to CPU {}",
            rx.len(),
            singles[0].0
        ));
        return out;
    }
    let mut per_cpu: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (c, q) in &singles {
        per_cpu.entry(*c).or_default().push(q.number.0);
    }
    for (cpu, irqs) in per_cpu.iter().filter(|(_, v)| v.len() > 1) {
        let list: Vec<String> = irqs.iter().map(u32::to_string).collect();
        out.push(format!(
            "{name}: IRQs {} of {} RX queue IRQs on CPU {cpu}, with {cores} usable physical cores",
            list.join(", "),
            rx.len()
        ));
    }
    let mut pairs = Vec::new();
    let cpus: Vec<u32> = per_cpu.keys().copied().collect();
    for (k, &c) in cpus.iter().enumerate() {
        let sib = siblings_of(s, c);
        if let Some(&oc) = cpus[..k].iter().find(|oc| sib.contains(**oc)) {
            pairs.push(format!(
                "IRQ {} (CPU {c}) / IRQ {} (CPU {oc})",
                per_cpu[&c][0], per_cpu[&oc][0]
            ));
        }
    }
    if !pairs.is_empty() {
        out.push(format!(
            "{name}: {} queue IRQ pairs sit on SMT siblings of one core, which share its execution units: {}",
            pairs.len(),
            pairs.join(", ")
        ));
    }
    out
}

/// With samples: the window's interrupts of two or more RX queue IRQs all
/// handled on one CPU (a kernel without effective_affinity delivering a
/// wide mask to one CPU).
fn window_stacking(cx: &Cx<'_>, name: &str, rx: &[&Irq]) -> Option<String> {
    let w = cx.window.as_ref()?;
    let mut cpus = model::CpuSet::new();
    let (mut total, mut active) = (0u64, 0usize);
    for q in rx {
        let Some(d) = w.total.irqs.iter().find(|d| d.irq == q.number) else {
            continue;
        };
        if d.count > 0 {
            active += 1;
        }
        for c in d.per_cpu.iter().filter(|c| c.count > 0) {
            cpus.insert(c.cpu.0);
            total = total.saturating_add(c.count);
        }
    }
    (active >= 2 && cpus.len() == 1).then(|| {
        format!(
            "{name}: all {total} interrupts of its {active} RX queue IRQs in the {:.1} s window were handled on CPU {}",
            w.seconds,
            cpus.to_list()
        )
    })
}
