//! Device interrupts of one side over the measured window: the numbered
//! rows of `/proc/interrupts` (IRQs of devices: NIC queues, storage, the
//! serial port), summed per CPU and per interface, from the two reads at the
//! window's edges (`crate::sample::Sample::delta`'s per-IRQ deltas).
//!
//! The architecture rows (`LOC` timer, `RES`/`CAL`/`TLB` IPIs, `NMI`, ...)
//! are not counted: they are not device interrupts, and a NIC's interrupt
//! moderation (ITR, `ethtool -C rx-usecs`) does not act on them.

use crate::sample::IrqDelta;
use serde::{Deserialize, Serialize};

/// Most per-CPU rows kept from a peer's report.
pub const MAX_IRQ_CPUS: usize = 4096;
/// Most interfaces kept from a peer's report.
pub const MAX_IRQ_IFACES: usize = 64;
/// Most IRQ numbers kept per interface from a peer's report.
pub const MAX_IFACE_IRQS: usize = 256;

/// Device interrupts of one CPU over the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqCpuRate {
    /// CPU number.
    pub cpu: u32,
    /// Device interrupts this CPU took in the window.
    pub count: u64,
    /// `count` per second of the window.
    pub per_s: f64,
}

/// Device interrupts of one interface's IRQs over the window: the IRQs
/// whose action name ties them to the interface (`eth1-rx-0`, `eth1`,
/// `virtio2-input.0` through its virtio device, a PCI address after
/// `@pci:`), as `nettune stat` maps them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqIfaceRate {
    /// Interface name.
    pub iface: String,
    /// Its IRQs that fired in the window, ascending.
    #[serde(deserialize_with = "iface_irqs")]
    pub irqs: Vec<u32>,
    /// Interrupts of those IRQs in the window, all CPUs.
    pub count: u64,
    /// `count` per second of the window.
    pub per_s: f64,
}

/// Device interrupts of one side over the measured window (`cpu.interrupts`
/// in the bench JSON; docs/engine.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqRates {
    /// Device interrupts in the window, all numbered IRQs, all CPUs.
    pub count: u64,
    /// `count` per second of the window.
    pub per_s: f64,
    /// Per CPU, ascending; every CPU of the side's per-CPU list, 0 where
    /// none fired.
    #[serde(deserialize_with = "cpus")]
    pub per_cpu: Vec<IrqCpuRate>,
    /// Per interface whose IRQs fired, busiest first.
    #[serde(default, deserialize_with = "ifaces")]
    pub ifaces: Vec<IrqIfaceRate>,
}

fn cpus<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<IrqCpuRate>, D::Error> {
    crate::bounded::vec_at_most(d, MAX_IRQ_CPUS)
}

fn ifaces<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<IrqIfaceRate>, D::Error> {
    crate::bounded::vec_at_most(d, MAX_IRQ_IFACES)
}

fn iface_irqs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    crate::bounded::vec_at_most(d, MAX_IFACE_IRQS)
}

/// `count / seconds`, 0 without a positive finite window.
fn rate(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 && seconds.is_finite() {
        count as f64 / seconds
    } else {
        0.0
    }
}

impl IrqRates {
    /// The window's rates from the per-IRQ deltas of its two reads
    /// (`irqs`: numbered IRQs only, as [`crate::sample::Delta::irqs`]),
    /// the side's CPUs (`cpus`: each gets a row, 0 where none fired) and
    /// the window's length.
    pub fn of(irqs: &[IrqDelta], cpus: &[u32], seconds: f64) -> IrqRates {
        let mut per_cpu: std::collections::BTreeMap<u32, u64> =
            cpus.iter().map(|c| (*c, 0)).collect();
        let mut by_iface: std::collections::BTreeMap<&str, (Vec<u32>, u64)> = Default::default();
        let mut count = 0u64;
        for i in irqs {
            count = count.saturating_add(i.count);
            for c in &i.per_cpu {
                let v = per_cpu.entry(c.cpu.0).or_insert(0);
                *v = v.saturating_add(c.count);
            }
            if let Some(name) = &i.iface {
                let e = by_iface.entry(name.as_str()).or_default();
                e.0.push(i.irq.0);
                e.1 = e.1.saturating_add(i.count);
            }
        }
        let mut ifaces: Vec<IrqIfaceRate> = by_iface
            .into_iter()
            .map(|(iface, (mut irqs, count))| {
                irqs.sort_unstable();
                irqs.dedup();
                IrqIfaceRate {
                    iface: iface.to_string(),
                    irqs,
                    count,
                    per_s: rate(count, seconds),
                }
            })
            .collect();
        ifaces.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.iface.cmp(&b.iface)));
        IrqRates {
            count,
            per_s: rate(count, seconds),
            per_cpu: per_cpu
                .into_iter()
                .map(|(cpu, count)| IrqCpuRate {
                    cpu,
                    count,
                    per_s: rate(count, seconds),
                })
                .collect(),
            ifaces,
        }
    }

    /// The rate as a metric: finite and not negative, else `None` (a
    /// peer's report is read as sent).
    pub fn metric(&self) -> Option<f64> {
        Some(self.per_s).filter(|v| v.is_finite() && *v >= 0.0)
    }

    /// One short text: `24.1k/s (cpu0 23.9k/s, cpu1 200/s; eth1 24.0k/s)`;
    /// at most `max_ifaces` interfaces, names escaped (a peer's report).
    pub fn text(&self, max_ifaces: usize) -> String {
        use crate::metric::fmt_per_sec;
        let cpus: Vec<String> = self
            .per_cpu
            .iter()
            .take(8)
            .map(|c| format!("cpu{} {}", c.cpu, fmt_per_sec(c.per_s)))
            .collect();
        let more = self.per_cpu.len().saturating_sub(8);
        let mut inner = cpus.join(", ");
        if more > 0 {
            inner.push_str(&format!(", {more} more CPUs"));
        }
        let ifs: Vec<String> = self
            .ifaces
            .iter()
            .take(max_ifaces)
            .map(|i| {
                format!(
                    "{} {}",
                    crate::text::printable_capped(&i.iface, 32),
                    fmt_per_sec(i.per_s)
                )
            })
            .collect();
        if !ifs.is_empty() {
            if !inner.is_empty() {
                inner.push_str("; ");
            }
            inner.push_str(&ifs.join(", "));
        }
        if inner.is_empty() {
            fmt_per_sec(self.per_s)
        } else {
            format!("{} ({inner})", fmt_per_sec(self.per_s))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::parse::interrupts::{parse_interrupts, Interrupts};
    use crate::parse::netdev::parse_netdev;
    use crate::sample::Sample;

    const NETDEV: &str = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n  \
eth1:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n";

    fn sample(at_s: u64, irqs: Interrupts) -> Sample {
        Sample {
            at: crate::Nanos(at_s * 1_000_000_000),
            interrupts: Some(irqs),
            netdev: Some(parse_netdev(NETDEV).unwrap()),
            ..Sample::default()
        }
    }

    /// Counts per CPU and per interface are the differences of the numbered
    /// rows between the two reads; the architecture rows (LOC, RES, CAL)
    /// are not counted; a CPU on which nothing fired gets a 0 row.
    #[test]
    fn window_rates_are_the_numbered_rows_deltas() {
        let a = "           CPU0       CPU1       CPU2\n\
                  1:        10          0          0   IO-APIC   1-edge      i8042\n\
                 24:       100         50          0   PCI-MSI 49152-edge      eth1-rx-0\n\
                 25:         7          3          0   PCI-MSI 49153-edge      eth1-tx-0\n\
                 26:         1          0          0   PCI-MSI 49154-edge      eth1\n\
                LOC:      5000       5000       5000   Local timer interrupts\n\
                RES:        10         10         10   Rescheduling interrupts\n\
                CAL:         5          5          5   Function call interrupts\n";
        let b = "           CPU0       CPU1       CPU2\n\
                  1:        12          0          0   IO-APIC   1-edge      i8042\n\
                 24:      1100        350          0   PCI-MSI 49152-edge      eth1-rx-0\n\
                 25:         7         23          0   PCI-MSI 49153-edge      eth1-tx-0\n\
                 26:         1          0          0   PCI-MSI 49154-edge      eth1\n\
                LOC:      9000       9000       9000   Local timer interrupts\n\
                RES:       910        910        910   Rescheduling interrupts\n\
                CAL:       905        905        905   Function call interrupts\n";
        let (a, b) = (parse_interrupts(a).unwrap(), parse_interrupts(b).unwrap());
        let d = sample(12, b).delta(&sample(10, a));
        let r = IrqRates::of(&d.irqs, &[0, 1, 2], 2.0);
        // 2 (i8042) + 1000 + 300 (eth1-rx-0) + 20 (eth1-tx-0).
        assert_eq!(r.count, 1322);
        assert_eq!(r.per_s, 661.0);
        let cpus: Vec<(u32, u64)> = r.per_cpu.iter().map(|c| (c.cpu, c.count)).collect();
        assert_eq!(cpus, vec![(0, 1002), (1, 320), (2, 0)]);
        assert_eq!(r.per_cpu[1].per_s, 160.0);
        assert_eq!(r.ifaces.len(), 1, "{:?}", r.ifaces);
        let e = &r.ifaces[0];
        assert_eq!(
            (e.iface.as_str(), e.irqs.as_slice(), e.count),
            ("eth1", &[24, 25][..], 1320)
        );
        assert_eq!(e.per_s, 660.0);
        assert_eq!(r.metric(), Some(661.0));
        assert_eq!(
            r.text(2),
            "661/s (cpu0 501/s, cpu1 160/s, cpu2 0/s; eth1 660/s)"
        );
    }

    /// Over every real dump under tests/fixtures/real-interrupts: a second
    /// read that adds `row + column + 1` to each numbered row's count and
    /// 1000 to each architecture row's gives exactly the numbered rows'
    /// additions, per CPU and in total.
    #[test]
    fn real_dumps_count_the_numbered_rows_only() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/real-interrupts");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path().join("interrupts");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let a = parse_interrupts(&text).unwrap();
            let mut b = a.clone();
            let cols = a.cpus.len() as u64;
            // The delta keeps the first line of an IRQ number.
            let mut seen = std::collections::BTreeSet::new();
            let mut want = vec![0u64; a.cpus.len()];
            for (i, l) in b.irqs.iter_mut().enumerate() {
                let first = seen.insert(l.number);
                for (j, v) in l.per_cpu.iter_mut().enumerate() {
                    let add = i as u64 + j as u64 + 1;
                    *v += add;
                    if first {
                        want[j] += add;
                    }
                }
            }
            for l in &mut b.arch {
                for v in &mut l.per_cpu {
                    *v += 1000;
                }
            }
            let ids: Vec<u32> = a.cpus.iter().map(|c| c.0).collect();
            let d = sample(2, b).delta(&sample(1, a));
            let r = IrqRates::of(&d.irqs, &ids, 1.0);
            let got: Vec<u64> = r.per_cpu.iter().map(|c| c.count).collect();
            assert_eq!(got, want, "{}", path.display());
            assert_eq!(r.count, want.iter().sum::<u64>());
            assert_eq!(r.per_cpu.len() as u64, cols);
            n += 1;
        }
        assert!(n >= 20, "{n} dumps");
    }

    /// A peer's report is bounded on reading and its nonsense rate is no
    /// metric; no window gives no rate, not a division by zero.
    #[test]
    fn a_peers_report_is_bounded_and_checked() {
        let many: Vec<serde_json::Value> = (0..10_000)
            .map(|c| serde_json::json!({"cpu": c, "count": 1, "per_s": 1.0}))
            .collect();
        let irqs: Vec<u32> = (0..1000).collect();
        let ifs: Vec<serde_json::Value> = (0..1000)
            .map(|i| {
                serde_json::json!({"iface": format!("e{i}"), "irqs": irqs, "count": 1, "per_s": 1.0})
            })
            .collect();
        let v = serde_json::json!({"count": 1, "per_s": -5.0, "per_cpu": many, "ifaces": ifs});
        let r: IrqRates = serde_json::from_value(v).unwrap();
        assert_eq!(r.per_cpu.len(), MAX_IRQ_CPUS);
        assert_eq!(r.ifaces.len(), MAX_IRQ_IFACES);
        assert_eq!(r.ifaces[0].irqs.len(), MAX_IFACE_IRQS);
        assert_eq!(r.metric(), None);
        let r = IrqRates::of(&[], &[0], 0.0);
        assert_eq!((r.count, r.per_s, r.per_cpu[0].per_s), (0, 0.0, 0.0));
    }
}
