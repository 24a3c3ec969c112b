//! One interface of the human view: its header, ethtool lines, and its
//! queue IRQs (or queues) as a table.

use super::ethtool::{driver_stats_lines, ethtool_lines};
use super::table::{list_or, opt, Table};
use model::findings::{irq_cpus, nodes_of};
use model::snapshot::{HostSnapshot, Interface, Irq, IrqMapping, QueueKind};
use model::text::{printable, Printable};
use model::CpuSet;
use std::collections::BTreeSet;
use std::fmt::Write as _;

fn mask_text(s: &Option<CpuSet>) -> String {
    match s {
        None => "n/a".into(),
        Some(s) if s.is_empty() => "-".into(),
        Some(s) => s.to_list(),
    }
}

fn queue_text(irq: &Irq) -> String {
    let mark = if irq.queue_source.is_some_and(|s| s.inferred()) {
        " (inferred)"
    } else {
        ""
    };
    let text = match irq.queue {
        Some(q) => match (q.kind, q.index) {
            (QueueKind::Combined, Some(i)) => format!("rx/tx-{i}"),
            (QueueKind::Rx, Some(i)) => format!("rx-{i}"),
            (QueueKind::Tx, Some(i)) => format!("tx-{i}"),
            _ => "other".into(),
        },
        None => "other".into(),
    };
    format!("{text}{mark}")
}

fn counts_text(irq: &Irq) -> String {
    let mut on = CpuSet::new();
    for (c, n) in irq.per_cpu.iter().enumerate() {
        if *n > 0 {
            on.insert(c as u32);
        }
    }
    if on.is_empty() {
        "0".into()
    } else {
        format!("{} on {}", irq.total(), on.to_list())
    }
}

pub(super) fn interface(o: &mut String, s: &HostSnapshot, i: &Interface) {
    interface_header(o, i);
    // Said only when the names did not tell: inferred, none or ambiguous.
    if let Some(m) = i.irq_mapping.filter(|m| *m != IrqMapping::Name) {
        let _ = writeln!(o, "  queue IRQs: {}", m.describe());
    }
    ethtool_lines(o, i);
    if i.irqs.is_empty() {
        queue_table(o, i);
    } else {
        irq_table(o, s, i);
    }
    driver_stats_lines(o, i);
}

/// The three lines of driver, link and NAPI facts.
fn interface_header(o: &mut String, i: &Interface) {
    let numa = match i.numa_node {
        Some(-1) => "-1 (unknown)".to_string(),
        Some(n) => n.to_string(),
        None => "n/a".into(),
    };
    let speed = i
        .speed_mbps
        .map_or("unknown".into(), |v| format!("{v} Mb/s"));
    let _ = writeln!(
        o,
        "{}: driver {}  pci {}  numa_node {}  local_cpus {}",
        Printable(&i.name),
        Printable(i.driver.as_deref().unwrap_or(if i.pci_address.is_some() {
            "unknown (a device without a bound driver link)"
        } else {
            "none (virtual)"
        })),
        i.pci_address.as_deref().unwrap_or("-"),
        numa,
        i.local_cpus
            .as_ref()
            .map_or("n/a".into(), |c| list_or(c, "-")),
    );
    let _ = writeln!(
        o,
        "  {}  mtu {}  speed {}  mac {}  perm {}  txqueuelen {}",
        i.operstate.as_deref().unwrap_or("?"),
        opt(&i.mtu),
        speed,
        i.mac.as_deref().unwrap_or("?"),
        i.perm_mac.as_deref().unwrap_or("?"),
        opt(&i.tx_queue_len),
    );
    let _ = writeln!(
        o,
        "  gro_flush_timeout {}  napi_defer_hard_irqs {}  threaded {}  queues rx {} tx {}",
        i.gro_flush_timeout.map_or("n/a".into(), |v| v.to_string()),
        i.napi_defer_hard_irqs
            .map_or("n/a".into(), |v| v.to_string()),
        i.threaded.map_or("n/a".into(), |v| v.to_string()),
        i.rx_queues.len(),
        i.tx_queues.len()
    );
}

/// RPS/RFS/XPS per queue, for a NIC without IRQs of its own.
fn queue_table(o: &mut String, i: &Interface) {
    let mut t = Table::new(&["QUEUE", "RPS", "RFS FLOWS", "XPS"]);
    for q in &i.rx_queues {
        t.row(vec![
            format!("rx-{}", q.index),
            mask_text(&q.rps_cpus),
            q.rps_flow_cnt.map_or("n/a".into(), |v| v.to_string()),
            String::new(),
        ]);
    }
    for q in &i.tx_queues {
        t.row(vec![
            format!("tx-{}", q.index),
            String::new(),
            String::new(),
            mask_text(&q.xps_cpus),
        ]);
    }
    if t.rows.len() > 1 {
        o.push_str(&t.render("  "));
    }
}

/// Queue → IRQ → affinity → node → RPS/XPS → interrupts, then queues no IRQ serves.
fn irq_table(o: &mut String, s: &HostSnapshot, i: &Interface) {
    let mut t = Table::new(&[
        "QUEUE",
        "IRQ",
        "NAME",
        "AFFINITY",
        "EFFECTIVE",
        "NODE",
        "RPS",
        "XPS",
        "INTERRUPTS",
    ]);
    let mut rx_shown = BTreeSet::new();
    let mut tx_shown = BTreeSet::new();
    let mut irqs: Vec<&Irq> = i.irqs.iter().filter_map(|n| s.irq(*n)).collect();
    irqs.sort_by_key(|q| {
        (
            q.queue
                .map_or(u32::MAX, |r| r.index.unwrap_or(u32::MAX - 1)),
            q.queue.map(|r| r.kind as u8),
            q.number,
        )
    });
    for irq in irqs {
        let (rx, tx) = match irq.queue {
            Some(q) => match (q.kind, q.index) {
                (QueueKind::Combined, Some(i)) => (Some(i), Some(i)),
                (QueueKind::Rx, Some(i)) => (Some(i), None),
                (QueueKind::Tx, Some(i)) => (None, Some(i)),
                _ => (None, None),
            },
            None => (None, None),
        };
        let rps = rx
            .and_then(|x| i.rx_queues.iter().find(|q| q.index == x))
            .map_or(String::new(), |q| mask_text(&q.rps_cpus));
        let xps = tx
            .and_then(|x| i.tx_queues.iter().find(|q| q.index == x))
            .map_or(String::new(), |q| mask_text(&q.xps_cpus));
        rx_shown.extend(rx);
        tx_shown.extend(tx);
        let node = irq_cpus(irq)
            .map(|c| list_or(&nodes_of(s, c), "?"))
            .unwrap_or_else(|| "?".into());
        t.row(vec![
            queue_text(irq),
            irq.number.0.to_string(),
            printable(&irq.name).into_owned(),
            mask_text(&irq.smp_affinity),
            mask_text(&irq.effective_affinity),
            node,
            if rps.is_empty() { "".into() } else { rps },
            if xps.is_empty() { "".into() } else { xps },
            counts_text(irq),
        ]);
    }
    for q in &i.rx_queues {
        if !rx_shown.contains(&q.index) {
            t.row(vec![
                format!("rx-{}", q.index),
                "-".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                mask_text(&q.rps_cpus),
                String::new(),
                String::new(),
            ]);
        }
    }
    for q in &i.tx_queues {
        if !tx_shown.contains(&q.index) {
            t.row(vec![
                format!("tx-{}", q.index),
                "-".into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                mask_text(&q.xps_cpus),
                String::new(),
            ]);
        }
    }
    if t.rows.len() > 1 {
        o.push_str(&t.render("  "));
    }
}
