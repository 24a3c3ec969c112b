//! Pure parsers of `/proc` and `/sys` text.

pub mod interrupts;
pub mod irqname;
pub mod netdev;
pub mod snmp;
pub mod softirqs;
pub mod softnet;
pub mod stat;
