//! Every test kind's name, capability, units and option rules come from
//! the one catalogue (`config::catalogue::CATALOGUE`), so adding a kind is
//! one entry there.
#![allow(clippy::unwrap_used)]

use nettune_engine::config::catalogue::{self, Transport, CATALOGUE};
use nettune_engine::config::End;
use nettune_engine::proto::CAPS;
use nettune_engine::report::{service_demand, IntervalReport};
use nettune_engine::{buffer_bytes, render, TestConfig, TestKind};

#[test]
fn names_are_unique_and_kinds_are_the_catalogues() {
    let names = catalogue::names();
    let mut seen = std::collections::BTreeSet::new();
    for n in names {
        assert!(
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
            "{n}"
        );
        assert!(seen.insert(n), "{n} twice");
    }
    let kinds: Vec<TestKind> = CATALOGUE.iter().map(|k| k.kind).collect();
    assert_eq!(TestKind::ALL.to_vec(), kinds);
    for (i, k) in TestKind::ALL.into_iter().enumerate() {
        assert_eq!(k.spec().kind, k);
        assert_eq!(k.name(), names[i]);
        assert_eq!(k.default_size(), CATALOGUE[i].default_size);
        assert_eq!(k.is_stream(), CATALOGUE[i].stream);
        assert_eq!(k.is_udp(), CATALOGUE[i].transport == Transport::Udp);
    }
}

#[test]
fn parse_display_and_serde_round_trip_the_catalogue_names() {
    for k in CATALOGUE {
        let t: TestKind = k.name.parse().unwrap();
        assert_eq!(t, k.kind);
        assert_eq!(t.to_string(), k.name);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            format!("\"{}\"", k.name)
        );
        let back: TestKind = serde_json::from_str(&format!("\"{}\"", k.name)).unwrap();
        assert_eq!(back, t);
    }
    let e = "udp-x".parse::<TestKind>().unwrap_err().to_string();
    let names = catalogue::names();
    let (last, rest) = names.split_last().unwrap();
    assert_eq!(
        e,
        format!(
            "unknown test `udp-x` (expected {} or {last})",
            rest.join(", ")
        )
    );
    // Unchanged for the kinds there were before the catalogue.
    assert!(
        e.starts_with("unknown test `udp-x` (expected tcp-stream, udp-stream, tcp-rr, udp-rr"),
        "{e}"
    );
}

#[test]
fn caps_are_the_catalogue_names_then_the_options() {
    let names = catalogue::names();
    assert_eq!(&CAPS[..names.len()], &names[..]);
    assert!(CAPS[names.len()..].iter().all(|c| !names.contains(c)));
    // The wire is unchanged: the kinds there were before the catalogue
    // come first, in order, and the options after the kinds are the same.
    assert_eq!(
        &CAPS[..5],
        ["tcp-stream", "udp-stream", "tcp-rr", "udp-rr", "tcp-crr"]
    );
    assert_eq!(
        &CAPS[names.len()..],
        [
            "reverse",
            "bidir",
            "udp-gso",
            "udp-gro",
            "zerocopy",
            "busy-poll",
            "auth-hmac-sha256",
            "stop",
            "congestion",
            "tos",
            "mss",
            nettune_engine::diagnosis::CAP,
            "start-at",
        ]
    );
}

#[test]
fn units_in_text_and_results_come_from_the_catalogue() {
    for k in CATALOGUE {
        assert!(!k.unit.is_empty() && !k.lost.is_empty(), "{}", k.name);
        // Only a kind counting bytes has no message rate.
        assert_eq!(k.rate_unit.is_none(), k.unit == "bytes", "{}", k.name);
        let i = IntervalReport {
            per_sec: 1000.0,
            lost_estimate: 3,
            ..IntervalReport::default()
        };
        let line = render::interval_line(k.kind, &i);
        match k.rate_unit {
            Some(u) => assert!(line.contains(u), "{line}"),
            None => assert!(!line.contains("/s  "), "{line}"),
        }
        assert_eq!(line.contains("lost ~3"), k.sequenced, "{line}");
        let sd = service_demand(k.kind, 1e6, 1 << 20, 1000);
        assert_eq!(sd.us_per_mb.is_some(), k.stream, "{}", k.name);
        assert_eq!(sd.us_per_transaction.is_some(), !k.stream, "{}", k.name);
        assert_eq!(sd.us_per_kpkt.is_some(), k.sequenced, "{}", k.name);
    }
}

#[test]
fn option_rules_and_buffers_come_from_the_catalogue() {
    for k in CATALOGUE {
        let base = TestConfig {
            test: k.kind,
            size: k.default_size,
            ..TestConfig::default()
        };
        base.validate().unwrap();
        for end in [End::Client, End::Server] {
            assert!(buffer_bytes(&base, end) > 0, "{} {end:?}", k.name);
        }
        let c = TestConfig {
            outstanding: 2,
            size: k.default_size.max(16),
            ..base.clone()
        };
        assert_eq!(c.validate().is_ok(), k.outstanding, "{}", k.name);
        // A rate every open-loop kind can pace one flow at (100 Mbit/s is
        // 95 writes of 128 KiB a second; 1e8 transactions/s is below one a ns).
        let c = TestConfig {
            rate: Some(1e8),
            ..base.clone()
        };
        assert_eq!(c.validate().is_ok(), k.open_loop, "{}", k.name);
        let c = TestConfig {
            zerocopy: true,
            ..base.clone()
        };
        assert_eq!(c.validate().is_ok(), k.zerocopy, "{}", k.name);
        let c = TestConfig {
            direction: nettune_engine::Direction::Bidir,
            ..base.clone()
        };
        assert_eq!(c.validate().is_ok(), k.stream, "{}", k.name);
        assert_eq!(base.memory_hint(), k.memory_hint);
    }
    let e = TestConfig {
        outstanding: 2,
        ..TestConfig::default()
    }
    .validate()
    .unwrap_err()
    .0;
    assert_eq!(
        e,
        format!(
            "--outstanding applies to {}, not tcp-stream",
            catalogue::names_where(|k| k.outstanding)
        )
    );
    assert!(
        e.starts_with("--outstanding applies to tcp-rr and udp-rr"),
        "{e}"
    );
}
