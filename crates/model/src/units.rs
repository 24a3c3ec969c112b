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

/// Format a rate in bits per second with an SI prefix, e.g. `25.3 Gbit/s`.
pub fn fmt_bits_per_sec(bps: f64) -> String {
    fmt_si(bps, "bit/s")
}

/// Format a rate with an SI prefix and a unit, e.g. `1.20 Mpps`-style `1.20 Mpkt/s`.
pub fn fmt_si(v: f64, unit: &str) -> String {
    let (div, p) = if v.abs() >= 1e9 {
        (1e9, "G")
    } else if v.abs() >= 1e6 {
        (1e6, "M")
    } else if v.abs() >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / div;
    if p.is_empty() {
        format!("{x:.0} {unit}")
    } else {
        format!("{x:.2} {p}{unit}")
    }
}

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
    fn si_formatting() {
        assert_eq!(fmt_bits_per_sec(25_300_000_000.0), "25.30 Gbit/s");
        assert_eq!(fmt_si(999.0, "pkt/s"), "999 pkt/s");
        assert_eq!(fmt_si(1500.0, "pkt/s"), "1.50 kpkt/s");
    }
}
