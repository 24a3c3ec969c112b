//! Newtypes for units and identifiers, so that bytes are never added to bits.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

macro_rules! counter_newtype {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u64);

        impl Add for $name {
            type Output = $name;
            fn add(self, o: $name) -> $name { $name(self.0.wrapping_add(o.0)) }
        }
        impl AddAssign for $name {
            fn add_assign(&mut self, o: $name) { self.0 = self.0.wrapping_add(o.0); }
        }
        impl Sub for $name {
            type Output = $name;
            /// Saturating: a counter that went backwards (reset) yields zero.
            fn sub(self, o: $name) -> $name { $name(self.0.saturating_sub(o.0)) }
        }
        impl From<u64> for $name {
            fn from(v: u64) -> Self { $name(v) }
        }
    };
}

counter_newtype!(
    /// A count of bytes.
    Bytes
);
counter_newtype!(
    /// A count of bits.
    Bits
);
counter_newtype!(
    /// A count of packets (or datagrams, or messages).
    Packets
);
counter_newtype!(
    /// A duration or timestamp in nanoseconds.
    Nanos
);

impl Bytes {
    /// The same quantity in bits.
    pub fn to_bits(self) -> Bits {
        Bits(self.0.saturating_mul(8))
    }
}

impl Bits {
    /// The same quantity in whole bytes (rounded down).
    pub fn to_bytes(self) -> Bytes {
        Bytes(self.0 / 8)
    }
}

impl Nanos {
    /// Nanoseconds as fractional seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Nanoseconds as fractional microseconds.
    pub fn as_micros_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// From a [`std::time::Duration`], saturating at `u64::MAX`.
    pub fn from_duration(d: std::time::Duration) -> Self {
        Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

macro_rules! id_newtype {
    ($(#[$m:meta])* $name:ident, $inner:ty, $prefix:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_newtype!(
    /// A logical CPU number as the kernel numbers it (`cpu0`, `cpu1`, ...).
    CpuId, u32, "cpu"
);
id_newtype!(
    /// An interrupt number as listed in `/proc/interrupts` and `/proc/irq/N`.
    IrqNumber, u32, ""
);
id_newtype!(
    /// A NUMA node number (`/sys/devices/system/node/nodeN`).
    NodeId, u32, "node"
);

/// Why a count, rate or size given on a command line (or in a file) was
/// refused; each names the text given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a number with an SI suffix.
    #[error("`{0}` is not a number (suffixes k, M, G, T allowed)")]
    NotNumber(String),
    /// Negative, infinite or NaN.
    #[error("`{0}` must be a non-negative number")]
    Negative(String),
    /// Not a byte count with a binary suffix.
    #[error("`{0}` is not a byte count (suffixes K, M, G allowed)")]
    NotBytes(String),
    /// Overflows 64 bits.
    #[error("`{0}` is too large")]
    TooLarge(String),
    /// A rate spelled with `bps`, which tc(8) reads as bytes per second
    /// and iperf3's users as bits.
    #[error("`{0}`: tc(8) reads `bps` as bytes per second, iperf3 as bits; write bits as `{1}bit` (or bytes x 8)")]
    AmbiguousBps(String, String),
    /// Not a duration.
    #[error("`{0}` is not a duration (seconds, or a number with ms, s, m or h: 500ms, 2s, 1m)")]
    NotDuration(String),
}

/// At most 64 characters of what was given, for an error message.
fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

/// Parse a count with an optional SI suffix (`10G`, `1.5M`, `64k`), base
/// 1000: packets or transactions per second, a number of anything.
pub fn parse_si(s: &str) -> Result<f64, UnitError> {
    let t = s.trim();
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G') => (&t[..t.len() - 1], 1e9),
        Some('t' | 'T') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| UnitError::NotNumber(clip(s)))?;
    if !v.is_finite() || v < 0.0 {
        return Err(UnitError::Negative(clip(s)));
    }
    Ok(v * mul)
}

/// Parse a rate: an SI count (`10G`, `1.5M`) optionally followed by
/// `bit` or `bit/s` (`1gbit`, `100mbit/s`), any case. `bps` is refused:
/// tc(8), which the lab's links use, reads `mbps` as megabytes per second.
/// Bits per second for a link or a stream; for a request/response test the
/// same number is transactions per second. One parser for every `--rate`.
pub fn parse_rate(s: &str) -> Result<f64, UnitError> {
    let t = s.trim().to_ascii_lowercase();
    if let Some(n) = t.strip_suffix("bps") {
        return Err(UnitError::AmbiguousBps(clip(s), clip(n.trim())));
    }
    let num = t
        .strip_suffix("bit/s")
        .or_else(|| t.strip_suffix("bit"))
        .unwrap_or(&t);
    parse_si(num).map_err(|e| match e {
        UnitError::NotNumber(_) => UnitError::NotNumber(clip(s)),
        UnitError::Negative(_) => UnitError::Negative(clip(s)),
        other => other,
    })
}

/// Parse a byte size with an optional binary suffix (`128K`, `4M`, `1G`),
/// base 1024, whole bytes. One parser for every size flag.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let v: u64 = num.parse().map_err(|_| UnitError::NotBytes(clip(s)))?;
    v.checked_mul(mul)
        .ok_or_else(|| UnitError::TooLarge(clip(s)))
}

/// Parse a duration in seconds: a plain number is seconds (`2`, `0.5`),
/// else a number with a unit `ms`, `s`, `m` or `h` (`500ms`, `2s`, `1m`,
/// `1.5h`), any case, space allowed before the unit. Non-negative and
/// finite. One parser for every duration flag that counts in seconds.
pub fn parse_seconds(s: &str) -> Result<f64, UnitError> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mul) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t.as_str(), 1.0)
    };
    let v: f64 = num
        .trim_end()
        .parse()
        .map_err(|_| UnitError::NotDuration(clip(s)))?;
    let secs = v * mul;
    if !secs.is_finite() || secs < 0.0 {
        return Err(UnitError::Negative(clip(s)));
    }
    Ok(secs)
}

/// The unit of bit rates (`Gbit/s`, `Mbit/s`, `kbit/s` once scaled).
pub const BITS_PER_SEC: &str = "bit/s";

/// The unit of packet (UDP datagram) rates (`Mpps`, `kpps`, `pps`).
pub const PACKETS_PER_SEC: &str = "pps";

/// The unit of transaction rates (`Mtps`, `ktps`, `tps`); also how results
/// recorded in `1/s` (transactions) are shown.
pub const TRANSACTIONS_PER_SEC: &str = "tps";

/// The unit of connection rates (tcp-crr: one connection per transaction):
/// `cps`, `kcps`, as the `max-cps` objective names it.
pub const CONNECTIONS_PER_SEC: &str = "cps";

/// The unit of event rates that are not packets (interrupts, softirqs,
/// budget squeezes): `950/s`, `37.6k/s`, `1.25M/s` (the prefix and `/s`
/// written without a space).
pub const EVENTS_PER_SEC: &str = "/s";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_saturate_on_reset() {
        assert_eq!(Packets(5) - Packets(9), Packets(0));
        assert_eq!(Bytes(3).to_bits(), Bits(24));
        assert_eq!(Bits(17).to_bytes(), Bytes(2));
    }

    #[test]
    fn si_rates_and_sizes() {
        assert_eq!(parse_si("10G").unwrap(), 1e10);
        assert_eq!(parse_si("1.5k").unwrap(), 1500.0);
        assert!(parse_si("x").is_err());
        assert!(parse_si("1gbit").is_err());
        for (t, v) in [
            ("1gbit", 1e9),
            ("100mbit", 1e8),
            ("1.5G", 1.5e9),
            ("10Gbit/s", 1e10),
            ("20k", 2e4),
            ("100000000", 1e8),
        ] {
            assert_eq!(parse_rate(t).unwrap(), v, "{t}");
        }
        for bad in ["", "gbit", "1xbit", "-1gbit", "nan", "inf"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        // Issue 38: tc(8) reads `mbps` as megabytes per second, iperf3
        // users mean megabits: the spelling is refused, naming both.
        for amb in ["100mbps", "500Mbps", "1gbps", "64kbps", "800bps"] {
            let e = parse_rate(amb).unwrap_err().to_string();
            assert!(e.contains("bytes") && e.contains("bit"), "{amb}: {e}");
        }
        assert_eq!(parse_size("4M").unwrap(), 4 << 20);
        assert_eq!(parse_size("128K").unwrap(), 128 << 10);
        assert_eq!(parse_size(" 64 ").unwrap(), 64);
        assert!(parse_size("1.5M").is_err());
        // The messages name the text given.
        assert_eq!(
            parse_si("-1").unwrap_err().to_string(),
            "`-1` must be a non-negative number"
        );
        assert_eq!(
            parse_rate("-1gbit").unwrap_err().to_string(),
            "`-1gbit` must be a non-negative number"
        );
        assert_eq!(
            parse_size("99999999999G").unwrap_err().to_string(),
            "`99999999999G` is too large"
        );
    }

    /// `bench -d 2s` was refused ("invalid float literal").
    #[test]
    fn durations_take_a_unit() {
        for (t, v) in [
            ("2", 2.0),
            ("2s", 2.0),
            ("500ms", 0.5),
            ("1m", 60.0),
            ("0.5", 0.5),
            (" 1.5 S ", 1.5),
            ("2h", 7200.0),
            ("0", 0.0),
        ] {
            assert_eq!(parse_seconds(t).unwrap(), v, "{t}");
        }
        for bad in ["", "s", "2x", "ms", "-1", "-1s", "inf", "nan", "1e400"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_seconds("2x").unwrap_err().to_string(),
            "`2x` is not a duration (seconds, or a number with ms, s, m or h: 500ms, 2s, 1m)"
        );
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,40}") {
            let _ = parse_seconds(&s);
            let _ = parse_si(&s);
            let _ = parse_rate(&s);
            let _ = parse_size(&s);
        }
    }
}
