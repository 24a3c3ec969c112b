//! `cloud-allowance`: the ENA driver's allowance counters rise: the
//! instance's packet-rate, bandwidth, conntrack or link-local limit, not the
//! host's tuning, is the ceiling. The finding shows which limit binds: the
//! observed pps × packet size × 8 against the bandwidth allowance, the pps
//! against the pps allowance; the larger share binds.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// ENA's allowance counters (`ethtool -S`), with what each limit is.
pub const ALLOWANCE_COUNTERS: &[(&str, &str)] = &[
    ("pps_allowance_exceeded", "packets per second"),
    ("bw_in_allowance_exceeded", "inbound bandwidth"),
    ("bw_out_allowance_exceeded", "outbound bandwidth"),
    ("conntrack_allowance_exceeded", "tracked connections"),
    (
        "linklocal_allowance_exceeded",
        "packets to link-local services (DNS, IMDS, NTP)",
    ),
];

/// Instance allowance limits hit.
#[derive(Debug)]
pub struct CloudAllowance;

impl DoctorRule for CloudAllowance {
    fn id(&self) -> FindingId {
        FindingId::CloudAllowance
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "the cloud instance's network allowance is the ceiling"
    }
    fn rationale(&self) -> &'static str {
        "ENA counts packets the hypervisor queued or dropped because the instance exceeded its packets-per-second, bandwidth, conntrack or link-local allowance; no host tuning (RPS, IRQ affinity, interrupt coalescing) raises these limits"
    }
    fn source(&self) -> &'static str {
        "Documentation/networking/device_drivers/ethernet/amazon/ena.rst; AWS's ENA Linux driver README (https://github.com/amzn/amzn-drivers/blob/master/kernel/linux/ena/README.rst; ethtool -S: pps_allowance_exceeded, bw_in_allowance_exceeded, bw_out_allowance_exceeded)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let mut any_stats = false;
        let mut counts_allowance = false;
        for iface in &cx.snap().interfaces {
            let name = iface.name.as_str();
            let boot = iface.ethtool.stats.value();
            let moved = cx
                .window
                .as_ref()
                .and_then(|w| w.total.nic_counters.get(name));
            if boot.is_some() || moved.is_some() {
                any_stats = true;
            }
            let mut hit: Vec<(&str, &str, Option<u64>, Option<u64>)> = Vec::new();
            for (k, what) in ALLOWANCE_COUNTERS {
                let b = boot.and_then(|s| s.driver.get(*k)).copied();
                let w = moved.and_then(|m| m.get(*k)).copied();
                counts_allowance |= b.is_some() || w.is_some();
                if b.unwrap_or(0) > 0 || w.unwrap_or(0) > 0 {
                    hit.push((k, what, b, w));
                }
            }
            if hit.is_empty() {
                continue;
            }
            let rising = hit.iter().any(|h| h.3.unwrap_or(0) > 0);
            let limits: Vec<&str> = hit
                .iter()
                .filter(|h| !rising || h.3.unwrap_or(0) > 0)
                .map(|h| h.1)
                .collect();
            let mut f = crate::finding::from_rule(
                self,
                name,
                if rising {
                    format!(
                        "{name}: the instance exceeded its {} allowance during the window",
                        limits.join(" and ")
                    )
                } else {
                    format!(
                        "{name}: the instance exceeded its {} allowance since the driver loaded",
                        limits.join(" and ")
                    )
                },
            );
            if !rising {
                f = f.severity(Severity::Info);
            }
            for (k, _, b, w) in &hit {
                if let Some(b) = b {
                    f = f.evidence(
                        format!("{k} since driver load"),
                        b.to_string(),
                        format!("ethtool -S {name}"),
                    );
                }
                if let Some(w) = w.filter(|w| *w > 0) {
                    f = f.evidence(
                        format!("{k} in the window"),
                        w.to_string(),
                        format!("ethtool -S {name}"),
                    );
                }
            }
            f = arithmetic(cx, iface, f);
            out.push(f.fix(Fix {
                text: "The limit belongs to the instance, not the host: move to an instance size with a higher allowance, spread the load over more instances (the allowance is per instance), or send fewer, larger packets (batching, jumbo frames within the VPC).".into(),
                app: Some("fewer, larger messages: batch writes (sendmmsg, pipelining); `nettune bench --size` to find the packet size where the bandwidth allowance, not the pps one, binds".into()),
                ..Fix::default()
            }));
        }
        let given = cx.input.allowance;
        if !counts_allowance && (given.pps.is_some() || given.bandwidth_bps.is_some()) {
            return against_given(self, cx, out);
        }
        if !any_stats {
            return Err(Skip::because(
                "no NIC driver counters (ethtool -S; ethtool/IF.json \"stats\" under a fixture)",
            ));
        }
        Ok(())
    }
}

/// Share of the allowance given with `--allowance` above which a NIC without
/// allowance counters is a warning.
pub const NEAR_ALLOWANCE_PCT: f64 = 90.0;

/// `--allowance` on a host whose NICs count no allowance (ixgbevf on EC2
/// C4, the case the option exists for): each interface's rates set against
/// what the user gave, or why that cannot be done.
fn against_given(rule: &CloudAllowance, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
    let Some(w) = cx.window.as_ref() else {
        return Err(Skip::because(
            "--allowance sets the rates against the allowance, and rates need samples (doctor --sample S on the live host, or a capture with --samples); no NIC here counts allowance drops itself",
        ));
    };
    let given = cx.input.allowance;
    for iface in &cx.snap().interfaces {
        let name = iface.name.as_str();
        let Some(d) = w
            .iface(name)
            .filter(|d| d.rx_packets.0 + d.tx_packets.0 > 0)
        else {
            continue;
        };
        if iface.driver.is_none() {
            continue;
        }
        let driver = iface.driver.as_deref().unwrap_or("its driver");
        let mut top: f64 = 0.0;
        for (pps, packets, bytes) in [
            (d.rx_pps, d.rx_packets.0, d.rx_bytes.0),
            (d.tx_pps, d.tx_packets.0, d.tx_bytes.0),
        ] {
            if let Some(a) = given.pps.filter(|a| *a > 0) {
                top = top.max(pps / a as f64 * 100.0);
            }
            if let (Some(b), true) = (given.bandwidth_bps.filter(|b| *b > 0), packets > 0) {
                top = top.max(bytes as f64 * 8.0 / w.seconds.max(1e-9) / b as f64 * 100.0);
            }
        }
        let mut f = crate::finding::from_rule(
            rule,
            name,
            format!(
                "{name}: {driver} counts no allowance drops; its rates reach {top:.1} % of the allowance given"
            ),
        );
        if top < NEAR_ALLOWANCE_PCT {
            f = f.severity(Severity::Info);
        }
        f = arithmetic(cx, iface, f);
        out.push(f.fix(Fix {
            text: format!(
                "{driver} reports no allowance counters (ENA does), so doctor cannot see the limit bind; near the allowance, a plateau that host tuning does not lift is the instance's: move to a larger size or spread the load over more instances (the allowance is per instance)."
            ),
            ..Fix::default()
        }));
    }
    Ok(())
}

/// Evidence of which limit binds, per direction: the observed pps × mean
/// packet size × 8 is the bit rate; bit rate / bandwidth allowance against
/// pps / pps allowance, and the larger share binds. The bandwidth allowance
/// defaults to the link speed (ENA reports the instance's bandwidth there);
/// the pps allowance is never guessed.
fn arithmetic(cx: &Cx<'_>, iface: &model::snapshot::Interface, mut f: Finding) -> Finding {
    let name = iface.name.as_str();
    let Some(d) = cx.window.as_ref().and_then(|w| w.iface(name)) else {
        return f.evidence(
            "which limit binds",
            "unknown: rates need samples (doctor --sample S on the live host)",
            "/proc/net/dev",
        );
    };
    let allowance = cx.input.allowance;
    let (bw_bps, bw_from_link) = match allowance.bandwidth_bps.filter(|b| *b > 0) {
        Some(b) => (Some(b as f64), false),
        None => (
            iface.speed_mbps.filter(|s| *s > 0).map(|m| m as f64 * 1e6),
            true,
        ),
    };
    let pps_allow = allowance.pps.filter(|p| *p > 0);
    for (dir, pps, packets, bytes) in [
        ("received", d.rx_pps, d.rx_packets.0, d.rx_bytes.0),
        ("sent", d.tx_pps, d.tx_packets.0, d.tx_bytes.0),
    ] {
        if packets == 0 {
            continue;
        }
        let size = bytes as f64 / packets as f64;
        let bits = pps * size * 8.0;
        let mut value = format!("{pps:.0} pps × {size:.0} B × 8 = {:.1} Mbit/s", bits / 1e6);
        let bw_share = bw_bps.map(|b| bits / b * 100.0);
        let pps_share = pps_allow.map(|a| pps / a as f64 * 100.0);
        match (bw_share, bw_bps) {
            (Some(share), Some(b)) => value.push_str(&format!(
                ": {share:.1} % of the {:.0} Mbit/s bandwidth allowance{}",
                b / 1e6,
                if bw_from_link {
                    " (the link speed)"
                } else {
                    ""
                }
            )),
            _ => value.push_str(": bandwidth allowance unknown (no link speed)"),
        }
        match (pps_share, pps_allow) {
            (Some(share), Some(a)) => {
                value.push_str(&format!(", {share:.1} % of the {a} pps allowance"));
            }
            _ => value.push_str(
                ", pps allowance not given (doctor --allowance RATE,PPS): the counter that rises names the limit",
            ),
        }
        if let (Some(b), Some(p)) = (bw_share, pps_share) {
            value.push_str(if p >= b {
                ": the packet-rate allowance binds"
            } else {
                ": the bandwidth allowance binds"
            });
        }
        f = f.evidence(
            format!("{dir}: pps × packet size × 8"),
            value,
            format!("/proc/net/dev, /sys/class/net/{name}/speed"),
        );
    }
    f
}
