//! Property tests ("fuzzing" with proptest) of the control protocol's
//! decoder and of what the server and client do with a peer's numbers:
//! random bytes, huge length prefixes and mutated valid frames never panic,
//! and a frame never makes the reader allocate more than the frame limit
//! (nor much more than the bytes that actually arrived). Case counts are
//! small so the whole file runs in seconds.

#![allow(clippy::unwrap_used)]

use nettune_engine as engine;

use engine::buffer_bytes;
use engine::client::summarize;
use engine::config::{Direction, End, Limits, TestConfig, TestKind};
use engine::proto::{
    self, read_frame_into, read_msg, read_preamble, Msg, ProtoError, FIRST_CHUNK, MAX_CLIENT_FRAME,
    MAX_SERVER_FRAME,
};
use engine::report::{hist_from_pairs, Counters, Role, SideReport, WorkerReport};
use proptest::collection::vec;
use proptest::prelude::*;

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn arb_kind() -> impl Strategy<Value = TestKind> {
    prop::sample::select(TestKind::ALL.to_vec())
}

fn arb_dir() -> impl Strategy<Value = Direction> {
    prop::sample::select(vec![
        Direction::Forward,
        Direction::Reverse,
        Direction::Bidir,
    ])
}

/// Any value of every field, edges included, as a hostile client may send.
fn arb_config() -> impl Strategy<Value = TestConfig> {
    let num = prop_oneof![any::<u32>(), 0u32..70_000, Just(u32::MAX), Just(0)];
    let ms = prop_oneof![
        any::<u64>(),
        0u64..100_000,
        Just(u64::MAX),
        Just(u64::MAX - 999)
    ];
    (
        (
            arb_kind(),
            num.clone(),
            num.clone(),
            vec(any::<u32>(), 0..4),
            num.clone(),
        ),
        (ms.clone(), ms.clone(), ms, arb_dir()),
        (
            prop::option::of(prop_oneof![
                any::<f64>(),
                Just(f64::MIN_POSITIVE),
                Just(1e300)
            ]),
            num.clone(),
            any::<bool>(),
            num,
            any::<[bool; 3]>(),
            prop::option::of(any::<u32>()),
            prop::option::of(any::<u32>()),
        ),
        (
            prop::option::of("[ -~]{0,20}"),
            prop::option::of(any::<u8>()),
            prop::option::of(any::<u32>()),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (test, flows, threads, cpus, size),
                (duration_ms, warmup_ms, interval_ms, direction),
                (
                    rate,
                    outstanding,
                    nodelay,
                    busy_poll_us,
                    [zerocopy, udp_gso, udp_gro],
                    sndbuf,
                    rcvbuf,
                ),
                (congestion, tos, mss, force_buffers),
            )| TestConfig {
                test,
                flows,
                threads,
                // Some of them pin the server apart (`--server-cpus`).
                server_cpus: (flows % 2 == 0).then(|| cpus.iter().rev().copied().collect()),
                cpus,
                size,
                duration_ms,
                warmup_ms,
                interval_ms,
                direction,
                rate,
                outstanding,
                nodelay,
                busy_poll_us,
                zerocopy,
                udp_gso,
                udp_gro,
                sndbuf,
                rcvbuf,
                congestion,
                tos,
                mss,
                force_buffers,
            },
        )
}

fn arb_msg() -> impl Strategy<Value = Msg> {
    let text = "[ -~]{0,40}";
    prop_oneof![
        (text, vec(text, 0..4), prop::option::of(text)).prop_map(|(version, caps, challenge)| {
            Msg::Hello {
                version,
                caps,
                challenge,
            }
        }),
        (text, text).prop_map(|(nonce, proof)| Msg::Auth { nonce, proof }),
        text.prop_map(|proof| Msg::AuthOk { proof }),
        (arb_config(), any::<bool>()).prop_map(|(config, doctor)| Msg::Setup { config, doctor }),
        (any::<u64>(), any::<u16>()).prop_map(|(test_id, port)| Msg::Ready { test_id, port }),
        Just(Msg::Connected),
        Just(Msg::Go),
        Just(Msg::ClientDone),
        Just(Msg::Stop),
        (text, text).prop_map(|(code, message)| Msg::Error { code, message }),
    ]
}

fn frame(m: &Msg) -> Vec<u8> {
    let mut b = Vec::new();
    proto::write_preamble(&mut b).unwrap();
    proto::write_msg(&mut b, m).unwrap();
    b
}

/// What the server does with a decoded setup, none of which may panic;
/// and what passes its limits is bounded.
fn server_checks(cfg: &TestConfig) -> Result<(), TestCaseError> {
    let l = Limits::default();
    let _ = cfg.intervals();
    let _ = cfg.total_flows();
    let _ = buffer_bytes(cfg, End::Client);
    let need = buffer_bytes(cfg, End::Server);
    if cfg.validate().is_ok() && cfg.check_limits(&l).is_ok() {
        prop_assert!(cfg.warmup_ms.checked_add(cfg.duration_ms).is_some());
        prop_assert!(cfg.warmup_ms + cfg.duration_ms <= l.max_duration_ms);
        prop_assert!(need <= l.max_test_memory);
        prop_assert!(cfg.total_flows() <= l.max_flows);
        prop_assert!(cfg.threads <= l.max_threads);
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..2048), max in 0usize..8192) {
        let mut body = Vec::new();
        let _ = read_frame_into(&mut &bytes[..], max, &mut body);
        prop_assert!(body.capacity() <= max);
        let mut r = &bytes[..];
        let _ = read_preamble(&mut r);
        let _ = read_msg(&mut r, max);
    }

    #[test]
    fn huge_length_prefixes_allocate_only_what_arrives(
        len in prop_oneof![any::<u32>(), Just(u32::MAX), (MAX_CLIENT_FRAME as u32 - 8)..(MAX_CLIENT_FRAME as u32 + 8)],
        tail in vec(any::<u8>(), 0..600),
        max in prop::sample::select(vec![0, 16, MAX_CLIENT_FRAME, MAX_SERVER_FRAME]),
    ) {
        let mut input = len.to_be_bytes().to_vec();
        input.extend_from_slice(&tail);
        let mut body = Vec::new();
        let r = read_frame_into(&mut &input[..], max, &mut body);
        prop_assert!(body.capacity() <= max, "capacity {} over the limit {max}", body.capacity());
        prop_assert!(
            body.capacity() <= FIRST_CHUNK.max(2 * tail.len()),
            "capacity {} for {} bytes received", body.capacity(), tail.len()
        );
        if len as usize > max {
            prop_assert!(matches!(r, Err(ProtoError::TooLarge(_))), "{r:?}");
            prop_assert_eq!(body.capacity(), 0);
        } else if (len as usize) > tail.len() {
            prop_assert!(matches!(r, Err(ProtoError::Closed)), "{r:?}");
        }
    }

    #[test]
    fn valid_frames_round_trip_and_mutations_never_panic(
        m in arb_msg(),
        flips in vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let good = frame(&m);
        let mut r = &good[..];
        prop_assert_eq!(read_preamble(&mut r).unwrap(), proto::PROTO_VERSION);
        let back = read_msg(&mut r, MAX_SERVER_FRAME).unwrap();
        // f64 rates may not round-trip bit for bit through JSON; compare the rest.
        if let (Msg::Setup { config: a, doctor: da }, Msg::Setup { config: b, doctor: db }) = (&m, &back) {
            prop_assert_eq!(da, db);
            prop_assert_eq!(&a.test, &b.test);
            prop_assert_eq!(a.duration_ms, b.duration_ms);
            prop_assert_eq!(a.warmup_ms, b.warmup_ms);
            server_checks(b)?;
        } else {
            prop_assert_eq!(&back, &m);
        }
        let mut bad = good.clone();
        for (i, b) in &flips {
            let at = i.index(bad.len());
            bad[at] ^= *b;
        }
        if truncate {
            bad.truncate(cut.index(bad.len() + 1));
        }
        let mut r = &bad[..];
        if read_preamble(&mut r).is_ok() {
            let mut body = Vec::new();
            let res = read_frame_into(&mut r, MAX_CLIENT_FRAME, &mut body);
            prop_assert!(body.capacity() <= MAX_CLIENT_FRAME);
            if res.is_ok() {
                if let Ok(Msg::Setup { config, .. }) = proto::decode(&body) {
                    server_checks(&config)?;
                }
            }
        }
    }

    #[test]
    fn any_setup_is_checked_without_panics(cfg in arb_config()) {
        server_checks(&cfg)?;
    }

    /// What a hostile server may send back: the client's summary of any
    /// report never panics (sums saturate).
    #[test]
    fn any_server_report_is_summarized_without_panics(
        test in arb_kind(),
        direction in arb_dir(),
        counts in vec(
            (
                prop::array::uniform9(prop_oneof![any::<u64>(), Just(u64::MAX), 0u64..1000]),
                prop::sample::select(vec![Role::Send, Role::Recv, Role::Request, Role::Respond]),
                any::<bool>(),
            ),
            0..8,
        ),
        hist in vec(any::<[u64; 2]>(), 0..16),
        err in prop::option::of("[\\x00-\\x7f]{0,64}"),
    ) {
        let workers: Vec<WorkerReport> = counts
            .iter()
            .enumerate()
            .map(|(i, (c, role, rev))| {
                let k = Counters {
                    bytes: c[0], msgs: c[1], expected: c[2], out_of_order: c[3],
                    duplicates: c[4], foreign: c[5], lost: c[6], errors: c[7], reads: c[8],
                };
                WorkerReport {
                    worker: i as u32,
                    role: Some(*role),
                    dir: Some(if *rev { engine::FlowDir::Reverse } else { engine::FlowDir::Forward }),
                    window: k,
                    total: k,
                    hist: hist.clone(),
                    error: err.clone(),
                    ..WorkerReport::default()
                }
            })
            .collect();
        let _ = hist_from_pairs(&hist);
        let server = SideReport { workers: workers.clone(), ..SideReport::default() };
        let client = SideReport { workers, ..SideReport::default() };
        let cfg = TestConfig { test, direction, size: test.default_size(), ..TestConfig::default() };
        let r = summarize(&cfg, "h:1".into(), 1, client, server, Vec::new(), true);
        for n in &r.notes {
            prop_assert!(!n.chars().any(|c| c.is_control()), "{n:?}");
        }
        let _ = engine::render::human(&r);
    }
}
