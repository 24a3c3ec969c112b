//! The server under abuse: against one `nettune serve` process, at the same
//! time, random bytes, huge length prefixes, huge but well-formed requests,
//! slow-loris clients from one and from many prefixes, half handshakes,
//! and clients that vanish before and during a test. Meanwhile real
//! `bench` runs must complete, and afterwards the server's resident memory
//! (VmRSS) must not have grown by more than 64 MiB. Bounded to well under a
//! minute; loopback only (127/8 source addresses stand for other hosts).

#![allow(clippy::unwrap_used)]

mod engine_common;
use engine::config::{Direction, TestConfig, TestKind};
use engine::proto::{self, Msg};
use engine_common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most the server's RSS may grow over the abuse.
const MAX_GROWTH_KIB: u64 = 64 * 1024;

fn quick(port: u16, test: &str) -> Vec<String> {
    let mut v: Vec<String> = [
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--test",
        test,
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(QUICK.iter().map(|s| s.to_string()));
    v
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

/// Deterministic junk (xorshift).
fn junk(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// `n` connections from `from` that dribble one byte every 500 ms (a
/// preamble, then a frame that never ends) until `stop`. They are all
/// connected before this returns: a connection arriving later would evict
/// the oldest unfinished handshake of its prefix, which may be one of the
/// test's own (127.0.9.3 shares 127.0.9.0/24 with them). Past the prefix's
/// burst of new connections (32) the server refuses the rest at once.
fn slow_loris(port: u16, from: &'static str, n: usize, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    let mut conns: Vec<TcpStream> = (0..n)
        .filter_map(|_| connect_from(from, port).ok())
        .collect();
    std::thread::spawn(move || {
        let mut dribble = b"NTUN\x00\x01\x00\x03\xff\xff".to_vec();
        dribble.extend_from_slice(&[b'{'; 64]);
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            let b = dribble[i % dribble.len()];
            for c in &mut conns {
                let _ = c.write_all(&[b]);
            }
            i += 1;
            std::thread::sleep(Duration::from_millis(500));
        }
    })
}

// One long scenario on purpose (about 200 lines): every abuse runs against the
// same server process so that its RSS growth covers all of them together.
#[test]
fn server_survives_abuse_with_bounded_memory() {
    let t0 = Instant::now();
    // Under a 4 GiB address-space cap, so any unbounded allocation fails
    // (and shows as a dead server) instead of reaching the OOM killer.
    let (mut s, _log) = serve_logged(&[], &["-q"], Some(4 << 20));
    let port = s.port;
    let pid = s.child.id();
    // One run of each kind first, so per-thread allocator arenas and lazily
    // built state exist before the baseline.
    for t in ["tcp-rr", "udp-stream", "tcp-stream"] {
        sane(&json(&bench(&refs(&quick(port, t)), &[])), t);
    }
    std::thread::sleep(Duration::from_millis(300));
    let rss0 = rss_kib(pid);
    let stop = Arc::new(AtomicBool::new(false));

    // Slow clients: 64 from one address, and 64 spread over 8 more. The
    // abusers share 127.0.9.0/24, not the real clients' 127.0.0.0/24: new
    // connections are rate-limited per prefix, so abusers in a client's
    // own prefix would hold it back (docs/security.md).
    let mut threads = vec![slow_loris(port, "127.0.9.3", 64, stop.clone())];
    // (Distinct /24s, so they fill the pool and make it evict its oldest.)
    for from in [
        "127.0.10.1",
        "127.0.11.1",
        "127.0.12.1",
        "127.0.13.1",
        "127.0.14.1",
        "127.0.15.1",
        "127.0.16.1",
        "127.0.17.1",
    ] {
        threads.push(slow_loris(port, from, 8, stop.clone()));
    }

    // Random bytes, with and without a valid preamble.
    for seed in 0..40u64 {
        if let Ok(mut c) = connect_from("127.0.9.2", port) {
            let mut b = junk(seed, 16 * 1024);
            if seed % 2 == 0 {
                b.splice(0..0, b"NTUN\x00\x01".iter().copied());
            }
            let _ = c.write_all(&b);
        }
    }

    // Huge length prefixes: over the limit, and at the limit but never sent.
    let mut held = Vec::new();
    for prefix in [
        [0xff, 0xff, 0xff, 0xff],
        [0x00, 0x04, 0x00, 0x00],
        [0x00, 0x03, 0xff, 0xff],
    ] {
        if let Ok(mut c) = connect_from("127.0.9.4", port) {
            let _ = c.write_all(b"NTUN\x00\x01");
            let _ = c.write_all(&prefix);
            let _ = c.write_all(b"{\"type\":");
            held.push(c);
        }
    }

    // Half handshakes: a preamble and nothing more; and a bare connection.
    for _ in 0..4 {
        if let Ok(mut c) = connect_from("127.0.9.5", port) {
            let _ = c.write_all(b"NTUN\x00\x01");
            held.push(c);
        }
        if let Ok(c) = connect_from("127.0.9.5", port) {
            held.push(c);
        }
    }

    // Huge but well-formed requests: each is refused with `limit`.
    let huge = [
        TestConfig {
            test: TestKind::TcpRr,
            size: 16 << 20,
            outstanding: 4096,
            ..TestConfig::default()
        },
        TestConfig {
            test: TestKind::TcpStream,
            direction: Direction::Reverse,
            size: 16 << 20,
            flows: 64,
            threads: 64,
            ..TestConfig::default()
        },
        TestConfig {
            test: TestKind::UdpStream,
            size: 65000,
            flows: 1024,
            threads: 64,
            ..TestConfig::default()
        },
        TestConfig {
            test: TestKind::TcpCrr,
            size: 16 << 20,
            flows: 64,
            threads: 64,
            ..TestConfig::default()
        },
        TestConfig {
            warmup_ms: u64::MAX - 999,
            duration_ms: 2000,
            ..TestConfig::default()
        },
    ];
    for cfg in &huge {
        let (_c, answer) = raw_setup_from("127.0.6.6", port, None, cfg);
        match answer {
            Msg::Error { code, .. } => assert!(code == "limit" || code == "config", "{code}"),
            m => panic!("accepted {cfg:?}: {m:?}"),
        }
    }

    // Clients that vanish: after `ready` with half their flows connected,
    // and real bench runs killed mid-test.
    for t in [TestKind::TcpStream, TestKind::UdpRr] {
        let cfg = TestConfig {
            test: t,
            size: t.default_size(),
            flows: 2,
            ..TestConfig::default()
        };
        let (c, answer) = raw_setup_from("127.0.7.7", port, None, &cfg);
        if let Msg::Ready { test_id, port } = answer {
            if t == TestKind::TcpStream {
                if let Ok(mut d) = TcpStream::connect(("127.0.0.1", port)) {
                    let _ = d.write_all(&proto::data_preamble(test_id, 0));
                }
            }
        }
        drop(c);
    }
    let victims: Vec<_> = ["tcp-stream", "udp-stream", "tcp-rr"]
        .iter()
        .map(|t| {
            Command::new(BIN)
                .args(["bench", "127.0.0.1", "-p", &port.to_string(), "--test", t])
                .args(["--warmup", "0", "--duration", "30", "--json"])
                .env_remove("NETTUNE_TOKEN")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(800));
    for mut v in victims {
        assert!(
            v.try_wait().unwrap().is_none(),
            "a victim was still running"
        );
        v.kill().unwrap();
        v.wait().unwrap();
    }

    // Real clients are served all the while.
    for t in ["tcp-rr", "udp-stream", "tcp-stream", "udp-rr", "tcp-crr"] {
        sane(&json(&bench(&refs(&quick(port, t)), &[])), t);
    }
    let mid = rss_kib(pid);

    // Stop the abuse; the server drops every unfinished handshake within its
    // 5 s deadline.
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let gone_by = Instant::now() + Duration::from_secs(8);
    for mut c in held {
        c.set_read_timeout(Some(
            gone_by
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        ))
        .unwrap();
        let mut sink = Vec::new();
        match c.read_to_end(&mut sink) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("the server kept a half handshake open: {e}"),
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    sane(&json(&bench(&refs(&quick(port, "tcp-rr")), &[])), "tcp-rr");
    let rss1 = rss_kib(pid);
    assert!(alive(&mut s), "the server is still running");
    eprintln!(
        "server VmRSS: before {rss0} KiB, during {mid} KiB, after {rss1} KiB (growth {} KiB); {:.1} s",
        rss1 as i64 - rss0 as i64,
        t0.elapsed().as_secs_f64()
    );
    assert!(
        rss1 <= rss0 + MAX_GROWTH_KIB,
        "server RSS grew from {rss0} KiB to {rss1} KiB"
    );
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
}
