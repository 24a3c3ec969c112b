//! `/proc/net/softnet_stat`: one row of 32-bit hex counters per online CPU.
//!
//! Columns by kernel: processed, dropped, time_squeeze, then zeros (old
//! fastroute/cpu_collision) up to column 9 (all kernels); `received_rps`
//! (column 10, since 2.6.35); `flow_limit_count` (11, since 3.11);
//! `backlog_len` and the CPU index (12 and 13, since 5.10); `input_qlen` and
//! `process_qlen` (14 and 15, recent 6.x). Without the CPU index, row N is the
//! N-th *online* CPU, not necessarily CPU N. The counters are 32 bits and wrap.

use crate::cpuset::MAX_CPU;
use crate::error::ParseError;
use crate::units::CpuId;
use serde::{Deserialize, Serialize};

/// One CPU's row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftnetRow {
    /// CPU index from column 13 (kernel 5.10+); `None` on older kernels.
    pub cpu: Option<CpuId>,
    /// Packets taken off the backlog / processed by NAPI on this CPU.
    pub processed: u32,
    /// Packets dropped because the backlog was full (`netdev_max_backlog`).
    pub dropped: u32,
    /// Times net_rx_action ran out of budget or time with work left.
    pub time_squeeze: u32,
    /// RPS IPIs received (2.6.35+).
    pub received_rps: Option<u32>,
    /// Packets dropped by the flow limit (3.11+).
    pub flow_limit_count: Option<u32>,
    /// Backlog queue length at read time (5.10+; a level, not a counter).
    pub backlog_len: Option<u32>,
    /// How many columns the row had.
    pub columns: usize,
}

/// Parsed `/proc/net/softnet_stat`, rows in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Softnet {
    /// Rows.
    pub rows: Vec<SoftnetRow>,
}

/// Parse the text of `/proc/net/softnet_stat`.
pub fn parse_softnet(text: &str) -> Result<Softnet, ParseError> {
    let mut rows = Vec::with_capacity(8);
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let mut v = [0u32; 16];
        let mut n = 0;
        for tok in line.split_whitespace() {
            if n == v.len() {
                return Err(ParseError::format(ln, "more than 16 columns"));
            }
            v[n] = u32::from_str_radix(tok, 16)
                .map_err(|_| ParseError::invalid(ln, "hex counter", tok))?;
            n += 1;
        }
        if n < 9 {
            return Err(ParseError::format(
                ln,
                format!("{n} columns, expected at least 9"),
            ));
        }
        let col = |k: usize| (n > k).then_some(v[k]);
        if col(12).is_some_and(|c| c > MAX_CPU) {
            return Err(ParseError::invalid(ln, "cpu index (too large)", line));
        }
        rows.push(SoftnetRow {
            cpu: col(12).map(CpuId),
            processed: v[0],
            dropped: v[1],
            time_squeeze: v[2],
            received_rps: col(9),
            flow_limit_count: col(10),
            backlog_len: col(11),
            columns: n,
        });
    }
    if rows.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(Softnet { rows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18 (15 columns).
    const KVM_6_18: &str = "\
00000011 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
0000097f 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000000 00000000
";

    // Kernel 5.10 layout (13 columns) with CPU 1 offline: rows are CPUs 0 and 2.
    const K5_10: &str = "\
0a000000 00000010 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000004 00000001 00000002 00000000
ffffffff 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002
";

    // Kernel 3.10 layout (11 columns, no CPU index); values illustrative.
    const K3_10: &str = "\
1b3c5d7e 00000002 0000002a 00000000 00000000 00000000 00000000 00000000 00000000 00000100 00000005
";

    // Kernel 2.6.32 layout (9 columns: no received_rps).
    const K2_6_32: &str = "\
00001234 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000
";

    #[test]
    fn parses_kvm_6_18() {
        let s = parse_softnet(KVM_6_18).unwrap();
        assert_eq!(s.rows.len(), 2);
        assert_eq!(s.rows[0].cpu, Some(CpuId(0)));
        assert_eq!(s.rows[1].cpu, Some(CpuId(1)));
        assert_eq!(s.rows[1].processed, 0x97f);
        assert_eq!(s.rows[1].received_rps, Some(0));
        assert_eq!(s.rows[1].columns, 15);
    }

    #[test]
    fn parses_5_10_with_offline_cpu() {
        let s = parse_softnet(K5_10).unwrap();
        assert_eq!(s.rows[1].cpu, Some(CpuId(2)));
        assert_eq!(s.rows[1].processed, u32::MAX);
        assert_eq!(s.rows[0].dropped, 16);
        assert_eq!(s.rows[0].received_rps, Some(4));
        assert_eq!(s.rows[0].flow_limit_count, Some(1));
        assert_eq!(s.rows[0].backlog_len, Some(2));
    }

    #[test]
    fn parses_older_layouts() {
        let s = parse_softnet(K3_10).unwrap();
        assert_eq!(s.rows[0].cpu, None);
        assert_eq!(s.rows[0].time_squeeze, 42);
        assert_eq!(s.rows[0].received_rps, Some(256));
        assert_eq!(s.rows[0].flow_limit_count, Some(5));
        assert_eq!(s.rows[0].backlog_len, None);
        let s = parse_softnet(K2_6_32).unwrap();
        assert_eq!(s.rows[0].received_rps, None);
        assert_eq!(s.rows[0].flow_limit_count, None);
    }

    #[test]
    fn cpu_index_beyond_the_largest_cpu_is_refused() {
        let row = |cpu: &str| format!("{}{cpu}\n", "00000000 ".repeat(12));
        assert_eq!(
            parse_softnet(&row("00007fff")).unwrap().rows[0].cpu,
            Some(CpuId(32767))
        );
        assert!(parse_softnet(&row("00008000")).is_err());
        assert!(parse_softnet(&row("ffffffff")).is_err());
    }

    #[test]
    fn garbage_and_truncation() {
        assert_eq!(parse_softnet(""), Err(ParseError::Empty));
        assert!(parse_softnet("00000001 00000002\n").is_err());
        assert!(parse_softnet("zzzz 0 0 0 0 0 0 0 0\n").is_err());
        assert!(parse_softnet("100000000 0 0 0 0 0 0 0 0\n").is_err());
        assert!(parse_softnet(&format!("{} 0\n", "0 ".repeat(16))).is_err());
        assert!(parse_softnet(&KVM_6_18[..150]).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "[0-9a-fx \\n]{0,300}") {
            let _ = parse_softnet(&s);
        }

        #[test]
        fn never_panics_on_cut_real_text(n in 0usize..300) {
            let n = n.min(KVM_6_18.len());
            let _ = parse_softnet(&KVM_6_18[..n]);
        }
    }
}
