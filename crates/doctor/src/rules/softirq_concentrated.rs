//! `softirq-concentrated`: receive processing piled on one or a few CPUs
//! while the other usable CPUs do little of it, with the IRQ and RPS layout
//! that puts it there. Measured by the packets each CPU processed
//! (softnet_stat), else by softirq time: where softirqs run in task context
//! (no IRQ time accounting, as on the 2-vCPU KVM guest here) their time shows
//! as %sys, but the packets still count where they were processed.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use model::sample::CpuDelta;
use model::CpuSet;
use std::fmt::Write;
use tune::RuleId;

/// The hottest CPU's softirq share (% of its time) from which concentration counts.
pub const HOT_SOFTIRQ_PCT: f64 = 20.0;
/// Share of all usable CPUs' softirq time that the hot few must hold.
pub const HOT_SHARE: f64 = 0.75;
/// Hot CPU softirq % at which the finding is critical (the CPU is saturated).
pub const CRITICAL_SOFTIRQ_PCT: f64 = 80.0;
/// NET_RX softirqs per second below which the softirq time is not network work.
pub const MIN_NET_RX_PER_S: f64 = 100.0;
/// Packets processed per second (all usable CPUs) from which their spread counts.
pub const MIN_PROCESSED_PER_S: f64 = 5_000.0;
/// Share of the packets processed that the hot few must hold.
pub const HOT_PACKET_SHARE: f64 = 0.9;
/// Most idle time (%) a hot CPU may have for its packet share to matter: a
/// mostly idle CPU doing all receive work is no bottleneck.
pub const HOT_MAX_IDLE_PCT: f64 = 50.0;

/// Receive processing concentrated on few CPUs.
#[derive(Debug)]
pub struct SoftirqConcentrated;

impl DoctorRule for SoftirqConcentrated {
    fn id(&self) -> FindingId {
        FindingId::SoftirqConcentrated
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "receive softirq concentrated on few CPUs"
    }
    fn rationale(&self) -> &'static str {
        "when one CPU does all receive processing it saturates first and drops or delays packets while the other cores idle; spreading queue IRQs (RSS) or protocol work (RPS) uses them"
    }
    fn source(&self) -> &'static str {
        "y_uuki's ixgbevf test on EC2 (\"EC2でSR-IOVを使うときのNICドライバパラメータ検証\", blog.yuuk.io, 2014-03-20, http://blog.yuuk.io/entry/2014/03/20/085600) (one CPU at 59 % softirq while the others idled); Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/networking/scaling.rst"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        let cpus: Vec<&CpuDelta> = w
            .total
            .cpus
            .iter()
            .filter(|c| cx.usable.contains(c.cpu.0))
            .collect();
        if cpus.len() < 2 {
            return Ok(());
        }
        let k = (cpus.len() / 4).max(1);
        let Some(c) = by_packets(&cpus, k).or_else(|| by_time(&cpus, k)) else {
            return Ok(());
        };
        let (hot, rest) = (c.hot, c.rest);
        let top = hot[0];
        let hot_set: CpuSet = hot.iter().map(|c| c.cpu.0).collect();
        let rest_softirq = mean(rest.iter().map(|c| c.pct.softirq));
        let rest_idle = mean(rest.iter().map(|c| c.pct.idle));
        let subject = busiest_iface(cx, &hot_set);
        let name = subject.as_deref().unwrap_or("host");
        let mut f = crate::finding::from_rule(
            self,
            name,
            format!(
                "receive processing on CPU {}: {:.0} % of {} ({} of {} usable CPUs)",
                hot_set.to_list(),
                100.0 * c.share,
                c.measure,
                hot.len(),
                cpus.len()
            ),
        );
        if top.pct.softirq >= CRITICAL_SOFTIRQ_PCT {
            f = f.severity(Severity::Critical);
        }
        for c in hot {
            f = f
                .evidence(
                    format!("CPU {} softirq / idle", c.cpu.0),
                    format!("{:.1} % / {:.1} %", c.pct.softirq, c.pct.idle),
                    "/proc/stat",
                )
                .evidence(
                    format!("CPU {} NET_RX", c.cpu.0),
                    format!("{:.0}/s", c.net_rx_per_s),
                    "/proc/softirqs",
                );
            if let Some(sn) = c.softnet_per_s {
                f = f.evidence(
                    format!("CPU {} packets processed", c.cpu.0),
                    format!("{:.0}/s", sn.processed),
                    "/proc/net/softnet_stat",
                );
            }
        }
        f = f.evidence(
            format!(
                "other {} softirq / idle (mean)",
                super::plural(rest.len(), "CPU")
            ),
            format!("{rest_softirq:.1} % / {rest_idle:.1} %"),
            "/proc/stat",
        );
        for line in layout(cx, &hot_set, subject.as_deref()) {
            f = f.evidence("layout", line.0, line.1);
        }
        let fix = cx.plan_fix(
            &[RuleId::Channels, RuleId::IrqAffinity, RuleId::Rps, RuleId::Rfs],
            subject.as_deref(),
            "Spread receive work: one queue IRQ per physical core of the NIC's node, and RPS over those cores when there are fewer queues than cores.",
            "Write the usable cores to the queues' rps_cpus and spread /proc/irq/N/smp_affinity_list; several flows are needed for RSS or RPS to spread one NIC's traffic.",
        );
        out.push(f.fix(fix));
        Ok(())
    }
}

/// The hot CPUs, the others, their share of the work and what was measured.
struct Concentration<'a> {
    hot: Vec<&'a CpuDelta>,
    rest: Vec<&'a CpuDelta>,
    share: f64,
    measure: &'static str,
}

/// Split `cpus` into the `k` with the most `key` and the rest; `None` when
/// the total is 0.
fn split<'a>(
    cpus: &[&'a CpuDelta],
    k: usize,
    key: impl Fn(&CpuDelta) -> f64,
) -> Option<(Vec<&'a CpuDelta>, Vec<&'a CpuDelta>, f64)> {
    let total: f64 = cpus.iter().map(|c| key(c)).sum();
    if total <= 0.0 {
        return None;
    }
    let mut v = cpus.to_vec();
    v.sort_by(|a, b| key(b).total_cmp(&key(a)));
    let rest = v.split_off(k.min(v.len()));
    let hot_sum: f64 = v.iter().map(|c| key(c)).sum();
    Some((v, rest, hot_sum / total))
}

/// By packets processed (softnet_stat): where receive work really ran, also
/// on hosts whose softirqs run in task context and show as %sys.
fn by_packets<'a>(cpus: &[&'a CpuDelta], k: usize) -> Option<Concentration<'a>> {
    let pps = |c: &CpuDelta| c.softnet_per_s.map_or(0.0, |s| s.processed);
    let total: f64 = cpus.iter().map(|c| pps(c)).sum();
    if total < MIN_PROCESSED_PER_S {
        return None;
    }
    let (hot, rest, share) = split(cpus, k, pps)?;
    let busy = hot.iter().all(|c| c.pct.idle <= HOT_MAX_IDLE_PCT);
    (share >= HOT_PACKET_SHARE && busy).then_some(Concentration {
        hot,
        rest,
        share,
        measure: "the packets processed",
    })
}

/// By softirq time (/proc/stat), when NET_RX runs at all.
fn by_time<'a>(cpus: &[&'a CpuDelta], k: usize) -> Option<Concentration<'a>> {
    let net_rx: f64 = cpus.iter().map(|c| c.net_rx_per_s).sum();
    if net_rx < MIN_NET_RX_PER_S {
        return None;
    }
    let (hot, rest, share) = split(cpus, k, |c| c.pct.softirq)?;
    (hot[0].pct.softirq >= HOT_SOFTIRQ_PCT && share >= HOT_SHARE).then_some(Concentration {
        hot,
        rest,
        share,
        measure: "the softirq time",
    })
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0u32), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / f64::from(n)
    }
}

/// The interface whose IRQs fire most on the hot CPUs, else the one that
/// received the most packets in the window.
fn busiest_iface(cx: &Cx<'_>, hot: &CpuSet) -> Option<String> {
    let w = cx.window.as_ref()?;
    let mut best: Option<(&str, u64)> = None;
    for irq in &w.total.irqs {
        let Some(i) = irq.iface.as_deref() else {
            continue;
        };
        let n = super::sat_sum(
            irq.per_cpu
                .iter()
                .filter(|c| hot.contains(c.cpu.0))
                .map(|c| c.count),
        );
        if n > 0 && best.is_none_or(|(_, b)| n > b) {
            best = Some((i, n));
        }
    }
    if let Some((i, _)) = best {
        return Some(i.to_string());
    }
    w.total
        .ifaces
        .iter()
        .filter(|i| i.name != "lo" && i.rx_packets.0 > 0)
        .max_by(|a, b| a.rx_pps.total_cmp(&b.rx_pps))
        .map(|i| i.name.clone())
}

/// Lines of (what, source) naming the queue IRQs that fired on the hot CPUs
/// and the RPS masks of the subject's queues.
fn layout(cx: &Cx<'_>, hot: &CpuSet, iface: Option<&str>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(w) = &cx.window {
        for irq in &w.total.irqs {
            let on_hot = super::sat_sum(
                irq.per_cpu
                    .iter()
                    .filter(|c| hot.contains(c.cpu.0))
                    .map(|c| c.count),
            );
            if on_hot == 0 || irq.iface.is_none() || irq.per_s < 1.0 {
                continue;
            }
            let mut l = format!(
                "IRQ {} {} fired {:.0}/s, {:.0} % of it on CPU {}",
                irq.irq.0,
                irq.name,
                irq.per_s,
                100.0 * on_hot as f64 / irq.count.max(1) as f64,
                hot.to_list()
            );
            if let Some(q) = cx.snap().irq(irq.irq) {
                if let Some(a) = model::findings::irq_cpus(q) {
                    let _ = write!(l, " (affinity {})", a.to_list());
                }
            }
            out.push((l, "/proc/interrupts".to_string()));
        }
    }
    if let Some(i) = iface.and_then(|n| cx.snap().interface(n)) {
        let masks: Vec<String> = i
            .rx_queues
            .iter()
            .map(|q| {
                format!(
                    "rx-{} {}",
                    q.index,
                    q.rps_cpus.as_ref().map_or_else(
                        || "?".to_string(),
                        |m| if m.is_empty() {
                            "off".into()
                        } else {
                            m.to_list()
                        }
                    )
                )
            })
            .collect();
        if !masks.is_empty() {
            out.push((
                format!("{} RPS: {}", i.name, masks.join(", ")),
                format!("/sys/class/net/{}/queues/rx-*/rps_cpus", i.name),
            ));
        }
        if i.irqs.is_empty() {
            out.push((
                format!(
                    "{} has no queue IRQs: its receive work runs where the sender or RPS puts it",
                    i.name
                ),
                "/proc/interrupts".to_string(),
            ));
        }
    }
    out
}
