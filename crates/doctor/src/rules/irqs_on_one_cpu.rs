use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{irq_single_cpu, At, Scope};
use model::CpuSet;

/// Every queue IRQ of a multi-queue NIC on one CPU, by affinity or by
/// where the interrupt counts landed.
#[derive(Debug)]
pub struct IrqsOnOneCpu;

impl DoctorRule for IrqsOnOneCpu {
    fn id(&self) -> FindingId {
        FindingId::IrqsOnOneCpu
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "every queue IRQ of a NIC on one CPU"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Interface)
    }
    fn rationale(&self) -> &'static str {
        "several queues exist to spread receive work over cores; serving them all on one CPU makes it the bottleneck"
    }
    fn source(&self) -> &'static str {
        "y_uuki's ixgbevf test on EC2 (\"EC2でSR-IOVを使うときのNICドライバパラメータ検証\", blog.yuuk.io, 2014-03-20, http://blog.yuuk.io/entry/2014/03/20/085600) (one CPU at 59 % softirq while others idle); Documentation/networking/scaling.rst (RSS)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Interface(cx) = at else { return };
        let qirqs = &cx.qirqs;
        if qirqs.len() < 2 {
            return;
        }
        let name = cx.name();
        let singles: Vec<u32> = qirqs.iter().filter_map(|q| irq_single_cpu(q)).collect();
        let mut counted = CpuSet::new();
        let mut total: u64 = 0;
        for q in qirqs {
            for (cpu, n) in q.per_cpu.iter().enumerate() {
                if *n > 0 {
                    counted.insert(u32::try_from(cpu).unwrap_or(u32::MAX));
                    total = total.saturating_add(*n);
                }
            }
        }
        if singles.len() == qirqs.len() && singles.iter().all(|c| *c == singles[0]) {
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                name,
                format!(
                    "{name}: all {} queue IRQs are affine to CPU {}",
                    qirqs.len(),
                    singles[0]
                ),
            ));
        } else if counted.len() == 1 && cx.host.s.cpu.online.len() > 1 {
            out.push(Finding::new(
                self.id(),
                Severity::Warning,
                name,
                format!(
                    "{name}: all {total} interrupts of its {} queue IRQs so far were handled on CPU {}",
                    qirqs.len(),
                    counted.to_list()
                ),
            ));
        }
    }
}
