//! Issue 17: the vector-name parser over real `/proc/interrupts` dumps
//! (tests/fixtures/real-interrupts/*, each with its provenance in LABEL).
//! Per dump, a golden of every group's IRQ-to-queue mapping; across all
//! dumps, invariants: a sideband vector (fdir, ctrl, misc, config, ...) is
//! never a queue, every vector of a known family maps to something, and in
//! split RX/TX schemes no queue number reaches the count of that
//! direction's vectors.

#![allow(clippy::unwrap_used)]

use nettune_model::parse::interrupts::parse_interrupts;
use nettune_model::parse::irqname::{map_queues, parse_irq_name, retain_existing, OwnedIrq};
use nettune_model::snapshot::QueueKind;
use std::fmt::Write as _;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real-interrupts")
}

/// `(irq, name)` of every numbered line of a dump.
fn names(d: &std::path::Path) -> Vec<(u32, String)> {
    if let Ok(t) = std::fs::read_to_string(d.join("interrupts")) {
        let p = parse_interrupts(&t).unwrap();
        return p
            .irqs
            .iter()
            .map(|l| (l.number.0, l.name.clone()))
            .collect();
    }
    // `N: [...] NAME` lines whose counts the author elided.
    if let Ok(t) = std::fs::read_to_string(d.join("interrupts-elided")) {
        return t
            .lines()
            .filter_map(|l| {
                let (n, rest) = l.trim().split_once(':')?;
                Some((n.parse().ok()?, rest.split_whitespace().last()?.to_string()))
            })
            .collect();
    }
    // `/proc/irq/N/NAME/...` listing.
    let t = std::fs::read_to_string(d.join("irq-names")).unwrap();
    t.lines()
        .filter_map(|l| {
            let r = l.trim().strip_prefix("/proc/irq/")?;
            let (n, rest) = r.split_once('/')?;
            let name = rest.split('/').next()?;
            Some((n.parse().ok()?, name.to_string()))
        })
        .collect()
}

/// `group: <iface> <driver or -> <irq,irq,...>` lines of a LABEL.
fn groups(label: &str) -> Vec<(String, Option<String>, Vec<u32>)> {
    label
        .lines()
        .filter_map(|l| l.strip_prefix("group: "))
        .map(|g| {
            let mut w = g.split_whitespace();
            let iface = w.next().unwrap().to_string();
            let driver = w.next().unwrap();
            let irqs = w
                .next()
                .unwrap()
                .split(',')
                .map(|n| n.parse().unwrap())
                .collect();
            (iface, (driver != "-").then(|| driver.to_string()), irqs)
        })
        .collect()
}

/// `queues: <iface> <rx> <tx>` lines of a LABEL: the interface's real
/// queue counts as far as the dump tells.
fn queue_counts(label: &str) -> Vec<(String, u32, u32)> {
    label
        .lines()
        .filter_map(|l| l.strip_prefix("queues: "))
        .map(|g| {
            let w: Vec<&str> = g.split_whitespace().collect();
            assert_eq!(w.len(), 3, "queues: {g}");
            (
                w[0].to_string(),
                w[1].parse().unwrap(),
                w[2].parse().unwrap(),
            )
        })
        .collect()
}

const SIDEBAND: &[&str] = &[
    "fdir", "ctrl", "misc", "config", "async", "cmd", "pages", "mbx", "mgmnt", "ll_ts", "hwc",
    "event", "rbdr", "qset",
];

fn is_sideband(name: &str) -> bool {
    name.split(['-', ':', '_', '@'])
        .any(|w| SIDEBAND.contains(&w.trim_end_matches(|c: char| c.is_ascii_digit())))
}

#[test]
fn real_dumps_map_to_the_right_queues() {
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dumps.sort();
    assert!(dumps.len() >= 20, "{dumps:?}");
    for d in &dumps {
        let label = std::fs::read_to_string(d.join("LABEL")).unwrap();
        for key in ["source: ", "kernel: ", "driver: ", "shows: "] {
            assert!(label.contains(key), "{}: LABEL lacks {key}", d.display());
        }
        let all = names(d);
        let counts = queue_counts(&label);
        let mut golden = String::new();
        for (iface, driver, irqs) in groups(&label) {
            let owned: Vec<OwnedIrq<'_>> = irqs
                .iter()
                .map(|n| {
                    let (_, name) = all.iter().find(|(i, _)| i == n).unwrap();
                    OwnedIrq {
                        number: *n,
                        name,
                        msi: true,
                        legacy: false,
                    }
                })
                .collect();
            let (m, how) = map_queues(&owned, driver.as_deref(), 0);
            writeln!(
                golden,
                "{iface} ({}): {how:?}",
                driver.as_deref().unwrap_or("-")
            )
            .unwrap();
            let mut count = std::collections::BTreeMap::<String, u32>::new();
            for (o, x) in owned.iter().zip(&m) {
                let q = x.queue.map(|q| match x.last {
                    Some(l) => format!("{:?} {:?}..={l}", q.kind, q.index),
                    None => format!("{:?} {:?}", q.kind, q.index),
                });
                writeln!(
                    golden,
                    "  {} {:<36} {}",
                    o.number,
                    o.name,
                    q.as_deref().unwrap_or("?")
                )
                .unwrap();
                // Every named vector of a claimed family maps to something;
                // a vector with no action name (allocated, not requested:
                // left by `ethtool -L`) serves nothing and stays unmapped.
                let Some(q) = x.queue else {
                    assert!(o.name.is_empty(), "{}: {} unmapped", d.display(), o.name);
                    continue;
                };
                if is_sideband(o.name) {
                    assert_eq!(q.kind, QueueKind::Other, "{}: {}", d.display(), o.name);
                }
                // A vector named after the interface names that interface
                // (the device token is how inspect finds an IRQ's owner).
                let own = o.name == iface || o.name.starts_with(&format!("{iface}-"));
                if own {
                    let dev = parse_irq_name(o.name).device;
                    assert_eq!(dev.as_deref(), Some(iface.as_str()), "{}", d.display());
                }
                if q.kind != QueueKind::Other {
                    *count.entry(format!("{:?}", q.kind)).or_default() += 1;
                }
            }
            // Split (rx-N/tx-N) schemes: numbers stay below the count of
            // the vectors serving that direction (a TxRx vector serves both).
            let combined = count.get("Combined").copied().unwrap_or(0);
            for x in &m {
                if let Some(q) = x
                    .queue
                    .filter(|q| matches!(q.kind, QueueKind::Rx | QueueKind::Tx))
                {
                    if driver.as_deref() != Some("virtio_net") {
                        let n =
                            count.get(&format!("{:?}", q.kind)).copied().unwrap_or(0) + combined;
                        assert!(q.index.unwrap() < n, "{}: {q:?} of {n}", d.display());
                    }
                }
            }
            // Every group says its real queue counts, and no vector maps to
            // a queue the interface does not have.
            let &(_, rx, tx) = counts
                .iter()
                .find(|(i, _, _)| *i == iface)
                .unwrap_or_else(|| panic!("{}: no `queues: {iface}` line", d.display()));
            for x in &m {
                let Some(q) = x.queue.filter(|q| q.kind != QueueKind::Other) else {
                    continue;
                };
                let i = x.last.unwrap_or(q.index.unwrap());
                let ok = match q.kind {
                    QueueKind::Rx => i < rx,
                    QueueKind::Tx => i < tx,
                    _ => i < rx.max(tx),
                };
                assert!(
                    ok,
                    "{}: {iface} {q:?} beyond {rx} rx / {tx} tx",
                    d.display()
                );
            }
            // Dropping queues the interface does not have changes nothing
            // here (see `retain_existing`).
            let mut kept = m.clone();
            retain_existing(&mut kept, rx as usize, tx as usize);
            assert_eq!(kept, m, "{}: {iface}", d.display());
        }
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        insta::assert_snapshot!(name, golden);
    }
}
