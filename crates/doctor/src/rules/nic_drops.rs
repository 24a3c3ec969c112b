//! `nic-drops`: the NIC dropped received packets for lack of descriptors or
//! buffer (`rx_missed_errors`, `rx_fifo_errors`, the driver's
//! `rx_no_buffer_count` and kin): growing over the sampled window is a
//! warning, counted since boot only is info.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use model::snapshot::Interface;
use tune::RuleId;

/// Driver counters (`ethtool -S`) that count packets the NIC dropped for want
/// of a descriptor or buffer, by the names drivers give them.
pub const DRIVER_DROP_COUNTERS: &[&str] = &[
    "rx_no_buffer_count",  // e1000e, igb, ixgbe
    "rx_missed_errors",    // ixgbe, igb, i40e
    "rx_fifo_errors",      // many
    "rx_no_dma_resources", // ixgbe, i40e
    "rx_out_of_buffer",    // mlx5
    "rx_discards_phy",     // mlx5: the port had no buffer
    "rx_over_errors",      // ring overrun
];

/// One drop counter of one NIC: since boot, and over the window when sampled.
#[derive(Debug, Clone)]
pub(crate) struct DropCount {
    /// Counter name.
    pub name: String,
    /// Value since boot (driver load), if read.
    pub since_boot: Option<u64>,
    /// Increase over the sampled window, if sampled.
    pub window: Option<u64>,
    /// Where it came from.
    pub source: String,
}

/// The NIC drop counters of `iface` that are not zero (since boot or in the window).
pub(crate) fn nic_drops(cx: &Cx<'_>, iface: &Interface) -> Vec<DropCount> {
    let name = iface.name.as_str();
    let mut out: Vec<DropCount> = Vec::new();
    let st = &iface.stats;
    for (k, v) in [
        ("rx_missed_errors", st.rx_missed_errors),
        ("rx_fifo_errors", st.rx_fifo_errors),
    ] {
        if let Some(v) = v.filter(|v| *v > 0) {
            out.push(DropCount {
                name: k.to_string(),
                since_boot: Some(v),
                window: None,
                source: format!("/sys/class/net/{name}/statistics/{k}"),
            });
        }
    }
    let stats = iface.ethtool.stats.value();
    let moved = cx
        .window
        .as_ref()
        .and_then(|w| w.total.nic_counters.get(name));
    for k in DRIVER_DROP_COUNTERS {
        let boot = stats.and_then(|s| s.driver.get(*k)).copied();
        let win = moved.and_then(|m| m.get(*k)).copied();
        if boot.unwrap_or(0) == 0 && win.unwrap_or(0) == 0 {
            continue;
        }
        // The standard counter of the same name already counted: keep one, with both views.
        if let Some(d) = out.iter_mut().find(|d| d.name == *k) {
            d.window = win;
            continue;
        }
        out.push(DropCount {
            name: (*k).to_string(),
            since_boot: boot,
            window: win,
            source: format!("ethtool -S {name}"),
        });
    }
    out
}

/// NIC receive drops.
#[derive(Debug)]
pub struct NicDrops;

impl DoctorRule for NicDrops {
    fn id(&self) -> FindingId {
        FindingId::NicDrops
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "the NIC dropped received packets (no descriptor or buffer)"
    }
    fn rationale(&self) -> &'static str {
        "rx_missed, rx_no_buffer and FIFO errors mean packets were lost in the NIC before the kernel saw them: the RX ring was full because the CPU serving it fell behind or the ring is small"
    }
    fn source(&self) -> &'static str {
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html) (RX descriptors configurable up to 4096); Documentation/networking/statistics.rst"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        for iface in cx.snap().interfaces.iter().filter(|i| i.driver.is_some()) {
            let name = iface.name.as_str();
            let drops = nic_drops(cx, iface);
            if drops.is_empty() {
                continue;
            }
            let growing: u64 = drops.iter().filter_map(|d| d.window).sum();
            let title = if growing > 0 {
                let secs = cx.window.as_ref().map_or(1.0, |w| w.seconds);
                format!(
                    "{name}: the NIC dropped {growing} received packets in {secs:.0} s ({:.0}/s)",
                    growing as f64 / secs
                )
            } else {
                format!("{name}: the NIC dropped received packets since boot")
            };
            let mut f = crate::finding::from_rule(self, name, title);
            if growing > 0 {
                f = f.severity(Severity::Warning);
            }
            for d in &drops {
                if let Some(v) = d.since_boot {
                    f = f.evidence(
                        format!("{} since boot", d.name),
                        v.to_string(),
                        d.source.clone(),
                    );
                }
                if let Some(v) = d.window {
                    f = f.evidence(
                        format!("{} in the window", d.name),
                        v.to_string(),
                        d.source.clone(),
                    );
                }
            }
            let fix = cx.plan_fix(
                &[RuleId::Rings, RuleId::Channels, RuleId::IrqAffinity, RuleId::Rps],
                Some(name),
                "Give the NIC more room and more CPUs: the RX ring to its maximum, one queue per physical core of the NIC's node with each IRQ on its own core, RPS where queues are few.",
                &format!("Raise the ring with `ethtool -G {name} rx N` (N up to the maximum `ethtool -g {name}` shows) and spread the queue IRQs."),
            );
            out.push(f.fix(fix));
        }
        Ok(())
    }
}
