//! Driver knowledge: which values a driver's `InterruptThrottleRate` module
//! parameter takes, how many ports the parameter array covers, and Intel's
//! safety notes. The planner asks [`check_itr`] before it plans a value, so it
//! never plans one the driver would reject (a rejected value is silently
//! replaced by the driver's default).
//!
//! Sources, read in the driver code, not only in the READMEs:
//! * e1000 / e1000e `e1000_param.c`: `MIN_ITR 100`, `MAX_ITR 100000`,
//!   `case 0` off, `case 1` dynamic, `case 3` dynamic conservative, `case 4`
//!   "simplified (2000-8000 ints)", `E1000_MAX_NIC 32`; anything else out of
//!   range fails `e1000_validate_option` and becomes the default, 3.
//! * ixgbevf out-of-tree `ixgbevf_param.c` (intel/ethernet-linux-ixgbevf):
//!   "Valid Range: 956-488281 (0=off, 1=dynamic)", `IXGBE_MAX_NIC 8`; any other
//!   value (3 included) fails `ixgbevf_validate_option` and falls back to the
//!   default, 1 (dynamic).
//! * ixgbe out-of-tree `ixgbe_param.c`: "(0,1,956-488281), default 1",
//!   `IXGBE_MAX_NIC 32`.
//! * The in-tree ixgbe and ixgbevf have no `InterruptThrottleRate` at all.
//! * Intel's e1000 README: the 82547 (PRO/1000 CT) may
//!   hang above 75,000 interrupts/s and must not get 0.

/// What a driver's `InterruptThrottleRate` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItrSpec {
    /// Module name.
    pub driver: &'static str,
    /// Mode values accepted besides the range (0 off, 1 dynamic, 3 conservative,
    /// 4 simplified).
    pub modes: &'static [u32],
    /// Smallest interrupts/s the code accepts.
    pub min: u32,
    /// Largest interrupts/s the code accepts.
    pub max: u32,
    /// Entries of the parameter array (`*_MAX_NIC`): ports past it get the default.
    pub max_ports: usize,
    /// The value the driver uses when the parameter is not given, where
    /// its code says (`DEFAULT_ITR`).
    pub default: Option<u32>,
    /// Whether the in-tree (kernel) driver has the parameter; when not, only
    /// Intel's out-of-tree driver does.
    pub in_tree: bool,
    /// Where the numbers come from.
    pub source: &'static str,
}

/// The drivers nettune knows an `InterruptThrottleRate` for.
pub const ITR_DRIVERS: &[ItrSpec] = &[
    ItrSpec {
        driver: "e1000",
        modes: &[0, 1, 3, 4],
        min: 100,
        max: 100_000,
        max_ports: 32,
        default: Some(3),
        in_tree: true,
        source: "e1000_param.c (DEFAULT_ITR 3, MIN_ITR 100, MAX_ITR 100000, E1000_MAX_NIC 32)",
    },
    ItrSpec {
        driver: "e1000e",
        modes: &[0, 1, 3, 4],
        min: 100,
        max: 100_000,
        max_ports: 32,
        default: Some(3),
        in_tree: true,
        source: "e1000e param.c (DEFAULT_ITR 3, MIN_ITR 100, MAX_ITR 100000, E1000_MAX_NIC 32)",
    },
    ItrSpec {
        driver: "ixgbe",
        modes: &[0, 1],
        min: 956,
        max: 488_281,
        max_ports: 32,
        default: None,
        in_tree: false,
        source: "out-of-tree ixgbe_param.c (\"0,1,956-488281\", IXGBE_MAX_NIC 32)",
    },
    ItrSpec {
        driver: "ixgbevf",
        modes: &[0, 1],
        min: 956,
        max: 488_281,
        max_ports: 8,
        default: None,
        in_tree: false,
        source: "out-of-tree ixgbevf_param.c (\"Valid Range: 956-488281 (0=off, 1=dynamic)\", IXGBE_MAX_NIC 8)",
    },
];

/// The 82547's ceiling (Intel's e1000 README).
pub const E1000_82547_MAX_ITR: u32 = 75_000;

/// The spec of `driver`, if nettune knows its `InterruptThrottleRate`.
pub fn itr_spec(driver: &str) -> Option<&'static ItrSpec> {
    ITR_DRIVERS.iter().find(|s| s.driver == driver)
}

/// Whether the driver (by its ethtool version string) is Intel's
/// out-of-tree build: in-tree Intel drivers end their version in `-k`, and
/// since 5.x report the kernel release instead.
pub fn out_of_tree(version: Option<&str>, kernel: Option<&str>) -> bool {
    match version {
        None => false,
        Some(v) => !v.is_empty() && !v.ends_with("-k") && Some(v) != kernel,
    }
}

/// What [`check_itr`] decided about a wanted value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItrVerdict {
    /// The driver takes it as is.
    Ok(u32),
    /// Moved into the accepted range; the reason says why.
    Clamped {
        /// The value to plan.
        value: u32,
        /// Why it moved.
        why: String,
    },
    /// Not planned; the reason says why.
    Refused(String),
}

fn mode_name(v: u32) -> &'static str {
    match v {
        0 => "off",
        1 => "dynamic",
        3 => "dynamic conservative",
        4 => "simplified, 2,000-8,000 interrupts/s",
        _ => "interrupts/s",
    }
}

/// Check `value` against `spec`, with Intel's safety notes for e1000 (which
/// drives the 82547) applied as if any port could be one.
pub fn check_itr(spec: &ItrSpec, value: u32) -> ItrVerdict {
    check_itr_on(spec, value, &[])
}

/// Check `value` against `spec` for ports whose PCI ids are `ports`: e1000's
/// 82547 notes apply unless every port's id is known and none is an 82547.
pub fn check_itr_on(spec: &ItrSpec, value: u32, ports: &[Option<PciId>]) -> ItrVerdict {
    let d = spec.driver;
    let no_82547 = !ports.is_empty()
        && ports
            .iter()
            .all(|p| crate::coalesce_family::zero_allowed(d, *p));
    if d == "e1000" && !no_82547 {
        let known: Vec<String> = ports
            .iter()
            .flatten()
            .filter(|p| crate::coalesce_family::E1000_82547_DEVICES.contains(&p.device))
            .map(|p| format!("{p} is an 82547"))
            .collect();
        let which = if known.is_empty() {
            "the snapshot does not say which controller the ports are (no PCI device id; 8086:1019, 101a and 1075 are 82547s in `lspci -nn`); set it by hand once you know".to_string()
        } else {
            known.join(", ")
        };
        if value == 0 {
            return ItrVerdict::Refused(format!(
                "{d}: InterruptThrottleRate=0 not planned: Intel warns that the 82547 (PRO/1000 CT) may hang with 0, and {which}"
            ));
        }
        if value > E1000_82547_MAX_ITR && !spec.modes.contains(&value) {
            return ItrVerdict::Clamped {
                value: E1000_82547_MAX_ITR,
                why: format!("{value} lowered to {E1000_82547_MAX_ITR}: Intel warns that the 82547 (PRO/1000 CT) may hang above 75,000 interrupts/s, and {which}"),
            };
        }
    }
    if spec.modes.contains(&value) || (spec.min..=spec.max).contains(&value) {
        return ItrVerdict::Ok(value);
    }
    if value < spec.min && value >= 100 {
        return ItrVerdict::Clamped {
            value: spec.min,
            why: format!(
                "{value} raised to {}: the {d} code takes {}-{} interrupts/s and replaces anything else with its default ({})",
                spec.min, spec.min, spec.max, spec.source
            ),
        };
    }
    if value > spec.max {
        return ItrVerdict::Clamped {
            value: spec.max,
            why: format!(
                "{value} lowered to {}: the most the {d} code takes ({})",
                spec.max, spec.source
            ),
        };
    }
    let modes: Vec<String> = spec
        .modes
        .iter()
        .map(|m| format!("{m} ({})", mode_name(*m)))
        .collect();
    ItrVerdict::Refused(format!(
        "{d}: InterruptThrottleRate={value} not planned: the {d} code takes {} or {}-{} interrupts/s, and replaces anything else with its default ({})",
        modes.join(", "),
        spec.min,
        spec.max,
        spec.source
    ))
}

/// The module parameter value for `ports` ports: one value each, at most
/// `spec.max_ports` of them (the array's size).
pub fn per_port(spec: &ItrSpec, value: u32, ports: usize) -> String {
    let n = ports.clamp(1, spec.max_ports);
    vec![value.to_string(); n].join(",")
}

use model::snapshot::PciId;

/// What a value means, for reasons: `0 (off)`, `3 (dynamic conservative)` or
/// `8000 interrupts/s (125 µs)`.
pub fn describe_itr(value: u32) -> String {
    match value {
        0 | 1 | 3 | 4 => format!("{value} ({})", mode_name(value)),
        v => match model::moderation::timer_us(u64::from(v)) {
            Some(us) => format!("{v} interrupts/s ({us} µs between interrupts)"),
            None => format!("{v} interrupts/s"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(d: &str) -> &'static ItrSpec {
        itr_spec(d).unwrap_or(&ITR_DRIVERS[0])
    }

    #[test]
    fn ixgbevf_takes_0_1_and_956_to_488281_only() {
        let s = spec("ixgbevf");
        assert_eq!(check_itr(s, 0), ItrVerdict::Ok(0));
        assert_eq!(check_itr(s, 1), ItrVerdict::Ok(1));
        assert_eq!(check_itr(s, 956), ItrVerdict::Ok(956));
        assert_eq!(check_itr(s, 488_281), ItrVerdict::Ok(488_281));
        assert!(matches!(check_itr(s, 3), ItrVerdict::Refused(_)));
        assert!(matches!(check_itr(s, 2), ItrVerdict::Refused(_)));
        assert!(matches!(
            check_itr(s, 100),
            ItrVerdict::Clamped { value: 956, .. }
        ));
        assert!(matches!(
            check_itr(s, 500_000),
            ItrVerdict::Clamped { value: 488_281, .. }
        ));
    }

    #[test]
    fn e1000_never_gets_0_or_more_than_75000() {
        let s = spec("e1000");
        assert!(matches!(check_itr(s, 0), ItrVerdict::Refused(_)));
        assert!(matches!(
            check_itr(s, 100_000),
            ItrVerdict::Clamped { value: 75_000, .. }
        ));
        assert_eq!(check_itr(s, 3), ItrVerdict::Ok(3));
        assert_eq!(check_itr(s, 75_000), ItrVerdict::Ok(75_000));
        // e1000e does not drive the 82547.
        assert_eq!(check_itr(spec("e1000e"), 0), ItrVerdict::Ok(0));
        assert_eq!(check_itr(spec("e1000e"), 100_000), ItrVerdict::Ok(100_000));
        assert!(matches!(
            check_itr(spec("e1000e"), 99),
            ItrVerdict::Refused(_)
        ));
    }

    #[test]
    fn one_value_per_port_up_to_the_array_size() {
        assert_eq!(per_port(spec("e1000e"), 1, 4), "1,1,1,1");
        assert_eq!(per_port(spec("e1000e"), 3, 0), "3");
        assert_eq!(per_port(spec("ixgbevf"), 1000, 12).split(',').count(), 8);
    }

    #[test]
    fn in_tree_versions_are_told_apart() {
        assert!(!out_of_tree(Some("2.12.1-k"), None));
        assert!(!out_of_tree(Some("6.1.0-18-amd64"), Some("6.1.0-18-amd64")));
        assert!(!out_of_tree(None, None));
        assert!(out_of_tree(Some("2.16.1"), Some("3.13.0-46-generic")));
    }
}
