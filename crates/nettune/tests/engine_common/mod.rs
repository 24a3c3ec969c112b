//! Helpers shared by the engine integration tests: start `nettune serve`,
//! run `nettune bench --json`, and sanity checks on the result.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_nettune");

/// A `nettune serve` child on an ephemeral loopback port, killed on drop.
pub struct Serve {
    pub child: Child,
    pub port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a server on 127.0.0.1 with an ephemeral port; `env` adds variables.
pub fn serve(env: &[(&str, &str)], extra: &[&str]) -> Serve {
    let mut c = Command::new(BIN);
    c.args(["serve", "--listen", "127.0.0.1", "--port", "0"])
        .args(extra)
        .env_remove("NETTUNE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("spawn nettune serve");
    let stderr = child.stderr.take().unwrap();
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line).unwrap();
    let port = line
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Serve { child, port }
}

/// Start a server with exactly these `serve` flags (plus `--port 0 -q`),
/// e.g. none for the default dual-stack listener, or `["-6"]`.
pub fn serve_with(flags: &[&str]) -> Serve {
    let mut c = Command::new(BIN);
    c.arg("serve")
        .args(flags)
        .args(["--port", "0", "-q"])
        .env_remove("NETTUNE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn nettune serve");
    let stderr = child.stderr.take().unwrap();
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line).unwrap();
    let port = line
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Serve { child, port }
}

/// Whether this host can use IPv6 on loopback (`::1`); prints why a test
/// skips when it cannot.
pub fn ipv6_loopback(test: &str) -> bool {
    let ok = std::net::UdpSocket::bind("[::1]:0").is_ok()
        && std::net::TcpListener::bind("[::1]:0").is_ok();
    if !ok {
        eprintln!("skipping {test}: IPv6 is disabled here (no ::1)");
    }
    ok
}

/// Quick timing flags for tests: 0.6 s window after 0.2 s warm-up.
pub const QUICK: &[&str] = &["--duration", "0.6", "--warmup", "0.2", "--interval", "0.3"];

/// Run `nettune bench` with args.
pub fn bench(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.arg("bench").args(args).env_remove("NETTUNE_TOKEN");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run nettune bench")
}

/// Parse the `--json` output or fail with stderr.
pub fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "bench failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("bench --json prints JSON")
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Checks every result must pass: non-zero rates, monotonic percentiles,
/// the right number of intervals, UDP received ≤ sent.
pub fn sane(r: &Value, test: &str) {
    let res = r["results"].as_array().unwrap();
    assert!(!res.is_empty(), "{r}");
    for d in res {
        assert!(f(&d["bits_per_sec"]) > 0.0, "{test}: zero throughput {d}");
        if test != "tcp-stream" {
            assert!(f(&d["per_sec"]) > 0.0, "{test}: zero rate {d}");
        }
        if let Some(l) = d["latency"].as_object() {
            let keys = [
                "min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "p9999_ns", "max_ns",
            ];
            let v: Vec<u64> = keys.iter().map(|k| u(&l[*k])).collect();
            assert!(v[0] > 0, "{test}: zero latency {l:?}");
            assert!(
                v.windows(2).all(|w| w[0] <= w[1]),
                "{test}: percentiles {v:?}"
            );
            assert_eq!(
                u(&l["count"]),
                u(&d["msgs"]),
                "{test}: one sample per transaction"
            );
            let hist_total: u64 = l["histogram"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| u(&p[1]))
                .sum();
            assert_eq!(
                hist_total,
                u(&l["count"]),
                "{test}: histogram sums to count"
            );
        }
        if let Some(udp) = d["udp"].as_object() {
            assert!(u(&udp["received"]) <= u(&udp["sent"]), "{test}: {udp:?}");
            assert!(u(&udp["received"]) > 0, "{test}: {udp:?}");
            assert_eq!(u(&udp["duplicates"]), 0, "{test}: {udp:?}");
        }
    }
    let n = r["intervals"].as_array().unwrap().len();
    let per_dir = u(&r["config"]["duration_ms"]).div_ceil(u(&r["config"]["interval_ms"]));
    assert_eq!(
        n as u64,
        per_dir * res.len() as u64,
        "{test}: interval count"
    );
    assert!(r["client"]["facts"]["kernel"].is_string());
    assert!(r["server_side"]["facts"]["kernel"].is_string());
    assert!(!r["client"]["cpu"]["cpus"].as_array().unwrap().is_empty());
}

/// UDP InDatagrams and RcvbufErrors from /proc/net/snmp text.
pub fn snmp_udp(text: &str) -> (u64, u64) {
    let mut l = text.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = l.next().unwrap().split_whitespace().collect();
    let vals: Vec<&str> = l.next().unwrap().split_whitespace().collect();
    let get = |k: &str| -> u64 {
        vals[names.iter().position(|n| *n == k).unwrap()]
            .parse()
            .unwrap()
    };
    (get("InDatagrams"), get("RcvbufErrors"))
}

/// Received bytes of `iface` from /proc/net/dev text.
pub fn dev_rx_bytes(text: &str, iface: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let (name, rest) = l.split_once(':')?;
            (name.trim() == iface).then(|| rest.split_whitespace().next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("{iface} not in /proc/net/dev"))
}

pub fn wait_briefly() {
    std::thread::sleep(Duration::from_millis(100));
}

/// A `nettune serve` child whose stderr lines arrive on a channel, optionally
/// under an address-space limit (`ulimit -v`, KiB) so that a huge allocation
/// fails instead of pushing the machine into the OOM killer.
pub fn serve_logged(
    env: &[(&str, &str)],
    extra: &[&str],
    vmem_kib: Option<u64>,
) -> (Serve, std::sync::mpsc::Receiver<String>) {
    let mut c = match vmem_kib {
        Some(k) => {
            let mut c = Command::new("sh");
            c.args(["-c", &format!("ulimit -v {k} && exec \"$0\" \"$@\""), BIN]);
            c
        }
        None => Command::new(BIN),
    };
    c.args(["serve", "--listen", "127.0.0.1", "--port", "0"])
        .args(extra)
        .env_remove("NETTUNE_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("spawn nettune serve");
    let stderr = child.stderr.take().unwrap();
    let mut r = BufReader::new(stderr);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let port = line
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in r.lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                // Keep draining so the server never sees a closed pipe.
                continue;
            }
        }
    });
    (Serve { child, port }, rx)
}

/// A TCP connection to 127.0.0.1:`port` from the loopback address `from`
/// (any 127/8 address works as a source without setup).
pub fn connect_from(from: &str, port: u16) -> std::io::Result<std::net::TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    let src: std::net::SocketAddr = format!("{from}:0").parse().unwrap();
    s.bind(&src.into())?;
    let dst = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    s.connect_timeout(&dst.into(), Duration::from_secs(2))?;
    Ok(s.into())
}

/// Speak the control protocol by hand up to the server's answer to `setup`:
/// preamble, hello, the token proof when asked, then `setup`. Returns the
/// control stream and the server's answer (`ready` or `error`).
pub fn raw_setup(
    port: u16,
    token: Option<&[u8]>,
    cfg: &engine::TestConfig,
) -> (std::net::TcpStream, engine::proto::Msg) {
    raw_setup_from("127.0.0.1", port, token, cfg)
}

/// [`raw_setup`] from the loopback source address `from`.
pub fn raw_setup_from(
    from: &str,
    port: u16,
    token: Option<&[u8]>,
    cfg: &engine::TestConfig,
) -> (std::net::TcpStream, engine::proto::Msg) {
    let s = connect_from(from, port).unwrap();
    raw_setup_on(s, token, cfg)
}

/// [`raw_setup`] from `src` to `dst`, any family.
pub fn raw_setup_at(
    src: std::net::SocketAddr,
    dst: std::net::SocketAddr,
    token: Option<&[u8]>,
    cfg: &engine::TestConfig,
) -> (std::net::TcpStream, engine::proto::Msg) {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(dst),
        socket2::Type::STREAM,
        None,
    )
    .unwrap();
    s.bind(&src.into()).unwrap();
    s.connect_timeout(&dst.into(), Duration::from_secs(2))
        .unwrap();
    raw_setup_on(s.into(), token, cfg)
}

/// The handshake of [`raw_setup`] on a connected stream.
pub fn raw_setup_on(
    mut s: std::net::TcpStream,
    token: Option<&[u8]>,
    cfg: &engine::TestConfig,
) -> (std::net::TcpStream, engine::proto::Msg) {
    use engine::proto::{self, Msg};
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    proto::write_preamble(&mut s).unwrap();
    assert_eq!(proto::read_preamble(&mut s).unwrap(), proto::PROTO_VERSION);
    let challenge = match proto::read_msg(&mut s, proto::MAX_SERVER_FRAME).unwrap() {
        Msg::Hello { challenge, .. } => challenge,
        m => panic!("expected hello, got {m:?}"),
    };
    if let (Some(sn), Some(t)) = (challenge, token) {
        let cn = engine::auth::nonce();
        let proof = engine::auth::client_proof(t, &sn, &cn);
        proto::write_msg(&mut s, &Msg::Auth { nonce: cn, proof }).unwrap();
        match proto::read_msg(&mut s, proto::MAX_SERVER_FRAME).unwrap() {
            Msg::AuthOk { .. } => {}
            m => panic!("expected auth_ok, got {m:?}"),
        }
    }
    proto::write_msg(
        &mut s,
        &Msg::Setup {
            config: cfg.clone(),
            doctor: false,
        },
    )
    .unwrap();
    let answer = proto::read_msg(&mut s, proto::MAX_SERVER_FRAME)
        .unwrap_or_else(|e| panic!("no answer to setup: {e}"));
    (s, answer)
}

/// Whether the child process is still running.
pub fn alive(s: &mut Serve) -> bool {
    s.child.try_wait().unwrap().is_none()
}

/// The resident set size of a process, in KiB (`VmRSS` of /proc/PID/status).
pub fn rss_kib(pid: u32) -> u64 {
    let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    st.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

/// Wait (at most 2.5 s) until a server in `ns` listens on TCP `port`.
pub fn wait_listening(ns: &lab::Netns, port: u16) {
    let query = format!("ss -ltnH 'sport = :{port}'");
    for _ in 0..50 {
        if ns.sh(&query).unwrap().contains(&port.to_string()) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("server did not start in the namespace");
}

/// Root-namespace settings a namespace test must never touch: global
/// sysctls, eth0's queue steering and every IRQ affinity, with their values.
pub fn root_settings() -> Vec<(String, String)> {
    let mut paths: Vec<String> = [
        "/proc/sys/net/core/rmem_max",
        "/proc/sys/net/core/wmem_max",
        "/proc/sys/net/core/rps_sock_flow_entries",
        "/proc/sys/net/core/netdev_max_backlog",
        "/proc/sys/net/core/busy_poll",
        "/proc/sys/net/ipv4/tcp_rmem",
        "/proc/sys/net/ipv4/tcp_wmem",
        "/proc/sys/net/ipv4/ip_forward",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for dir in ["/sys/class/net/eth0/queues"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                for f in ["rps_cpus", "rps_flow_cnt", "xps_cpus"] {
                    let p = e.path().join(f);
                    if p.exists() {
                        paths.push(p.display().to_string());
                    }
                }
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/proc/irq") {
        for e in rd.flatten() {
            let p = e.path().join("smp_affinity_list");
            if p.exists() {
                paths.push(p.display().to_string());
            }
        }
    }
    paths
        .into_iter()
        .map(|p| {
            let v = std::fs::read_to_string(&p).unwrap_or_default();
            (p, v.trim().to_string())
        })
        .collect()
}
