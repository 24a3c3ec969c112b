//! The summary arithmetic: both sides' worker reports to each direction's
//! rates, loss, latency, CPU use and service demand.

use super::*;

/// A sum that saturates: the server's report supplies some of the numbers.
fn ssum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0, u64::saturating_add)
}

fn sum_window<'a>(ws: impl Iterator<Item = &'a WorkerReport>) -> Counters {
    let mut c = Counters::default();
    for w in ws {
        c.add(&w.window);
    }
    c
}

fn sum_total<'a>(ws: impl Iterator<Item = &'a WorkerReport>) -> Counters {
    let mut c = Counters::default();
    for w in ws {
        c.add(&w.total);
    }
    c
}

/// Loss, reordering and duplicates of a udp-stream direction: `sent` by the
/// senders, `tot` the receivers' counters over the whole run.
fn udp_summary(sent: u64, tot: &Counters) -> UdpSummary {
    let received = tot.msgs;
    let lost = sent.saturating_sub(received);
    UdpSummary {
        sent,
        received,
        lost,
        loss_pct: if sent > 0 {
            lost as f64 * 100.0 / sent as f64
        } else {
            0.0
        },
        out_of_order: tot.out_of_order,
        duplicates: tot.duplicates,
        foreign: tot.foreign,
    }
}

/// The receivers' datagram count (`app`) against the kernel's counters.
fn kernel_check(app: u64, s: &UdpSnmp) -> KernelCheck {
    let k = s.in_datagrams;
    let diff = if k > 0 {
        (k as f64 - app as f64) * 100.0 / k as f64
    } else if app > 0 {
        -100.0
    } else {
        0.0
    };
    let mut note = String::new();
    if diff.abs() > 0.5 {
        note.push_str("other UDP traffic in the receiving namespace counts too; ");
    }
    if s.rcvbuf_errors > 0 {
        note.push_str(&format!(
            "{} datagrams were dropped at the receiving socket (RcvbufErrors): raise --rcvbuf; ",
            s.rcvbuf_errors
        ));
    }
    if note.is_empty() {
        note.push_str("receiver count and kernel InDatagrams agree");
    }
    KernelCheck {
        app_received: app,
        kernel_in_datagrams: k,
        kernel_rcvbuf_errors: s.rcvbuf_errors,
        difference_pct: diff,
        agrees: diff.abs() <= 0.5,
        note: note.trim_end_matches("; ").to_string(),
    }
}

/// Build the final document from both sides' reports.
pub fn summarize(
    cfg: &TestConfig,
    server_addr: String,
    test_id: u64,
    client: SideReport,
    server: SideReport,
    intervals: Vec<IntervalReport>,
    loopback: bool,
) -> BenchResult {
    let mut results = Vec::new();
    let mut notes = Vec::new();
    let seconds = cfg.duration_ms as f64 / 1000.0;
    for dir in cfg.dirs() {
        results.push(summarize_dir(
            cfg, dir, &client, &server, loopback, seconds, &mut notes,
        ));
    }
    for (side, r) in [("client", &client), ("server", &server)] {
        for w in &r.workers {
            if let Some(e) = &w.error {
                notes.push(format!(
                    "{side} worker {} ({:?}): {}",
                    w.worker,
                    w.role,
                    crate::text::printable_capped(e, 300)
                ));
            }
        }
    }
    if loopback {
        notes.push("client and server run on one host: both CPU reports show the same CPUs".into());
    }
    let bytes = ssum(results.iter().map(|r| r.bytes.0));
    let msgs = ssum(results.iter().map(|r| r.msgs));
    let sd = |r: &SideReport| {
        let mut d = service_demand(cfg.test, r.cpu.host_busy_us, bytes, msgs);
        d.own_per_work =
            service_demand(cfg.test, own_busy_us(&r.cpu), bytes, msgs).per_work(cfg.test);
        d
    };
    BenchResult {
        schema_version: RESULT_SCHEMA_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
        server: server_addr,
        start_time: String::new(),
        family: None,
        interrupted: false,
        test_id,
        config: cfg.clone(),
        results,
        intervals,
        client_service_demand: sd(&client),
        server_service_demand: sd(&server),
        client,
        server_side: server,
        notes,
        doctor: None,
        probe: None,
        started_at_unix_ns: None,
    }
}

/// The summary of one direction, from the end that measures it; a UDP count
/// that disagrees with the kernel's adds a note.
fn summarize_dir(
    cfg: &TestConfig,
    dir: FlowDir,
    client: &SideReport,
    server: &SideReport,
    loopback: bool,
    seconds: f64,
    notes: &mut Vec<String>,
) -> DirSummary {
    let server_measures = measured_by(cfg.test, dir) == End::Server;
    let (meas, other, by) = if server_measures {
        (&server, &client, "server")
    } else {
        (&client, &server, "client")
    };
    let mw = || {
        meas.workers
            .iter()
            .filter(move |w| w.dir == Some(dir) && w.role.is_some_and(|r| r.measures()))
    };
    let win = sum_window(mw());
    let tot = sum_total(mw());
    let kind = cfg.test.spec();
    let unit = kind.unit;
    let latency = if cfg.test.is_stream() {
        None
    } else {
        let mut h = new_histogram();
        for w in mw() {
            let _ = h.add(hist_from_pairs(&w.hist));
        }
        Some(Latency::from_hist(&h))
    };
    let sender_side = if cfg.test.is_stream() { other } else { &client };
    let tcp_info: Vec<_> = if cfg.test.is_udp() {
        Vec::new()
    } else {
        sender_side
            .workers
            .iter()
            .filter(|w| w.dir == Some(dir))
            .flat_map(|w| w.tcp_info.iter().cloned())
            .collect()
    };
    let retransmits = ssum(tcp_info.iter().map(|t| t.retransmits as u64));
    let (udp, kernel_check) = if kind.sequenced {
        let sent = ssum(
            other
                .workers
                .iter()
                .filter(|w| w.dir == Some(dir) && w.role == Some(Role::Send))
                .map(|w| w.total.msgs),
        );
        let shared_ns = loopback && cfg.direction == Direction::Bidir;
        let kc = meas
            .udp_snmp
            .filter(|_| !shared_ns)
            .map(|s| kernel_check(tot.reads, &s));
        if let Some(k) = kc.as_ref().filter(|k| !k.agrees) {
            notes.push(format!(
                "{dir:?} receiver counted {} datagrams, the kernel {} ({:+.2} %): {}",
                k.app_received, k.kernel_in_datagrams, k.difference_pct, k.note
            ));
        }
        (Some(udp_summary(sent, &tot)), kc)
    } else {
        (None, None)
    };
    let errors = ssum(
        client
            .workers
            .iter()
            .chain(&server.workers)
            .filter(|w| w.dir == Some(dir))
            .map(|w| w.total.errors),
    );
    DirSummary {
        dir: Some(dir),
        measured_by: by.into(),
        seconds,
        bytes: Bytes(win.bytes),
        bits_per_sec: win.bytes as f64 * 8.0 / seconds,
        msgs: if kind.rate_unit.is_none() {
            0
        } else {
            win.msgs
        },
        per_sec: if kind.rate_unit.is_none() {
            0.0
        } else {
            win.msgs as f64 / seconds
        },
        unit: unit.into(),
        udp,
        latency,
        tcp_info,
        retransmits,
        lost: win.lost,
        errors,
        kernel_check,
        threads: ThreadLoad::of(dir, client, server, seconds),
    }
}

/// Mark a result as stopped early after `window_s` seconds of its measured
/// window: rates are over that time, intervals that had not started are
/// dropped, and a note says so.
pub fn cut_short(r: &mut BenchResult, window_s: f64) {
    let full = r.config.duration_ms as f64 / 1000.0;
    let secs = window_s.clamp(0.0, full);
    r.interrupted = true;
    for d in &mut r.results {
        d.seconds = secs;
        let per = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        d.bits_per_sec = per(d.bytes.0 as f64 * 8.0);
        d.per_sec = if r.config.test.spec().rate_unit.is_none() {
            0.0
        } else {
            per(d.msgs as f64)
        };
    }
    r.intervals.retain(|i| i.start_s < secs);
    r.notes.push(if secs > 0.0 {
        format!(
            "interrupted after {secs:.2} s of the {full:.2} s window: the results cover that part"
        )
    } else {
        "interrupted during the warm-up: nothing was measured".to_string()
    });
}

/// nettune's own busy CPU on one end over the window, µs: its process's
/// user and system time plus the hard and soft interrupt time of the host's
/// CPUs (the per-CPU lines' irq and soft, over the window).
pub fn own_busy_us(c: &CpuReport) -> f64 {
    let process = c.process_user_us.saturating_add(c.process_sys_us) as f64;
    let interrupts: f64 = c
        .cpus
        .iter()
        .map(|u| (u.irq + u.softirq) / 100.0)
        .filter(|v| v.is_finite())
        .sum();
    process + interrupts * c.seconds * 1e6
}

/// `busy_us` of CPU over `work` units, per `per` units, in CPU-seconds:
/// `None` without work or CPU, or when the result is not finite.
fn cpu_s_per(busy_us: f64, work: u64, per: f64) -> Option<f64> {
    if work == 0 || !busy_us.is_finite() || busy_us <= 0.0 {
        return None;
    }
    let v = busy_us / 1e6 / (work as f64 / per);
    (v.is_finite() && v > 0.0).then_some(v)
}

/// netperf-style service demand: busy CPU of the host over the window per
/// unit of work, in µs (the netperf units) and in CPU-seconds per GB, per
/// Mpkt and per 1000 transactions (connections for tcp-crr).
pub fn service_demand(t: TestKind, busy_us: f64, bytes: u64, msgs: u64) -> ServiceDemand {
    let per = |units: f64| (units > 0.0 && busy_us > 0.0).then(|| busy_us / units);
    let stream = t.is_stream();
    let sequenced = t.spec().sequenced;
    ServiceDemand {
        us_per_mb: if stream {
            per(bytes as f64 / 1e6)
        } else {
            None
        },
        us_per_transaction: if stream { None } else { per(msgs as f64) },
        us_per_kpkt: if sequenced {
            per(msgs as f64 / 1000.0)
        } else {
            None
        },
        cpu_s_per_gb: stream.then(|| cpu_s_per(busy_us, bytes, 1e9)).flatten(),
        cpu_s_per_mpkt: (sequenced && stream)
            .then(|| cpu_s_per(busy_us, msgs, 1e6))
            .flatten(),
        cpu_s_per_ktx: (!stream).then(|| cpu_s_per(busy_us, msgs, 1e3)).flatten(),
        own_per_work: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU per work in CPU-seconds: per GB, per Mpkt, per 1000
    /// transactions; nothing without work or CPU, and no panic on extremes.
    #[test]
    fn cpu_per_work_units_and_zero_work() {
        // 2 CPU-s over 4 GB: 0.5 CPU-s/GB.
        let sd = service_demand(TestKind::TcpStream, 2e6, 4_000_000_000, 0);
        assert_eq!(sd.cpu_s_per_gb, Some(0.5));
        assert_eq!(sd.per_work(TestKind::TcpStream), Some(0.5));
        assert_eq!((sd.cpu_s_per_mpkt, sd.cpu_s_per_ktx), (None, None));
        // 3 CPU-s over 2 M datagrams: 1.5 CPU-s/Mpkt.
        let sd = service_demand(TestKind::UdpStream, 3e6, 1_000_000_000, 2_000_000);
        assert_eq!(sd.per_work(TestKind::UdpStream), Some(1.5));
        assert_eq!(sd.cpu_s_per_gb, Some(3.0));
        // 1 CPU-s over 20 000 transactions: 0.05 CPU-s per 1000.
        for t in [TestKind::TcpRr, TestKind::UdpRr, TestKind::TcpCrr] {
            let sd = service_demand(t, 1e6, 0, 20_000);
            assert_eq!(sd.per_work(t), Some(0.05), "{t:?}");
            assert_eq!(sd.cpu_s_per_gb, None);
        }
        // No work, no CPU, or nonsense CPU: nothing.
        for (busy, work) in [
            (1e6, 0),
            (0.0, 1000),
            (-1.0, 1000),
            (f64::NAN, 1000),
            (f64::INFINITY, 1000),
        ] {
            for t in [TestKind::TcpStream, TestKind::UdpStream, TestKind::TcpRr] {
                let sd = service_demand(t, busy, work, work);
                assert_eq!(sd.per_work(t), None, "{t:?} {busy} {work}");
            }
        }
        assert!(service_demand(TestKind::TcpStream, f64::MAX, 1, 1)
            .per_work(TestKind::TcpStream)
            .is_none());
        assert!(service_demand(TestKind::TcpRr, 1e-300, u64::MAX, u64::MAX)
            .per_work(TestKind::TcpRr)
            .is_none_or(|v| v.is_finite()));
    }

    /// Results written before the CPU-s fields give the same figures from
    /// the µs fields.
    #[test]
    fn older_results_read_cpu_per_work_from_the_us_fields() {
        let old = ServiceDemand {
            us_per_mb: Some(1170.0),
            us_per_transaction: Some(47.0),
            us_per_kpkt: Some(2000.0),
            ..ServiceDemand::default()
        };
        assert_eq!(old.per_work(TestKind::TcpStream), Some(1.17));
        assert_eq!(old.per_work(TestKind::TcpRr), Some(0.047));
        assert_eq!(old.per_work(TestKind::UdpStream), Some(2.0));
        let sd = service_demand(TestKind::TcpStream, 1.17e6, 1_000_000_000, 0);
        let us = sd.us_per_mb.unwrap();
        assert!((us / 1000.0 - sd.cpu_s_per_gb.unwrap()).abs() < 1e-12);
    }
}
