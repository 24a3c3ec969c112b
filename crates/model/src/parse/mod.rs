//! Pure parsers of `/proc` and `/sys` text.

pub mod interrupts;
pub mod irqname;
pub mod stat;
