//! `iface-drop-ratio`: an interface's `/proc/net/dev` drop counter is a
//! large share of its packets over the window (netdata's
//! `inbound_packets_dropped_ratio` / `outbound_packets_dropped_ratio`).

use super::nic_drops::DRIVER_DROP_COUNTERS;
use super::{sat_sum, DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::{Cx, Window};
use model::sample::IfaceDelta;
use tune::RuleId;

/// Drops as a share of the packets counted, from which it fires (2 %, netdata's threshold).
pub const DROP_RATIO: f64 = 0.02;
/// The same for wireless interfaces (`wl*`), which drop more by nature (10 %).
pub const WIFI_DROP_RATIO: f64 = 0.10;
/// Received packets in the window below which inbound drops are not judged
/// (netdata: 10 000 in its 10-minute window).
pub const MIN_RX_PACKETS: u64 = 10_000;
/// Sent packets in the window below which outbound drops are not judged
/// (netdata: 1 000).
pub const MIN_TX_PACKETS: u64 = 1_000;

/// A large share of an interface's packets dropped.
#[derive(Debug)]
pub struct IfaceDropRatio;

impl DoctorRule for IfaceDropRatio {
    fn id(&self) -> FindingId {
        FindingId::IfaceDropRatio
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "an interface drops a large share of its packets"
    }
    fn rationale(&self) -> &'static str {
        "the interface's drop counter counts packets the kernel or the driver threw away: no RX buffer or descriptor, a full backlog, a full TX ring, or frames nothing on the host handles (an unknown protocol or VLAN); at 2 % of the traffic a TCP flow slows sharply and UDP loses data"
    }
    fn source(&self) -> &'static str {
        "netdata src/health/health.d/net.conf (inbound_packets_dropped_ratio, outbound_packets_dropped_ratio: drops >= 2 % of the packets); Documentation/networking/statistics.rst (rx_dropped, rx_missed_errors, tx_dropped; /proc/net/dev's drop column is rx_dropped + rx_missed_errors)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        if w.total.ifaces.is_empty() {
            return Err(Skip::because("/proc/net/dev: no interfaces in the samples"));
        }
        let backlog: u64 = sat_sum(
            w.total
                .cpus
                .iter()
                .filter_map(|c| c.softnet.map(|s| s.dropped)),
        );
        for i in &w.total.ifaces {
            let limit = if i.name.starts_with("wl") {
                WIFI_DROP_RATIO
            } else {
                DROP_RATIO
            };
            let rx = (i.rx_packets.0 >= MIN_RX_PACKETS)
                .then(|| i.rx_drop as f64 / i.rx_packets.0 as f64)
                .filter(|r| *r >= limit);
            let tx = (i.tx_packets.0 >= MIN_TX_PACKETS)
                .then(|| i.tx_drop as f64 / i.tx_packets.0 as f64)
                .filter(|r| *r >= limit);
            if rx.is_some() {
                out.push(self.finding(cx, w, i, true, backlog));
            }
            if tx.is_some() {
                out.push(self.finding(cx, w, i, false, backlog));
            }
        }
        Ok(())
    }
}

impl IfaceDropRatio {
    fn finding(
        &self,
        cx: &Cx<'_>,
        w: &Window,
        i: &IfaceDelta,
        inbound: bool,
        backlog: u64,
    ) -> Finding {
        let name = i.name.as_str();
        let (dir, drops, packets, col) = if inbound {
            ("received", i.rx_drop, i.rx_packets.0, "receive drop")
        } else {
            ("sent", i.tx_drop, i.tx_packets.0, "transmit drop")
        };
        let pct = 100.0 * drops as f64 / packets.max(1) as f64;
        let mut f = crate::finding::from_rule(
            self,
            name,
            format!(
                "{name}: {drops} packets dropped against {packets} {dir} ({pct:.1} %) in {:.1} s",
                w.seconds
            ),
        )
        .evidence(
            format!("{name} {col}s / packets {dir}"),
            format!("{drops} / {packets} ({pct:.2} %)"),
            format!("/proc/net/dev {name} {col}"),
        );
        let nic: u64 = w.total.nic_counters.get(name).map_or(0, |m| {
            sat_sum(
                m.iter()
                    .filter(|(k, _)| DRIVER_DROP_COUNTERS.contains(&k.as_str()))
                    .map(|(_, v)| *v),
            )
        });
        let fix = if inbound {
            f = f
                .evidence(
                    "softnet backlog drops, all CPUs",
                    backlog.to_string(),
                    "/proc/net/softnet_stat column 2",
                )
                .evidence(
                    format!("{name} driver drop counters"),
                    if w.total.nic_counters.contains_key(name) {
                        nic.to_string()
                    } else {
                        "not read".into()
                    },
                    format!("ethtool -S {name}"),
                );
            let cause = if nic > 0 {
                "The NIC ran out of RX descriptors (its driver counters grew): a larger RX ring and more queues or CPUs for its interrupts."
            } else if backlog > 0 {
                "The per-CPU backlog overflowed (softnet drops grew): a larger net.core.netdev_max_backlog, and RPS to spread the work."
            } else {
                "Neither the NIC nor the backlog dropped: the kernel found no handler for these frames (an unknown protocol or VLAN, frames for another host on a bridge or bond member); `ip -s -s link show` and a capture of the dropped traffic tell which."
            };
            cx.plan_fix(
                &[RuleId::Rings, RuleId::Backlog, RuleId::Rps],
                Some(name),
                cause,
                "",
            )
        } else {
            Fix {
                text: format!(
                    "Transmit drops are the driver's: its TX ring or the peer (veth, tun) could not take the packet. Enlarge the TX ring (`ethtool -G {name} tx N`) and check the qdisc (`tc -s qdisc show dev {name}`); senders that outrun the link need pacing (fq) instead of a deeper queue."
                ),
                ..Fix::default()
            }
        };
        f.fix(fix)
    }
}
