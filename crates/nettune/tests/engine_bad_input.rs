//! Bad input: unreachable host, wrong token, port in use, bad flag
//! combinations, and a server that must keep serving through garbage, half
//! handshakes and clients that vanish mid-test.

mod engine_common;
use engine_common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

fn one_line_error(out: &std::process::Output, want: &str) {
    assert!(!out.status.success(), "expected failure");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(lines[0].contains(want), "want {want:?} in {err}");
}

fn quick(port: &str, test: &str) -> Vec<String> {
    let mut v: Vec<String> = ["127.0.0.1", "-p", port, "--test", test, "--json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(QUICK.iter().map(|s| s.to_string()));
    v
}

fn long(port: &str, test: &str, secs: &str) -> Vec<String> {
    [
        "127.0.0.1",
        "-p",
        port,
        "--test",
        test,
        "--json",
        "--warmup",
        "0",
        "--duration",
        secs,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

#[test]
fn unreachable_host() {
    // A port nobody listens on: bind, learn it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let out = bench(&refs(&quick(&port, "tcp-rr")), &[]);
    one_line_error(&out, "cannot reach");
}

#[test]
fn bad_flag_combinations() {
    for (args, want) in [
        (vec!["--test", "tcp-crr", "--rate", "100"], "closed-loop"),
        (vec!["--test", "tcp-stream", "--size", "0"], "--size"),
        (vec!["--test", "udp-stream", "--size", "70000"], "64 KiB"),
        (vec!["--test", "udp-rr", "--size", "65536"], "64 KiB"),
        (vec!["--test", "tcp-rr", "--reverse"], "stream tests"),
        (vec!["--test", "tcp-stream", "--udp-gso"], "udp-stream only"),
        (
            vec!["--test", "tcp-rr", "--flows", "1", "--threads", "2"],
            "--threads",
        ),
        (
            vec!["--test", "tcp-crr", "--flows", "2", "--threads", "1"],
            "one flow per thread",
        ),
        (vec!["--test", "tcp-rr", "--cpus", "999"], "not online"),
        (
            vec!["--test", "udp-stream", "--size", "8"],
            "sequence header",
        ),
    ] {
        let mut a = vec!["127.0.0.1", "-p", "1"];
        a.extend(args);
        let out = bench(&a, &[]);
        one_line_error(&out, want);
    }
}

#[test]
fn tokens() {
    let s = serve(&[("NETTUNE_TOKEN", "right-token")], &["-q"]);
    let port = s.port.to_string();
    let a = quick(&port, "tcp-rr");
    one_line_error(
        &bench(&refs(&a), &[("NETTUNE_TOKEN", "wrong")]),
        "authentication failed",
    );
    one_line_error(&bench(&refs(&a), &[]), "requires a token");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "right-token\n").unwrap();
    let mut b = a.clone();
    b.extend(["--token-file".to_string(), file.display().to_string()]);
    let r = json(&bench(&refs(&b), &[]));
    sane(&r, "tcp-rr");
}

#[test]
fn port_in_use() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1", "--port", &port])
        .output()
        .unwrap();
    one_line_error(&out, "cannot listen");
}

#[test]
fn version_mismatch_is_a_clear_error() {
    let s = serve(&[], &["-q"]);
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    c.write_all(b"NTUN\x00\x63").unwrap();
    assert_eq!(
        engine::proto::read_preamble(&mut c).unwrap(),
        engine::proto::PROTO_VERSION
    );
    match engine::proto::read_msg(&mut c, 1 << 20).unwrap() {
        engine::proto::Msg::Error { code, message } => {
            assert_eq!(code, "version");
            assert!(message.contains("v99"), "{message}");
        }
        m => panic!("expected an error, got {m:?}"),
    }
}

#[test]
fn survives_garbage_half_handshakes_and_vanishing_clients() {
    let s = serve(&[], &["-q"]);
    let port = s.port.to_string();
    // Random bytes.
    for seed in 0u8..5 {
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        let junk: Vec<u8> = (0..4096u32)
            .map(|i| (i as u8).wrapping_mul(seed + 7) ^ 0x5a)
            .collect();
        let _ = c.write_all(&junk);
    }
    // A preamble then a huge length prefix, and a frame of junk JSON.
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.write_all(b"NTUN\x00\x01\xff\xff\xff\xff").unwrap();
    let mut c2 = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c2.write_all(b"NTUN\x00\x01\x00\x00\x00\x05{{{{{").unwrap();
    // Half handshakes that stay open while others test.
    let _half1 = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let mut half2 = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    half2.write_all(b"NTUN\x00\x01").unwrap();
    // A client that vanishes mid-test.
    let mut victim = Command::new(BIN)
        .arg("bench")
        .args(long(&port, "tcp-stream", "30"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the victim was still running"
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
    // Others are still served, for every kind of test.
    for t in ["tcp-rr", "udp-stream", "tcp-crr"] {
        let r = json(&bench(&refs(&quick(&port, t)), &[]));
        sane(&r, t);
    }
    // And the garbage connections were closed by the server, not left hanging.
    c2.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = Vec::new();
    let _ = c2.read_to_end(&mut buf);
    assert!(
        buf.starts_with(b"NTUN"),
        "server answers with its preamble before closing"
    );
}

#[test]
fn per_client_limit() {
    let s = serve(&[], &["-q", "--max-tests-per-client", "1"]);
    let port = s.port.to_string();
    let mut first = Command::new(BIN)
        .arg("bench")
        .args(long(&port, "tcp-rr", "3"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let out = bench(&refs(&quick(&port, "tcp-rr")), &[]);
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first test was still running"
    );
    let _ = first.kill();
    let _ = first.wait();
    one_line_error(&out, "per-client limit");
}

#[test]
fn not_a_nettune_server() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = s.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
        std::thread::sleep(Duration::from_millis(300));
    });
    let out = bench(&refs(&quick(&port, "tcp-rr")), &[]);
    t.join().unwrap();
    one_line_error(&out, "not a nettune endpoint");
}
