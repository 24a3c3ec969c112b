//! `bench --probe KIND[:MS]`: a latency probe that runs beside the load for
//! the whole measured window, so latency under load is measured the way
//! seeds 001 (`ping -i 0.2` while iperf loaded the host) and 003 (TCP_RR
//! beside the load) did.
//!
//! - `rr`: one paced TCP request/response flow (64-byte messages, one
//!   transaction per interval, `TCP_NODELAY`) on its own connection: a
//!   second, open-loop `tcp-rr` test on the same server, so the server needs
//!   nothing new and the load's counters never see it (`client` runs it).
//! - `icmp`: echo requests to the server's address every interval, over the
//!   ICMP socket `host::rtt` opens (a ping socket, else a raw one), matched
//!   by a random nonce and the sequence number.
//!
//! Memory is bounded: a fixed-size HDR histogram and, for ICMP, a fixed
//! ring of requests in flight; a test asking for more than [`MAX_SAMPLES`]
//! probes is refused.

pub use crate::report::probe::{
    us_histogram, ProbeCheckError, ProbeKind, ProbeParseError, ProbeReport, ProbeSpec,
    DEFAULT_INTERVAL_MS, MAX_INTERVAL_MS, MAX_SAMPLES, MIN_INTERVAL_MS, RR_SIZE, USAGE,
};
use crate::sys;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
/// An ICMP reply later than this counts as lost.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(1);

/// ICMP requests in flight are kept in a ring this long (a divisor of
/// 65536, so a 16-bit sequence number names its slot); at 1 ms per probe it
/// covers 4 s, longer than [`REPLY_TIMEOUT`].
const RING: usize = 4096;

/// A running ICMP probe.
#[derive(Debug)]
pub(crate) struct IcmpProbe {
    handle: std::thread::JoinHandle<ProbeReport>,
    stop: Arc<AtomicBool>,
    spec: ProbeSpec,
}

impl IcmpProbe {
    /// Stop now (the test failed) and wait for the report.
    pub fn abort(self) -> ProbeReport {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }
    /// Wait for the report (it ends with the window, plus the reply
    /// timeout at most).
    pub fn join(self) -> ProbeReport {
        let spec = self.spec;
        self.handle
            .join()
            .unwrap_or_else(|_| ProbeReport::failed(&spec, "probe thread panicked".into()))
    }
}

/// Start the ICMP probe to `addr` (from `src`: `--bind`, `--bind-dev`) over
/// the window `[start, end)`; it also stops when `user` (Ctrl-C) is raised.
pub(crate) fn spawn_icmp(
    spec: ProbeSpec,
    addr: IpAddr,
    src: crate::sock::Source,
    (start, end): (Instant, Instant),
    user: Option<Arc<AtomicBool>>,
) -> Result<IcmpProbe, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let flags = [Some(stop.clone()), user];
    let handle = std::thread::Builder::new()
        .name("nt-probe".into())
        .spawn(move || {
            let stopped = || flags.iter().flatten().any(|f| f.load(Ordering::Relaxed));
            icmp_run(&spec, addr, &src, (start, end), &stopped)
        })
        .map_err(|e| format!("probe thread: {e}"))?;
    Ok(IcmpProbe { handle, stop, spec })
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// The ICMP probe loop: one request per interval slot from `start` until
/// `end` (a slot missed because the thread woke late is skipped, as ping
/// does), replies read as they come, then the replies still due are awaited
/// up to [`REPLY_TIMEOUT`] after the last request.
fn icmp_run(
    spec: &ProbeSpec,
    addr: IpAddr,
    src: &crate::sock::Source,
    (start, end): (Instant, Instant),
    stopped: &dyn Fn() -> bool,
) -> ProbeReport {
    let (sock, raw) = match host::rtt::open(addr) {
        Ok(s) => s,
        Err(e) => return ProbeReport::failed(spec, e.to_string()),
    };
    let setup = || -> std::io::Result<()> {
        src.apply(&sock, SocketAddr::new(addr, 0), 0)?;
        sock.connect(&SocketAddr::new(addr, 0).into())?;
        sock.set_nonblocking(true)
    };
    if let Err(e) = setup() {
        return ProbeReport::failed(spec, format!("ICMP socket to {addr}: {e}"));
    }
    let v6 = addr.is_ipv6();
    let nonce: u64 = crate::auth::random_u64();
    let ident = (std::process::id() & 0xffff) as u16;
    let interval = Duration::from_millis(spec.interval_ms.max(1));
    let slots = spec
        .scheduled(end.saturating_duration_since(start).as_millis() as u64)
        .min(MAX_SAMPLES);
    let mut ring: Vec<Option<(u64, Instant)>> = vec![None; RING];
    let mut h = us_histogram();
    let (mut sent, mut next_slot, mut in_flight) = (0u64, 0u64, 0usize);
    let mut last_sent: Option<Instant> = None;
    let (mut send_errors, mut last_err, mut skipped) = (0u64, None::<String>, 0u64);
    let mut buf = [0u8; 2048];
    let fd = sock.as_raw_fd();
    loop {
        if stopped() {
            break;
        }
        let now = Instant::now();
        if next_slot < slots && now >= end {
            // Woke past the window's end: its last slots were not sent.
            skipped = skipped.saturating_add(slots - next_slot);
            next_slot = slots;
        }
        let sending = next_slot < slots && now < end;
        let drain_until = last_sent.map_or(now, |t| t + REPLY_TIMEOUT);
        if !sending && (in_flight == 0 || now >= drain_until) {
            break;
        }
        if sending && now >= start {
            let slot = (now.duration_since(start).as_nanos() / interval.as_nanos()) as u64;
            if slot >= next_slot && slot < slots {
                skipped = skipped.saturating_add(slot - next_slot);
                let k = sent;
                let seq = (k & 0xffff) as u16;
                let pkt = host::rtt::echo_request(v6, ident, seq, nonce);
                let t0 = Instant::now();
                match sock.send(&pkt) {
                    Ok(_) => {
                        let i = usize::from(seq) % RING;
                        if ring[i].replace((k, t0)).is_none() {
                            in_flight += 1;
                        }
                        sent += 1;
                        last_sent = Some(t0);
                    }
                    Err(e) => {
                        send_errors += 1;
                        last_err = Some(e.to_string());
                    }
                }
                next_slot = slot + 1;
            }
        }
        // Sleep until the next slot (or the drain deadline), waking for replies.
        let due = if next_slot < slots && Instant::now() < end {
            u32::try_from(next_slot)
                .ok()
                .and_then(|n| interval.checked_mul(n))
                .and_then(|d| start.checked_add(d))
                .unwrap_or(end)
                .min(end)
        } else {
            drain_until
        };
        let wait = due
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        let mut pfd = [libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        if !wait.is_zero() {
            if let Err(e) = sys::ppoll(&mut pfd, wait) {
                last_err = Some(e.to_string());
                std::thread::sleep(wait);
            }
        }
        loop {
            match std::io::Read::read(&mut &sock, &mut buf) {
                Ok(n) => {
                    let at = Instant::now();
                    let Some(seq) = buf
                        .get(..n)
                        .and_then(|b| host::rtt::reply_seq(b, v6, raw, nonce))
                    else {
                        continue;
                    };
                    let i = usize::from(seq) % RING;
                    if let Some((k, t0)) = ring[i] {
                        if (k & 0xffff) as u16 == seq {
                            ring[i] = None;
                            in_flight = in_flight.saturating_sub(1);
                            let rtt = at.saturating_duration_since(t0);
                            if rtt <= REPLY_TIMEOUT {
                                let us = u64::try_from(rtt.as_micros()).unwrap_or(u64::MAX);
                                h.saturating_record(us.max(1));
                            }
                        }
                    }
                }
                Err(e) if would_block(&e) => break,
                Err(e) => {
                    // An ICMP error (unreachable) queued on the socket.
                    last_err = Some(e.to_string());
                }
            }
        }
    }
    let mut notes = Vec::new();
    if send_errors > 0 {
        notes.push(format!("{send_errors} echo requests could not be sent"));
    }
    if let Some(e) = last_err {
        notes.push(format!("last error: {e}"));
    }
    let missed = slots.saturating_sub(sent.saturating_add(send_errors));
    if stopped() && missed > 0 {
        notes.push("stopped early".into());
    } else if skipped > 0 {
        notes.push(format!(
            "{skipped} of {slots} slots skipped: the probe thread woke more than an interval late (busy CPUs)"
        ));
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    ProbeReport::from_hist(spec, (sent, skipped), &h, note)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::TestConfig;
    use crate::report::BenchResult;

    proptest::proptest! {
        /// Whatever arrives on the ICMP socket: no panic, and only a packet
        /// carrying our magic and nonce names a sequence number.
        #[test]
        fn any_icmp_bytes_are_read_safely(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
                                          v6: bool, raw: bool, nonce: u64) {
            if let Some(seq) = host::rtt::reply_seq(&b, v6, raw, nonce) {
                let body = if raw && !v6 { &b[usize::from(b[0] & 0x0f) * 4..] } else { &b[..] };
                proptest::prop_assert_eq!(&body[16..24], &nonce.to_be_bytes()[..]);
                proptest::prop_assert_eq!(u16::from_be_bytes([body[6], body[7]]), seq);
            }
        }
    }

    #[test]
    fn replies_are_told_apart_from_requests_and_other_runs() {
        for v6 in [false, true] {
            let mut r = host::rtt::echo_request(v6, 1, 513, 99);
            assert_eq!(host::rtt::reply_seq(&r, v6, false, 99), None, "a request");
            r[0] = if v6 { 129 } else { 0 };
            assert_eq!(host::rtt::reply_seq(&r, v6, false, 99), Some(513));
            assert_eq!(host::rtt::reply_seq(&r, v6, false, 98), None, "another run");
            assert_eq!(host::rtt::reply_seq(&r[..23], v6, false, 99), None, "short");
        }
        // A raw IPv4 read with a header length past the packet.
        let mut ip = vec![0x4f_u8; 1];
        ip.extend_from_slice(&[0; 30]);
        assert_eq!(host::rtt::reply_seq(&ip, false, true, 0), None);
    }

    #[test]
    fn probe_values_parse_with_the_default_interval() {
        let p = |s: &str| s.parse::<ProbeSpec>();
        assert_eq!(
            p("rr").unwrap(),
            ProbeSpec {
                kind: ProbeKind::Rr,
                interval_ms: 10
            }
        );
        assert_eq!(p("icmp:200").unwrap().interval_ms, 200);
        assert_eq!(p("rr:1").unwrap().interval_ms, 1);
        assert_eq!(p("rr:1000").unwrap().interval_ms, 1000);
        for bad in [
            "",
            "tcp",
            "rr:",
            "rr:0",
            "rr:1001",
            "rr:-5",
            "rr:1.5",
            "rr:+5",
            "icmp:10:2",
            "RR",
            "rr: 5",
            "rr:99999999999999999999999",
        ] {
            let e = p(bad).unwrap_err().to_string();
            assert!(e.contains("rr, icmp, rr:5"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_sample_cap_refuses_with_the_interval_that_fits() {
        let spec: ProbeSpec = "rr:1".parse().unwrap();
        let cfg = TestConfig {
            duration_ms: 2_000_000,
            ..TestConfig::default()
        };
        let e = spec.check(&cfg).unwrap_err();
        assert!(matches!(e, ProbeCheckError::TooMany { need: 2, .. }), "{e}");
        assert!(e.to_string().contains("at least 2 ms"), "{e}");
        let cfg = TestConfig {
            duration_ms: 1_000_000,
            ..TestConfig::default()
        };
        assert!(spec.check(&cfg).is_ok());
    }

    #[test]
    fn rr_results_become_microsecond_percentiles() {
        let spec: ProbeSpec = "rr:10".parse().unwrap();
        let mut h = crate::report::new_histogram();
        h.record_n(40_000, 90).unwrap();
        h.record_n(400_000, 10).unwrap();
        let mut r = BenchResult::default();
        r.results.push(crate::report::DirSummary {
            seconds: 1.0,
            latency: Some(crate::report::Latency::from_hist(&h)),
            ..Default::default()
        });
        let p = ProbeReport::from_rr(&spec, &r);
        assert_eq!((p.sent, p.answered, p.lost), (100, 100, 0));
        assert_eq!(p.p50_us, Some(40));
        assert_eq!(p.p99_us, Some(400));
        assert_eq!(
            p.histogram.iter().map(|[_, n]| n).sum::<u64>(),
            100,
            "{:?}",
            p.histogram
        );
        assert_eq!(
            p.line(),
            "probe rr every 10 ms: p50 40.0 µs p99 400 µs (100/100 answered)"
        );
        // A result without latency (nothing answered): null percentiles.
        let p = ProbeReport::from_rr(&spec, &BenchResult::default());
        assert_eq!((p.sent, p.answered, p.p50_us), (0, 0, None));
    }
}
