//! Pure parsers of `/proc` and `/sys` text.

pub mod ethtool_stats;
pub mod interrupts;
pub mod irqname;
pub mod netdev;
pub mod snmp;
pub mod sockstat;
pub mod softirqs;
pub mod softnet;
pub mod stat;
pub mod sysfs;

use crate::cpuset::MAX_CPU;
use crate::error::ParseError;
use crate::units::CpuId;

/// Parse a `CPU0 CPU1 ...` column header (of `/proc/interrupts` or
/// `/proc/softirqs`) from the first non-blank line; returns the rest of the
/// lines (numbered from 0) and the CPU of each column. Offline CPUs have no column.
/// A CPU number above [`MAX_CPU`] is refused, and so are more columns than
/// CPUs can exist.
pub(crate) fn cpu_header<'a>(
    text: &'a str,
) -> Result<(impl Iterator<Item = (usize, &'a str)> + 'a, Vec<CpuId>), ParseError> {
    let mut lines = text.lines().enumerate();
    let (hi, header) = lines
        .by_ref()
        .find(|(_, l)| !l.trim().is_empty())
        .ok_or(ParseError::Empty)?;
    let cpus: Vec<CpuId> = header
        .split_whitespace()
        .map(|h| {
            h.strip_prefix("CPU")
                .and_then(|n| n.parse().ok())
                .filter(|n| *n <= MAX_CPU)
                .map(CpuId)
                .ok_or_else(|| ParseError::invalid(hi + 1, "CPU column header", h))
        })
        .collect::<Result<_, _>>()?;
    if cpus.is_empty() {
        return Err(ParseError::format(hi + 1, "header names no CPU columns"));
    }
    if cpus.len() > MAX_CPU as usize + 1 {
        return Err(ParseError::format(
            hi + 1,
            format!("{} CPU columns, more than CPUs can exist", cpus.len()),
        ));
    }
    Ok((lines, cpus))
}
