//! `/proc/net/stat/nf_conntrack`: a header of column names, then one row of
//! hex counters per possible CPU (`entries` is the global table size,
//! repeated on every row; the others are per-CPU counters).
//!
//! Columns differ by kernel (6.x: `entries clashres found new invalid ignore
//! delete chainlength insert insert_failed drop early_drop icmp_error
//! expect_new expect_create expect_delete search_restart`; 4.x has
//! `searched`, `delete_list`...), so columns are taken by name.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};

/// Parsed `/proc/net/stat/nf_conntrack`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConntrackStat {
    /// Column names from the header.
    pub columns: Vec<String>,
    /// One row per CPU, one value per column.
    pub rows: Vec<Vec<u64>>,
}

impl ConntrackStat {
    /// A counter summed over CPUs (saturating); `entries` (a level, the
    /// same on every row) is taken from the first row. `None` when the
    /// kernel has no such column.
    pub fn total(&self, column: &str) -> Option<u64> {
        let k = self.columns.iter().position(|c| c == column)?;
        if column == "entries" {
            return self.rows.first().and_then(|r| r.get(k)).copied();
        }
        Some(
            self.rows
                .iter()
                .filter_map(|r| r.get(k))
                .fold(0u64, |a, v| a.saturating_add(*v)),
        )
    }
}

/// Most columns accepted (6.18 prints 17).
const MAX_COLUMNS: usize = 64;
/// Most rows accepted (one per possible CPU).
const MAX_ROWS: usize = 32_768;

/// Parse the text of `/proc/net/stat/nf_conntrack`.
pub fn parse_conntrack_stat(text: &str) -> Result<ConntrackStat, ParseError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or(ParseError::Empty)?;
    let columns: Vec<String> = header.split_whitespace().map(str::to_string).collect();
    if columns.len() > MAX_COLUMNS {
        return Err(ParseError::format(1, "more than 64 columns"));
    }
    if columns
        .iter()
        .any(|c| !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
    {
        return Err(ParseError::format(
            1,
            "header is not a list of column names",
        ));
    }
    let mut rows = Vec::new();
    for (i, line) in lines {
        let ln = i + 1;
        if rows.len() == MAX_ROWS {
            return Err(ParseError::format(ln, "more rows than CPUs can exist"));
        }
        let row: Vec<u64> = line
            .split_whitespace()
            .map(|t| {
                u64::from_str_radix(t, 16).map_err(|_| ParseError::invalid(ln, "hex counter", t))
            })
            .collect::<Result<_, _>>()?;
        if row.len() != columns.len() {
            return Err(ParseError::format(
                ln,
                format!("{} values under {} columns", row.len(), columns.len()),
            ));
        }
        rows.push(row);
    }
    Ok(ConntrackStat { columns, rows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18 (idle table).
    const KVM_6_18: &str = "\
entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart
00000000  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000  00000000 00000000 00000000 00000000
00000000  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000  00000000 00000000 00000000 00000000
";

    // Kernel 4.19 layout (`searched`, `delete_list`, `search_restart`); a
    // full table dropping on CPU 1; values illustrative.
    const K4_19_FULL: &str = "\
entries  searched found new invalid ignore delete delete_list insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart
0003fffe  00000000 0000a000 00000000 00000010 00000000 00000000 00000000 00000000 00000002 00000100 00000020 00000000  00000000 00000000 00000000 00000000
0003fffe  00000000 0000b000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000200 00000010 00000000  00000000 00000000 00000000 00000000
";

    #[test]
    fn parses_kvm_6_18() {
        let s = parse_conntrack_stat(KVM_6_18).unwrap();
        assert_eq!(s.columns.len(), 17);
        assert_eq!(s.rows.len(), 2);
        assert_eq!(s.total("drop"), Some(0));
        assert_eq!(s.total("clashres"), Some(0));
        assert_eq!(s.total("searched"), None);
    }

    #[test]
    fn sums_counters_and_takes_entries_once() {
        let s = parse_conntrack_stat(K4_19_FULL).unwrap();
        assert_eq!(s.total("entries"), Some(0x3fffe));
        assert_eq!(s.total("drop"), Some(0x300));
        assert_eq!(s.total("early_drop"), Some(0x30));
        assert_eq!(s.total("insert_failed"), Some(3));
    }

    #[test]
    fn garbage() {
        assert_eq!(parse_conntrack_stat(""), Err(ParseError::Empty));
        assert!(parse_conntrack_stat("entries drop\n1\n").is_err());
        assert!(parse_conntrack_stat("entries drop\n1 zz\n").is_err());
        assert!(parse_conntrack_stat("0001 0002\n1 2\n").is_ok());
        assert!(parse_conntrack_stat("a-b c\n").is_err());
        assert!(parse_conntrack_stat("a b\n1 ffffffffffffffffff\n").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "[a-z0-9 _\\n]{0,300}") {
            let _ = parse_conntrack_stat(&s);
        }
    }
}
