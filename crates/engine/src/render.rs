//! The human summary of a [`BenchResult`] and one-line interval text.

use crate::config::{Direction, FlowDir, TestKind};
use crate::report::{BenchResult, IntervalReport, ServiceDemand, SideReport};
use model::metric::{fmt_bits, format_value, PACKETS_PER_SEC};
use model::text::printable_capped as printable;
use model::Nanos;
use std::fmt::Write;

fn dir_name(d: Option<FlowDir>) -> &'static str {
    match d {
        Some(FlowDir::Forward) | None => "forward",
        Some(FlowDir::Reverse) => "reverse",
    }
}

/// Nanoseconds as `12.3 µs` / `1.23 ms` / `850 ns` (the one time rule,
/// [`model::metric::fmt_ns`]).
pub fn fmt_ns(ns: Nanos) -> String {
    model::metric::fmt_ns(ns.0)
}

/// The rate cell of a result or an interval: `404 kpps` (udp-stream),
/// `18.4 ktps` (request/response), `9.20 ktps, 9.20 kpps each way` (udp-rr:
/// one datagram each way per transaction); empty for byte-only kinds.
fn rate_text(t: TestKind, per_sec: f64) -> String {
    let kind = t.spec();
    let Some(unit) = kind.rate_unit else {
        return String::new();
    };
    let rate = format_value(unit, per_sec);
    if kind.datagram_per_transaction {
        format!(
            "{rate}, {} each way",
            format_value(PACKETS_PER_SEC, per_sec)
        )
    } else {
        rate
    }
}

/// A CPU-seconds figure with three significant digits (`1.17`, `0.0293`).
fn cpu_s(v: f64) -> String {
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else if v >= 0.1 {
        3
    } else if v >= 0.01 {
        4
    } else if v >= 0.001 {
        5
    } else {
        return format!("{v:.2e}");
    };
    format!("{v:.digits$}")
}

/// The service demand in CPU-seconds per unit of work: the test's own unit
/// first (per GB, per Mpkt, per 1k transactions or connections), then
/// per GB for udp-stream.
fn sd_text(t: TestKind, sd: &ServiceDemand) -> String {
    let mut parts = Vec::new();
    let unit = model::metric::cpu_work_unit(t.name());
    match (sd.own_per_work, sd.per_work(t)) {
        (Some(own), Some(host)) => {
            parts.push(format!("own {} {unit} (host {})", cpu_s(own), cpu_s(host)));
        }
        (Some(v), None) | (None, Some(v)) => parts.push(format!("{} {unit}", cpu_s(v))),
        (None, None) => {}
    }
    if t.spec().sequenced && t.is_stream() {
        if let Some(v) = sd.cpu_s_per_gb {
            parts.push(format!("{} CPU-s/GB", cpu_s(v)));
        }
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// One interval as a progress line. A stream leads with its bit rate
/// (then packets/s for udp-stream); a request/response test with its
/// transactions/s (connections/s for tcp-crr), its bit rate after: 1-byte
/// transactions are not judged by bits.
pub fn interval_line(t: TestKind, i: &IntervalReport) -> String {
    let kind = t.spec();
    let bits = fmt_bits(i.bits_per_sec);
    let mut s = format!(
        "[{:>5.1}-{:<5.1}s] {:<7} ",
        i.start_s,
        i.end_s,
        dir_name(i.dir)
    );
    match kind.rate_unit {
        Some(_) if !kind.stream => {
            let _ = write!(s, "{:>12}  {:>14}", rate_text(t, i.per_sec), bits);
        }
        Some(_) => {
            let _ = write!(s, "{bits:>14}  {:>12}", rate_text(t, i.per_sec));
        }
        None => {
            let _ = write!(s, "{bits:>14}");
        }
    }
    if kind.sequenced && i.lost_estimate > 0 {
        let _ = write!(s, "  lost ~{}", i.lost_estimate);
    }
    if let (Some(a), Some(b)) = (i.p50_ns, i.p99_ns) {
        let _ = write!(s, "  p50 {}  p99 {}", fmt_ns(a), fmt_ns(b));
    }
    s
}

fn cpu_line(name: &str, t: TestKind, r: &SideReport, sd: &ServiceDemand) -> String {
    let busy = if r.cpu.seconds > 0.0 {
        r.cpu.host_busy_us / 1e6 / r.cpu.seconds
    } else {
        0.0
    };
    let usr_sys = format!(
        "{:.2}/{:.2} s",
        r.cpu.process_user_us as f64 / 1e6,
        r.cpu.process_sys_us as f64 / 1e6
    );
    format!(
        "{name:<8} {:>9.2} CPUs  {usr_sys:<17} {}",
        busy,
        sd_text(t, sd)
    )
}

/// The summary table printed by `nettune bench` without `--json`.
pub fn human(r: &BenchResult) -> String {
    let mut o = String::new();
    throughput(&mut o, r);
    latency(&mut o, r);
    details(&mut o, r);
    if let Some(p) = &r.probe {
        let _ = writeln!(o, "{}", p.line());
    }
    cpu(&mut o, r);
    if !r.notes.is_empty() {
        let _ = writeln!(o);
        for n in &r.notes {
            let _ = writeln!(o, "note: {n}");
        }
    }
    if let Some(d) = &r.doctor {
        findings(&mut o, "client", d.client.as_ref());
        findings(&mut o, "server", d.server.as_ref());
        if let Some(drops) = &d.drops {
            let line = drops.line(5);
            let line = printable(line.trim_start_matches("drops by reason: "), 400);
            let _ = writeln!(o, "\nDrops by reason ({}): {line}", drops.host);
        }
    }
    o.lines()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// `--doctor`: one end's findings, one line each (severity, id, subject,
/// title) and the fix's command under it. The text may come from the
/// server: control characters are escaped and lines bounded.
fn findings(o: &mut String, end: &str, r: Option<&model::findings::Report>) {
    let _ = writeln!(o);
    let Some(r) = r else {
        let _ = writeln!(o, "Findings ({end}): none received");
        return;
    };
    let _ = writeln!(o, "Findings ({end}): {}", r.summary());
    for f in &r.findings {
        let _ = writeln!(
            o,
            "  {:<8} {} [{}] {}",
            f.severity.as_str(),
            f.id,
            printable(&f.subject, 60),
            printable(&f.title, 200)
        );
        let fix = f
            .fix
            .command
            .as_deref()
            .or(f.fix.app.as_deref())
            .unwrap_or(&f.fix.text);
        if !fix.is_empty() {
            let _ = writeln!(o, "           fix: {}", printable(fix, 300));
        }
    }
}

/// The test line and the throughput table.
fn throughput(o: &mut String, r: &BenchResult) {
    let c = &r.config;
    let flows = match c.direction {
        Direction::Bidir => format!("{} flows each way", c.flows),
        _ if c.flows == 1 => "1 flow".to_string(),
        _ => format!("{} flows", c.flows),
    };
    let _ = writeln!(
        o,
        "{} to {} · {} on {} thread{} · {} B · {:.1} s measured after {:.1} s warm-up",
        c.test,
        r.server,
        flows,
        c.threads,
        if c.threads == 1 { "" } else { "s" },
        c.size,
        r.results
            .first()
            .filter(|_| r.interrupted)
            .map_or(c.duration_ms as f64 / 1000.0, |d| d.seconds),
        c.warmup_ms as f64 / 1000.0
    );
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "direction  measured by  {:>14}  {:>14}",
        "throughput", "rate"
    );
    for d in &r.results {
        let rate = rate_text(c.test, d.per_sec);
        let _ = writeln!(
            o,
            "{:<10} {:<12} {:>14}  {:>14}",
            dir_name(d.dir),
            d.measured_by,
            fmt_bits(d.bits_per_sec),
            rate
        );
    }
}

/// Latency percentiles and timeouts per direction.
fn latency(o: &mut String, r: &BenchResult) {
    let c = &r.config;
    for d in &r.results {
        if let Some(l) = &d.latency {
            let _ = writeln!(o);
            let _ = writeln!(
                o,
                "latency {:<8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                dir_name(d.dir),
                "min",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "p99.99",
                "max"
            );
            let _ = writeln!(
                o,
                "{:<16} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                format!("{} samples", l.count),
                fmt_ns(l.min_ns),
                fmt_ns(l.p50_ns),
                fmt_ns(l.p90_ns),
                fmt_ns(l.p99_ns),
                fmt_ns(l.p999_ns),
                fmt_ns(l.p9999_ns),
                fmt_ns(l.max_ns)
            );
        }
        if d.lost > 0 {
            let what = c.test.spec().lost;
            let _ = writeln!(o, "{} {what}: {}", dir_name(d.dir), d.lost);
        }
    }
}

/// UDP loss and kernel check, TCP_INFO per direction.
fn details(o: &mut String, r: &BenchResult) {
    let _ = writeln!(o);
    for d in &r.results {
        if let Some(u) = &d.udp {
            let _ = writeln!(
                o,
                "UDP {}: sent {}, received {}, lost {} ({:.3} %), out of order {}, duplicates {}",
                dir_name(d.dir),
                u.sent,
                u.received,
                u.lost,
                u.loss_pct,
                u.out_of_order,
                u.duplicates
            );
        }
        if let Some(k) = &d.kernel_check {
            let _ = writeln!(
                o,
                "  kernel check: InDatagrams {} vs {} counted ({:+.3} %), RcvbufErrors {}: {}",
                k.kernel_in_datagrams,
                k.app_received,
                k.difference_pct,
                k.kernel_rcvbuf_errors,
                if k.agrees { "agree" } else { "DISAGREE" }
            );
        }
        if !d.tcp_info.is_empty() {
            let n = d.tcp_info.len() as f64;
            let rtt = d.tcp_info.iter().map(|t| t.rtt_us as f64).sum::<f64>() / n;
            let cwnd = d.tcp_info.iter().map(|t| t.cwnd as f64).sum::<f64>() / n;
            let _ = writeln!(
                o,
                "TCP {}: retransmits {}, rtt {}, cwnd {:.0} (mean of {} connections)",
                dir_name(d.dir),
                d.retransmits,
                format_value("µs", rtt),
                cwnd,
                d.tcp_info.len()
            );
        }
        if let Some(t) = &d.threads {
            let _ = writeln!(o, "{}", threads_line(d.dir, t));
        }
    }
    for (name, s) in [("client", &r.client), ("server", &r.server_side)] {
        if let Some(b) = &s.buffers {
            let _ = writeln!(o, "{}", buffers_line(name, b));
        }
    }
}

/// How busy each end's busiest thread of a direction was, and which one
/// limited it: `threads forward: client send 38 %, server recv 99 % busy:
/// the server's recv thread limits it`.
pub fn threads_line(dir: Option<FlowDir>, t: &crate::report::ThreadLoad) -> String {
    let end = |name: &str, b: Option<crate::report::ThreadBusy>| {
        b.map(|b| format!("{name} {} {:.0} %", b.role.name(), b.busy_pct))
    };
    let ends: Vec<String> = [end("client", t.client), end("server", t.server)]
        .into_iter()
        .flatten()
        .collect();
    use crate::report::ThreadVerdict as V;
    let verdict = match t.verdict() {
        v @ V::Thread { .. } => format!("{v} limits it"),
        V::SharedCpu(cpu) => format!("both share CPU {cpu}, which limits it"),
        V::NoSingleThread => "no thread alone limits it".to_string(),
    };
    format!(
        "threads {}: {} busy: {verdict}",
        dir_name(dir),
        ends.join(", ")
    )
}

/// One end's effective socket buffers, as getsockopt read them back.
pub fn buffers_line(end: &str, b: &crate::report::SocketBuffers) -> String {
    format!(
        "socket buffers ({end}): SO_RCVBUF {}, SO_SNDBUF {} (getsockopt{})",
        crate::config::human_bytes(b.rcvbuf),
        crate::config::human_bytes(b.sndbuf),
        if b.forced { "; forced" } else { "" }
    )
}

/// Short names of the offloads that matter most for a benchmark.
const OFFLOAD_SHORT: &[(&str, &str)] = &[
    ("rx-gro", "gro"),
    ("rx-gro-hw", "gro-hw"),
    ("rx-lro", "lro"),
    ("tx-tcp-segmentation", "tso"),
    ("tx-generic-segmentation", "gso"),
    ("tx-udp-segmentation", "usso"),
    ("rx-checksum", "rxcsum"),
];

/// Interrupt moderation attributes shown in the summary, in this order.
const COALESCE_SHOWN: &[&str] = &[
    "adaptive-rx",
    "rx-usecs",
    "rx-frames",
    "adaptive-tx",
    "tx-usecs",
    "tx-frames",
];

/// The NIC lines of one side. With the interface the test used known
/// (`path_interface`), one line for it alone, loopback included
/// (`NIC client path lo: mtu 65536 · loopback · offloads …`); the other
/// interfaces are in `--json` only. Without it (an older peer), one line
/// per interface that is up (at most 4). The server's facts are its word:
/// every name is printed safely.
fn nic_lines(o: &mut String, side: &str, s: &SideReport) {
    if let Some(path) = s.facts.path_interface.as_deref() {
        match s.facts.path() {
            Some(i) => {
                let _ = writeln!(o, "NIC {side} path {}", nic_text(i));
            }
            None => {
                let _ = writeln!(
                    o,
                    "NIC {side} path {}: no facts read",
                    model::text::printable_capped(path, 32)
                );
            }
        }
        return;
    }
    let up: Vec<_> = s
        .facts
        .interfaces
        .iter()
        .filter(|i| i.operstate.as_deref() == Some("up"))
        .collect();
    for i in up.iter().take(4) {
        let _ = writeln!(o, "NIC {side} {}", nic_text(i));
    }
    if up.len() > 4 {
        let _ = writeln!(o, "NIC {side}: {} more up (see --json)", up.len() - 4);
    }
}

/// One interface: `eth0 (virtio_net): mtu 1500 · coalesce … · offloads …`,
/// or `lo: mtu 65536 · loopback · offloads …`.
fn nic_text(i: &crate::facts::IfaceFacts) -> String {
    let mtu = i.mtu.map_or_else(|| "?".into(), |m| m.to_string());
    let co: Vec<String> = COALESCE_SHOWN
        .iter()
        .filter_map(|k| i.coalesce.get(*k).map(|v| format!("{k} {v}")))
        .collect();
    let off: Vec<&str> = OFFLOAD_SHORT
        .iter()
        .filter(|(long, _)| i.offloads_on.iter().any(|x| x == long))
        .map(|(_, short)| *short)
        .collect();
    let off = if off.is_empty() {
        "-".into()
    } else {
        off.join(" ")
    };
    let name = model::text::printable_capped(&i.name, 32);
    if i.name == "lo" {
        return format!("{name}: mtu {mtu} · loopback · offloads {off}");
    }
    format!(
        "{name} ({}): mtu {mtu} · coalesce {} · offloads {off}",
        i.driver
            .as_deref()
            .map_or_else(|| "?".into(), |d| model::text::printable_capped(d, 32)),
        if co.is_empty() {
            "-".into()
        } else {
            co.join(", ")
        },
    )
}

/// Congestion control (TCP tests only) and CPU of both sides.
fn cpu(o: &mut String, r: &BenchResult) {
    let cc = |s: &SideReport| {
        // The server's facts are its word: print them safely.
        s.facts
            .congestion_control
            .as_deref()
            .map_or_else(|| "?".into(), |c| model::text::printable_capped(c, 32))
    };
    // UDP has no congestion control: the host's TCP default says nothing
    // about a UDP test.
    if !r.config.test.is_udp() {
        let _ = writeln!(
            o,
            "congestion control: client {}, server {}",
            cc(&r.client),
            cc(&r.server_side)
        );
    }
    for (name, side) in [("client", &r.client), ("server", &r.server_side)] {
        nic_lines(o, name, side);
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "CPU      host busy      process usr/sys   CPU per work (own: this process + interrupts; host: every busy CPU)"
    );
    let _ = writeln!(
        o,
        "{}",
        cpu_line("client", r.config.test, &r.client, &r.client_service_demand)
    );
    let _ = writeln!(
        o,
        "{}",
        cpu_line(
            "server",
            r.config.test,
            &r.server_side,
            &r.server_service_demand
        )
    );
    for (name, s) in [("client", &r.client), ("server", &r.server_side)] {
        for u in &s.cpu.cpus {
            let _ = writeln!(
                o,
                "  {name} cpu{:<3} usr {:>5.1}  sys {:>5.1}  irq {:>5.1}  soft {:>5.1}  steal {:>5.1}  idle {:>5.1}",
                u.cpu, u.usr, u.sys, u.irq, u.softirq, u.steal, u.idle
            );
        }
    }
    for (name, s) in [("client", &r.client), ("server", &r.server_side)] {
        if let Some(i) = &s.cpu.interrupts {
            let _ = writeln!(o, "  {name} device interrupts {}", i.text(2));
        }
    }
    for (name, s) in [("client", &r.client), ("server", &r.server_side)] {
        if let Some(line) = busy_line(name, &s.cpu) {
            let _ = writeln!(o, "{line}");
        }
    }
}

/// `busy: the client's host: other processes took 0.71 CPU (busiest: bash
/// 1.42 CPU-s) ...` when what else ran on that end reached the busy
/// threshold (`model::busy`).
fn busy_line(name: &str, c: &crate::report::CpuReport) -> Option<String> {
    let load = c.others_load().filter(|l| l.is_busy())?;
    let top = load
        .top
        .as_deref()
        .map(|t| format!(" (busiest: {})", model::text::printable_capped(t, 48)))
        .unwrap_or_default();
    Some(format!(
        "busy machine: on the {name}'s host other processes took {} CPU{top} and steal was {} % while this measured: the results are of the path beside that load",
        model::metric::num(load.cpus),
        model::metric::num(load.steal_pct)
    ))
}

/// The header line of `nettune bench --csv` (columns in docs/engine.md).
pub const CSV_HEADER: &str = "kind,dir,index,start_s,end_s,bytes,bits_per_sec,msgs,per_sec,lost,errors,p50_ns,p99_ns,retransmits";

fn csv_opt(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// One `interval` row of `--csv`: `lost` is the loss estimate of udp-stream
/// intervals, else the timed-out requests or failed connections.
pub fn csv_interval_row(t: TestKind, i: &IntervalReport) -> String {
    let lost = if t.spec().sequenced {
        i.lost_estimate.to_string()
    } else {
        i.counters.lost.to_string()
    };
    format!(
        "interval,{},{},{:.3},{:.3},{},{:.0},{},{:.1},{},{},{},{},",
        dir_name(i.dir),
        i.index,
        i.start_s,
        i.end_s,
        i.counters.bytes,
        i.bits_per_sec,
        i.counters.msgs,
        i.per_sec,
        lost,
        i.counters.errors,
        csv_opt(i.p50_ns.map(|n| n.0)),
        csv_opt(i.p99_ns.map(|n| n.0)),
    )
}

/// The `result` rows of `--csv`, one per direction: the window's totals
/// (`start_s` 0, `end_s` the seconds measured; `lost` is the UDP loss of
/// udp-stream, else timed-out requests or failed connections).
pub fn csv_result_rows(r: &BenchResult) -> Vec<String> {
    let mut rows: Vec<String> = r
        .results
        .iter()
        .map(|d| {
            let lost = d.udp.map(|u| u.lost).unwrap_or(d.lost);
            format!(
                "result,{},,0.000,{:.3},{},{:.0},{},{:.1},{},{},{},{},{}",
                dir_name(d.dir),
                d.seconds,
                d.bytes.0,
                d.bits_per_sec,
                d.msgs,
                d.per_sec,
                lost,
                d.errors,
                csv_opt(d.latency.as_ref().map(|l| l.p50_ns.0)),
                csv_opt(d.latency.as_ref().map(|l| l.p99_ns.0)),
                d.retransmits,
            )
        })
        .collect();
    if let Some(p) = &r.probe {
        rows.push(csv_probe_row(r, p));
    }
    rows
}

/// The `probe` row of `--csv` (`bench --probe`): `dir` is the probe's kind,
/// `msgs` the answered probes, `lost` the unanswered ones, latencies in ns.
fn csv_probe_row(r: &BenchResult, p: &crate::probe::ProbeReport) -> String {
    let secs = r.results.first().map_or(0.0, |d| d.seconds);
    let ns = |v: Option<u64>| csv_opt(v.map(|us| us.saturating_mul(1000)));
    format!(
        "probe,{},,0.000,{secs:.3},,,{},,{},,{},{},",
        p.kind.name(),
        p.answered,
        p.lost,
        ns(p.p50_us),
        ns(p.p99_us),
    )
}
