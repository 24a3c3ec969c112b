//! `irq-stacked`: several RX queue IRQs of one NIC served by one CPU, or on
//! SMT siblings of each other, while physical cores are free. Uses the
//! snapshot findings `irqs-on-one-cpu` and `irqs-on-smt-siblings`, and counts
//! RX queue IRQs per CPU itself for the partial case.

use super::{host_findings, DoctorId, DoctorRule, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use model::findings::{irq_cpus, queue_irqs, FindingId};
use model::snapshot::QueueKind;
use std::collections::BTreeMap;
use tune::RuleId;

/// Several queue IRQs of one NIC on one CPU or one core.
#[derive(Debug)]
pub struct IrqStacked;

impl DoctorRule for IrqStacked {
    fn id(&self) -> DoctorId {
        DoctorId::IrqStacked
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
        "y_uuki's ixgbevf test on EC2 (\"EC2でSR-IOVを使うときのNICドライバパラメータ検証\", blog.yuuk.io, 2014) (one CPU at 59 % softirq while others idle); Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\"; Documentation/networking/scaling.rst (RSS)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let s = cx.snap();
        let rx_irqs = |name: &str| {
            s.interface(name).map_or(0, |i| {
                queue_irqs(s, i)
                    .iter()
                    .filter(|q| {
                        q.queue
                            .is_some_and(|r| matches!(r.kind, QueueKind::Combined | QueueKind::Rx))
                    })
                    .count()
            })
        };
        let mut by_nic: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for code in [FindingId::IrqsOnOneCpu, FindingId::IrqsOnSmtSiblings] {
            // One RX queue and its TX queue on one CPU is not stacking.
            for hf in host_findings(cx, code).filter(|f| rx_irqs(&f.subject) >= 2) {
                by_nic
                    .entry(hf.subject.as_str())
                    .or_default()
                    .push(hf.message.clone());
            }
        }
        // Partial stacking: a CPU taking two or more RX queue IRQs of one NIC
        // while the NIC has no more RX queue IRQs than usable physical cores.
        let cores = cx.cores;
        for i in &s.interfaces {
            let rx: Vec<_> = queue_irqs(s, i)
                .into_iter()
                .filter(|q| {
                    q.queue
                        .is_some_and(|r| matches!(r.kind, QueueKind::Combined | QueueKind::Rx))
                })
                .collect();
            if rx.len() < 2 || rx.len() > cores || by_nic.contains_key(i.name.as_str()) {
                continue;
            }
            let mut per_cpu: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for q in &rx {
                if let Some(c) = irq_cpus(q).filter(|c| c.len() == 1).and_then(|c| c.first()) {
                    per_cpu.entry(c).or_default().push(q.number.0);
                }
            }
            for (cpu, irqs) in per_cpu.into_iter().filter(|(_, v)| v.len() > 1) {
                let list: Vec<String> = irqs.iter().map(u32::to_string).collect();
                by_nic.entry(i.name.as_str()).or_default().push(format!(
                    "{}: IRQs {} of {} RX queue IRQs on CPU {cpu}, with {cores} usable physical cores",
                    i.name,
                    list.join(", "),
                    rx.len()
                ));
            }
        }
        for (name, msgs) in by_nic {
            let mut f = Finding::new(
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
