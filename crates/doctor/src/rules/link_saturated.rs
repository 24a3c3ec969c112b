//! `link-saturated`: an interface's traffic over the window near its link
//! speed (netdata's `1m_received_traffic_overflow` / `1m_sent_traffic_overflow`).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Share of the link speed from which it fires (90 %, netdata's threshold).
pub const NEAR_SPEED: f64 = 0.90;

/// Traffic near the link speed.
#[derive(Debug)]
pub struct LinkSaturated;

impl DoctorRule for LinkSaturated {
    fn id(&self) -> FindingId {
        FindingId::LinkSaturated
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "traffic near the link speed"
    }
    fn rationale(&self) -> &'static str {
        "a link carrying over 90 % of its speed has no headroom: queues build in the qdisc, the NIC and the switch, latency grows with them, and bursts are dropped; tuning the host cannot add bandwidth"
    }
    fn source(&self) -> &'static str {
        "netdata src/health/health.d/net.conf (1m_received_traffic_overflow, 1m_sent_traffic_overflow: > 90 % of the interface speed); Documentation/ABI/testing/sysfs-class-net (speed)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        let mut known = false;
        let mut nominal: Vec<&str> = Vec::new();
        for iface in &cx.snap().interfaces {
            let Some(speed) = iface.speed_mbps.filter(|s| *s > 0) else {
                continue;
            };
            if iface.speed_is_nominal() {
                nominal.push(&iface.name);
                continue;
            }
            known = true;
            let Some(d) = w.iface(&iface.name) else {
                continue;
            };
            let link = speed as f64 * 1e6;
            for (dir, bps) in [("inbound", d.rx_bps), ("outbound", d.tx_bps)] {
                if bps < link * NEAR_SPEED {
                    continue;
                }
                let name = iface.name.as_str();
                let pct = 100.0 * bps / link;
                let f = crate::finding::from_rule(
                    self,
                    name,
                    format!(
                        "{name}: {dir} {:.0} Mbit/s, {pct:.0} % of its {speed} Mbit/s link over {:.1} s",
                        bps / 1e6,
                        w.seconds
                    ),
                )
                .evidence(
                    format!("{name} {dir} rate"),
                    format!("{:.0} Mbit/s", bps / 1e6),
                    format!("/proc/net/dev {name} bytes"),
                )
                .evidence(
                    format!("{name} speed"),
                    format!("{speed} Mbit/s"),
                    format!("/sys/class/net/{name}/speed"),
                );
                out.push(f.fix(Fix {
                    text: format!(
                        "The link itself is the limit: more capacity (a faster port, or a bond/more NICs with the flows spread over them), or less traffic on it (move bulk transfers off peak, shape them with a rate). Keep latency-sensitive traffic usable while it is full with a fair queue (`tc qdisc replace dev {name} root fq_codel`, or fq with pacing) instead of a deep FIFO."
                    ),
                    ..Fix::default()
                }));
            }
        }
        if !known && !nominal.is_empty() {
            return Err(Skip::because(format!(
                "the speed of {} is nominal: a virtual device (veth, tun, bridge, bond: no `device` link) reports a figure, not the rate of a wire",
                nominal.join(", ")
            )));
        }
        if !known {
            return Err(Skip::because(
                "no interface reports its speed (/sys/class/net/IF/speed)",
            ));
        }
        Ok(())
    }
}
