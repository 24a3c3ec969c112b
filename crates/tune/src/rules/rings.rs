//! `rings`: raise rings to their maximum when the NIC dropped packets.

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use model::plan::{EthtoolGroup, Phase, Target};

/// Sets ring sizes (`ethtool -G`).
#[derive(Debug)]
pub struct Rings;

impl Rule for Rings {
    fn id(&self) -> RuleId {
        RuleId::Rings
    }

    fn rationale(&self) -> &'static str {
        "drops at the NIC mean the RX ring overflowed between polls; larger rings absorb bursts"
    }

    fn source(&self) -> &'static str {
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html) (RX descriptors up to 4096); ethtool(8) -G"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let name = nic.name;
        let Some(r) = nic.iface.ethtool.rings.value() else {
            return;
        };
        let s = &nic.iface.stats;
        // Counters from sysfs or a fixture: saturate rather than overflow.
        let rx_drops = s
            .rx_dropped
            .unwrap_or(0)
            .saturating_add(s.rx_missed_errors.unwrap_or(0))
            .saturating_add(s.rx_fifo_errors.unwrap_or(0));
        let tx_drops = s.tx_dropped.unwrap_or(0);
        let mut any = false;
        for (attr, cur, max, drops) in [
            ("rx", r.rx, r.rx_max, rx_drops),
            ("tx", r.tx, r.tx_max, tx_drops),
        ] {
            let (Some(cur), Some(max)) = (cur, max) else {
                continue;
            };
            if drops == 0 || cur >= max {
                continue;
            }
            any = true;
            cx.push(
                Phase::Coalescing,
                self.id(),
                attr,
                Target::Ethtool {
                    iface: name.into(),
                    group: EthtoolGroup::Rings,
                    attr: attr.into(),
                },
                Some(cur.to_string()),
                max.to_string(),
                format!("{name}: {drops} {attr} drops/misses so far; ring {cur} raised to its maximum {max}"),
                false,
            );
        }
        if !any && rx_drops == 0 && tx_drops == 0 {
            cx.note(
                self.id(),
                format!("{name}: no drops in the snapshot; rings left at their size"),
            );
        }
    }
}
