//! `ring-small`: the RX ring is well below its maximum while the NIC drops
//! packets for lack of descriptors (the counters of `nic-drops`).

use super::nic_drops::nic_drops;
use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use tune::RuleId;

/// "Well below": the ring holds at most this fraction of its maximum.
pub const RING_SMALL_FRACTION: f64 = 0.5;

/// Small RX ring with NIC drops.
#[derive(Debug)]
pub struct RingSmall;

impl DoctorRule for RingSmall {
    fn id(&self) -> FindingId {
        FindingId::RingSmall
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "RX ring well below its maximum while the NIC drops packets"
    }
    fn rationale(&self) -> &'static str {
        "each RX descriptor holds one packet until the CPU takes it; a larger ring absorbs bursts and scheduling delays that otherwise overflow it as rx_missed or rx_no_buffer drops"
    }
    fn source(&self) -> &'static str {
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html) (RX descriptors configurable up to 4096); Documentation/networking/statistics.rst (rx_missed_errors, rx_fifo_errors: the drops a larger ring absorbs); Documentation/networking/ethtool-netlink.rst (RINGS_GET)"
    }
    fn advises(&self) -> (&'static [RuleId], &'static str) {
        (
            &[RuleId::Rings],
            "larger rings: packets wait longer in them",
        )
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let mut any_rings = false;
        for iface in cx.snap().interfaces.iter().filter(|i| i.driver.is_some()) {
            let Some(r) = iface.ethtool.rings.value() else {
                continue;
            };
            any_rings = true;
            let (Some(rx), Some(max)) = (r.rx, r.rx_max) else {
                continue;
            };
            if max == 0 || f64::from(rx) > f64::from(max) * RING_SMALL_FRACTION {
                continue;
            }
            let drops = nic_drops(cx, iface);
            if drops.is_empty() {
                continue;
            }
            let name = iface.name.as_str();
            let mut f = crate::finding::from_rule(
                self,
                name,
                format!("{name}: RX ring {rx} of a possible {max} while the NIC drops packets"),
            )
            .evidence(
                "RX ring",
                format!("{rx} (maximum {max})"),
                format!("ethtool -g {name}"),
            );
            for d in &drops {
                let v = match (d.window, d.since_boot) {
                    (Some(w), _) if w > 0 => format!("{w} in the window"),
                    (_, Some(b)) => format!("{b} since boot"),
                    _ => continue,
                };
                f = f.evidence(d.name.clone(), v, d.source.clone());
            }
            if drops.iter().all(|d| d.window.unwrap_or(0) == 0) {
                f = f.severity(Severity::Info);
            }
            let fix = cx.plan_fix(
                &[RuleId::Rings],
                Some(name),
                &format!("Raise the RX ring toward its maximum of {max}."),
                &format!("Run `ethtool -G {name} rx {max}` (the planner leaves rings alone for this profile)."),
            );
            out.push(f.fix(fix));
        }
        if !any_rings {
            return Err(Skip::because(
                "no NIC reported its ring sizes (ethtool -g; ethtool/IF.json under a fixture)",
            ));
        }
        Ok(())
    }
}
