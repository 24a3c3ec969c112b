//! CPU and kernel-counter accounting around the measured window: per-CPU
//! deltas from the host sampler, device interrupts per CPU and interface
//! (the sampler's `/proc/interrupts` reads), process rusage, and
//! `/proc/net/snmp` UDP counters.

use crate::report::{CpuReport, CpuUse, IrqRates};
use crate::sys;
use host::others::OthersMark;
use host::sampler::{Sample, Sampler};
use host::Root;
use model::parse::stat::{parse_proc_stat, ProcStat};
use model::parse::udp_snmp::UdpCounters;
use std::time::Instant;

/// One reading at a window edge.
#[derive(Debug, Clone)]
pub struct CpuMark {
    at: Instant,
    sample: Result<Sample, String>,
    ru: sys::Rusage,
    others: OthersMark,
}

impl CpuMark {
    /// The host sample of this mark, when it could be read.
    pub fn sample(&self) -> Option<&Sample> {
        self.sample.as_ref().ok()
    }
}

/// Sample the host and rusage now.
pub fn mark(sampler: &mut Sampler) -> CpuMark {
    CpuMark {
        at: Instant::now(),
        sample: sampler.sample().map_err(|e| e.to_string()),
        ru: sys::process_rusage(),
        others: OthersMark::read(sampler.root()),
    }
}

/// The report between two marks.
pub fn report(a: &CpuMark, b: &CpuMark) -> CpuReport {
    let seconds = b.at.duration_since(a.at).as_secs_f64();
    let mut r = CpuReport {
        seconds,
        process_user_us: b.ru.user_us.saturating_sub(a.ru.user_us),
        process_sys_us: b.ru.sys_us.saturating_sub(a.ru.sys_us),
        ..CpuReport::default()
    };
    match (&a.sample, &b.sample) {
        (Ok(sa), Ok(sb)) => {
            let d = sb.delta(sa);
            let hz = sys::clock_ticks() as f64;
            for c in &d.cpus {
                r.cpus.push(CpuUse {
                    cpu: c.cpu.0,
                    usr: c.pct.usr,
                    sys: c.pct.sys,
                    irq: c.pct.irq,
                    softirq: c.pct.softirq,
                    steal: c.pct.steal,
                    idle: c.pct.idle + c.pct.iowait,
                });
            }
            r.host_busy_us = busy_cpus(&r.cpus) * seconds * 1e6;
            if sa.interrupts.is_some() && sb.interrupts.is_some() {
                let ids: Vec<u32> = r.cpus.iter().map(|c| c.cpu).collect();
                r.interrupts = Some(IrqRates::of(&d.irqs, &ids, seconds));
            }
            let others = b.others.since(&a.others);
            r.others_cpu_s = Some(others.ticks as f64 / hz);
            r.others_top = others
                .top
                .map(|(comm, t)| format!("{comm} {:.2} CPU-s", t as f64 / hz));
            if !d.notes.is_empty() && r.cpus.is_empty() {
                r.note = Some(d.notes.join("; "));
            }
        }
        (Err(e), _) | (_, Err(e)) => r.note = Some(e.clone()),
    }
    r
}

/// CPUs' worth of busy time in per-CPU lines: the sum of each CPU's busy
/// share (100 − idle, where idle includes iowait), so the host's figure is
/// the sum of the lines printed beside it. (Busy ticks over wall seconds
/// disagree with the lines when a CPU's ticks in the window fall short of
/// the wall time, as on a tickless or preempted vCPU.)
pub fn busy_cpus(cpus: &[CpuUse]) -> f64 {
    cpus.iter()
        .map(|c| ((100.0 - c.idle) / 100.0).clamp(0.0, 1.0))
        .filter(|v| v.is_finite())
        .sum()
}

/// `/proc/stat` now (the per-interval CPU read: only this file, cheap).
pub fn read_stat(root: &Root) -> Option<ProcStat> {
    root.read("/proc/stat")
        .ok()
        .and_then(|t| parse_proc_stat(&t).ok())
}

/// Per-CPU use between two `/proc/stat` reads, for the CPUs in both (the
/// same arithmetic as the window's [`report`]: idle includes iowait).
pub fn per_cpu(a: &ProcStat, b: &ProcStat) -> Vec<CpuUse> {
    b.cpus
        .iter()
        .filter_map(|(id, now)| {
            let (_, before) = a.cpus.iter().find(|(i, _)| i == id)?;
            let p = now.delta(before).percent();
            Some(CpuUse {
                cpu: id.0,
                usr: p.usr,
                sys: p.sys,
                irq: p.irq,
                softirq: p.softirq,
                steal: p.steal,
                idle: p.idle + p.iowait,
            })
        })
        .collect()
}

/// Read the UDP snmp counters of this network namespace: IPv4
/// (`/proc/net/snmp`) plus IPv6 (`/proc/net/snmp6`, when IPv6 is there), so
/// the cross-check holds over either family. The parsing is
/// `model::parse::udp_snmp`.
pub fn udp_snmp(root: &Root) -> Option<UdpCounters> {
    let v4 = root
        .read("/proc/net/snmp")
        .ok()
        .and_then(|t| UdpCounters::from_snmp(&t))?;
    let v6 = root
        .read_opt("/proc/net/snmp6")
        .ok()
        .flatten()
        .and_then(|t| UdpCounters::from_snmp6(&t))
        .unwrap_or_default();
    Some(v4.plus(&v6))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(cpu: u32, usr: f64, sys: f64, irq: f64, softirq: f64, steal: f64) -> CpuUse {
        CpuUse {
            cpu,
            usr,
            sys,
            irq,
            softirq,
            steal,
            idle: 100.0 - usr - sys - irq - softirq - steal,
        }
    }

    /// The host's busy CPUs are the sum of the per-CPU lines printed beside
    /// them, steal included.
    #[test]
    fn host_busy_is_the_sum_of_the_per_cpu_lines() {
        let lines = [
            u(0, 30.0, 20.0, 1.0, 24.0, 0.0),
            u(1, 10.0, 5.0, 0.0, 5.0, 5.0),
        ];
        let summed: f64 = lines
            .iter()
            .map(|c| (c.usr + c.sys + c.irq + c.softirq + c.steal) / 100.0)
            .sum();
        assert!((busy_cpus(&lines) - summed).abs() < 1e-9);
        assert!((busy_cpus(&lines) - 1.0).abs() < 1e-9);
        assert_eq!(busy_cpus(&[]), 0.0);
    }
}
