//! A run's metrics from the bench JSON (`model::bench::result::BenchResult`).
//!
//! - `throughput` (stream tests): bit/s summed over directions;
//! - `packet_rate` (udp-stream): datagrams per second received, summed
//!   over directions;
//! - `transactions` (RR and CRR tests): per second, summed;
//! - `latency_p50`, `latency_p99`: µs, from the latency probe when one ran
//!   beside the load (`bench --probe`, read from the JSON's `probe` object),
//!   else from the run's own latency histogram (RR and CRR tests);
//! - `cpu_pct`: busy % (100 − idle) averaged over the receiving side's CPUs;
//! - `softirq_pct`: the highest per-CPU softirq % on the receiving side (the
//!   whole per-CPU list goes to [`RunRecord::cpus`]);
//! - `cpu_per_work`: nettune's own CPU-seconds on the receiving end (its
//!   process plus the host's interrupt time; the whole host's busy time in
//!   results of engines before that) per unit of the
//!   test's work (per GB for tcp-stream, per million datagrams for
//!   udp-stream, per 1000 transactions or connections otherwise; the unit
//!   is `model::metric::cpu_work_unit`), from the bench's service demand;
//!   none without work;
//! - `retransmits`: segments, from `tcp_info`, summed;
//! - `loss_pct`: lost datagrams % (UDP), the worst direction;
//! - `irq_rate`: device interrupts per second on the receiving side (the
//!   numbered rows of `/proc/interrupts`, all CPUs, over the measured
//!   window: `cpu.interrupts.per_s` of the bench JSON); none from an
//!   engine that did not read them.
//!
//! The receiving side is the server, or the client with `--reverse`.

use std::collections::BTreeMap;

use model::bench::config::{Direction, TestKind};
use model::bench::result::{BenchResult, ServiceDemand, SideReport, ThreadLoad};
use model::experiment::Metric;
use model::results::{CpuPoint, IntervalPoint, ProbeResult, RunRecord};
use thiserror::Error;

/// Most points kept of a latency CDF.
const MAX_CDF_POINTS: usize = 200;
/// Most intervals kept of a run.
const MAX_INTERVALS: usize = 100_000;

/// The bench output could not be read.
#[derive(Debug, Error)]
pub enum MetricsError {
    /// Not the bench JSON shape.
    #[error("bench JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The receiving side's report.
fn receiver(b: &BenchResult) -> &SideReport {
    match b.config.direction {
        Direction::Reverse => &b.client,
        _ => &b.server_side,
    }
}

/// The receiving side's service demand.
fn receiver_demand(b: &BenchResult) -> &ServiceDemand {
    match b.config.direction {
        Direction::Reverse => &b.client_service_demand,
        _ => &b.server_service_demand,
    }
}

/// [`record`] of bench JSON text (a results directory's raw run file).
pub fn record_from_json(text: &str, wanted: &[Metric]) -> Result<RunRecord, MetricsError> {
    let b: BenchResult = serde_json::from_str(text)?;
    Ok(record(&b, wanted))
}

/// Every metric a bench result yields (only the ones in `wanted` go to
/// `values`; intervals, CPUs, the CDF and the probe's latencies always): the
/// runner's entry point, on the result its executor returned.
pub fn record(b: &BenchResult, wanted: &[Metric]) -> RunRecord {
    let mut rec = record_from_bench(b, wanted);
    let probe = serde_json::json!({ "probe": b.probe });
    if let Some(p) = probe_of(&probe) {
        for (m, val) in [
            (Metric::LatencyP50, p.0.p50_us),
            (Metric::LatencyP99, p.0.p99_us),
        ] {
            if wanted.contains(&m) {
                rec.values.insert(m.key().to_string(), val);
            }
        }
        if rec.latency_cdf.is_empty() {
            rec.latency_cdf = p.1;
        }
        rec.probe = Some(p.0);
    }
    rec
}

/// The probe's result and CDF from bench JSON, when a probe answered.
fn probe_of(v: &serde_json::Value) -> Option<(ProbeResult, Vec<[f64; 2]>)> {
    let p = v.get("probe")?;
    let num = |k: &str| p.get(k).and_then(serde_json::Value::as_f64);
    let count = p.get("answered").and_then(serde_json::Value::as_u64)?;
    if count == 0 {
        return None;
    }
    let (p50, p99) = (num("p50_us")?, num("p99_us")?);
    if !(p50.is_finite() && p99.is_finite()) {
        return None;
    }
    let hist: Vec<[u64; 2]> = p
        .get("histogram")
        .and_then(|h| serde_json::from_value(h.clone()).ok())
        .unwrap_or_default();
    let cdf = cdf_of(&hist, 1.0);
    Some((
        ProbeResult {
            kind: p
                .get("kind")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
                .chars()
                .take(8)
                .collect(),
            count,
            lost: p
                .get("lost")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0),
            p50_us: p50,
            p99_us: p99,
        },
        cdf,
    ))
}

/// [`record`] without the probe's latencies.
pub fn record_from_bench(b: &BenchResult, wanted: &[Metric]) -> RunRecord {
    let all = extract(b);
    let values = all
        .into_iter()
        .filter(|(m, _)| wanted.contains(m))
        .map(|(m, v)| (m.key().to_string(), v))
        .collect();
    let side = receiver(b);
    let cpus = side
        .cpu
        .cpus
        .iter()
        .map(|c| CpuPoint {
            cpu: c.cpu,
            usr: c.usr,
            sys: c.sys,
            irq: c.irq,
            softirq: c.softirq,
            idle: c.idle,
        })
        .collect();
    RunRecord {
        workload: String::new(),
        repeat: 0,
        warmup: false,
        start_time: b.start_time.clone(),
        values,
        intervals: intervals(b),
        cpus,
        softirq_series: Vec::new(),
        latency_cdf: latency_cdf(b),
        probe: None,
        raw: None,
        limited_by: limited_by(b),
        others: others(b),
        drops: Vec::new(),
    }
}

/// What else used the machine during the run, on the busier end: other
/// processes' CPU-seconds per second and the mean steal % over its CPUs.
/// `None` when neither end reports it (an older engine).
fn others(b: &BenchResult) -> Option<model::busy::OthersLoad> {
    [&b.client, &b.server_side]
        .into_iter()
        .filter_map(|side| side.cpu.others_load())
        .max_by(|a, b| (a.cpus + a.steal_pct / 100.0).total_cmp(&(b.cpus + b.steal_pct / 100.0)))
}

/// What limited the run's first direction, in words, from the bench's
/// busiest threads (`RunRecord::limited_by`).
/// Results of an engine without the `threads` field give the same answer
/// from their workers' CPU times.
fn limited_by(b: &BenchResult) -> Option<String> {
    let d = b.results.first()?;
    let t = d
        .threads
        .clone()
        .or_else(|| ThreadLoad::of(d.dir?, &b.client, &b.server_side, d.seconds))?;
    Some(t.verdict().to_string())
}

/// Every metric this result yields.
pub fn extract(b: &BenchResult) -> BTreeMap<Metric, f64> {
    let mut out = BTreeMap::new();
    let test = b.config.test;
    let finite = |v: f64| v.is_finite().then_some(v);
    if test.is_stream() {
        let t: f64 = b.results.iter().map(|r| r.bits_per_sec).sum();
        if let Some(t) = finite(t) {
            out.insert(Metric::Throughput, t);
        }
    }
    if test == TestKind::UdpStream {
        let p: f64 = b.results.iter().map(|r| r.per_sec).sum();
        if let Some(p) = finite(p) {
            out.insert(Metric::PacketRate, p);
        }
    }
    if matches!(test, TestKind::TcpRr | TestKind::UdpRr | TestKind::TcpCrr) {
        let t: f64 = b.results.iter().map(|r| r.per_sec).sum();
        if let Some(t) = finite(t) {
            out.insert(Metric::Transactions, t);
        }
    }
    if let Some(lat) = b
        .results
        .iter()
        .filter_map(|r| r.latency.as_ref())
        .find(|l| l.count > 0)
    {
        out.insert(Metric::LatencyP50, lat.p50_ns.0 as f64 / 1000.0);
        out.insert(Metric::LatencyP99, lat.p99_ns.0 as f64 / 1000.0);
    }
    let side = receiver(b);
    let cpus = &side.cpu.cpus;
    if !cpus.is_empty() {
        let busy: f64 = cpus.iter().map(|c| (100.0 - c.idle).max(0.0)).sum();
        if let Some(v) = finite(busy / cpus.len() as f64) {
            out.insert(Metric::CpuPct, v);
        }
        let max = cpus.iter().map(|c| c.softirq).fold(f64::NAN, f64::max);
        if let Some(v) = finite(max) {
            out.insert(Metric::SoftirqPct, v);
        }
    }
    if let Some(v) = side.cpu.interrupts.as_ref().and_then(|i| i.metric()) {
        out.insert(Metric::IrqRate, v);
    }
    if let Some(v) = receiver_demand(b).own_or_host(test) {
        out.insert(Metric::CpuPerWork, v);
    }
    if test != TestKind::UdpStream && test != TestKind::UdpRr {
        let r: u64 = b
            .results
            .iter()
            .fold(0u64, |acc, r| acc.saturating_add(r.retransmits));
        out.insert(Metric::Retransmits, r as f64);
    }
    if let Some(l) = b
        .results
        .iter()
        .filter_map(|r| r.udp.as_ref())
        .map(|u| u.loss_pct)
        .filter(|v| v.is_finite())
        .reduce(f64::max)
    {
        out.insert(Metric::LossPct, l);
    }
    out
}

/// Per-interval throughput and rate, summed over directions.
fn intervals(b: &BenchResult) -> Vec<IntervalPoint> {
    let mut by_index: BTreeMap<u64, IntervalPoint> = BTreeMap::new();
    for i in b.intervals.iter().take(MAX_INTERVALS) {
        let p = by_index.entry(i.index).or_insert(IntervalPoint {
            t_s: i.end_s,
            bits_per_sec: 0.0,
            per_sec: 0.0,
        });
        p.bits_per_sec += i.bits_per_sec;
        p.per_sec += i.per_sec;
    }
    by_index.into_values().collect()
}

/// The latency histogram as `[µs, cumulative fraction]`.
fn latency_cdf(b: &BenchResult) -> Vec<[f64; 2]> {
    let Some(lat) = b
        .results
        .iter()
        .filter_map(|r| r.latency.as_ref())
        .find(|l| !l.histogram.is_empty())
    else {
        return Vec::new();
    };
    cdf_of(&lat.histogram, 1000.0)
}

/// `[value / div, cumulative fraction]` of `[value, count]` buckets, thinned
/// to at most [`MAX_CDF_POINTS`] points (the last always kept).
fn cdf_of(hist: &[[u64; 2]], div: f64) -> Vec<[f64; 2]> {
    let total: u64 = hist.iter().fold(0u64, |a, [_, c]| a.saturating_add(*c));
    if total == 0 {
        return Vec::new();
    }
    let mut acc = 0u64;
    let pts: Vec<[f64; 2]> = hist
        .iter()
        .map(|[v, c]| {
            acc = acc.saturating_add(*c);
            [*v as f64 / div, acc as f64 / total as f64]
        })
        .collect();
    let step = pts.len().div_ceil(MAX_CDF_POINTS).max(1);
    let last = pts.len() - 1;
    pts.iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || *i == last)
        .map(|(_, p)| *p)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const RR: &str = include_str!("../tests/data/bench-tcp-rr-lo.json");

    fn irq(per_s: f64) -> serde_json::Value {
        serde_json::json!({"count": 10, "per_s": per_s,
            "per_cpu": [{"cpu": 0, "count": 10, "per_s": per_s}], "ifaces": []})
    }

    /// `irq_rate` is the receiving side's device interrupts per second:
    /// the server's, the client's with `--reverse`; none from a result
    /// without them (an older engine) or with a nonsense rate.
    #[test]
    fn irq_rate_is_the_receiving_sides() {
        let mut v: serde_json::Value = serde_json::from_str(RR).unwrap();
        let want = [Metric::IrqRate];
        let rate = |v: &serde_json::Value| {
            record_from_json(&v.to_string(), &want)
                .unwrap()
                .values
                .get("irq_rate")
                .copied()
        };
        assert_eq!(rate(&v), None);
        v["server_side"]["cpu"]["interrupts"] = irq(2500.0);
        v["client"]["cpu"]["interrupts"] = irq(40.0);
        assert_eq!(rate(&v), Some(2500.0));
        v["config"]["direction"] = "reverse".into();
        assert_eq!(rate(&v), Some(40.0));
        v["client"]["cpu"]["interrupts"] = irq(-1.0);
        assert_eq!(rate(&v), None);
        // Not asked for: not recorded.
        v["config"]["direction"] = "forward".into();
        let r = record_from_json(&v.to_string(), &[Metric::SoftirqPct]).unwrap();
        assert!(!r.values.contains_key("irq_rate"));
    }
}
