//! The `skb:kfree_skb` format of a real kernel: Debian's 6.1 package, read
//! from tracefs in a QEMU guest (tests/fixtures/kfree_skb-format-6.1/,
//! its LABEL says which build). 6.1 has the `reason` field and its
//! `__print_symbolic` table but no `rx_sk` (6.12) and no SKB_CONSUMED
//! (6.3): the parser finds the fields at their offsets and every reason.

#![allow(clippy::unwrap_used)]

use nettune_model::drops::format::{parse_format, DropLayout};
use std::path::Path;

fn format() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/kfree_skb-format-6.1/format");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn debian_6_1_kfree_skb_format_gives_its_layout_and_reasons() {
    let f = parse_format(&format()).unwrap();
    assert_eq!(f.id, Some(1319));
    let names: Vec<&str> = f.fields.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "common_type",
            "common_flags",
            "common_preempt_count",
            "common_pid",
            "skbaddr",
            "location",
            "protocol",
            "reason"
        ]
    );
    let l = DropLayout::of(&f).unwrap();
    assert_eq!(
        (l.location, l.protocol, l.reason, l.min_len),
        (16, Some(24), Some(28), 32)
    );
    // 1 NOT_SPECIFIED to 66 MAX, each once; 0 (SKB_NOT_DROPPED_YET) is
    // not printed.
    assert_eq!(f.reasons.len(), 66);
    assert_eq!(f.reasons.keys().next(), Some(&1));
    assert_eq!(f.reasons.keys().last(), Some(&66));
    for (n, name) in [
        (1, "NOT_SPECIFIED"),
        (2, "NO_SOCKET"),
        (15, "SOCKET_RCVBUFF"),
        (45, "QDISC_DROP"),
        (46, "CPU_BACKLOG"),
        (55, "FULL_RING"),
        (66, "MAX"),
    ] {
        assert_eq!(f.reasons.get(&n).map(String::as_str), Some(name), "{n}");
    }
    assert!(!f.reasons.values().any(|n| n == "CONSUMED"));
}
