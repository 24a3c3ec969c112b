//! `nettune fleet bench`: N clients against one server, every client's
//! flows started at the same controller instant (issue 19, docs/fleet.md
//! "fleet bench").
//!
//! The server host's agent starts `nettune serve` ([`Request::Serve`]); each
//! client's clock offset is estimated over its own pipe ([`crate::clock`]);
//! the start is T = now + margin on the controller's clock, sent to each
//! client as T + its offset ([`Request::Bench`]); each bench JSON says when
//! its first flow actually began (`started_at_unix_ns`, the agent's clock).
//! The skew is the spread of those starts on the controller's clock; the
//! aggregate counts only the window in which every client ran.

use crate::clock::{self, Offset};
use crate::fanout::{fan_out, Failure, Options, Session};
use crate::ops::Job;
use crate::proto::Request;
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// A host that runs a bench, and the server address it connects to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The host.
    pub job: Job,
    /// Its server: an index into [`Spec::servers`].
    pub server: usize,
    /// The server's address as this host reaches it.
    pub address: String,
}

/// What `fleet bench` runs.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The hosts running `nettune serve` (N→1, or N→M: each client has its own).
    pub servers: Vec<Job>,
    /// The clients.
    pub clients: Vec<Target>,
    /// Hosts running a latency probe (`probe_args`) beside the load.
    pub probes: Vec<Target>,
    /// Each client's `nettune bench` flags (no host, `--port`, `--json` or `--start-at`).
    pub args: Vec<String>,
    /// Each probe host's flags.
    pub probe_args: Vec<String>,
    /// The server's control port (0: one the server picks).
    pub port: u16,
    /// Time from the last clock estimate to the start.
    pub margin: Duration,
    /// Clock samples per client.
    pub samples: u32,
    /// Warm-up plus measured time of one bench.
    pub window: Duration,
    /// The token of this run's server (clients prove it).
    pub token: Option<String>,
}

/// One client's (or probe's) run.
#[derive(Debug, Clone, Serialize)]
pub struct HostBench {
    /// Inventory name.
    pub host: String,
    /// `client` or `probe`.
    pub role: &'static str,
    /// Its server host.
    pub server: String,
    /// The server address it connected to.
    pub target: String,
    /// `ok` or `failed`.
    pub outcome: &'static str,
    /// Why it failed.
    pub error: Option<Failure>,
    /// Its clock against the controller's.
    pub clock: Option<Offset>,
    /// When its flows were to start, its own clock (ns since the epoch).
    pub scheduled_start_unix_ns: Option<u64>,
    /// When its first flow began, its own clock.
    pub started_at_unix_ns: Option<u64>,
    /// The same on the controller's clock.
    pub start_ns: Option<u64>,
    /// Actual minus scheduled start, ns (its own clock: no offset error).
    pub late_ns: Option<i64>,
    /// Its rates over the common window.
    pub window_rate: Option<Rate>,
    /// Its `bench --json` document.
    pub result: Option<Value>,
}

/// Rates over the common window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Payload bits per second.
    pub bits_per_sec: f64,
    /// Datagrams, transactions or connections per second.
    pub per_sec: f64,
}

/// The window in which every client's measured window ran (controller clock).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Window {
    /// Its start, ns since the epoch.
    pub start_unix_ns: u64,
    /// Its end.
    pub end_unix_ns: u64,
    /// Its length.
    pub seconds: f64,
}

/// Latency of all clients together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergedLatency {
    /// `merged histograms`: every client's histogram added bucket by bucket
    /// (each client's whole measured window).
    pub source: &'static str,
    /// Samples.
    pub count: u64,
    /// Smallest, ns.
    pub min_ns: u64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Percentiles, ns.
    pub p50_ns: u64,
    /// 90th.
    pub p90_ns: u64,
    /// 99th.
    pub p99_ns: u64,
    /// 99.9th.
    pub p999_ns: u64,
    /// 99.99th.
    pub p9999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

/// A host's per-CPU use over its bench window (the bench JSON's `cpu`).
#[derive(Debug, Clone, Serialize)]
pub struct HostCpu {
    /// Inventory name.
    pub host: String,
    /// `client`, `probe` or `server`.
    pub role: &'static str,
    /// `{seconds, cpus: [{cpu, usr, sys, irq, softirq, idle}]}`.
    pub cpu: Value,
}

/// The clients together over the common window.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    /// Clients counted.
    pub hosts: usize,
    /// What `per_sec` counts (the bench's `unit`).
    pub unit: String,
    /// Sum of the clients' rates.
    pub bits_per_sec: f64,
    /// Sum of the clients' rates.
    pub per_sec: f64,
    /// All clients' latency.
    pub latency: Option<MergedLatency>,
}

/// A server host of the run.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRun {
    /// Inventory name.
    pub host: String,
    /// The address its `nettune serve` listened on.
    pub listening: Option<String>,
    /// Why it failed (then its clients did not run).
    pub error: Option<Failure>,
}

/// `fleet bench --json` after `schema_version` (docs/schema/fleet-bench.json).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The server hosts.
    pub servers: Vec<ServerRun>,
    /// The start, controller clock (ns since the epoch).
    pub scheduled_start_unix_ns: Option<u64>,
    /// Latest minus earliest actual start of the clients, controller clock.
    pub skew_ns: Option<u64>,
    /// Largest |actual − scheduled| start of a client, its own clock.
    pub max_late_ns: Option<u64>,
    /// Clients, then probes.
    pub hosts: Vec<HostBench>,
    /// The common window.
    pub window: Option<Window>,
    /// The clients' sum over it.
    pub aggregate: Option<Aggregate>,
    /// Per-CPU use of every host (a server's as one of its clients' results reports it).
    pub cpu: Vec<HostCpu>,
    /// What is approximate or missing.
    pub notes: Vec<String>,
    /// Failed hosts (servers included).
    pub failed: Vec<String>,
}

/// Run `spec`. Every host gets an outcome; a server that cannot serve fails
/// its clients, the others run.
pub fn run(spec: &Spec, opts: &Options) -> Report {
    let mut rep = Report {
        servers: Vec::new(),
        scheduled_start_unix_ns: None,
        skew_ns: None,
        max_late_ns: None,
        hosts: Vec::new(),
        window: None,
        aggregate: None,
        cpu: Vec::new(),
        notes: Vec::new(),
        failed: Vec::new(),
    };
    let targets: Vec<(&'static str, &Target)> = spec
        .clients
        .iter()
        .map(|t| ("client", t))
        .chain(spec.probes.iter().map(|t| ("probe", t)))
        .collect();
    let server_name = |t: &Target| {
        spec.servers
            .get(t.server)
            .map(|j| j.host.clone())
            .unwrap_or_default()
    };
    let blank = |role: &'static str, t: &Target| HostBench {
        host: t.job.host.clone(),
        role,
        server: server_name(t),
        target: t.address.clone(),
        outcome: "failed",
        error: None,
        clock: None,
        scheduled_start_unix_ns: None,
        started_at_unix_ns: None,
        start_ns: None,
        late_ns: None,
        window_rate: None,
        result: None,
    };
    let mut servers: Vec<Result<Started, Failure>> =
        fan_out(&spec.servers, spec.servers.len(), |j| {
            let n = targets
                .iter()
                .filter(|(_, t)| spec.servers.get(t.server).is_some_and(|s| s.host == j.host))
                .count();
            start_server(j, spec, n, opts)
        });
    for (j, r) in spec.servers.iter().zip(&servers) {
        rep.servers.push(ServerRun {
            host: j.host.clone(),
            listening: r.as_ref().ok().map(|(_, p)| p.1.clone()),
            error: r.as_ref().err().cloned(),
        });
    }
    let port_of = |t: &Target| -> Result<u16, Failure> {
        match servers.get(t.server) {
            Some(Ok((_, (p, _)))) => Ok(*p),
            _ => Err(Failure {
                kind: "server",
                message: format!("not run: the server {} failed", server_name(t)),
            }),
        }
    };
    let ports: Vec<Result<u16, Failure>> = targets.iter().map(|(_, t)| port_of(t)).collect();
    // Connect and estimate every clock at once.
    let ready: Vec<Result<(Mutex<Session>, Offset), Failure>> = fan_out(
        &targets.iter().zip(&ports).collect::<Vec<_>>(),
        targets.len(),
        |((_, t), port)| {
            port.as_ref().map_err(Clone::clone)?;
            let mut s = Session::connect(&t.job, opts)?;
            let o = offset(&mut s, spec.samples)?;
            Ok((Mutex::new(s), o))
        },
    );
    let t = clock::realtime_ns().saturating_add(dur_ns(spec.margin));
    rep.scheduled_start_unix_ns = Some(t);
    let answers: Vec<Result<Value, Failure>> = fan_out(
        &ready.iter().zip(&targets).zip(&ports).collect::<Vec<_>>(),
        targets.len(),
        |((r, (role, tg)), port)| {
            let (s, o) = r.as_ref().map_err(Clone::clone)?;
            let port = port.as_ref().map_err(Clone::clone)?;
            let mut args = if *role == "probe" {
                spec.probe_args.clone()
            } else {
                spec.args.clone()
            };
            args.extend(["--port".to_string(), port.to_string()]);
            let req = Request::Bench {
                server: tg.address.clone(),
                args,
                start_at_unix_ns: Some(o.to_agent(t)),
                token: spec.token.clone(),
            };
            let mut g = s.lock().map_err(|_| Failure {
                kind: "protocol",
                message: "session lock poisoned".into(),
            })?;
            let name = g.name().to_string();
            g.json(&req).and_then(|a| bench_answer(&name, a))
        },
    );
    for (s, _) in servers.iter_mut().flatten() {
        let _ = s.json(&Request::StopServe);
    }
    drop(servers);
    for (((role, tg), r), a) in targets.iter().zip(&ready).zip(answers) {
        let mut h = blank(role, tg);
        h.clock = r.as_ref().ok().map(|x| x.1);
        match a {
            Ok(v) => {
                let o = h.clock;
                h.scheduled_start_unix_ns = o.map(|o| o.to_agent(t));
                h.started_at_unix_ns = v.get("started_at_unix_ns").and_then(Value::as_u64);
                h.start_ns = o.zip(h.started_at_unix_ns).map(|(o, s)| o.to_controller(s));
                h.late_ns = h
                    .started_at_unix_ns
                    .zip(h.scheduled_start_unix_ns)
                    .map(|(a, s)| clamp(i128::from(a) - i128::from(s)));
                h.outcome = "ok";
                h.result = Some(v);
            }
            Err(f) => h.error = Some(f),
        }
        rep.hosts.push(h);
    }
    summarize(&mut rep);
    rep
}

/// A server's session and (port, listening address).
type Started = (Session, (u16, String));

/// Connect to server host `j` and start `nettune serve` for `clients`
/// tests.
fn start_server(j: &Job, spec: &Spec, clients: usize, opts: &Options) -> Result<Started, Failure> {
    let mut s = Session::connect(j, opts)?;
    let secs = spec.window.as_secs().saturating_add(60);
    let (v, _) = s.json(&Request::Serve {
        port: spec.port,
        max_duration: Some(secs),
        lifetime: Some(opts.deadline.as_secs().saturating_add(secs)),
        token: spec.token.clone(),
        clients: u32::try_from(clients).ok(),
    })?;
    let addr = v
        .get("address")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let port = v
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p != 0)
        .ok_or_else(|| Failure {
            kind: "protocol",
            message: format!("{}: serve answered without a port: {v}", s.name()),
        })?;
    Ok((s, (port, addr)))
}

/// A client's answer to `Bench`: its document when the bench exited 0;
/// otherwise a failure naming the host, the exit code and the document's
/// `error` (a bench that failed may still print a document).
fn bench_answer(host: &str, (v, code): (Value, u8)) -> Result<Value, Failure> {
    if code == 0 {
        return Ok(v);
    }
    Err(Failure {
        kind: "remote",
        message: format!("{host}: bench exited {code}: {}", crate::ops::doc_error(&v)),
    })
}

/// The agent's clock offset over session `s`.
pub fn offset(s: &mut Session, samples: u32) -> Result<Offset, Failure> {
    let name = s.name().to_string();
    let bad = |m: String| Failure {
        kind: "protocol",
        message: format!("{name}: clock: {m}"),
    };
    clock::estimate_with(samples, clock::realtime_ns, || {
        let (v, _) = s.json(&Request::Clock)?;
        v.get("realtime_ns")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad(format!("no realtime_ns in {v}")))
    })?
    .ok_or_else(|| bad("this host's clock stepped back during every sample".into()))
}

fn dur_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// A result's measured window on the controller's clock, ns after `base`
/// (small numbers: an f64 of ns since the epoch keeps only 256 ns steps).
fn measured_window(h: &HostBench, base: u64) -> Option<(f64, f64)> {
    let r = h.result.as_ref()?;
    let start = (i128::from(h.start_ns?) - i128::from(base)) as f64;
    let cfg = r.get("config")?;
    let warm = f(cfg, "warmup_ms")? * 1e6;
    let dur = f(cfg, "duration_ms")? * 1e6;
    Some((start + warm, start + warm + dur))
}

/// Skew, lateness, the common window, each client's rate over it, the
/// aggregate and the CPU list, from the hosts' results.
pub fn summarize(rep: &mut Report) {
    let clients: Vec<usize> = (0..rep.hosts.len())
        .filter(|&i| rep.hosts[i].role == "client" && rep.hosts[i].outcome == "ok")
        .collect();
    let starts: Vec<u64> = clients
        .iter()
        .filter_map(|&i| rep.hosts[i].start_ns)
        .collect();
    if let (Some(lo), Some(hi)) = (starts.iter().min(), starts.iter().max()) {
        rep.skew_ns = Some(hi - lo);
    }
    let base = starts.iter().min().copied().unwrap_or(0);
    rep.max_late_ns = clients
        .iter()
        .filter_map(|&i| rep.hosts[i].late_ns)
        .map(i64::unsigned_abs)
        .max();
    if clients
        .iter()
        .any(|&i| rep.hosts[i].started_at_unix_ns.is_none())
    {
        rep.notes.push(
            "a client's result has no started_at_unix_ns (an older nettune): its start is unknown, the skew and common window leave it out".into(),
        );
    }
    let wins: Vec<(usize, (f64, f64))> = clients
        .iter()
        .filter_map(|&i| measured_window(&rep.hosts[i], base).map(|w| (i, w)))
        .collect();
    let cs = wins.iter().map(|(_, w)| w.0).fold(f64::MIN, f64::max);
    let ce = wins.iter().map(|(_, w)| w.1).fold(f64::MAX, f64::min);
    if wins.is_empty() || ce <= cs {
        if !wins.is_empty() {
            rep.notes
                .push("the clients' measured windows do not overlap: no aggregate".into());
        }
    } else {
        let len = ce - cs;
        rep.window = Some(Window {
            start_unix_ns: base.saturating_add(cs as u64),
            end_unix_ns: base.saturating_add(ce as u64),
            seconds: len / 1e9,
        });
        let mut sum = Rate {
            bits_per_sec: 0.0,
            per_sec: 0.0,
        };
        for (i, (ws, _)) in &wins {
            let h = &mut rep.hosts[*i];
            let mut r = Rate {
                bits_per_sec: 0.0,
                per_sec: 0.0,
            };
            let ivs = h
                .result
                .as_ref()
                .and_then(|v| v.get("intervals"))
                .and_then(Value::as_array);
            for iv in ivs.into_iter().flatten() {
                let (Some(a), Some(b)) = (f(iv, "start_s"), f(iv, "end_s")) else {
                    continue;
                };
                let (a, b) = (ws + a * 1e9, ws + b * 1e9);
                let over = (b.min(ce) - a.max(cs)).max(0.0);
                r.bits_per_sec += f(iv, "bits_per_sec").unwrap_or(0.0) * over / len;
                r.per_sec += f(iv, "per_sec").unwrap_or(0.0) * over / len;
            }
            sum.bits_per_sec += r.bits_per_sec;
            sum.per_sec += r.per_sec;
            h.window_rate = Some(r);
        }
        let unit = wins
            .first()
            .and_then(|(i, _)| rep.hosts[*i].result.as_ref())
            .and_then(|v| v.pointer("/results/0/unit"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let results: Vec<&Value> = wins
            .iter()
            .filter_map(|(i, _)| rep.hosts[*i].result.as_ref())
            .collect();
        let latency = merge_latency(&results);
        if latency.is_none()
            && results.iter().any(|v| {
                v.pointer("/results/0/latency")
                    .is_some_and(|l| !l.is_null())
            })
        {
            rep.notes.push("some client's result carries no latency histogram: no merged latency (see each host's own percentiles)".into());
        }
        rep.aggregate = Some(Aggregate {
            hosts: wins.len(),
            unit,
            bits_per_sec: sum.bits_per_sec,
            per_sec: sum.per_sec,
            latency,
        });
        rep.notes.push(
            "the aggregate rate sums each client's interval rates weighted by their overlap with the common window; the merged latency covers each client's whole measured window".into(),
        );
    }
    let mut server_cpu: Vec<(String, String, Value)> = Vec::new();
    for h in rep.hosts.iter().filter(|h| h.outcome == "ok") {
        let Some(r) = &h.result else { continue };
        if let Some(c) = r.pointer("/client/cpu") {
            rep.cpu.push(HostCpu {
                host: h.host.clone(),
                role: h.role,
                cpu: c.clone(),
            });
        }
        if h.role == "client" && !server_cpu.iter().any(|(s, _, _)| *s == h.server) {
            if let Some(c) = r.pointer("/server_side/cpu") {
                server_cpu.push((h.server.clone(), h.host.clone(), c.clone()));
            }
        }
    }
    for (server, via, c) in server_cpu {
        rep.notes.push(format!(
            "the per-CPU use of server {server} is the one reported with {via}'s result (its window; every client's window on the server overlaps it)"
        ));
        rep.cpu.push(HostCpu {
            host: server,
            role: "server",
            cpu: c,
        });
    }
    rep.failed = rep
        .servers
        .iter()
        .filter(|s| s.error.is_some())
        .map(|s| s.host.clone())
        .chain(
            rep.hosts
                .iter()
                .filter(|h| h.outcome != "ok")
                .map(|h| h.host.clone()),
        )
        .collect();
}

/// Add every result's first direction's latency histogram (`[value,
/// count]` pairs of the same bucket layout, as hdrhistogram's `add`) and
/// read the percentiles of the sum. `None` unless every result has one.
pub fn merge_latency(results: &[&Value]) -> Option<MergedLatency> {
    let mut buckets: std::collections::BTreeMap<u64, u64> = Default::default();
    let mut count = 0u64;
    let mut weighted_mean = 0.0;
    for r in results {
        let l = r.pointer("/results/0/latency").filter(|l| !l.is_null())?;
        let pairs = l.get("histogram")?.as_array()?;
        let mut n = 0u64;
        for p in pairs {
            let (Some(v), Some(c)) = (
                p.get(0).and_then(Value::as_u64),
                p.get(1).and_then(Value::as_u64),
            ) else {
                return None;
            };
            let e = buckets.entry(v).or_insert(0);
            *e = e.saturating_add(c);
            n = n.saturating_add(c);
        }
        count = count.saturating_add(n);
        weighted_mean += f(l, "mean_ns").unwrap_or(0.0) * n as f64;
    }
    if count == 0 || results.is_empty() {
        return None;
    }
    let at = |q: f64| -> u64 {
        let want = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut cum = 0u64;
        for (v, c) in &buckets {
            cum = cum.saturating_add(*c);
            if cum >= want {
                return *v;
            }
        }
        buckets.keys().next_back().copied().unwrap_or(0)
    };
    let min = results
        .iter()
        .filter_map(|r| {
            r.pointer("/results/0/latency/min_ns")
                .and_then(Value::as_u64)
        })
        .min()
        .unwrap_or_else(|| at(0.0));
    let max = results
        .iter()
        .filter_map(|r| {
            r.pointer("/results/0/latency/max_ns")
                .and_then(Value::as_u64)
        })
        .max()
        .unwrap_or_else(|| at(1.0));
    Some(MergedLatency {
        source: "merged histograms",
        count,
        min_ns: min,
        mean_ns: weighted_mean / count as f64,
        p50_ns: at(0.50),
        p90_ns: at(0.90),
        p99_ns: at(0.99),
        p999_ns: at(0.999),
        p9999_ns: at(0.9999),
        max_ns: max,
    })
}

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

fn rate_text(r: &Rate, unit: &str) -> String {
    format!(
        "{:.1} Mbit/s, {:.0} {}/s",
        r.bits_per_sec / 1e6,
        r.per_sec,
        if unit.is_empty() { "msgs" } else { unit }
    )
}

/// A probe's latency (its result's first direction), or nothing.
fn probe_text(h: &HostBench) -> String {
    let l = h
        .result
        .as_ref()
        .and_then(|v| v.pointer("/results/0/latency"))
        .filter(|l| !l.is_null());
    let us = |k: &str| {
        l.and_then(|l| l.get(k))
            .and_then(Value::as_u64)
            .map(|n| format!("{:.1}", n as f64 / 1e3))
            .unwrap_or_else(|| "-".into())
    };
    match l {
        Some(_) => format!(
            "latency p50 {} µs, p99 {}, max {}",
            us("p50_ns"),
            us("p99_ns"),
            us("max_ns")
        ),
        None => String::new(),
    }
}

/// The human table: one row per host, then skew, window and aggregate.
pub fn table(rep: &Report) -> String {
    let mut o = String::new();
    for sv in &rep.servers {
        let _ = writeln!(
            o,
            "server {}: {}",
            model::text::printable_capped(&sv.host, 64),
            match (&sv.listening, &sv.error) {
                (_, Some(e)) =>
                    format!("failed: {}", model::text::printable_capped(&e.message, 300)),
                (Some(a), None) => format!("listening on {a}"),
                (None, None) => "?".into(),
            }
        );
    }
    let unit = rep
        .aggregate
        .as_ref()
        .map(|a| a.unit.clone())
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "{:<16} {:<7} {:<7} {:>14} {:>12} {:>12}  WINDOW RATE / ERROR",
        "HOST", "ROLE", "OUTCOME", "CLOCK OFFSET", "± (RTT/2)", "START LATE"
    );
    for h in &rep.hosts {
        let off = h
            .clock
            .map(|c| ms(c.offset_ns as f64))
            .unwrap_or_else(|| "-".into());
        let unc = h
            .clock
            .map(|c| ms(c.uncertainty_ns as f64))
            .unwrap_or_else(|| "-".into());
        let late = h
            .late_ns
            .map(|l| ms(l as f64))
            .unwrap_or_else(|| "-".into());
        let last = match (&h.error, &h.window_rate) {
            (Some(e), _) => model::text::printable_capped(&e.message, 300),
            (None, Some(r)) => rate_text(r, &unit),
            (None, None) => probe_text(h),
        };
        let _ = writeln!(
            o,
            "{:<16} {:<7} {:<7} {:>14} {:>12} {:>12}  {}",
            model::text::printable_capped(&h.host, 16),
            h.role,
            h.outcome,
            off,
            unc,
            late,
            last
        );
    }
    if let Some(s) = rep.skew_ns {
        let _ = writeln!(
            o,
            "start skew: {} (latest minus earliest client start, controller clock); largest lateness {}",
            ms(s as f64),
            rep.max_late_ns.map(|l| ms(l as f64)).unwrap_or_else(|| "-".into())
        );
    }
    if let (Some(w), Some(a)) = (&rep.window, &rep.aggregate) {
        let _ = writeln!(
            o,
            "aggregate of {} client(s) over the common window of {:.3} s: {}",
            a.hosts,
            w.seconds,
            rate_text(
                &Rate {
                    bits_per_sec: a.bits_per_sec,
                    per_sec: a.per_sec
                },
                &a.unit
            )
        );
        if let Some(l) = &a.latency {
            let us = |n: u64| format!("{:.1}", n as f64 / 1e3);
            let _ = writeln!(
                o,
                "latency ({}, {} samples): p50 {} µs, p90 {}, p99 {}, p99.9 {}, max {}",
                l.source,
                l.count,
                us(l.p50_ns),
                us(l.p90_ns),
                us(l.p99_ns),
                us(l.p999_ns),
                us(l.max_ns)
            );
        }
    }
    for c in &rep.cpu {
        let cpus = c.cpu.get("cpus").and_then(Value::as_array);
        let busy: Vec<String> = cpus
            .into_iter()
            .flatten()
            .map(|u| {
                format!(
                    "cpu{} {:.0}%",
                    u.get("cpu").and_then(Value::as_u64).unwrap_or(0),
                    100.0 - f(u, "idle").unwrap_or(100.0)
                )
            })
            .collect();
        let _ = writeln!(o, "cpu {} ({}): {}", c.host, c.role, busy.join(", "));
    }
    let n = rep.hosts.len() + rep.servers.len();
    let _ = writeln!(
        o,
        "{n} host(s): {} ok, {} failed{}",
        n - rep.failed.len(),
        rep.failed.len(),
        if rep.failed.is_empty() {
            String::new()
        } else {
            format!(" ({})", rep.failed.join(", "))
        }
    );
    o
}

#[cfg(test)]
mod tests;
