//! `offload-off`: receive checksum, GRO, TSO or GSO turned off on a NIC
//! whose driver supports them (the feature is not `[fixed]`).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Offloads checked, by ethtool's feature name and its `ethtool -K` keyword
/// (the ones the `offloads` planner rule turns back on).
pub const OFFLOADS: &[(&str, &str)] = &model::knobpath::ETHTOOL_FEATURES;

/// Offloads a driver leaves off when it loads although it supports them:
/// (driver, ethtool feature, where its code does it). Off there is the
/// driver's default, not something on the host turning it off.
pub const DRIVER_DEFAULT_OFF: &[(&str, &str, &str)] = &[(
    "e1000",
    "rx-checksum",
    "e1000_main.c e1000_probe adds NETIF_F_RXCSUM to hw_features after copying hw_features to features",
)];

/// Where the driver's code leaves `feature` off when it loads, if it does.
fn driver_default_off(driver: Option<&str>, feature: &str) -> Option<&'static str> {
    DRIVER_DEFAULT_OFF
        .iter()
        .find(|(d, f, _)| Some(*d) == driver && *f == feature)
        .map(|(_, _, why)| *why)
}

/// Offloads off where the driver supports them.
#[derive(Debug)]
pub struct OffloadOff;

impl DoctorRule for OffloadOff {
    fn id(&self) -> FindingId {
        FindingId::OffloadOff
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "checksum, GRO, TSO or GSO offload off where the driver supports it"
    }
    fn rationale(&self) -> &'static str {
        "without receive checksum offload the CPU checksums every packet; without GRO, TSO or GSO the stack handles each MTU-sized packet on its own instead of 64 KB batches, multiplying per-packet cost"
    }
    fn source(&self) -> &'static str {
        "a 2007 Korean blog post on e1000 tuning by 엘레노아 (netperf TCP_RR; title and URL not preserved; it cites Intel's PRO/1000 Linux driver guide and AP-450) (XsumRX turned off on bad advice); Documentation/networking/device_drivers/ethernet/intel/e1000.rst (XsumRX); Documentation/networking/segmentation-offloads.rst, checksum-offloads.rst"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let mut any = false;
        for iface in cx.snap().interfaces.iter().filter(|i| i.driver.is_some()) {
            let Some(feats) = iface.ethtool.features.value() else {
                continue;
            };
            any = true;
            let name = iface.name.as_str();
            let off: Vec<(&str, &str)> = OFFLOADS
                .iter()
                .filter(|(k, _)| feats.get(*k).is_some_and(|f| !f.active && !f.fixed))
                .copied()
                .collect();
            if off.is_empty() {
                continue;
            }
            let mut f = crate::finding::from_rule(
                self,
                name,
                format!(
                    "{name}: {} off although the driver supports {}",
                    off.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", "),
                    if off.len() == 1 { "it" } else { "them" }
                ),
            );
            let driver = iface.driver.as_deref();
            let mut defaults = Vec::new();
            for (k, _) in &off {
                let value = match driver_default_off(driver, k) {
                    Some(why) => {
                        defaults.push(format!(
                            "{} leaves {k} off when it loads ({why})",
                            driver.unwrap_or("the driver")
                        ));
                        format!(
                            "off (not fixed; the {} driver's default)",
                            driver.unwrap_or("?")
                        )
                    }
                    None => "off (not fixed)".to_string(),
                };
                f = f.evidence(*k, value, format!("ethtool -k {name}"));
            }
            let args: Vec<String> = off.iter().map(|(_, kw)| format!("{kw} on")).collect();
            let text = if defaults.len() == off.len() {
                format!(
                    "Turn them on: `ethtool -K {name} {}`; nothing on this host turned them off: {}. Keep the setting at boot (a udev rule or a NetworkManager ethtool setting).",
                    args.join(" "),
                    defaults.join("; ")
                )
            } else {
                format!(
                    "Turn them back on: `ethtool -K {name} {}`, and remove whatever turns them off at boot (a udev rule, a NetworkManager ethtool setting).{}",
                    args.join(" "),
                    defaults.iter().map(|d| format!(" ({d}.)")).collect::<String>()
                )
            };
            out.push(f.fix(Fix {
                text,
                ..Fix::default()
            }));
        }
        if !any {
            return Err(Skip::because(
                "no NIC reported its features (ethtool -k; ethtool/IF.json under a fixture)",
            ));
        }
        Ok(())
    }
}
