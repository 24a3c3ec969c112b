//! IRQs named by interface and queue. The kernel numbers IRQs when a driver
//! sets up its queues (at boot, on module load, on `ethtool -L`), so a number
//! in a plan or journal can come to mean another queue or another device.
//! [`IrqMap`] reads which queue of which interface each IRQ serves now, as
//! the snapshot does (IRQ names, `device/msi_irqs`), so that:
//!
//! - apply refuses an IRQ the host now gives to no queue of the plan's
//!   interface, and journals the queue the IRQ served;
//! - rollback and verify find the IRQ serving that queue now.

use crate::error::HostError;
use crate::ethtool::NoEthtool;
use crate::root::Root;
use model::plan::irq_affinity_path;
use model::snapshot::{QueueKind, QueueRef};
use std::collections::{BTreeMap, BTreeSet};

/// Which interface's queue each IRQ serves.
#[derive(Debug, Default)]
pub(crate) struct IrqMap {
    /// The queue named by each IRQ (data queues only).
    queues: BTreeMap<u32, QueueRef>,
    /// The IRQs of each interface.
    owned: BTreeMap<String, BTreeSet<u32>>,
}

impl IrqMap {
    /// Read the host at `root` (ethtool is not needed).
    pub(crate) fn read(root: &Root) -> IrqMap {
        let snap = crate::snapshot::read_snapshot_with(root, &NoEthtool);
        let mut m = IrqMap::default();
        for i in &snap.interfaces {
            m.owned
                .insert(i.name.clone(), i.irqs.iter().map(|n| n.0).collect());
        }
        for irq in &snap.irqs {
            if let Some(q) = irq.queue {
                if q.kind != QueueKind::Other && q.index.is_some() {
                    m.queues.insert(irq.number.0, q);
                }
            }
        }
        m
    }

    /// The queue `irq` serves for `iface`, for the journal. `Ok(None)` when
    /// nothing is known (the host names no IRQs for `iface`, or the IRQ's
    /// name tells no queue): the number is used as it is. An error when the
    /// host names IRQs for `iface` and `irq` is not one of them.
    pub(crate) fn queue_of(&self, iface: &str, irq: u32) -> Result<Option<QueueRef>, HostError> {
        let Some(owned) = self.owned.get(iface).filter(|o| !o.is_empty()) else {
            return Ok(None);
        };
        if !owned.contains(&irq) {
            return Err(HostError::NotIfaceIrq {
                path: irq_affinity_path(irq).into(),
                irq,
                iface: iface.to_string(),
                now: short_list(owned),
            });
        }
        Ok(self.queues.get(&irq).copied())
    }

    /// The IRQ serving `queue` of `iface` now: `irq` while it still does,
    /// else the one IRQ of `iface` that does; none is an error naming `irq`.
    pub(crate) fn resolve(&self, iface: &str, irq: u32, queue: QueueRef) -> Result<u32, HostError> {
        let serving = |n: &u32| self.queues.get(n) == Some(&queue);
        let owned = self.owned.get(iface);
        if owned.is_some_and(|o| o.contains(&irq)) && serving(&irq) {
            return Ok(irq);
        }
        let mut now = owned.into_iter().flatten().filter(|n| serving(n));
        match (now.next(), now.next()) {
            (Some(n), None) => Ok(*n),
            _ => Err(HostError::NotFound {
                path: irq_affinity_path(irq).into(),
            }),
        }
    }
}

/// `40, 41, 42`, at most 8 numbers then `...`.
fn short_list(irqs: &BTreeSet<u32>) -> String {
    let mut s: Vec<String> = irqs.iter().take(8).map(u32::to_string).collect();
    if irqs.len() > 8 {
        s.push("...".into());
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(index: u32) -> QueueRef {
        QueueRef {
            kind: QueueKind::Combined,
            index: Some(index),
        }
    }

    fn map() -> IrqMap {
        let mut m = IrqMap::default();
        m.owned.insert("eth0".into(), [40, 41, 42].into());
        m.owned.insert("eth1".into(), [50].into());
        m.owned.insert("lo".into(), BTreeSet::new());
        m.queues.insert(41, q(0));
        m.queues.insert(42, q(1));
        m.queues.insert(50, q(0));
        m
    }

    #[test]
    fn an_irq_is_named_by_its_interface_and_queue() {
        let m = map();
        assert_eq!(m.queue_of("eth0", 42).unwrap(), Some(q(1)));
        assert_eq!(m.queue_of("eth0", 40).unwrap(), None, "not a data queue");
        assert_eq!(m.queue_of("lo", 7).unwrap(), None, "nothing known");
        assert_eq!(m.queue_of("veth9", 7).unwrap(), None, "nothing known");
        let e = m.queue_of("eth0", 50).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/proc/irq/50/smp_affinity_list: IRQ 50 is not an IRQ of eth0 on this host now (its IRQs: 40, 41, 42); the plan is stale, make it again"
        );
    }

    #[test]
    fn a_renumbered_queue_is_found_by_its_queue() {
        let m = map();
        assert_eq!(m.resolve("eth0", 42, q(1)).unwrap(), 42);
        // Journaled as IRQ 30 for queue 0; queue 0 is IRQ 41 now.
        assert_eq!(m.resolve("eth0", 30, q(0)).unwrap(), 41);
        // IRQ 50 serves queue 0 of eth1, not of eth0.
        assert_eq!(m.resolve("eth0", 50, q(0)).unwrap(), 41);
        // Queue 7 is gone: the journaled IRQ is named as not found.
        let e = m.resolve("eth0", 43, q(7)).unwrap_err();
        assert!(e.is_not_found(), "{e}");
        assert!(e.to_string().starts_with("/proc/irq/43/"), "{e}");
    }
}
