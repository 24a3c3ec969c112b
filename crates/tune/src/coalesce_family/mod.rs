//! What each driver family's ethtool `rx-usecs`/`tx-usecs` value means and
//! which values its `set_coalesce` accepts, transcribed from the driver
//! source (the function is named in each entry's `source`). The planner
//! asks [`Family::accepts_on`] (the doctor [`Family::latency_value`]) before
//! it proposes a value, and [`Family::describe`] and
//! [`Family::describe_adaptive`] say what a value does in interrupts/s and
//! µs both.
//!
//! Sources (torvalds/linux, drivers/net/; the Intel ones under
//! ethernet/intel/):
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
//! * mlx5_core `en_ethtool.c` `mlx5e_ethtool_set_coalesce`: `-EOPNOTSUPP`
//!   without the `cq_moderation` capability (its `get_coalesce` refuses too,
//!   so a reported coalesce implies it; newer kernels also want the
//!   `cq_period_mode_modify` capability, which the snapshot cannot show), `-ERANGE`
//!   above `MLX5E_MAX_COAL_TIME` = `MLX5_MAX_CQ_PERIOD`, the 12-bit
//!   `cq_period` field of the CQ context (4095 µs), for `rx-usecs` and
//!   `tx-usecs` alike, and above `MLX5E_MAX_COAL_FRAMES` (65535, 16-bit
//!   `cq_max_count`) for the frame counts. `adaptive-rx` and `adaptive-tx`
//!   both switch net_dim on (`ETHTOOL_COALESCE_USE_ADAPTIVE`).
//! * ena `ena_ethtool.c` `ena_set_coalesce`: `-EOPNOTSUPP` without the
//!   device's interrupt moderation (`get_coalesce` refuses too); no range
//!   check: `ena_com_update_nonadaptive_moderation_interval_{rx,tx}` divide
//!   the µs by the device's `intr_delay_resolution` and `ena_com_update_intr_reg`
//!   keeps 15 bits (`ENA_ETH_IO_INTR_REG_RX_INTR_DELAY_MASK` `GENMASK(14, 0)`),
//!   so more than 32767 resolution steps wrap silently. Only `adaptive-rx`
//!   (`ETHTOOL_COALESCE_USECS | ETHTOOL_COALESCE_USE_ADAPTIVE_RX`).
//! * virtio_net `virtio_net.c` `virtnet_set_coalesce`: with
//!   `VIRTIO_NET_F_NOTF_COAL` the values go to the device as they are (u32
//!   µs); without it `virtnet_coal_params_supported` refuses any nonzero
//!   `rx-usecs`/`tx-usecs` (`-EOPNOTSUPP`) and `rx-frames` other than 1 or
//!   `tx-frames` above 1 (`-EINVAL`; `tx-frames` 0/1 turns napi_tx off/on),
//!   and `virtnet_get_coalesce` then reports exactly usecs 0, `rx-frames` 1,
//!   so only a value other than those proves the feature. `adaptive-rx`
//!   (net_dim) also needs `VIRTIO_NET_F_VQ_NOTF_COAL`
//!   (`virtnet_send_rx_notf_coal_cmds`: `-EOPNOTSUPP`; without NOTF_COAL
//!   the request is taken and ignored), and with it on, a request whose
//!   `rx-usecs` differs from DIM's current value is `-EINVAL`.
//! * bnxt_en `bnxt_ethtool.c` `bnxt_set_coalesce`: no range check; the µs
//!   are kept in a u16 (`struct bnxt_coal` `coal_ticks`) and
//!   `bnxt_usec_to_coal_tmr` turns them into `timer_units` (80 ns on legacy
//!   firmware, `bnxt_hwrm_coal_params_qcaps`) in a u16, which the firmware
//!   caps at `cmpl_aggr_dma_tmr_max` (65535): above 5242 µs the timer wraps
//!   silently. `bnxt_hwrm_set_coal_params` clamps the timer to at least 1
//!   tick, so 0 is the shortest timer. Only `adaptive-rx` (net_dim,
//!   `BNXT_FLAG_DIM`).
//! * vmxnet3 `vmxnet3_ethtool.c` `vmxnet3_set_coalesce`: `-EOPNOTSUPP`
//!   below device version 3 (`VMXNET3_VERSION_GE_3`; `get_coalesce` refuses
//!   too). Modes, chosen from the whole merged request: all zero = disabled;
//!   `rx-usecs` nonzero = rate-based (`VMXNET3_COAL_RBC_RATE` = 1000000 /
//!   usecs interrupts/s, `-EINVAL` outside `VMXNET3_COAL_RBC_MIN_RATE` 100 to
//!   `_MAX_RATE` 100000, i.e. 10-10000 µs, and `-EINVAL` with
//!   `adaptive-rx` or any frame count set); `adaptive-rx` = the device's
//!   adaptive mode (`-EINVAL` with frame counts); frame counts = static
//!   depths (`VMXNET3_COAL_STATIC_MAX_DEPTH` 128). No `tx-usecs`, no
//!   `adaptive-tx` (`ETHTOOL_COALESCE_RX_USECS | _MAX_FRAMES |
//!   _USE_ADAPTIVE_RX`).
//! * i40e `i40e_ethtool.c` `__i40e_set_coalesce`, iavf `iavf_ethtool.c`
//!   `__iavf_set_coalesce`/`iavf_set_itr_per_queue`, ice `ice_ethtool.c`
//!   `ice_set_rc_coalesce`: `-EINVAL` above 8160 µs (`I40E_MAX_ITR`,
//!   `IAVF_MAX_ITR`, `ICE_ITR_MAX`) and when `rx-usecs`/`tx-usecs` changes
//!   while `adaptive-rx`/`-tx` is on in the request; the ITR has a 2 µs
//!   granularity: ice refuses odd values, i40e/iavf round them down (older
//!   kernels refused 1), so only even values are planned. i40e/iavf's
//!   dynamic ITR moves between `I40E_ITR_ADAPTIVE_MIN_USECS` 2 and
//!   `_MAX_USECS` 126 µs.
//! * mlx4_en `en_ethtool.c` `mlx4_en_set_coalesce`: `-ERANGE` above
//!   `MLX4_EN_MAX_COAL_TIME` (`U16_MAX`), where 65535 itself is
//!   `MLX4_EN_AUTO_CONF` (the driver default, 16 µs); `adaptive-rx` is the
//!   driver's own moderation between `rx-usecs-low` 0 and `-high` 128 µs
//!   (`MLX4_EN_RX_COAL_TIME_LOW/HIGH`).
//! * net_dim (`lib/dim/net_dim.c`), the adaptive mode of mlx5, ena, bnxt
//!   and virtio: RX profiles of 1, 8, 64, 128 and 256 µs (EQE-based) or 2
//!   to 64 µs (CQE-based).
//!
//! `ethtool -C` goes through `ETHTOOL_MSG_COALESCE_SET`, which fills the
//! driver's request from its current values and refuses (`-EOPNOTSUPP`)
//! any attribute the driver does not list in `supported_coalesce_params`;
//! `COALESCE_GET` leaves out unsupported attributes whose value is 0. So
//! [`Family::accepts_on`] checks one attribute against the merged state.

use model::moderation::{rate_for_timer_us, thousands};
use std::collections::BTreeMap;
use thiserror::Error;

mod table;
pub use table::{BNXT_MAX_COAL_USECS, ENA_MAX_DELAY_USECS, FAMILIES, MLX5E_MAX_COAL_TIME};

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

/// Why a family's `set_coalesce` rejects a value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Rejection {
    /// Between the mode values and the smallest fixed interval, or refused
    /// by another rule of the driver's code.
    #[error("{family} rejects {attr} {value} ({how}): {reason}")]
    Reserved {
        /// Family name.
        family: &'static str,
        /// `rx-usecs` or `tx-usecs`.
        attr: String,
        /// The value.
        value: u64,
        /// The errno, or what happens instead.
        how: &'static str,
        /// Which rule of the driver's code refuses it.
        reason: String,
    },
    /// Above the longest interval.
    #[error("{family} rejects {attr} {value} ({how}): above its {max} µs maximum")]
    AboveMax {
        /// Family name.
        family: &'static str,
        /// `rx-usecs` or `tx-usecs`.
        attr: String,
        /// The value.
        value: u64,
        /// The errno, or what happens instead.
        how: &'static str,
        /// The maximum, µs.
        max: u32,
    },
    /// Taken only with a device feature the snapshot does not show.
    #[error("{family} takes {attr} {value} only with {feature}, which nothing in the snapshot shows: {reason}")]
    Unproven {
        /// Family name.
        family: &'static str,
        /// The attribute.
        attr: String,
        /// The value.
        value: u64,
        /// The feature.
        feature: &'static str,
        /// What the driver does without it.
        reason: &'static str,
    },
}

/// What a family does with `tx-usecs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxUsecs {
    /// Validated like `rx-usecs`: a TX interval of its own.
    Validated,
    /// Accepted and ignored (the driver reads `rx-usecs` only).
    Ignored,
    /// Not in `supported_coalesce_params`: a nonzero value is refused
    /// (`-EOPNOTSUPP`) and `ethtool -c` does not report it.
    Unsupported,
}

/// A device feature some values need, which `ethtool -c` shows only
/// indirectly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Every value in range is taken.
    None,
    /// virtio_net: nonzero usecs need `VIRTIO_NET_F_NOTF_COAL`, shown only by
    /// a reported state other than usecs 0, `rx-frames` 1, `tx-frames` 0/1;
    /// `adaptive-rx 1` needs `VIRTIO_NET_F_VQ_NOTF_COAL`, shown only by
    /// `adaptive-rx` already on.
    VirtioNotfCoal,
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
    /// What the driver does with `tx-usecs`.
    pub tx_usecs: TxUsecs,
    /// Whether a nonzero `tx-usecs` is refused when RX and TX share vectors.
    pub tx_refused_on_shared_vectors: bool,
    /// What `rx-usecs 0` does.
    pub off: &'static str,
    /// How the driver answers a value above `max_fixed`: an errno, or what
    /// happens instead when it does not check.
    pub above_max: &'static str,
    /// The `adaptive-*` attributes the driver takes; `None`: not transcribed
    /// (the Intel families select their dynamic modes through `rx-usecs`).
    pub adaptive: Option<&'static [&'static str]>,
    /// What `adaptive-rx 1` does, when the driver's code says.
    pub adaptive_mode: Option<DynamicMode>,
    /// A device feature some values need.
    pub gate: Gate,
    /// What `adaptive-rx 1` does where `adaptive_mode` has no range.
    pub adaptive_says: &'static str,
    /// With `adaptive-rx`/`-tx` on in the merged request, `rx-usecs`/
    /// `tx-usecs` must keep their current value (`-EINVAL`).
    pub adaptive_locks_usecs: bool,
    /// Only even µs are taken (2 µs ITR granularity, `-EINVAL` on odd).
    pub even_only: bool,
    /// vmxnet3: `rx-usecs`, `adaptive-rx` and the frame counts select
    /// exclusive modes, checked on the merged request.
    pub exclusive_modes: bool,
    /// Driver source the entry is transcribed from.
    pub source: &'static str,
}

/// PCI device ids of the 82547 (e1000 `e1000_hw.h`: `E1000_DEV_ID_82547EI`
/// 0x1019, `_82547EI_MOBILE` 0x101A, `_82547GI` 0x1075), which Intel's e1000
/// README says may hang with ITR 0 or above 75,000 interrupts/s.
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

/// Whether a virtio_net port's reported coalescing proves
/// `VIRTIO_NET_F_NOTF_COAL`: without it `virtnet_get_coalesce` reports usecs
/// 0, `rx-frames` 1 and `tx-frames` 0 or 1, nothing else.
fn virtio_notf_coal_shown(co: &BTreeMap<String, u64>) -> bool {
    let get = |a: &str| co.get(a).copied();
    get("rx-usecs").unwrap_or(0) != 0
        || get("tx-usecs").unwrap_or(0) != 0
        || get("rx-frames").is_some_and(|v| v != 1)
        || get("tx-frames").unwrap_or(0) > 1
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
                how: self.above_max,
                max: self.max_fixed,
            });
        }
        if value < u64::from(self.min_fixed) {
            let modes: Vec<String> = self.dynamic.iter().map(|m| m.value.to_string()).collect();
            let reason = if modes.is_empty() {
                format!(
                    "below {} µs only 0 (off) is accepted ({})",
                    self.min_fixed, self.source
                )
            } else {
                format!(
                    "below {} only 0 (off) and the dynamic modes {} are accepted ({})",
                    self.min_fixed,
                    modes.join(", "),
                    self.source
                )
            };
            return Err(Rejection::Reserved {
                family: self.name,
                attr: attr.to_string(),
                value,
                how: "EINVAL",
                reason,
            });
        }
        if self.even_only && value % 2 == 1 {
            return Err(Rejection::Reserved {
                family: self.name,
                attr: attr.to_string(),
                value,
                how: "EINVAL",
                reason: format!(
                    "the ITR has a 2 µs granularity: only even values ({})",
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
    /// RX and TX share vectors (TxRx IRQs). Checks the value alone; see
    /// [`Family::accepts_on`] for the rules that need the port's state.
    pub fn accepts(&self, attr: &str, value: u64, shared: bool) -> Result<(), Rejection> {
        let refuse = |how: &'static str, reason: String| Rejection::Reserved {
            family: self.name,
            attr: attr.to_string(),
            value,
            how,
            reason,
        };
        if attr.starts_with("adaptive-") {
            let Some(takes) = self.adaptive else {
                return Ok(());
            };
            if value > 1 {
                return Err(refuse(
                    "EINVAL",
                    "adaptive-rx/tx are on (1) or off (0)".into(),
                ));
            }
            if value != 0 && !takes.contains(&attr) {
                return Err(refuse(
                    "EOPNOTSUPP",
                    format!(
                        "{attr} is not among the driver's supported_coalesce_params ({})",
                        self.source
                    ),
                ));
            }
            return Ok(());
        }
        if attr != "rx-usecs" && attr != "tx-usecs" {
            // Frame counts and the rest: not transcribed, not planned.
            return Ok(());
        }
        if attr == "tx-usecs" {
            match self.tx_usecs {
                TxUsecs::Ignored => return Ok(()),
                TxUsecs::Unsupported if value != 0 => {
                    return Err(refuse(
                        "EOPNOTSUPP",
                        format!(
                            "tx-usecs is not among the driver's supported_coalesce_params ({})",
                            self.source
                        ),
                    ));
                }
                TxUsecs::Unsupported => return Ok(()),
                TxUsecs::Validated => {}
            }
        }
        if attr == "tx-usecs" && shared && self.tx_refused_on_shared_vectors && value != 0 {
            return Err(refuse(
                "EINVAL",
                format!(
                    "RX and TX share the vectors, so rx-usecs sets both ({})",
                    self.source
                ),
            ));
        }
        self.meaning(attr, value).map(|_| ())
    }

    /// `Ok` when one `ethtool -C <port> attr value` on a port whose
    /// coalescing reads `current` is taken: [`Family::accepts`], then the
    /// rules on the merged request (the kernel fills the driver's request
    /// from `current`): device features the values prove (virtio_net) and
    /// exclusive modes (vmxnet3).
    pub fn accepts_on(
        &self,
        attr: &str,
        value: u64,
        shared: bool,
        current: &BTreeMap<String, u64>,
    ) -> Result<(), Rejection> {
        self.accepts(attr, value, shared)?;
        let get = |m: &BTreeMap<String, u64>, a: &str| m.get(a).copied().unwrap_or(0);
        if self.gate == Gate::VirtioNotfCoal && value != 0 {
            if (attr == "rx-usecs" || attr == "tx-usecs") && !virtio_notf_coal_shown(current) {
                return Err(Rejection::Unproven {
                    family: self.name,
                    attr: attr.to_string(),
                    value,
                    feature: "VIRTIO_NET_F_NOTF_COAL",
                    reason: "without it virtnet_coal_params_supported refuses nonzero usecs (EOPNOTSUPP), and ethtool -c then shows usecs 0, rx-frames 1, tx-frames 0 or 1, as it does here",
                });
            }
            if attr == "adaptive-rx" && get(current, "adaptive-rx") == 0 {
                return Err(Rejection::Unproven {
                    family: self.name,
                    attr: attr.to_string(),
                    value,
                    feature: "VIRTIO_NET_F_VQ_NOTF_COAL",
                    reason: "virtnet_send_rx_notf_coal_cmds refuses adaptive-rx without it (EOPNOTSUPP), and without VIRTIO_NET_F_NOTF_COAL too the request is taken but DIM never starts (adaptive-rx reads back 0); only adaptive-rx already on would show it",
                });
            }
        }
        if self.adaptive_locks_usecs {
            if let Some(dir) = attr.strip_suffix("-usecs") {
                let adaptive = format!("adaptive-{dir}");
                if get(current, &adaptive) != 0 && get(current, attr) != value {
                    return Err(Rejection::Reserved {
                        family: self.name,
                        attr: attr.to_string(),
                        value,
                        how: "EINVAL",
                        reason: format!(
                            "with {adaptive} on, the driver refuses a {attr} other than the current one; turn {adaptive} off first ({})",
                            self.source
                        ),
                    });
                }
            }
        }
        if self.exclusive_modes {
            let mut m = current.clone();
            m.insert(attr.to_string(), value);
            let frames = get(&m, "rx-frames") != 0 || get(&m, "tx-frames") != 0;
            let (usecs, adaptive) = (get(&m, "rx-usecs") != 0, get(&m, "adaptive-rx") != 0);
            let reason = if usecs && (adaptive || frames) {
                Some("a nonzero rx-usecs (rate-based mode) needs adaptive-rx off and rx-frames/tx-frames 0 in the same request")
            } else if adaptive && frames {
                Some("adaptive-rx needs rx-frames/tx-frames 0 in the same request")
            } else {
                None
            };
            if let Some(r) = reason {
                return Err(Rejection::Reserved {
                    family: self.name,
                    attr: attr.to_string(),
                    value,
                    how: "EINVAL",
                    reason: format!(
                        "{r}, and ethtool fills the rest from the port's current values ({})",
                        self.source
                    ),
                });
            }
        }
        Ok(())
    }

    /// What `adaptive-rx 1` does, in both units where the driver's code
    /// says; `None` where the table does not transcribe adaptive modes.
    pub fn describe_adaptive(&self) -> Option<String> {
        match (self.adaptive_mode, self.adaptive) {
            (Some(m), _) => Some(format!(
                "{} ({}): the driver moves between {}",
                m.name,
                self.name,
                rates(m.min_rate, m.max_rate)
            )),
            (None, Some(a)) if !a.is_empty() && !self.adaptive_says.is_empty() => {
                Some(self.adaptive_says.to_string())
            }
            _ => None,
        }
    }

    /// What `value` does, in the user's terms: `3 (dynamic conservative:
    /// 4,000-20,000 interrupts/s per vector (50-250 µs between interrupts))`.
    pub fn describe(&self, value: u64) -> String {
        match self.meaning("rx-usecs", value) {
            Ok(Meaning::Off) => format!("{value} ({})", self.off),
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
        self.even(us.min(self.max_fixed))
    }

    /// `us` rounded down to an even value where only even ones are taken.
    fn even(&self, us: u32) -> u32 {
        if self.even_only {
            (us & !1).max(self.min_fixed)
        } else {
            us
        }
    }

    /// The nearest accepted fixed interval to `us` (for the adaptive intent).
    pub fn fixed_value(&self, us: u32) -> u32 {
        self.even(us.clamp(self.min_fixed, self.max_fixed))
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
