//! Drift: the knobs a generation wrote, compared with the host now.

use super::knob::Knobs;
use super::rollback::IrqResolver;
use crate::journal::{Generation, Record};
use serde::Serialize;

/// Drift status of one knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftStatus {
    /// Current equals intended.
    Ok,
    /// Current differs.
    Drift,
    /// The knob does not exist on this host now.
    NotAvailable,
    /// The kernel refused it at apply time.
    Unchangeable,
}

/// One knob in a verify report.
#[derive(Debug, Clone, Serialize)]
pub struct DriftItem {
    /// Knob name.
    pub knob: String,
    /// Target description.
    pub target: String,
    /// Intended value.
    pub intended: String,
    /// Current value.
    pub current: Option<String>,
    /// Status.
    pub status: DriftStatus,
}

/// Compare the knobs a generation wrote with the host now (the last write
/// of each target counts).
pub fn verify(knobs: &Knobs, g: &Generation) -> Vec<DriftItem> {
    let unchangeable: Vec<u32> = g
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Unchangeable { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect();
    // By the journaled target, so a later write of the same target replaces
    // an earlier one.
    let mut out: Vec<(String, DriftItem)> = Vec::new();
    let mut irqs = IrqResolver::new(knobs);
    for r in &g.records {
        let Record::Before {
            seq,
            target: journaled,
            knob,
            intended,
            queue,
            ..
        } = r
        else {
            continue;
        };
        let key = journaled.describe();
        out.retain(|(k, _)| *k != key);
        // An IRQ renumbered since is the one serving its queue now; with no
        // IRQ serving it, the knob is gone.
        let (target, current) = match irqs.resolve(journaled, *queue) {
            Ok(t) => {
                let cur = knobs.read_value(&t).ok().flatten();
                (t, cur)
            }
            Err(_) => (journaled.clone(), None),
        };
        let status = if unchangeable.contains(seq) {
            DriftStatus::Unchangeable
        } else {
            match &current {
                None => DriftStatus::NotAvailable,
                Some(_) if knobs.check(&target, intended).is_ok() => DriftStatus::Ok,
                Some(_) => DriftStatus::Drift,
            }
        };
        let item = DriftItem {
            knob: knob.clone(),
            target: target.describe(),
            intended: intended.clone(),
            current,
            status,
        };
        out.push((key, item));
    }
    out.into_iter().map(|(_, d)| d).collect()
}
