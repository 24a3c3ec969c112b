//! The ethtool lines of one interface: channels, rings, coalescing, key
//! features, and the driver's counters (`ethtool -S`).

use super::table::{opt, Table};
use model::snapshot::{Interface, Probe};
use std::fmt::Write as _;

fn probe_text<T>(p: &Probe<T>, f: impl Fn(&T) -> String) -> String {
    match p {
        Probe::Ok { value } => f(value),
        Probe::Unsupported { .. } => "unsupported".into(),
        Probe::Error { message } => format!("error ({message})"),
        Probe::Absent => "not read".into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shown,
    Unsupported,
    Absent,
}

fn kind<T>(p: &Probe<T>) -> Kind {
    match p {
        Probe::Ok { .. } | Probe::Error { .. } => Kind::Shown,
        Probe::Unsupported { .. } => Kind::Unsupported,
        Probe::Absent => Kind::Absent,
    }
}

fn cur_max(cur: Option<u32>, max: Option<u32>) -> Option<String> {
    match (cur, max) {
        (None, None) => None,
        (c, m) => Some(format!("{}/{}", opt(&c), opt(&m))),
    }
}

const KEY_FEATURES: &[&str] = &[
    "rx-checksum",
    "tx-scatter-gather",
    "tx-tcp-segmentation",
    "tx-generic-segmentation",
    "rx-gro",
    "rx-gro-hw",
    "rx-lro",
    "rx-hashing",
    "rx-ntuple-filter",
];

pub(super) fn ethtool_lines(o: &mut String, i: &Interface) {
    let e = &i.ethtool;
    let channels = probe_text(&e.channels, |c| {
        let parts: Vec<String> = [
            ("combined", c.combined, c.combined_max),
            ("rx", c.rx, c.rx_max),
            ("tx", c.tx, c.tx_max),
            ("other", c.other, c.other_max),
        ]
        .iter()
        .filter_map(|(n, cur, max)| cur_max(*cur, *max).map(|v| format!("{n} {v}")))
        .collect();
        if parts.is_empty() {
            "none reported".into()
        } else {
            parts.join(", ")
        }
    });
    let rings = probe_text(&e.rings, |r| {
        let parts: Vec<String> = [("rx", r.rx, r.rx_max), ("tx", r.tx, r.tx_max)]
            .iter()
            .filter_map(|(n, cur, max)| cur_max(*cur, *max).map(|v| format!("{n} {v}")))
            .collect();
        parts.join(", ")
    });
    let coalesce = probe_text(&e.coalesce, |m| {
        if m.is_empty() {
            "none reported".into()
        } else {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    });
    let features = probe_text(&e.features, |m| {
        let on = m.values().filter(|f| f.active).count();
        let key: Vec<String> = KEY_FEATURES
            .iter()
            .filter_map(|k| {
                m.get(*k).map(|f| {
                    format!(
                        "{k} {}{}",
                        if f.active { "on" } else { "off" },
                        if f.fixed { " [fixed]" } else { "" }
                    )
                })
            })
            .collect();
        format!("{on} of {} on; {}", m.len(), key.join(", "))
    });
    let driver = probe_text(&e.driver, |d| {
        format!(
            "{} {}{}",
            d.driver.as_deref().unwrap_or("?"),
            d.version.as_deref().unwrap_or(""),
            d.firmware
                .as_deref()
                .filter(|f| !f.is_empty())
                .map(|f| format!(", firmware {f}"))
                .unwrap_or_default()
        )
        .trim()
        .to_string()
    });
    let parts: [(&str, String, Kind); 5] = [
        ("driver", driver, kind(&e.driver)),
        ("channels", channels, kind(&e.channels)),
        ("rings", rings, kind(&e.rings)),
        ("coalesce", coalesce, kind(&e.coalesce)),
        ("features", features, kind(&e.features)),
    ];
    let stats = probe_text(&e.stats, |s| {
        format!(
            "{} driver counters (ethtool -S), {} in standard groups",
            s.driver.len(),
            s.standard.len()
        )
    });
    for (label, text, k) in parts
        .iter()
        .chain(std::iter::once(&("stats", stats, kind(&e.stats))))
    {
        if *k == Kind::Shown {
            let _ = writeln!(o, "  {label}: {text}");
        }
    }
    // Statistics not read (fixtures recorded before them) are not listed.
    let stats_unsupported = kind(&e.stats) == Kind::Unsupported;
    for (k, word) in [
        (Kind::Unsupported, "unsupported"),
        (Kind::Absent, "not read"),
    ] {
        let mut names: Vec<&str> = parts.iter().filter(|p| p.2 == k).map(|p| p.0).collect();
        if k == Kind::Unsupported && stats_unsupported {
            names.push("stats");
        }
        if !names.is_empty() {
            let _ = writeln!(o, "  {word}: {}", names.join(", "));
        }
    }
}

/// Words in a driver counter's name that mark it as counting trouble.
pub const TROUBLE_WORDS: &[&str] = &[
    "drop",
    "miss",
    "err",
    "fail",
    "exceeded",
    "no_buf",
    "out_of_buffer",
    "timeout",
    "fifo",
    "discard",
    "overrun",
    "crc",
    "busy",
    "bad",
];

/// Whether a driver counter counts trouble (drops, errors, allowance hits).
pub fn is_trouble(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    TROUBLE_WORDS.iter().any(|w| n.contains(w))
}

/// Per-queue packets, bytes and drops from the driver's counters, and the
/// NIC-wide trouble counters that are not zero.
pub(super) fn driver_stats_lines(o: &mut String, i: &Interface) {
    let Some(st) = i.ethtool.stats.value() else {
        return;
    };
    let qs = st.queues();
    if !qs.is_empty() {
        let mut t = Table::new(&["QUEUE", "PACKETS", "BYTES", "DROPS", "COUNTERS"]);
        for q in &qs {
            let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            t.row(vec![
                format!("{}-{}", q.dir.name(), q.index),
                n(q.packets),
                n(q.bytes),
                n(q.drops),
                q.raw.len().to_string(),
            ]);
        }
        let _ = writeln!(o, "  driver counters per queue (ethtool -S):");
        o.push_str(&t.render("    "));
    }
    let trouble: Vec<String> = st
        .driver
        .iter()
        .filter(|(k, v)| **v > 0 && is_trouble(k))
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if trouble.is_empty() {
        let _ = writeln!(o, "  driver drop/error counters: all 0");
    } else {
        let _ = writeln!(o, "  driver drop/error counters: {}", trouble.join(", "));
    }
}
