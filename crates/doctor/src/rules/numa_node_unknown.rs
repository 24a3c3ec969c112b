use super::{DoctorRule, FindingId};
use crate::finding::{Finding, Severity};
use crate::snapshot::{At, Scope};

/// A NIC whose `device/numa_node` is -1.
#[derive(Debug)]
pub struct NumaNodeUnknown;

impl DoctorRule for NumaNodeUnknown {
    fn id(&self) -> FindingId {
        FindingId::NumaNodeUnknown
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "NIC with no known NUMA node"
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Interface)
    }
    fn rationale(&self) -> &'static str {
        "without the device's node, local CPUs for its IRQs and RPS cannot be chosen from the kernel's data"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (NIC locality, local_cpulist); Documentation/ABI/testing/sysfs-bus-pci (numa_node)"
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Interface(cx) = at else { return };
        if cx.iface.numa_node != Some(-1) {
            return;
        }
        let name = cx.name();
        let (sev, msg) = if cx.host.multi_node {
            (
                Severity::Warning,
                format!("{name}: device numa_node is -1 (unknown) on a {}-node host: which node is local cannot be told from the kernel", cx.host.s.nodes.len()),
            )
        } else {
            (
                Severity::Info,
                format!("{name}: device numa_node is -1 (unknown); harmless on a single-node host"),
            )
        };
        out.push(Finding::new(self.id(), sev, name, msg));
    }
}
