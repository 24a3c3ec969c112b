//! The drop-reason parsers and arithmetic on captured kernel text
//! (tests/data/kfree_skb, labelled in its LABEL) and on hostile bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use nettune_model::drops::format::{parse_format, DropLayout, FormatError};
use nettune_model::drops::kallsyms::Kallsyms;
use nettune_model::drops::reasons::{self, Group};
use nettune_model::drops::record::{decode, encode_samples, records, Record};
use nettune_model::drops::{next_period, DropCounts, DropInterval};
use nettune_model::finding_id::FindingId;
use proptest::prelude::*;

const F618: &str = include_str!("data/kfree_skb/format-6.18");
const F515: &str = include_str!("data/kfree_skb/format-5.15-synthetic");

#[test]
fn the_618_format_gives_id_layout_and_128_reasons() {
    let f = parse_format(F618).unwrap();
    assert_eq!(f.id, Some(2310));
    assert_eq!(f.reasons.len(), 128, "2..=128 and 129 MAX");
    assert_eq!(f.reasons.get(&3).map(String::as_str), Some("NO_SOCKET"));
    assert_eq!(
        f.reasons.get(&6).map(String::as_str),
        Some("SOCKET_RCVBUFF")
    );
    assert_eq!(
        f.reasons.get(&128).map(String::as_str),
        Some("SKB_RX_HEADROOM")
    );
    let l = DropLayout::of(&f).unwrap();
    assert_eq!(
        (l.location, l.protocol, l.reason, l.min_len),
        (16, Some(32), Some(36), 40)
    );
}

#[test]
fn a_kernel_before_517_has_locations_but_no_reason() {
    let f = parse_format(F515).unwrap();
    assert!(f.reasons.is_empty());
    let l = DropLayout::of(&f).unwrap();
    assert_eq!(l.reason, None);
    assert_eq!(l.location, 16);
    let mut raw = vec![0u8; 32];
    raw[16..24].copy_from_slice(&0xffff_ffff_8100_0010u64.to_ne_bytes());
    raw[24..26].copy_from_slice(&0x86ddu16.to_ne_bytes());
    let d = decode(&l, &raw).unwrap();
    assert_eq!(
        (d.location, d.protocol, d.reason),
        (0xffff_ffff_8100_0010, Some(0x86dd), None)
    );
}

#[test]
fn a_format_without_location_is_refused_by_name() {
    let f =
        parse_format("name: x\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n")
            .unwrap();
    assert_eq!(DropLayout::of(&f), Err(FormatError::NoLocation));
    let big = "x".repeat(70_000);
    assert!(matches!(parse_format(&big), Err(FormatError::TooLarge(_))));
}

fn raw_618(location: u64, protocol: u16, reason: u32) -> Vec<u8> {
    let mut raw = vec![0u8; 44];
    raw[16..24].copy_from_slice(&location.to_ne_bytes());
    raw[32..34].copy_from_slice(&protocol.to_ne_bytes());
    raw[36..40].copy_from_slice(&reason.to_ne_bytes());
    raw
}

#[test]
fn ring_records_decode_to_the_drops_written() {
    let l = DropLayout::of(&parse_format(F618).unwrap()).unwrap();
    let buf = encode_samples(&[raw_618(0x10, 0x0800, 3), raw_618(0x20, 0x86dd, 6)], 7);
    let rs: Vec<_> = records(&buf).collect();
    assert_eq!(rs.len(), 3);
    assert_eq!(rs[2], Record::Lost(7));
    let Record::Sample(raw) = rs[1] else {
        panic!("{rs:?}")
    };
    let d = decode(&l, raw).unwrap();
    assert_eq!(
        (d.location, d.protocol, d.reason),
        (0x20, Some(0x86dd), Some(6))
    );
    // a torn buffer ends the walk without reading past it
    assert_eq!(records(&buf[..buf.len() - 3]).count(), 2);
    assert_eq!(decode(&l, &raw[..39]), None);
}

#[test]
fn kallsyms_names_locations_and_sees_hidden_addresses() {
    let k = Kallsyms::parse(
        "ffffffff81000000 T _text\nffffffff81a00000 t udp_queue_rcv_one_skb\nffffffff81a00400 D data\nffffffff81b00000 T __udp4_lib_rcv\tbad extra\n",
    );
    assert_eq!(k.len(), 3);
    assert_eq!(k.name(0xffff_ffff_81a0_0123), "udp_queue_rcv_one_skb+0x123");
    assert_eq!(k.name(0x10), "0x10");
    assert!(!k.hidden());
    let h = Kallsyms::parse("0000000000000000 T _text\n0000000000000000 t foo\n");
    assert!(h.hidden());
    assert_eq!(h.name(0xffff_ffff_81a0_0123), "0xffffffff81a00123");
}

#[test]
fn an_interval_is_exact_when_every_drop_was_sampled_and_scaled_otherwise() {
    let mut a = DropCounts::new();
    a.total = 10;
    for _ in 0..10 {
        a.add_sample("NO_SOCKET", "x+0x1", Some(0x0800));
    }
    let mut b = a.clone();
    b.total += 100;
    for _ in 0..100 {
        b.add_sample("SOCKET_RCVBUFF", "y+0x2", Some(0x86dd));
    }
    let i = DropInterval::between(&a, &b, 2.0);
    assert!(i.exact);
    assert_eq!(
        (i.total, i.reason("SOCKET_RCVBUFF"), i.reason("NO_SOCKET")),
        (100, 100, 0)
    );
    assert_eq!(i.per_sec, 50.0);
    assert_eq!(i.protocols[0].name, "IPv6");
    // thinned: 1000 drops, 10 sampled (3 NO_SOCKET, 7 RCVBUFF) → 300 and 700
    let mut c = b.clone();
    c.total += 1000;
    c.thinned += 1;
    for _ in 0..3 {
        c.add_sample("NO_SOCKET", "x+0x1", None);
    }
    for _ in 0..7 {
        c.add_sample("SOCKET_RCVBUFF", "y+0x2", None);
    }
    let j = DropInterval::between(&b, &c, 1.0);
    assert!(!j.exact);
    assert_eq!(
        (j.reason("NO_SOCKET"), j.reason("SOCKET_RCVBUFF")),
        (300, 700)
    );
    // a counter that went back counts from zero instead of wrapping
    let k = DropInterval::between(&c, &a, 1.0);
    assert_eq!(k.total, 10);
}

#[test]
fn the_period_keeps_records_within_the_budget() {
    assert_eq!(next_period(0, 500), 1);
    assert_eq!(next_period(500, 500), 1);
    assert_eq!(next_period(501, 500), 2);
    assert_eq!(next_period(1_000_000, 500), 2000);
    assert_eq!(next_period(u64::MAX, 0), 1);
}

#[test]
fn the_catalogue_names_the_issues_reasons_and_each_exists_in_618() {
    let table = parse_format(F618).unwrap().reasons;
    let known: Vec<&str> = table.values().map(String::as_str).collect();
    for r in reasons::REASONS {
        assert!(known.contains(&r.name), "{} is not a 6.18 reason", r.name);
        assert!(!r.meaning.is_empty() && !r.fix.is_empty(), "{}", r.name);
    }
    for (name, finding) in [
        ("SOCKET_RCVBUFF", Some(FindingId::UdpRcvbufErrors)),
        ("CPU_BACKLOG", Some(FindingId::SoftnetDrops)),
        ("TCP_LISTEN_OVERFLOW", Some(FindingId::ListenDrops)),
        ("FULL_RING", Some(FindingId::RingSmall)),
        ("QDISC_DROP", Some(FindingId::LinkSaturated)),
        ("NO_SOCKET", None),
    ] {
        let i = reasons::info(name);
        assert_eq!((i.name, i.confirms), (name, finding));
    }
    assert!(reasons::info("NO_SOCKET")
        .fix
        .contains("not a tuning matter"));
    assert!(reasons::info("NETFILTER_DROP")
        .fix
        .contains("not a tuning matter"));
    // every 6.18 reason gets a line: its own or its group's
    for name in known {
        let i = reasons::info(name);
        assert!(!i.meaning.is_empty(), "{name}");
    }
    assert_eq!(reasons::info("TCP_RFC7323_PAWS").group, Group::TcpCheck);
    assert_eq!(reasons::info("UDP_CSUM").group, Group::Malformed);
    assert_eq!(reasons::info("SOME_FUTURE_REASON").group, Group::Other);
}

proptest! {
    #[test]
    fn no_panic_on_any_format(s in ".{0,400}") {
        let _ = parse_format(&s).map(|f| DropLayout::of(&f));
        let _ = parse_format(&format!("print fmt: \"\", __print_symbolic(REC->reason, {s}"));
    }

    #[test]
    fn no_panic_on_any_ring(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let l = DropLayout::of(&parse_format(F618).unwrap()).unwrap();
        for r in records(&bytes) {
            if let Record::Sample(raw) = r {
                let _ = decode(&l, raw);
            }
        }
    }

    #[test]
    fn no_panic_on_any_kallsyms(s in ".{0,400}", addr in any::<u64>()) {
        let _ = Kallsyms::parse(&s).name(addr);
    }
}

#[test]
fn bpf_counted_reasons_stay_exact_while_locations_are_scaled() {
    use nettune_model::drops::Counting;
    let mut a = DropCounts::new();
    a.counting = Counting::Bpf;
    let mut b = a.clone();
    // 1000 drops counted by reason in the kernel, 10 records sampled
    b.total = 1000;
    b.by_reason.insert("NO_SOCKET".into(), 900);
    b.by_reason.insert("SOCKET_RCVBUFF".into(), 100);
    b.thinned = 1;
    for _ in 0..10 {
        b.add_located("x+0x1", Some(0x0800));
    }
    let i = DropInterval::between(&a, &b, 1.0);
    assert!(!i.exact);
    assert!(i.reasons_exact);
    assert_eq!(i.counting, Counting::Bpf);
    assert_eq!(
        (i.reason("NO_SOCKET"), i.reason("SOCKET_RCVBUFF")),
        (900, 100)
    );
    assert_eq!(i.sampled, 10);
    assert_eq!(i.locations[0].count, 1000, "the sampled share of the total");
    // perf counting: reasons are sampled shares, not exact
    let mut c = DropCounts::new();
    c.total = 100;
    c.thinned = 1;
    c.add_sample("NO_SOCKET", "x+0x1", None);
    let j = DropInterval::between(&DropCounts::new(), &c, 1.0);
    assert!(!j.reasons_exact);
    assert_eq!(j.counting, Counting::Perf);
    assert_eq!(j.reason("NO_SOCKET"), 100);
}
