//! Drift: the knobs a generation wrote, compared with the host now.

use super::knob::Knobs;
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
    let mut out: Vec<DriftItem> = Vec::new();
    for r in &g.records {
        let Record::Before {
            seq,
            target,
            knob,
            intended,
            ..
        } = r
        else {
            continue;
        };
        let desc = target.describe();
        out.retain(|d| d.target != desc);
        let current = knobs.read_value(target).ok().flatten();
        let status = if unchangeable.contains(seq) {
            DriftStatus::Unchangeable
        } else {
            match &current {
                None => DriftStatus::NotAvailable,
                Some(_) if knobs.check(target, intended).is_ok() => DriftStatus::Ok,
                Some(_) => DriftStatus::Drift,
            }
        };
        out.push(DriftItem {
            knob: knob.clone(),
            target: desc,
            intended: intended.clone(),
            current,
            status,
        });
    }
    out
}
