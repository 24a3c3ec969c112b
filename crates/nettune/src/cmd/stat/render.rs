//! The human screen of `nettune stat`: one block per interval (CPUs, NICs,
//! queues, IRQs, error counters).

use host::sampler::{Delta, QueueDelta, ERROR_COUNTERS};
use model::metric::{fmt_bits, fmt_per_sec, fmt_pps};
use model::snapshot::QueueRef;
use model::text::Printable;
use model::Nanos;
use std::fmt::Write as _;

use super::{TOP_IRQS, TOP_QUEUES};

pub use crate::rates::{opt_per_sec, opt_pps};

fn secs(n: Nanos) -> f64 {
    n.as_secs_f64()
}

/// The human screen of one interval (pure: the snapshot tests call it).
pub fn render(d: &Delta, seq: u64) -> String {
    render_at(d, seq, None)
}

/// [`render`] with the wall-clock time the interval ended (RFC 3339 UTC) in
/// its header, as a live `stat` prints it.
pub fn render_at(d: &Delta, seq: u64, time: Option<&str>) -> String {
    let mut o = String::new();
    let _ = match time {
        Some(t) => writeln!(o, "--- interval {seq}, {:.2} s, {t} ---", secs(d.elapsed)),
        None => writeln!(o, "--- interval {seq}, {:.2} s ---", secs(d.elapsed)),
    };
    let _ = writeln!(
        o,
        "{:<6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8} | {:>9} {:>9} {:>8} {:>7} {:>9}",
        "CPU",
        "%usr",
        "%sys",
        "%irq",
        "%soft",
        "%steal",
        "%idle",
        "NET_RX/s",
        "NET_TX/s",
        "sn-proc",
        "drop",
        "squeeze",
        "rps",
        "flowlim"
    );
    for c in &d.cpus {
        let p = &c.pct;
        let sn = c.softnet_per_s;
        let _ = writeln!(
            o,
            "{:<6} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>8} {:>8} | {:>9} {:>9} {:>8} {:>7} {:>9}",
            c.cpu.to_string(),
            p.usr,
            p.sys,
            p.irq,
            p.softirq,
            p.steal,
            p.idle,
            fmt_per_sec(c.net_rx_per_s),
            fmt_per_sec(c.net_tx_per_s),
            opt_pps(sn.map(|s| s.processed)),
            opt_pps(sn.map(|s| s.dropped)),
            opt_per_sec(sn.map(|s| s.time_squeeze)),
            opt_per_sec(sn.and_then(|s| s.received_rps)),
            opt_pps(sn.and_then(|s| s.flow_limit)),
        );
    }
    if !d.ifaces.is_empty() {
        let _ = writeln!(
            o,
            "{:<12} {:>9} {:>9} {:>14} {:>14} {:>9} {:>9} {:>6} {:>6}",
            "NIC",
            "rx pps",
            "tx pps",
            "rx bit/s",
            "tx bit/s",
            "rxdrop/s",
            "txdrop/s",
            "rxerr",
            "txerr"
        );
        for i in &d.ifaces {
            let _ = writeln!(
                o,
                "{:<12} {:>9} {:>9} {:>14} {:>14} {:>9} {:>9} {:>6} {:>6}",
                Printable(&i.name),
                fmt_pps(i.rx_pps),
                fmt_pps(i.tx_pps),
                fmt_bits(i.rx_bps),
                fmt_bits(i.tx_bps),
                fmt_pps(i.rx_drop_per_s),
                fmt_pps(i.tx_drop_per_s),
                i.rx_errs,
                i.tx_errs,
            );
        }
    }
    queues_section(&mut o, d);
    if d.irqs.is_empty() {
        let _ = writeln!(o, "IRQs: none fired");
    } else {
        let mut top: Vec<_> = d.irqs.iter().collect();
        top.sort_by(|a, b| b.count.cmp(&a.count).then(a.irq.cmp(&b.irq)));
        let _ = writeln!(
            o,
            "{:<5} {:<22} {:<8} {:<8} {:>8}  count per CPU",
            "IRQ", "name", "iface", "queue", "/s"
        );
        for i in top.iter().take(TOP_IRQS) {
            let cpus: Vec<String> = i
                .per_cpu
                .iter()
                .map(|c| format!("{}:{}", c.cpu, c.count))
                .collect();
            let _ = writeln!(
                o,
                "{:<5} {:<22} {:<8} {:<8} {:>8}  {}",
                i.irq.0,
                Printable(&i.name),
                Printable(i.iface.as_deref().unwrap_or("-")),
                QueueRef::label(i.queue),
                fmt_per_sec(i.per_s),
                cpus.join(" ")
            );
        }
        if top.len() > TOP_IRQS {
            let _ = writeln!(o, "      (+{} more IRQs)", top.len() - TOP_IRQS);
        }
    }
    let errs: Vec<String> = ERROR_COUNTERS
        .iter()
        .filter_map(|k| {
            d.counters
                .get(*k)
                .filter(|v| **v > 0)
                .map(|v| format!("{k} +{v}"))
        })
        .collect();
    if d.counters.is_empty() {
        let _ = writeln!(o, "UDP/TCP errors: counters unavailable");
    } else if errs.is_empty() {
        let _ = writeln!(o, "UDP/TCP errors: none");
    } else {
        let _ = writeln!(o, "UDP/TCP errors: {}", errs.join("  "));
    }
    for n in &d.notes {
        let _ = writeln!(o, "note: {}", Printable(n));
    }
    o
}

/// Per-queue packets/s and drops/s, with the queue's IRQ and packets per
/// interrupt; then the driver's trouble counters that moved.
fn queues_section(o: &mut String, d: &Delta) {
    if !d.queues.is_empty() {
        let _ = writeln!(
            o,
            "{:<12} {:<6} {:>9} {:>9} {:>5} {:>8} {:>8}",
            "NIC queue", "queue", "pps", "drops/s", "IRQ", "irq/s", "pkt/irq"
        );
        // Many queues (mlx5 has 2 per channel): hide the quiet ones.
        let quiet = |q: &&QueueDelta| {
            q.packets.unwrap_or(0) == 0 && q.drops.unwrap_or(0) == 0 && q.interrupts.is_none()
        };
        let shown: Vec<&QueueDelta> = if d.queues.len() > TOP_QUEUES {
            d.queues.iter().filter(|q| !quiet(q)).collect()
        } else {
            d.queues.iter().collect()
        };
        for q in &shown {
            let irq_s = match (q.interrupts, d.elapsed.0) {
                (Some(n), e) if e > 0 => fmt_per_sec(n as f64 / secs(d.elapsed)),
                _ => "-".into(),
            };
            let _ = writeln!(
                o,
                "{:<12} {:<6} {:>9} {:>9} {:>5} {:>8} {:>8}",
                Printable(&q.iface),
                format!("{}-{}", q.dir.name(), q.index),
                opt_pps(q.packets_per_s),
                opt_pps(q.drops_per_s),
                q.irq.map_or_else(|| "-".into(), |i| i.0.to_string()),
                irq_s,
                q.packets_per_interrupt
                    .map_or_else(|| "-".into(), |v| format!("{v:.1}")),
            );
        }
        if shown.len() < d.queues.len() {
            let _ = writeln!(
                o,
                "             (+{} quiet queues)",
                d.queues.len() - shown.len()
            );
        }
    }
    let moved: Vec<String> = d
        .nic_counters
        .iter()
        .flat_map(|(iface, m)| {
            m.iter()
                .filter(|(k, _)| crate::cmd::inspect::is_trouble(k))
                .map(move |(k, v)| format!("{} {} +{v}", Printable(iface), Printable(k)))
        })
        .collect();
    if !moved.is_empty() {
        let _ = writeln!(o, "NIC driver drops/errors: {}", moved.join("  "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts printed a bare `274.2k` beside `274 kpps`: packet
    /// counts are in pps and other events in `/s`, three digits each.
    #[test]
    fn counts_carry_their_unit() {
        assert_eq!(opt_pps(Some(274_200.0)), "274 kpps");
        assert_eq!(opt_per_sec(Some(37_552.0)), "37.6k/s");
        assert_eq!(opt_per_sec(Some(950.4)), "950/s");
        assert_eq!(opt_pps(None), "-");
        assert_eq!(opt_per_sec(None), "-");
    }
}
