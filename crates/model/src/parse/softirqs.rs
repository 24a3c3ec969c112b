//! `/proc/softirqs`: per-CPU counts of each softirq vector (`NET_RX`, `NET_TX`, ...).
//!
//! The header names the CPU columns (offline CPUs have none). Vector names
//! vary by kernel (`BLOCK_IOPOLL` became `IRQ_POLL` in 4.5); lookups are by name.

use crate::error::ParseError;
use crate::units::CpuId;
use serde::{Deserialize, Serialize};

/// One softirq vector's counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftirqRow {
    /// Vector name without the colon (`NET_RX`).
    pub name: String,
    /// Counts, one per column of [`Softirqs::cpus`].
    pub per_cpu: Vec<u64>,
}

/// Parsed `/proc/softirqs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Softirqs {
    /// The CPU of each count column.
    pub cpus: Vec<CpuId>,
    /// Vectors in file order.
    pub rows: Vec<SoftirqRow>,
}

impl Softirqs {
    /// Per-CPU counts of vector `name` (`"NET_RX"`).
    pub fn get(&self, name: &str) -> Option<&[u64]> {
        self.rows
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.per_cpu.as_slice())
    }

    /// Count of vector `name` on `cpu`.
    pub fn count(&self, name: &str, cpu: CpuId) -> Option<u64> {
        let col = self.cpus.iter().position(|c| *c == cpu)?;
        self.get(name)?.get(col).copied()
    }
}

/// Parse the text of `/proc/softirqs`.
pub fn parse_softirqs(text: &str) -> Result<Softirqs, ParseError> {
    let (lines, cpus) = super::cpu_header(text)?;
    let mut rows = Vec::with_capacity(12);
    for (i, line) in lines {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (name, rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::format(ln, "no `:` after the softirq name"))?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(ParseError::invalid(ln, "softirq name", name));
        }
        let per_cpu: Vec<u64> = rest
            .split_whitespace()
            .map(|t| {
                t.parse()
                    .map_err(|_| ParseError::invalid(ln, "softirq count", t))
            })
            .collect::<Result<_, _>>()?;
        if per_cpu.len() != cpus.len() {
            return Err(ParseError::format(
                ln,
                format!(
                    "{name} has {} counts for {} CPU columns",
                    per_cpu.len(),
                    cpus.len()
                ),
            ));
        }
        rows.push(SoftirqRow {
            name: name.to_string(),
            per_cpu,
        });
    }
    if rows.is_empty() {
        return Err(ParseError::format(
            text.lines().count().max(1),
            "no softirq rows after the header",
        ));
    }
    Ok(Softirqs { cpus, rows })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18.
    const KVM_6_18: &str = "                    CPU0       CPU1       
          HI:          0          0
       TIMER:       5486       5719
      NET_TX:         12          4
      NET_RX:        741        982
       BLOCK:          0      32257
    IRQ_POLL:          0          0
     TASKLET:         69          3
       SCHED:      10697       9279
     HRTIMER:          0          0
         RCU:      12912      13976
";

    // Layout of kernel 3.10 (BLOCK_IOPOLL, before the 4.5 rename), CPU2 offline;
    // counts illustrative.
    const OLD_3_10: &str = "                    CPU0       CPU1       CPU3
          HI:          1          0          0
       TIMER:   10432141    9876543    8765432
      NET_TX:       2211        101         99
      NET_RX:  123456789     234567       3456
       BLOCK:      88888          0          0
BLOCK_IOPOLL:          0          0          0
     TASKLET:         12          0          0
       SCHED:    4567890    3456789    2345678
     HRTIMER:          0          0          0
         RCU:    7654321    6543210    5432109
";

    #[test]
    fn parses_kvm_6_18() {
        let s = parse_softirqs(KVM_6_18).unwrap();
        assert_eq!(s.cpus, vec![CpuId(0), CpuId(1)]);
        assert_eq!(s.rows.len(), 10);
        assert_eq!(s.get("NET_RX"), Some(&[741, 982][..]));
        assert_eq!(s.count("NET_TX", CpuId(1)), Some(4));
        assert_eq!(s.count("NET_TX", CpuId(7)), None);
        assert_eq!(s.get("BLOCK_IOPOLL"), None);
    }

    #[test]
    fn parses_old_layout_with_offline_cpu() {
        let s = parse_softirqs(OLD_3_10).unwrap();
        assert_eq!(s.cpus, vec![CpuId(0), CpuId(1), CpuId(3)]);
        assert_eq!(s.count("NET_RX", CpuId(3)), Some(3456));
        assert!(s.get("BLOCK_IOPOLL").is_some());
    }

    #[test]
    fn garbage_and_truncation() {
        assert_eq!(parse_softirqs(""), Err(ParseError::Empty));
        assert!(parse_softirqs("hello world\n").is_err());
        assert!(parse_softirqs("   CPU0 CPU1\n").is_err());
        assert!(parse_softirqs("   CPU0 CPU1\n NET_RX: 1\n").is_err());
        assert!(parse_softirqs("   CPU0 CPU1\n NET_RX: 1 x\n").is_err());
        assert!(parse_softirqs("   CPU0 CPU1\n NET_RX 1 2\n").is_err());
        let cut = &KVM_6_18[..KVM_6_18.find("NET_RX:").unwrap() + 14];
        assert!(parse_softirqs(cut).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") {
            let _ = parse_softirqs(&s);
        }

        #[test]
        fn never_panics_on_cut_real_text(n in 0usize..400) {
            let n = n.min(KVM_6_18.len());
            let _ = parse_softirqs(&KVM_6_18[..n]);
        }
    }
}
