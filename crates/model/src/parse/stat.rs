//! `/proc/stat`: per-CPU time in USER_HZ ticks, context switches, softirq totals.

use crate::cpuset::MAX_CPU;
use crate::error::ParseError;
use crate::units::CpuId;
use serde::{Deserialize, Serialize};

/// CPU time counters of one `cpu` line, in USER_HZ ticks (usually 1/100 s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// user.
    pub user: u64,
    /// nice.
    pub nice: u64,
    /// system.
    pub system: u64,
    /// idle.
    pub idle: u64,
    /// iowait (since 2.5.41).
    pub iowait: u64,
    /// irq (since 2.6.0).
    pub irq: u64,
    /// softirq (since 2.6.0).
    pub softirq: u64,
    /// steal (since 2.6.11).
    pub steal: u64,
    /// guest (since 2.6.24; already included in user).
    pub guest: u64,
    /// guest_nice (since 2.6.33; already included in nice).
    pub guest_nice: u64,
}

impl CpuTimes {
    /// Sum of all states except guest time (which `user`/`nice` already hold),
    /// saturating at `u64::MAX` (the values come from a file).
    pub fn total(&self) -> u64 {
        [
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .iter()
        .fold(self.user, |a, b| a.saturating_add(*b))
    }

    /// Field-wise `self - prev`, saturating at zero (CPU hotplug resets counters).
    pub fn delta(&self, prev: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(prev.user),
            nice: self.nice.saturating_sub(prev.nice),
            system: self.system.saturating_sub(prev.system),
            idle: self.idle.saturating_sub(prev.idle),
            iowait: self.iowait.saturating_sub(prev.iowait),
            irq: self.irq.saturating_sub(prev.irq),
            softirq: self.softirq.saturating_sub(prev.softirq),
            steal: self.steal.saturating_sub(prev.steal),
            guest: self.guest.saturating_sub(prev.guest),
            guest_nice: self.guest_nice.saturating_sub(prev.guest_nice),
        }
    }

    /// Shares of the total as percentages (mpstat's `%usr %sys %irq %soft %steal %idle`).
    pub fn percent(&self) -> CpuPercent {
        let t = self.total();
        let p = |v: u64| {
            if t == 0 {
                0.0
            } else {
                v as f64 * 100.0 / t as f64
            }
        };
        CpuPercent {
            usr: p(self.user.saturating_add(self.nice)),
            sys: p(self.system),
            irq: p(self.irq),
            softirq: p(self.softirq),
            steal: p(self.steal),
            iowait: p(self.iowait),
            idle: p(self.idle),
        }
    }

    /// Busy ticks: everything but idle and iowait.
    pub fn busy(&self) -> u64 {
        self.total()
            .saturating_sub(self.idle)
            .saturating_sub(self.iowait)
    }
}

/// Percent of an interval spent in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPercent {
    /// user + nice.
    pub usr: f64,
    /// system.
    pub sys: f64,
    /// hard interrupt.
    pub irq: f64,
    /// softirq.
    pub softirq: f64,
    /// stolen by the hypervisor.
    pub steal: f64,
    /// waiting for I/O.
    pub iowait: f64,
    /// idle.
    pub idle: f64,
}

/// Parsed `/proc/stat`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcStat {
    /// The aggregate `cpu` line.
    pub total: CpuTimes,
    /// Per-CPU lines, ascending; offline CPUs are missing.
    pub cpus: Vec<(CpuId, CpuTimes)>,
    /// `ctxt`.
    pub ctxt: Option<u64>,
    /// `softirq` line: total then HI, TIMER, NET_TX, NET_RX, ...
    pub softirq: Vec<u64>,
}

fn parse_times(line_no: usize, fields: &[&str]) -> Result<CpuTimes, ParseError> {
    if fields.len() < 4 {
        return Err(ParseError::format(
            line_no,
            format!("cpu line has {} fields, need at least 4", fields.len()),
        ));
    }
    let mut v = [0u64; 10];
    for (i, f) in fields.iter().take(10).enumerate() {
        v[i] = f
            .parse()
            .map_err(|_| ParseError::invalid(line_no, "cpu time", f))?;
    }
    Ok(CpuTimes {
        user: v[0],
        nice: v[1],
        system: v[2],
        idle: v[3],
        iowait: v[4],
        irq: v[5],
        softirq: v[6],
        steal: v[7],
        guest: v[8],
        guest_nice: v[9],
    })
}

/// Parse the text of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Result<ProcStat, ParseError> {
    let mut out = ProcStat::default();
    let mut saw_total = false;
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let mut it = line.split_whitespace();
        let Some(key) = it.next() else { continue };
        let rest: Vec<&str> = it.collect();
        if key == "cpu" {
            out.total = parse_times(ln, &rest)?;
            saw_total = true;
        } else if let Some(n) = key.strip_prefix("cpu") {
            let id: u32 = n
                .parse()
                .ok()
                .filter(|id| *id <= MAX_CPU)
                .ok_or_else(|| ParseError::invalid(ln, "cpu id", key))?;
            out.cpus.push((CpuId(id), parse_times(ln, &rest)?));
        } else if key == "ctxt" {
            out.ctxt = rest.first().and_then(|v| v.parse().ok());
        } else if key == "softirq" {
            out.softirq = rest
                .iter()
                .map(|v| {
                    v.parse()
                        .map_err(|_| ParseError::invalid(ln, "softirq count", v))
                })
                .collect::<Result<_, _>>()?;
        }
    }
    if !saw_total {
        return Err(if text.trim().is_empty() {
            ParseError::Empty
        } else {
            ParseError::format(1, "no aggregate `cpu` line")
        });
    }
    out.cpus.sort_by_key(|(c, _)| *c);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured on this project's 2-vCPU KVM guest, kernel 6.18.
    const STAT_6_18: &str = "cpu  547 0 476 11087 80 0 11 4 0 0
cpu0 218 0 174 5695 11 0 4 1 0 0
cpu1 328 0 302 5392 69 0 7 3 0 0
intr 1 2 3
ctxt 123456
btime 1763770000
softirq 100 0 20 3 40 0 0 2 30 0 5
";

    #[test]
    fn parses_kernel_6_18() {
        let s = parse_proc_stat(STAT_6_18).unwrap();
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(s.cpus[1].0, CpuId(1));
        assert_eq!(s.cpus[1].1.softirq, 7);
        assert_eq!(s.ctxt, Some(123456));
        assert_eq!(s.softirq[4], 40);
        assert_eq!(s.total.total(), 547 + 476 + 11087 + 80 + 11 + 4);
    }

    #[test]
    fn old_kernel_four_fields() {
        let s = parse_proc_stat("cpu 1 2 3 4\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(s.total.idle, 4);
        assert_eq!(s.total.steal, 0);
    }

    #[test]
    fn delta_and_percent() {
        let a = parse_proc_stat(STAT_6_18).unwrap();
        let b = parse_proc_stat(&STAT_6_18.replace("cpu0 218 0 174 5695", "cpu0 268 0 174 5745"))
            .unwrap();
        let d = b.cpus[0].1.delta(&a.cpus[0].1);
        let p = d.percent();
        assert!((p.usr - 50.0).abs() < 1e-9);
        assert!((p.idle - 50.0).abs() < 1e-9);
    }

    #[test]
    fn huge_counters_saturate_and_huge_cpu_ids_are_refused() {
        let m = u64::MAX;
        let s = parse_proc_stat(&format!("cpu {m} {m} {m} {m}\n")).unwrap();
        assert_eq!(s.total.total(), u64::MAX);
        assert_eq!(s.total.busy(), 0);
        assert!(parse_proc_stat("cpu 1 2 3 4\ncpu4294967295 1 2 3 4\n").is_err());
        assert!(parse_proc_stat("cpu 1 2 3 4\ncpu32768 1 2 3 4\n").is_err());
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(parse_proc_stat(""), Err(ParseError::Empty));
        assert!(parse_proc_stat("cpu 1 x 3 4\n").is_err());
        assert!(parse_proc_stat("cpu 1 2\n").is_err());
        assert!(parse_proc_stat("hello\n").is_err());
    }
}
