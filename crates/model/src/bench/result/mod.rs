//! Result types: per-worker counters, intervals, each side's report and the
//! final [`BenchResult`] (the `--json` document, documented in docs/engine.md).

use crate::bench::config::measured_by;
use crate::bench::config::End;
use crate::bench::config::{Direction, FlowDir, TestConfig, TestKind};
use crate::bench_facts::HostFacts;
use crate::{Bytes, Nanos};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

mod irq;
pub mod probe;
mod summary;
mod thread;
pub use irq::{IrqCpuRate, IrqIfaceRate, IrqRates, MAX_IFACE_IRQS, MAX_IRQ_CPUS, MAX_IRQ_IFACES};
pub use probe::{ProbeKind, ProbeReport, ProbeSpec};
pub use summary::{cut_short, service_demand, summarize};
pub use thread::{ThreadBusy, ThreadLoad, ThreadVerdict};

/// Version of the `--json` document shape.
pub const RESULT_SCHEMA_VERSION: u32 = 1;

/// Plain counters a worker owns (no atomics; merged after the run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Payload bytes.
    pub bytes: u64,
    /// Datagrams (UDP streams), transactions (RR) or connections (CRR).
    pub msgs: u64,
    /// UDP: datagrams the sequence numbers say were sent (highest seq + 1, per flow).
    pub expected: u64,
    /// UDP: datagrams that arrived after a later one.
    pub out_of_order: u64,
    /// UDP: datagrams received twice.
    pub duplicates: u64,
    /// UDP: datagrams with another test's tag or a bad header (ignored).
    pub foreign: u64,
    /// Requests given up after a timeout (UDP RR) or failed connections (CRR).
    pub lost: u64,
    /// Send/receive errors other than back-pressure.
    pub errors: u64,
    /// UDP: datagrams as the socket returned them (a GRO read counts once).
    pub reads: u64,
}

impl Counters {
    /// Field-wise sum.
    pub fn add(&mut self, o: &Counters) {
        // Saturating: a peer's report supplies some of these numbers.
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.msgs = self.msgs.saturating_add(o.msgs);
        self.expected = self.expected.saturating_add(o.expected);
        self.out_of_order = self.out_of_order.saturating_add(o.out_of_order);
        self.duplicates = self.duplicates.saturating_add(o.duplicates);
        self.foreign = self.foreign.saturating_add(o.foreign);
        self.lost = self.lost.saturating_add(o.lost);
        self.errors = self.errors.saturating_add(o.errors);
        self.reads = self.reads.saturating_add(o.reads);
    }

    /// Field-wise `self - o`, saturating.
    pub fn minus(&self, o: &Counters) -> Counters {
        Counters {
            bytes: self.bytes.saturating_sub(o.bytes),
            msgs: self.msgs.saturating_sub(o.msgs),
            expected: self.expected.saturating_sub(o.expected),
            out_of_order: self.out_of_order.saturating_sub(o.out_of_order),
            duplicates: self.duplicates.saturating_sub(o.duplicates),
            foreign: self.foreign.saturating_sub(o.foreign),
            lost: self.lost.saturating_sub(o.lost),
            errors: self.errors.saturating_sub(o.errors),
            reads: self.reads.saturating_sub(o.reads),
        }
    }
}

/// What a worker does (defined with the catalogue of test kinds).
pub use crate::bench::config::Role;

/// Latency percentiles in nanoseconds, and the histogram as (value, count).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_ns: Nanos,
    /// Mean.
    pub mean_ns: f64,
    /// 50th percentile.
    pub p50_ns: Nanos,
    /// 90th.
    pub p90_ns: Nanos,
    /// 99th.
    pub p99_ns: Nanos,
    /// 99.9th.
    pub p999_ns: Nanos,
    /// 99.99th.
    pub p9999_ns: Nanos,
    /// Largest.
    pub max_ns: Nanos,
    /// Every non-empty bucket: `[highest equivalent value ns, count]`, ascending.
    pub histogram: Vec<[u64; 2]>,
}

/// This host's CLOCK_REALTIME, ns since the Unix epoch (0 before it).
pub fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// An HDR histogram in nanoseconds, 1 ns to 100 s, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    match Histogram::new_with_bounds(1, 100_000_000_000, 3) {
        Ok(h) => h,
        Err(_) => Histogram::new(3).unwrap_or_else(|_| unreachable_hist()),
    }
}

#[cold]
fn unreachable_hist() -> ! {
    panic!("HDR histogram bounds are constants known to be valid")
}

/// Serialize a histogram as `[value, count]` pairs of non-empty buckets.
pub fn hist_pairs(h: &Histogram<u64>) -> Vec<[u64; 2]> {
    h.iter_recorded()
        .map(|v| [v.value_iterated_to(), v.count_at_value()])
        .collect()
}

/// Rebuild a histogram from pairs.
pub fn hist_from_pairs(p: &[[u64; 2]]) -> Histogram<u64> {
    let mut h = new_histogram();
    for [v, c] in p {
        h.saturating_record_n(*v, *c);
    }
    h
}

impl Latency {
    /// Percentiles and buckets of a histogram.
    pub fn from_hist(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            min_ns: Nanos(h.min()),
            mean_ns: h.mean(),
            p50_ns: Nanos(h.value_at_quantile(0.50)),
            p90_ns: Nanos(h.value_at_quantile(0.90)),
            p99_ns: Nanos(h.value_at_quantile(0.99)),
            p999_ns: Nanos(h.value_at_quantile(0.999)),
            p9999_ns: Nanos(h.value_at_quantile(0.9999)),
            max_ns: Nanos(h.max()),
            histogram: hist_pairs(h),
        }
    }
}

/// TCP_INFO of one connection at the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpInfo {
    /// Flow index.
    pub flow: u32,
    /// Segments retransmitted.
    pub retransmits: u32,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// RTT variance, µs.
    pub rttvar_us: u32,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Send MSS, bytes.
    pub mss: u32,
    /// Congestion control of the connection (TCP_CONGESTION), when read.
    #[serde(default)]
    pub congestion: Option<String>,
}

/// Socket buffer sizes of one end's first data socket, read back with
/// getsockopt after its options were set: what the kernel gave (twice the
/// size asked for, capped at `rmem_max`/`wmem_max` unless forced), or, with
/// no size asked for, the autotuning start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketBuffers {
    /// SO_RCVBUF as read back, bytes.
    pub rcvbuf: u64,
    /// SO_SNDBUF as read back, bytes.
    pub sndbuf: u64,
    /// The sizes were set with SO_RCVBUFFORCE/SO_SNDBUFFORCE.
    pub forced: bool,
}

/// One worker's results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// Worker index within its role and direction.
    pub worker: u32,
    /// Role.
    pub role: Option<Role>,
    /// Direction of its flows.
    pub dir: Option<FlowDir>,
    /// CPU it was pinned to.
    pub cpu: Option<u32>,
    /// Counts inside the measured window.
    pub window: Counters,
    /// Counts over the whole run (warm-up and drain included).
    pub total: Counters,
    /// Latency samples of the window (RR/CRR clients), as `[value ns, count]`.
    pub hist: Vec<[u64; 2]>,
    /// TCP_INFO per connection.
    pub tcp_info: Vec<TcpInfo>,
    /// This thread's user CPU over the window, µs.
    pub user_us: u64,
    /// This thread's system CPU over the window, µs.
    pub sys_us: u64,
    /// First error that ended the worker early, if any.
    pub error: Option<String>,
}

/// One interval of one direction, from the side that measures it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    /// Direction.
    pub dir: Option<FlowDir>,
    /// Interval number, from 0 at the end of warm-up.
    pub index: u64,
    /// Start, seconds after warm-up.
    pub start_s: f64,
    /// End, seconds after warm-up.
    pub end_s: f64,
    /// Summed counters.
    pub counters: Counters,
    /// Bits per second of payload.
    pub bits_per_sec: f64,
    /// Datagrams, transactions or connections per second.
    pub per_sec: f64,
    /// UDP: datagrams the sequence numbers say went missing in this interval.
    pub lost_estimate: i64,
    /// RR/CRR: median latency, ns.
    pub p50_ns: Option<Nanos>,
    /// RR/CRR: 99th percentile latency, ns.
    pub p99_ns: Option<Nanos>,
    /// Per-CPU use of both hosts over this interval (only in the final
    /// result: the client adds it after the test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<IntervalCpuUse>,
}

/// Per-CPU use of both hosts over one interval; `null` for a host that did
/// not report it (an older server, an unreadable `/proc/stat`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalCpuUse {
    /// The client's CPUs.
    pub client: Option<Vec<CpuUse>>,
    /// The server's CPUs.
    pub server: Option<Vec<CpuUse>>,
}

/// One side's per-CPU use over interval `index` (from `/proc/stat` read at
/// the interval's edges).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalCpu {
    /// Interval number.
    pub index: u64,
    /// Per CPU.
    pub cpus: Vec<CpuUse>,
}

/// Most CPUs kept per interval from a peer's report.
pub const MAX_INTERVAL_CPUS: usize = 4096;

/// A peer's per-interval CPU list made safe: intervals this test has, each
/// once, at most [`MAX_INTERVAL_CPUS`] CPUs, percentages finite and within
/// 0–100 (anything else is dropped).
pub fn sanitize_interval_cpu(cfg: &TestConfig, v: Vec<IntervalCpu>) -> Vec<IntervalCpu> {
    let n = cfg.intervals();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for mut iv in v {
        if iv.index >= n || !seen.insert(iv.index) {
            continue;
        }
        iv.cpus.truncate(MAX_INTERVAL_CPUS);
        iv.cpus.retain(|c| {
            [c.usr, c.sys, c.irq, c.softirq, c.idle]
                .iter()
                .all(|p| p.is_finite() && (0.0..=100.0).contains(p))
        });
        out.push(iv);
    }
    out
}

/// Put both sides' per-interval CPU use into the result's intervals (both
/// directions of an index get the same), from the client's own list and
/// the server's (read with [`sanitize_interval_cpu`]).
pub fn attach_interval_cpu(
    r: &mut BenchResult,
    client: Vec<IntervalCpu>,
    server: Vec<IntervalCpu>,
) {
    let server = sanitize_interval_cpu(&r.config, server);
    let by = |v: &[IntervalCpu], i: u64| v.iter().find(|c| c.index == i).map(|c| c.cpus.clone());
    for iv in &mut r.intervals {
        iv.cpu = Some(IntervalCpuUse {
            client: by(&client, iv.index),
            server: by(&server, iv.index),
        });
    }
}

/// CPU use of one logical CPU over the window, percent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// CPU number.
    pub cpu: u32,
    /// user + nice.
    pub usr: f64,
    /// system.
    pub sys: f64,
    /// hard IRQ.
    pub irq: f64,
    /// softirq.
    pub softirq: f64,
    /// Stolen by the hypervisor (absent from older results: 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub steal: f64,
    /// idle + iowait.
    pub idle: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// CPU accounting of one side over the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    /// Window length as sampled, seconds.
    pub seconds: f64,
    /// Per CPU (from /proc/stat deltas).
    pub cpus: Vec<CpuUse>,
    /// Busy CPU time of the whole host over the window, µs (all states but idle and iowait).
    pub host_busy_us: f64,
    /// Process rusage over the window: user µs.
    pub process_user_us: u64,
    /// Process rusage over the window: system µs.
    pub process_sys_us: u64,
    /// Why per-CPU numbers are missing, if they are.
    pub note: Option<String>,
    /// CPU-seconds that processes other than nettune's took on this host
    /// over the window (kernel threads left out; a process that exited in
    /// the window is not seen), from `/proc/PID/stat`. Absent from older
    /// results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cpu_s: Option<f64>,
    /// The busiest of them: `command N.NN CPU-s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_top: Option<String>,
    /// Device interrupts over the window (the numbered rows of
    /// `/proc/interrupts`), per CPU and per interface; absent when the
    /// file could not be read at both edges and from older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts: Option<IrqRates>,
}

impl CpuReport {
    /// What processes other than nettune's took over the window, in CPUs'
    /// worth, with the mean steal % over the CPUs (`None` from an engine
    /// that did not record it).
    pub fn others_load(&self) -> Option<crate::busy::OthersLoad> {
        let s = self.others_cpu_s?;
        let cpus = if self.seconds > 0.0 {
            s / self.seconds
        } else {
            0.0
        };
        let steal = if self.cpus.is_empty() {
            0.0
        } else {
            self.cpus.iter().map(|u| u.steal).sum::<f64>() / self.cpus.len() as f64
        };
        Some(crate::busy::OthersLoad {
            cpus,
            steal_pct: steal,
            top: self.others_top.clone(),
        })
        .filter(|o| o.cpus.is_finite() && o.steal_pct.is_finite())
    }
}

/// UDP counters of `/proc/net/snmp` on one side, delta over the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpSnmp {
    /// InDatagrams: delivered to sockets.
    pub in_datagrams: u64,
    /// RcvbufErrors: dropped because a socket's receive buffer was full.
    pub rcvbuf_errors: u64,
    /// InErrors (includes RcvbufErrors).
    pub in_errors: u64,
    /// NoPorts.
    pub no_ports: u64,
    /// OutDatagrams.
    pub out_datagrams: u64,
}

/// Everything one side reports about a test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideReport {
    /// Host facts.
    pub facts: HostFacts,
    /// Per worker.
    pub workers: Vec<WorkerReport>,
    /// CPU over the window.
    pub cpu: CpuReport,
    /// UDP snmp delta over the run (None if unreadable).
    pub udp_snmp: Option<UdpSnmp>,
    /// Data connections refused for a wrong test id or bad preamble.
    pub rejected_connections: u64,
    /// The server's doctor report (`--doctor`), decoded within limits; the
    /// client moves it to [`BenchResult::doctor`] with
    /// [`crate::bench::peer_doctor::from_peer`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doctor: Option<crate::bench::peer_doctor::PeerReport>,
    /// Per-CPU use per interval, as sent; the client moves it into
    /// [`BenchResult::intervals`] (absent from older servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_intervals: Vec<IntervalCpu>,
    /// What the server changed of the test (such as a buffer size clamped
    /// to the host's maximum), one line each; the client moves at most
    /// [`MAX_SERVER_NOTES`] of them, escaped, to [`BenchResult::notes`].
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "server_notes"
    )]
    pub notes: Vec<String>,
    /// Effective socket buffers of this end's data sockets (absent from
    /// older peers and for tcp-crr clients, whose sockets come later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<SocketBuffers>,
}

fn server_notes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    crate::bounded::vec_at_most(d, MAX_SERVER_NOTES)
}

/// Most notes a client takes from a server's report.
pub const MAX_SERVER_NOTES: usize = 16;

/// Service demand as netperf computes it: host CPU time over the window
/// divided by the work done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceDemand {
    /// CPU µs per megabyte (10^6 bytes) moved.
    pub us_per_mb: Option<f64>,
    /// CPU µs per transaction or connection.
    pub us_per_transaction: Option<f64>,
    /// CPU µs per 1000 datagrams.
    pub us_per_kpkt: Option<f64>,
    /// Host CPU-seconds per gigabyte (10^9 bytes) moved (stream tests;
    /// absent from older results).
    #[serde(default)]
    pub cpu_s_per_gb: Option<f64>,
    /// Host CPU-seconds per million datagrams (udp-stream).
    #[serde(default)]
    pub cpu_s_per_mpkt: Option<f64>,
    /// Host CPU-seconds per 1000 transactions (tcp-crr: connections).
    #[serde(default)]
    pub cpu_s_per_ktx: Option<f64>,
    /// nettune's own CPU-seconds per unit of the test's work (the unit of
    /// [`ServiceDemand::per_work`]): this end's process (user + system)
    /// plus the hard and soft interrupt time of the host's CPUs, which
    /// carry its packets; what another process took is left out. Absent
    /// from older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_per_work: Option<f64>,
}

impl ServiceDemand {
    /// CPU-seconds per unit of the test's work, the unit named by
    /// `crate::metric::cpu_work_unit`: per GB for tcp-stream, per Mpkt for
    /// udp-stream, per 1000 transactions (connections) otherwise. Results
    /// written before the CPU-s fields are read from the µs fields (each
    /// CPU-s figure is its µs figure / 1000). `None` without work or CPU.
    pub fn per_work(&self, t: TestKind) -> Option<f64> {
        let old = |v: Option<f64>| v.map(|x| x / 1000.0);
        let v = if t.spec().sequenced && t.is_stream() {
            self.cpu_s_per_mpkt.or(old(self.us_per_kpkt))
        } else if t.is_stream() {
            self.cpu_s_per_gb.or(old(self.us_per_mb))
        } else {
            self.cpu_s_per_ktx.or(old(self.us_per_transaction))
        };
        v.filter(|x| x.is_finite() && *x > 0.0)
    }

    /// nettune's own CPU per work when the result has it, else the host's
    /// ([`ServiceDemand::per_work`]).
    pub fn own_or_host(&self, t: TestKind) -> Option<f64> {
        self.own_per_work
            .filter(|x| x.is_finite() && *x > 0.0)
            .or_else(|| self.per_work(t))
    }
}

/// Receiver-side UDP truth and the kernel's view of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpSummary {
    /// Datagrams the sender sent (whole run).
    pub sent: u64,
    /// Distinct datagrams received (whole run).
    pub received: u64,
    /// sent - received.
    pub lost: u64,
    /// lost / sent, percent.
    pub loss_pct: f64,
    /// Arrived after a later datagram.
    pub out_of_order: u64,
    /// Received twice.
    pub duplicates: u64,
    /// Ignored (foreign or malformed).
    pub foreign: u64,
}

/// Cross-check of the receiver's count against `/proc/net/snmp` there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelCheck {
    /// Datagrams the receiving workers read (whole run).
    pub app_received: u64,
    /// Udp InDatagrams delta on the receiving side.
    pub kernel_in_datagrams: u64,
    /// Udp RcvbufErrors delta (socket-buffer drops).
    pub kernel_rcvbuf_errors: u64,
    /// (kernel - app) / kernel, percent.
    pub difference_pct: f64,
    /// Whether the two agree within 0.5 %.
    pub agrees: bool,
    /// What the difference means.
    pub note: String,
}

/// Results of one direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirSummary {
    /// Direction.
    pub dir: Option<FlowDir>,
    /// Which side measured (`server` or `client`).
    pub measured_by: String,
    /// Window length, seconds.
    pub seconds: f64,
    /// Payload bytes in the window.
    pub bytes: Bytes,
    /// Payload bits per second.
    pub bits_per_sec: f64,
    /// Datagrams, transactions or connections in the window.
    pub msgs: u64,
    /// Per second.
    pub per_sec: f64,
    /// What `msgs` counts (`datagrams`, `transactions`, `connections`, `bytes`).
    pub unit: String,
    /// UDP streams.
    pub udp: Option<UdpSummary>,
    /// RR/CRR latency.
    pub latency: Option<Latency>,
    /// TCP_INFO of the sending side's connections.
    pub tcp_info: Vec<TcpInfo>,
    /// Sum of retransmits over the sending side's connections.
    pub retransmits: u64,
    /// Timeouts (UDP RR) or failed connections (CRR).
    pub lost: u64,
    /// Errors.
    pub errors: u64,
    /// Kernel cross-check (UDP streams).
    pub kernel_check: Option<KernelCheck>,
    /// How busy each end's busiest worker thread of this direction was, and
    /// which one limited it (`None` in results of an older nettune).
    #[serde(default)]
    pub threads: Option<ThreadLoad>,
}

/// A worker thread busy at least this share of the window (user + system
/// CPU time over the window's length), and [`BOUND_MARGIN_PCT`] points busier
/// than every thread of the other end, is what limits its direction. Not
/// 100 %: the softirq work on the thread's CPU is not the thread's time (a
/// receiver-bound tcp-stream flow over veth reads 82-99 % on a 2-vCPU VM).
pub const THREAD_BOUND_PCT: f64 = 80.0;
/// How many points busier than the other end's busiest thread a limiting
/// thread is (two ends both near their limit: no thread alone limits).
pub const BOUND_MARGIN_PCT: f64 = 20.0;
/// Threads pinned to one CPU that keep it busy at least this share of the
/// window together share it as the limit.
pub const SHARED_CPU_PCT: f64 = 90.0;

/// The whole `--json` document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Shape version.
    pub schema_version: u32,
    /// nettune version of the client.
    pub version: String,
    /// Server address as given.
    pub server: String,
    /// Wall-clock time of the start (`go`), RFC 3339 in UTC
    /// (`2026-11-23T21:40:00Z`).
    #[serde(default)]
    pub start_time: String,
    /// Address family of the control and data connections.
    #[serde(default)]
    pub family: Option<crate::bench::config::Family>,
    /// Whether the user stopped the test early (Ctrl-C); the results then
    /// cover the part of the window measured until then.
    #[serde(default)]
    pub interrupted: bool,
    /// Test id the server assigned.
    pub test_id: u64,
    /// Full configuration.
    pub config: TestConfig,
    /// Per direction.
    pub results: Vec<DirSummary>,
    /// Intervals of all directions, in order.
    pub intervals: Vec<IntervalReport>,
    /// Client side.
    pub client: SideReport,
    /// Server side.
    pub server_side: SideReport,
    /// Service demand computed from the client's CPU.
    pub client_service_demand: ServiceDemand,
    /// Service demand computed from the server's CPU.
    pub server_service_demand: ServiceDemand,
    /// Warnings (e.g. both ends on one host share its CPUs).
    pub notes: Vec<String>,
    /// `--doctor`: both ends' doctor reports over their windows (absent
    /// without `--doctor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doctor: Option<crate::bench::peer_doctor::BenchDoctor>,
    /// `--probe`: the latency probe beside the load (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeReport>,
    /// When the first data flow began (its worker's CLOCK_REALTIME as it
    /// started, ns since the epoch; `fleet bench` compares hosts' starts;
    /// absent from older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_unix_ns: Option<u64>,
}

impl From<crate::parse::udp_snmp::UdpCounters> for UdpSnmp {
    fn from(u: crate::parse::udp_snmp::UdpCounters) -> UdpSnmp {
        UdpSnmp {
            in_datagrams: u.in_datagrams,
            rcvbuf_errors: u.rcvbuf_errors,
            in_errors: u.in_errors,
            no_ports: u.no_ports,
            out_datagrams: u.out_datagrams,
        }
    }
}

#[cfg(test)]
mod tests;
