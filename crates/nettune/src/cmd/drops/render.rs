//! The human screen of `nettune drops`: one block per interval.

use model::drops::reasons;
use model::drops::{Counting, DropInterval, Row};
use std::fmt::Write as _;

/// Reasons listed per block.
pub const TOP_REASONS: usize = 10;
/// Locations listed per block.
pub const TOP_LOCATIONS: usize = 5;

fn rate(r: f64) -> String {
    model::metric::num(r)
}

fn protocols(rows: &[Row]) -> String {
    rows.iter()
        .map(|r| format!("{} {}/s", r.name, rate(r.per_sec)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The block of interval `d` under heading `head`; `iface` is (name, rx
/// drops, tx drops) of `--iface`.
pub fn render(head: &str, d: &DropInterval, iface: Option<(&str, u64, u64)>) -> String {
    let mut s = String::new();
    let how = if d.total == 0 {
        ""
    } else if d.exact {
        " (every drop sampled)"
    } else if d.reasons_exact {
        " (by reason: exact; locations: estimated from samples)"
    } else {
        " (by reason: estimated from samples)"
    };
    let counting = match d.counting {
        Counting::Perf => "perf",
        Counting::Bpf => "bpf",
    };
    let _ = writeln!(
        s,
        "{head}  {:.1} s  drops {}/s  total {}{how}  counting: {counting}",
        d.seconds,
        rate(d.per_sec),
        d.total
    );
    if d.lost > 0 {
        let _ = writeln!(s, "  {} records lost (ring full)", d.lost);
    }
    if d.unrecorded > 0 {
        let _ = writeln!(
            s,
            "  {} drops counted with no record (the kernel wrote none): the rows miss them",
            d.unrecorded
        );
    }
    if let Some((name, rx, tx)) = iface {
        let _ = writeln!(
            s,
            "  {name}: rx_dropped {rx}  tx_dropped {tx} (its own counters)"
        );
    }
    if d.reasons.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "  {:<22} {:>10} {:>10}  {:<18} fix",
        "reason", "/s", "count", "confirms"
    );
    for r in d.reasons.iter().take(TOP_REASONS) {
        let info = reasons::info(&r.name);
        let confirms = info.confirms.map_or("-", |f| f.as_str());
        let _ = writeln!(
            s,
            "  {:<22} {:>10} {:>10}  {:<18} {}",
            r.name,
            rate(r.per_sec),
            r.count,
            confirms,
            info.fix
        );
    }
    if d.reasons.len() > TOP_REASONS {
        let _ = writeln!(s, "  ... {} more reasons", d.reasons.len() - TOP_REASONS);
    }
    let _ = writeln!(s, "  {:<40} {:>10} {:>10}", "location", "/s", "count");
    for r in d.locations.iter().take(TOP_LOCATIONS) {
        let _ = writeln!(
            s,
            "  {:<40} {:>10} {:>10}",
            r.name,
            rate(r.per_sec),
            r.count
        );
    }
    if !d.protocols.is_empty() {
        let _ = writeln!(s, "  protocol: {}", protocols(&d.protocols));
    }
    s
}

#[cfg(test)]
mod tests {
    use model::drops::{DropCounts, DropInterval};

    #[test]
    fn drops_counted_with_no_record_are_said_and_the_block_is_not_exact() {
        let mut cur = DropCounts::new();
        cur.total = 2;
        cur.unrecorded = 2;
        let d = DropInterval::between(&DropCounts::new(), &cur, 1.0);
        let s = super::render("interval", &d, None);
        assert!(!s.contains("every drop sampled"), "{s}");
        assert!(
            s.contains("2 drops counted with no record (the kernel wrote none)"),
            "{s}"
        );
    }
}
