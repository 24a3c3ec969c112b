//! Small sysfs values: integers, `(null)`-or-cpulist, PCI addresses, NUMA
//! distances and `MemTotal`. Pure; `host` reads the files.

use crate::{CpuSet, ParseError};

pub fn parse_u64(s: &str) -> Result<u64, ParseError> {
    s.trim()
        .parse()
        .map_err(|_| ParseError::invalid(1, "unsigned integer", s.trim()))
}

pub fn parse_u32(s: &str) -> Result<u32, ParseError> {
    s.trim()
        .parse()
        .map_err(|_| ParseError::invalid(1, "unsigned integer", s.trim()))
}

pub fn parse_i32(s: &str) -> Result<i32, ParseError> {
    s.trim()
        .parse()
        .map_err(|_| ParseError::invalid(1, "integer", s.trim()))
}

/// `nohz_full` prints `(null)` when unset.
pub fn parse_list_or_null(s: &str) -> Result<CpuSet, ParseError> {
    let s = s.trim();
    if s == "(null)" {
        return Ok(CpuSet::new());
    }
    CpuSet::parse_list(s)
}

/// A PCI address such as `0000:00:03.0`.
pub fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && s.chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// A PCI `vendor` or `device` file: `0x8086`.
pub fn parse_pci_hex(s: &str) -> Result<u16, ParseError> {
    let t = s.trim();
    t.strip_prefix("0x")
        .and_then(|h| u16::from_str_radix(h, 16).ok())
        .ok_or_else(|| ParseError::invalid(1, "PCI id (0x followed by 4 hex digits)", t))
}

/// `nodeN/distance`: whitespace-separated distances.
pub fn parse_distances(s: &str) -> Result<Vec<u32>, ParseError> {
    s.split_whitespace()
        .map(|t| t.parse().map_err(|_| ParseError::invalid(1, "distance", t)))
        .collect()
}

/// `MemTotal` in KiB from `nodeN/meminfo` (`Node 0 MemTotal:  4941600 kB`)
/// or `/proc/meminfo` (`MemTotal:  4941600 kB`).
pub fn parse_mem_total_kib(s: &str) -> Result<u64, ParseError> {
    for (i, line) in s.lines().enumerate() {
        if let Some((head, rest)) = line.split_once(':') {
            if head.split_whitespace().last() == Some("MemTotal") {
                let v = rest.split_whitespace().next().unwrap_or("");
                return v
                    .parse()
                    .map_err(|_| ParseError::invalid(i + 1, "MemTotal value", v));
            }
        }
    }
    Err(ParseError::format(1, "no MemTotal line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_ids() {
        assert_eq!(parse_pci_hex("0x100e\n").ok(), Some(0x100e));
        assert_eq!(parse_pci_hex("0x8086").ok(), Some(0x8086));
        assert!(parse_pci_hex("100e").is_err());
        assert!(parse_pci_hex("0x1ffff").is_err());
    }

    #[test]
    fn pci_addresses() {
        assert!(is_pci_address("0000:00:03.0"));
        assert!(is_pci_address("0000:af:00.1"));
        assert!(!is_pci_address("virtio2"));
        assert!(!is_pci_address("0000:00:03"));
        assert!(!is_pci_address("pci0000:00"));
    }

    #[test]
    fn distances_and_meminfo() {
        assert_eq!(parse_distances("10 20\n").unwrap(), vec![10, 20]);
        assert!(parse_distances("10 x").is_err());
        assert_eq!(
            parse_mem_total_kib("Node 0 MemTotal:        4941600 kB\nNode 0 MemFree: 1 kB\n")
                .unwrap(),
            4_941_600
        );
        assert_eq!(
            parse_mem_total_kib("MemTotal:       16384 kB\n").unwrap(),
            16384
        );
        assert!(parse_mem_total_kib("garbage").is_err());
        assert!(parse_mem_total_kib("Node 0 MemTotal: lots kB").is_err());
    }

    #[test]
    fn nohz_null() {
        assert!(parse_list_or_null("(null)\n").unwrap().is_empty());
        assert_eq!(parse_list_or_null("1-3").unwrap().to_list(), "1-3");
    }
}
