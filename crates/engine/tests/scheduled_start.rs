//! A scheduled start (`bench --start-at`, `fleet bench`): with a server
//! offering `start-at`, the client reads the server's clock (`time`), says
//! `connected_at` and gets `go` before the instant, and both ends' workers
//! start by themselves at it; a server too far ahead is refused; an older
//! server (no `start-at`) gets `connected` after the instant, as before.
//! In-process servers on loopback.

#![allow(clippy::unwrap_used)]

mod common;

use nettune_engine::client::{self, ClientOpts};
use nettune_engine::config::{TestConfig, TestKind};
use nettune_engine::proto::{self, Msg};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn now_ns() -> u64 {
    nettune_engine::report::realtime_ns()
}

fn server() -> SocketAddr {
    common::loopback_server()
}

fn rr() -> TestConfig {
    TestConfig {
        test: TestKind::TcpRr,
        size: 64,
        warmup_ms: 0,
        duration_ms: 300,
        interval_ms: 100,
        ..TestConfig::default()
    }
}

/// Preamble, hello (its caps), setup; the `ready` answer.
fn raw_setup(addr: SocketAddr, cfg: &TestConfig) -> (TcpStream, Vec<String>, u64, u16) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    proto::write_preamble(&mut c).unwrap();
    proto::read_preamble(&mut c).unwrap();
    let caps = match proto::read_msg(&mut c, 1 << 20).unwrap() {
        Msg::Hello { caps, .. } => caps,
        m => panic!("expected hello, got {m:?}"),
    };
    proto::write_msg(
        &mut c,
        &Msg::Setup {
            config: cfg.clone(),
            doctor: false,
        },
    )
    .unwrap();
    match proto::read_msg(&mut c, 1 << 20).unwrap() {
        Msg::Ready { test_id, port } => (c, caps, test_id, port),
        m => panic!("expected ready, got {m:?}"),
    }
}

#[test]
fn a_scheduled_start_begins_at_its_instant() {
    let addr = server();
    let at = now_ns() + 500_000_000;
    let o = ClientOpts {
        start_at: Some(at),
        ..ClientOpts::new("127.0.0.1", addr.port())
    };
    let res = client::run(&o, &rr(), &mut |_| {}).unwrap();
    let began = res.started_at_unix_ns.unwrap();
    // Never before the instant (but for a slewing CLOCK_REALTIME against
    // the monotonic sleep, well under a millisecond over half a second);
    // the bound above is the mechanism's (a `go` lost or waited for would
    // be seconds), not the scheduler's.
    assert!(began + 1_000_000 >= at, "began {} ns early", at - began);
    assert!(began < at + 1_000_000_000, "began {} ns late", began - at);
    assert!(res.results.iter().all(|r| r.msgs > 0), "{:?}", res.results);
}

#[test]
fn the_server_answers_time_and_sends_go_before_the_instant() {
    let addr = server();
    let (mut c, caps, test_id, port) = raw_setup(addr, &rr());
    assert!(caps.iter().any(|c| c == proto::CAP_START_AT), "{caps:?}");
    let mut d = TcpStream::connect(("127.0.0.1", port)).unwrap();
    d.write_all(&proto::data_preamble(test_id, 0)).unwrap();
    for _ in 0..3 {
        let t0 = now_ns();
        proto::write_msg(&mut c, &Msg::Time).unwrap();
        let ts = match proto::read_msg(&mut c, 1 << 20).unwrap() {
            Msg::TimeIs { realtime_ns } => realtime_ns,
            m => panic!("expected time_is, got {m:?}"),
        };
        // One machine, one clock.
        assert!((t0..=now_ns()).contains(&ts), "{t0} {ts}");
    }
    let at = now_ns() + 800_000_000;
    proto::write_msg(
        &mut c,
        &Msg::ConnectedAt {
            start_at_unix_ns: at,
        },
    )
    .unwrap();
    match proto::read_msg(&mut c, 1 << 20).unwrap() {
        Msg::Go => {}
        m => panic!("expected go, got {m:?}"),
    }
    // `go` came at once, not at the instant.
    assert!(
        now_ns() < at,
        "go arrived {} ns after the instant",
        now_ns() - at
    );
    // The server's responder waits for the instant: a request sent now is
    // answered only from then on.
    let t = Instant::now();
    d.write_all(&[0u8; 64]).unwrap();
    let mut buf = [0u8; 64];
    std::io::Read::read_exact(&mut d, &mut buf).unwrap();
    assert!(
        now_ns() + 1_000_000 >= at,
        "answered {:?} after",
        t.elapsed()
    );
}

#[test]
fn a_start_too_far_ahead_is_refused() {
    let addr = server();
    let (mut c, _, test_id, port) = raw_setup(addr, &rr());
    let mut d = TcpStream::connect(("127.0.0.1", port)).unwrap();
    d.write_all(&proto::data_preamble(test_id, 0)).unwrap();
    proto::write_msg(
        &mut c,
        &Msg::ConnectedAt {
            start_at_unix_ns: now_ns() + 60_000_000_000,
        },
    )
    .unwrap();
    match proto::read_msg(&mut c, 1 << 20).unwrap() {
        Msg::Error { code, message } => {
            assert_eq!(code, "protocol");
            assert!(message.contains("ahead (at most 10 s)"), "{message}");
        }
        m => panic!("expected an error, got {m:?}"),
    }
}

#[test]
fn an_older_server_gets_connected_after_the_instant() {
    // A server without `start-at`: hello, ready, then it reads what comes.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let data = TcpListener::bind("127.0.0.1:0").unwrap();
    let (port, dport) = (
        l.local_addr().unwrap().port(),
        data.local_addr().unwrap().port(),
    );
    let old = std::thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        proto::read_preamble(&mut c).unwrap();
        proto::write_preamble(&mut c).unwrap();
        let caps = proto::CAPS
            .iter()
            .filter(|c| **c != proto::CAP_START_AT)
            .map(|c| c.to_string())
            .collect();
        proto::write_msg(
            &mut c,
            &Msg::Hello {
                version: "0.0.9".into(),
                caps,
                challenge: None,
            },
        )
        .unwrap();
        assert!(matches!(
            proto::read_msg(&mut c, 1 << 20).unwrap(),
            Msg::Setup { .. }
        ));
        proto::write_msg(
            &mut c,
            &Msg::Ready {
                test_id: 7,
                port: dport,
            },
        )
        .unwrap();
        let _d = data.accept().unwrap();
        let m = proto::read_msg(&mut c, 1 << 20).unwrap();
        let when = now_ns();
        let _ = proto::write_msg(
            &mut c,
            &Msg::Error {
                code: "internal".into(),
                message: "the test ends here".into(),
            },
        );
        (m, when)
    });
    let at = now_ns() + 400_000_000;
    let o = ClientOpts {
        start_at: Some(at),
        ..ClientOpts::new("127.0.0.1", port)
    };
    let e = client::run(&o, &rr(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("the test ends here"), "{e}");
    let (m, when) = old.join().unwrap();
    assert_eq!(m, Msg::Connected);
    assert!(when >= at, "connected {} ns before the instant", at - when);
}
