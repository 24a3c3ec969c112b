//! `rfs`: steer each flow to the CPU that reads its socket (needs RPS on).

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use model::knobpath;
use model::plan::{Phase, Target, ValueFormat};

/// The global flow table size.
const SOCK_FLOW_ENTRIES: &str = "net.core.rps_sock_flow_entries";

/// Writes `rps_sock_flow_entries` and each RX queue's `rps_flow_cnt`.
#[derive(Debug)]
pub struct Rfs;

impl Rule for Rfs {
    fn id(&self) -> RuleId {
        RuleId::Rfs
    }

    fn rationale(&self) -> &'static str {
        "RFS steers each flow to the CPU where its socket is read; rps_flow_cnt = rps_sock_flow_entries / queues"
    }

    fn source(&self) -> &'static str {
        "Documentation/networking/scaling.rst (RFS)"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        if !nic.rps_on {
            return;
        }
        let name = nic.name;
        let entries = cx.profile.settings.rfs_entries;
        if let Some(cur) = cx.snap.sysctls.get(SOCK_FLOW_ENTRIES).cloned() {
            let cur_n: u64 = cur.trim().parse().unwrap_or(0);
            if cur_n < u64::from(entries) {
                cx.push(
                    Phase::Steering,
                    self.id(),
                    SOCK_FLOW_ENTRIES,
                    Target::File {
                        path: knobpath::sysctl_path(SOCK_FLOW_ENTRIES),
                        format: ValueFormat::Text,
                    },
                    Some(cur),
                    entries.to_string(),
                    format!("RFS global flow table: {entries} entries"),
                    true,
                );
            }
        } else {
            cx.note(
                self.id(),
                format!("{SOCK_FLOW_ENTRIES}: n/a (not in the snapshot)"),
            );
        }
        let nrx = nic.iface.rx_queues.len();
        let per = prev_pow2(u64::from(entries) / nrx.max(1) as u64);
        for rxq in &nic.iface.rx_queues {
            let Some(cur) = rxq.rps_flow_cnt else {
                continue;
            };
            if cur == per {
                continue;
            }
            cx.push(
                Phase::Steering,
                self.id(),
                "rps_flow_cnt",
                Target::File {
                    path: knobpath::rps_flow_cnt_path(name, rxq.index),
                    format: ValueFormat::Text,
                },
                Some(cur.to_string()),
                per.to_string(),
                format!(
                    "{name} rx-{}: {entries} entries / {nrx} queues, rounded down to a power of two as the kernel keeps it",
                    rxq.index
                ),
                false,
            );
        }
    }
}

/// The largest power of two not above `v` (0 for 0).
fn prev_pow2(v: u64) -> u64 {
    if v == 0 {
        0
    } else {
        1u64 << (63 - v.leading_zeros())
    }
}
