//! `drops-by-reason`: the reasons the kernel gave for the packets it
//! dropped over the window (`skb:kfree_skb`), the dominant ones each named
//! with the finding it confirms and its fix, so a drop that no counter
//! shows is still named.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;
use model::drops::reasons::{self, Group};
use model::drops::DropInterval;

/// Share of the window's drops from which a reason dominates.
pub const DOMINANT_SHARE: f64 = 0.10;
/// Most reasons named.
pub const MAX_NAMED: usize = 5;
/// Rate from which a dominant reason a setting can move is a warning.
pub const WARN_PER_SEC: f64 = 1.0;

/// Drops by the kernel's own reason.
#[derive(Debug)]
pub struct DropsByReason;

/// The dominant reasons of `d`: at least [`DOMINANT_SHARE`] of its drops
/// (the largest always), at most [`MAX_NAMED`], largest first.
pub fn dominant(d: &DropInterval) -> Vec<&model::drops::Row> {
    let total = d.reasons.iter().map(|r| r.count).sum::<u64>().max(1) as f64;
    d.reasons
        .iter()
        .enumerate()
        .filter(|(i, r)| *i == 0 || r.count as f64 / total >= DOMINANT_SHARE)
        .map(|(_, r)| r)
        .take(MAX_NAMED)
        .collect()
}

impl DoctorRule for DropsByReason {
    fn id(&self) -> FindingId {
        FindingId::DropsByReason
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "Packets dropped, by the kernel's own reason"
    }
    fn rationale(&self) -> &'static str {
        "since Linux 5.17 the kernel says why it freed a packet it did not deliver (enum skb_drop_reason on the skb:kfree_skb tracepoint); the reasons that dominate the window name the cause even when no counter moved, and confirm or rule out the counter findings"
    }
    fn source(&self) -> &'static str {
        "include/net/dropreason-core.h (enum skb_drop_reason, Linux 6.4 and later; include/linux/skbuff.h 5.17 to 6.3) and the skb:kfree_skb tracepoint in include/trace/events/skb.h"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let d = match &cx.input.drops {
            Ok(d) => d,
            Err(why) => {
                let why = why.to_string();
                let why = why.strip_prefix("drops by reason: ").unwrap_or(&why);
                return Err(Skip::because(why));
            }
        };
        if d.total == 0 {
            return Ok(());
        }
        let top = dominant(d);
        let how = if d.exact {
            "every drop sampled"
        } else if d.reasons_exact {
            "counted by reason in the kernel"
        } else {
            "shares of sampled drops"
        };
        let names: Vec<String> = top
            .iter()
            .map(|r| format!("{} {:.0}/s", r.name, r.per_sec))
            .collect();
        let mut f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "{} {} in {:.1} s ({:.0}/s, the whole machine); dominant: {}",
                d.total,
                if d.total == 1 { "drop" } else { "drops" },
                d.seconds,
                d.per_sec,
                names.join(", ")
            ),
        );
        let mut warn = false;
        let mut fixes = Vec::new();
        for r in &top {
            let info = reasons::info(&r.name);
            warn |= info.group == Group::Tunable && r.per_sec >= WARN_PER_SEC;
            let confirms = match info.confirms {
                Some(id) => format!("; confirms {id}"),
                None => String::new(),
            };
            f = f.evidence(
                r.name.clone(),
                format!(
                    "{} ({:.0}/s, {how}{confirms}): {}",
                    r.count, r.per_sec, info.meaning
                ),
                "skb:kfree_skb reason (include/net/dropreason-core.h)",
            );
            fixes.push(format!("{}: {}", r.name, info.fix));
        }
        let locs: Vec<String> = d
            .locations
            .iter()
            .take(3)
            .map(|l| format!("{} {:.0}/s", l.name, l.per_sec))
            .collect();
        if !locs.is_empty() {
            f = f.evidence(
                "locations",
                locs.join(", "),
                "skb:kfree_skb location, named from /proc/kallsyms",
            );
        }
        if warn {
            f = f.severity(Severity::Warning);
        }
        out.push(f.fix(Fix {
            text: fixes.join(". "),
            ..Fix::default()
        }));
        Ok(())
    }
}
