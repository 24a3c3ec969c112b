//! What each driver family's ethtool `rx-usecs`/`tx-usecs` value means and
//! which values its `set_coalesce` accepts, transcribed from the driver
//! source (the function is named in each entry's `source`). The planner and
//! doctor ask [`Family::accepts`] before they propose a value, and
//! [`Family::describe`] says what a value does in interrupts/s and µs both.
//!
//! Sources (torvalds/linux, drivers/net/ethernet/intel/):
//! * e1000 `e1000_ethtool.c` `e1000_set_coalesce` and e1000e `ethtool.c`
//!   `e1000_set_coalesce`: `-EINVAL` when `rx_coalesce_usecs >
//!   E1000_MAX_ITR_USECS` (10000), when `> 4 && < E1000_MIN_ITR_USECS` (10)
//!   and when `== 2`; 4 = simplified mode, 0..3 keep the value as
//!   `itr_setting` (0 off, 1 dynamic, 3 dynamic conservative), anything else
//!   is `1000000 / usecs` interrupts/s. Only `rx-usecs` is read. The dynamic
//!   modes (`e1000_set_itr`, `e1000e` `e1000_set_itr`) move between
//!   `lowest_latency` 70,000, `low_latency` 20,000 and `bulk_latency` 4,000
//!   interrupts/s; mode 3 never uses `lowest_latency`; mode 4 is "simplified
//!   (2000-8000 ints)" (`e1000_param.c`/`param.c`).
//! * igb `igb_ethtool.c` `igb_set_coalesce`, igc `igc_ethtool.c`
//!   `igc_ethtool_set_coalesce`: `-EINVAL` when `rx`/`tx_coalesce_usecs >
//!   IGB_MAX_ITR_USECS` (10000), `> 3 && < IGB_MIN_ITR_USECS` (10) or `== 2`,
//!   and for a nonzero `tx-usecs` when RX and TX share vectors
//!   (`IGB_FLAG_QUEUE_PAIRS`). 1 and 3 are the dynamic modes (`IGB_DEFAULT_ITR
//!   3`); `igb_set_itr` uses `IGB_70K_ITR`, `IGB_20K_ITR`, `IGB_4K_ITR`, and
//!   mode 3 never the 70K one.
//! * ixgbe `ixgbe_ethtool.c` `ixgbe_set_coalesce`, ixgbevf
//!   `ixgbevf_set_coalesce`: `-EINVAL` above `IXGBE_MAX_EITR >> 2` (1022 µs)
//!   and for `tx-usecs` with TxRx vectors; 1 = dynamic ITR
//!   (`IXGBE_ITR_ADAPTIVE_MIN_USECS` 10 to `IXGBE_ITR_ADAPTIVE_MAX_USECS` 126),
//!   2 and up a fixed interval.

use model::moderation::{rate_for_timer_us, thousands};
use thiserror::Error;

/// One dynamic (adaptive) mode selected by a small `rx-usecs` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynamicMode {
    /// The `rx-usecs` value that selects it.
    pub value: u32,
    /// The driver's name for it.
    pub name: &'static str,
    /// Fewest interrupts/s per vector the mode uses.
    pub min_rate: u32,
    /// Most interrupts/s per vector the mode uses.
    pub max_rate: u32,
}

/// What one `rx-usecs` value does on a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// No moderation: an interrupt per packet (ITR 0).
    Off,
    /// A dynamic mode.
    Dynamic(DynamicMode),
    /// A fixed interval, µs.
    Fixed(u32),
}

/// Why a family's `set_coalesce` rejects a value (`-EINVAL`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Rejection {
    /// Between the mode values and the smallest fixed interval.
    #[error("{family} rejects {attr} {value} (EINVAL): {reason}")]
    Reserved {
        /// Family name.
        family: &'static str,
        /// `rx-usecs` or `tx-usecs`.
        attr: String,
        /// The value.
        value: u64,
        /// Which rule of the driver's code refuses it.
        reason: String,
    },
    /// Above the longest interval.
    #[error("{family} rejects {attr} {value} (EINVAL): above its {max} µs maximum")]
    AboveMax {
        /// Family name.
        family: &'static str,
        /// `rx-usecs` or `tx-usecs`.
        attr: String,
        /// The value.
        value: u64,
        /// The maximum, µs.
        max: u32,
    },
}

/// One driver family's coalescing semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// Family name, as said in reasons.
    pub name: &'static str,
    /// Module names of the family.
    pub drivers: &'static [&'static str],
    /// The dynamic modes (small values besides 0).
    pub dynamic: &'static [DynamicMode],
    /// Smallest fixed interval accepted, µs.
    pub min_fixed: u32,
    /// Largest interval accepted, µs.
    pub max_fixed: u32,
    /// Whether `tx-usecs` is validated too (else the driver ignores it).
    pub tx_usecs: bool,
    /// Whether a nonzero `tx-usecs` is refused when RX and TX share vectors.
    pub tx_refused_on_shared_vectors: bool,
    /// Driver source the entry is transcribed from.
    pub source: &'static str,
}

const E1000_DYNAMIC: &[DynamicMode] = &[
    DynamicMode {
        value: 1,
        name: "dynamic",
        min_rate: 4_000,
        max_rate: 70_000,
    },
    DynamicMode {
        value: 3,
        name: "dynamic conservative",
        min_rate: 4_000,
        max_rate: 20_000,
    },
    DynamicMode {
        value: 4,
        name: "simplified",
        min_rate: 2_000,
        max_rate: 8_000,
    },
];

/// igb and igc have e1000's first two modes (the same ITR steps), not its
/// simplified mode 4.
const IGB_DYNAMIC: &[DynamicMode] = E1000_DYNAMIC.split_at(2).0;

const IXGBE_DYNAMIC: &[DynamicMode] = &[DynamicMode {
    value: 1,
    name: "dynamic ITR",
    min_rate: 7_937,
    max_rate: 100_000,
}];

/// The families nettune knows, one entry each.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "e1000",
        drivers: &["e1000"],
        dynamic: E1000_DYNAMIC,
        min_fixed: 10,
        max_fixed: 10_000,
        tx_usecs: false,
        tx_refused_on_shared_vectors: false,
        source: "e1000_ethtool.c e1000_set_coalesce (E1000_MIN_ITR_USECS 10, E1000_MAX_ITR_USECS 10000, 2 and 5-9 EINVAL), e1000_main.c e1000_set_itr",
    },
    Family {
        name: "e1000e",
        drivers: &["e1000e"],
        dynamic: E1000_DYNAMIC,
        min_fixed: 10,
        max_fixed: 10_000,
        tx_usecs: false,
        tx_refused_on_shared_vectors: false,
        source: "e1000e ethtool.c e1000_set_coalesce (E1000_MIN_ITR_USECS 10, E1000_MAX_ITR_USECS 10000, 2 and 5-9 EINVAL), netdev.c e1000_set_itr",
    },
    Family {
        name: "igb/igc",
        drivers: &["igb", "igc"],
        dynamic: IGB_DYNAMIC,
        min_fixed: 10,
        max_fixed: 10_000,
        tx_usecs: true,
        tx_refused_on_shared_vectors: true,
        source: "igb_ethtool.c igb_set_coalesce, igc_ethtool.c igc_ethtool_set_coalesce (IGB_MIN_ITR_USECS 10, IGB_MAX_ITR_USECS 10000, 2 and 4-9 EINVAL), igb_main.c igb_set_itr",
    },
    Family {
        name: "ixgbe/ixgbevf",
        drivers: &["ixgbe", "ixgbevf"],
        dynamic: IXGBE_DYNAMIC,
        min_fixed: 2,
        max_fixed: 1022,
        tx_usecs: true,
        tx_refused_on_shared_vectors: true,
        source: "ixgbe_ethtool.c ixgbe_set_coalesce, ixgbevf ethtool.c ixgbevf_set_coalesce (IXGBE_MAX_EITR >> 2 = 1022 µs), ixgbe.h IXGBE_ITR_ADAPTIVE_MIN/MAX_USECS 10/126",
    },
];

/// PCI device ids of the 82547 (e1000 `e1000_hw.h`: `E1000_DEV_ID_82547EI`
/// 0x1019, `_82547EI_MOBILE` 0x101A, `_82547GI` 0x1075), which Intel's e1000
/// README says may hang with ITR 0 or above 75,000 interrupts/s (seed 003).
pub const E1000_82547_DEVICES: [u16; 3] = [0x1019, 0x101A, 0x1075];

/// Shortest fixed interval for a port that may be an 82547: 14 µs is at most
/// 71,429 interrupts/s, under the 75,000 Intel names.
pub const E1000_82547_MIN_USECS: u32 = 14;

/// Whether ITR 0 (no moderation) may be planned for a port of `driver`
/// whose PCI id is `id`: always but on e1000, where the controller must be
/// known and not an 82547.
pub fn zero_allowed(driver: &str, id: Option<model::snapshot::PciId>) -> bool {
    if driver != "e1000" {
        return true;
    }
    id.is_some_and(|i| i.vendor == 0x8086 && !E1000_82547_DEVICES.contains(&i.device))
}

/// The family of `driver`, if nettune knows one.
pub fn family(driver: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.drivers.contains(&driver))
}

/// `a-b interrupts/s (c-d µs)` for a rate range.
fn rates(min: u32, max: u32) -> String {
    let us = |r: u32| rate_for_timer_us(u64::from(r)).unwrap_or(0);
    format!(
        "{}-{} interrupts/s per vector ({}-{} µs between interrupts)",
        thousands(u64::from(min)),
        thousands(u64::from(max)),
        us(max),
        us(min)
    )
}

impl Family {
    /// What `value` means, or why the driver rejects it.
    pub fn meaning(&self, attr: &str, value: u64) -> Result<Meaning, Rejection> {
        if value == 0 {
            return Ok(Meaning::Off);
        }
        if let Some(m) = self.dynamic.iter().find(|m| u64::from(m.value) == value) {
            return Ok(Meaning::Dynamic(*m));
        }
        if value > u64::from(self.max_fixed) {
            return Err(Rejection::AboveMax {
                family: self.name,
                attr: attr.to_string(),
                value,
                max: self.max_fixed,
            });
        }
        if value < u64::from(self.min_fixed) {
            let modes: Vec<String> = self.dynamic.iter().map(|m| m.value.to_string()).collect();
            return Err(Rejection::Reserved {
                family: self.name,
                attr: attr.to_string(),
                value,
                reason: format!(
                    "below {} only 0 (off) and the dynamic modes {} are accepted ({})",
                    self.min_fixed,
                    modes.join(", "),
                    self.source
                ),
            });
        }
        // In range, and min_fixed..=max_fixed fits u32.
        Ok(Meaning::Fixed(
            u32::try_from(value).unwrap_or(self.max_fixed),
        ))
    }

    /// `Ok` when the driver's `set_coalesce` takes `attr value`; `shared`:
    /// RX and TX share vectors (TxRx IRQs).
    pub fn accepts(&self, attr: &str, value: u64, shared: bool) -> Result<(), Rejection> {
        if attr == "tx-usecs" && !self.tx_usecs {
            return Ok(());
        }
        if attr == "tx-usecs" && shared && self.tx_refused_on_shared_vectors && value != 0 {
            return Err(Rejection::Reserved {
                family: self.name,
                attr: attr.to_string(),
                value,
                reason: format!(
                    "RX and TX share the vectors, so rx-usecs sets both ({})",
                    self.source
                ),
            });
        }
        self.meaning(attr, value).map(|_| ())
    }

    /// What `value` does, in the user's terms: `3 (dynamic conservative:
    /// 4,000-20,000 interrupts/s per vector (50-250 µs between interrupts))`.
    pub fn describe(&self, value: u64) -> String {
        match self.meaning("rx-usecs", value) {
            Ok(Meaning::Off) => format!("{value} (off: no moderation, an interrupt per packet)"),
            Ok(Meaning::Dynamic(m)) => format!(
                "{value} ({} mode: the driver moves between {})",
                m.name,
                rates(m.min_rate, m.max_rate)
            ),
            Ok(Meaning::Fixed(us)) => format!(
                "{us} µs (fixed: at most {} interrupts/s per vector)",
                thousands(rate_for_timer_us(u64::from(us)).unwrap_or(0))
            ),
            Err(e) => e.to_string(),
        }
    }

    /// Whether `value` selects a dynamic mode.
    pub fn is_dynamic(&self, value: u64) -> bool {
        matches!(self.meaning("rx-usecs", value), Ok(Meaning::Dynamic(_)))
    }

    /// The value to plan for a latency goal of `us` µs: `us` when accepted
    /// as a fixed interval, else 0 (off) when the profile asks for less than
    /// the smallest fixed interval and `zero_ok`, else the nearest accepted
    /// fixed interval.
    pub fn latency_value(&self, us: u32, zero_ok: bool) -> u32 {
        if us == 0 && zero_ok {
            return 0;
        }
        if us < self.min_fixed {
            return if zero_ok { 0 } else { self.min_fixed };
        }
        us.min(self.max_fixed)
    }

    /// The nearest accepted fixed interval to `us` (for the adaptive intent).
    pub fn fixed_value(&self, us: u32) -> u32 {
        us.clamp(self.min_fixed, self.max_fixed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fam(d: &str) -> &'static Family {
        family(d).unwrap_or(&FAMILIES[0])
    }

    #[test]
    fn e1000_family_takes_0_1_3_4_and_10_to_10000() {
        for d in ["e1000", "e1000e"] {
            let f = fam(d);
            for ok in [0u64, 1, 3, 4, 10, 50, 10_000] {
                assert!(f.accepts("rx-usecs", ok, false).is_ok(), "{d} {ok}");
            }
            for bad in [2u64, 5, 8, 9, 10_001] {
                assert!(f.accepts("rx-usecs", bad, false).is_err(), "{d} {bad}");
            }
            assert!(f.is_dynamic(3) && f.is_dynamic(4) && f.is_dynamic(1));
        }
    }

    #[test]
    fn igb_takes_0_1_3_and_10_to_10000_and_no_tx_usecs_on_pairs() {
        let f = fam("igb");
        for ok in [0u64, 1, 3, 10, 10_000] {
            assert!(f.accepts("rx-usecs", ok, false).is_ok(), "{ok}");
        }
        for bad in [2u64, 4, 5, 9, 10_001] {
            assert!(f.accepts("rx-usecs", bad, false).is_err(), "{bad}");
        }
        assert!(f.accepts("tx-usecs", 50, true).is_err());
        assert!(f.accepts("tx-usecs", 0, true).is_ok());
        assert!(f.is_dynamic(3));
        assert_eq!(fam("igc").name, "igb/igc");
    }

    #[test]
    fn dynamic_modes_are_said_in_both_units() {
        let s = fam("igb").describe(3);
        assert!(s.contains("4,000-20,000 interrupts/s"), "{s}");
        assert!(s.contains("50-250 µs"), "{s}");
        assert!(fam("e1000e").describe(8).contains("EINVAL"));
        assert!(fam("e1000e").describe(50).contains("20,000 interrupts/s"));
    }

    #[test]
    fn latency_value_reaches_0_below_the_smallest_interval() {
        assert_eq!(fam("e1000e").latency_value(8, true), 0);
        assert_eq!(fam("e1000").latency_value(8, false), 10);
        assert_eq!(fam("ixgbe").latency_value(8, true), 8);
        assert_eq!(fam("igb").latency_value(20_000, true), 10_000);
    }
}
