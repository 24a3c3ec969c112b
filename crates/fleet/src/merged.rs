//! N clients' bench results of one synchronized run (`fleet bench`'s start,
//! one server, one test) merged into one [`BenchResult`]: what `nettune
//! experiment` on a fleet records as a run when every client loads the
//! server at once (docs/fleet.md, "Experiments on a fleet").
//!
//! Per direction the counts and rates are summed (bytes, datagrams,
//! transactions, bit/s, per second, retransmits, losses; UDP loss % again
//! from the summed counts), the latency is read from the clients'
//! histograms added bucket by bucket ([`crate::bench::merge_latency`]),
//! intervals are summed per index. The server is one host: its side (facts,
//! per-CPU use) is the one reported with the first client's run, and its
//! service demand is recomputed from that CPU over every client's work. The
//! client side is the first client's alone. The notes say all of this, and
//! each client's own share. Pure: no I/O.

use crate::bench::merge_latency;
use model::bench::config::FlowDir;
use model::bench::result::{
    service_demand, BenchResult, DirSummary, IntervalReport, Latency, UdpSummary,
};
use model::{Bytes, Nanos};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use thiserror::Error;

/// Most notes taken from each client's own result.
const MAX_NOTES_PER_CLIENT: usize = 8;

/// One client's part of the run.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    /// Inventory name.
    pub host: &'a str,
    /// Its `nettune bench --json` document.
    pub result: &'a Value,
}

/// Why the clients' results are not one run.
#[derive(Debug, Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no client result to merge")]
    Empty,
    /// A client's document is not bench JSON.
    #[error("{host}'s bench JSON: {source}")]
    Json {
        /// The client.
        host: String,
        /// Why.
        source: serde_json::Error,
    },
    /// Two clients ran different tests.
    #[error("{host} ran {got}, {first} ran {want}: not one test, not merged")]
    Mismatch {
        /// The first client.
        first: String,
        /// What it ran.
        want: String,
        /// The client that differs.
        host: String,
        /// What that one ran.
        got: String,
    },
    /// A sum does not fit its counter.
    #[error("{what}: the sum over the clients overflows")]
    Overflow {
        /// The counter.
        what: String,
    },
}

/// What a result ran, for comparing clients: the test, its direction and
/// the directions it reports, in order.
fn shape(b: &BenchResult) -> String {
    let dirs: Vec<String> = b
        .results
        .iter()
        .map(|r| r.dir.map_or_else(|| "-".into(), dir_name))
        .collect();
    format!(
        "{} {} [{}]",
        b.config.test,
        name_of(b.config.direction),
        dirs.join(", ")
    )
}

fn dir_name(d: FlowDir) -> String {
    name_of(d)
}

/// A unit enum's JSON name (`forward`, `bidir`).
fn name_of<T: serde::Serialize + std::fmt::Debug>(v: T) -> String {
    serde_json::to_value(&v)
        .ok()
        .and_then(|j| j.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{v:?}"))
}

fn add(a: u64, b: u64, what: &str) -> Result<u64, MergeError> {
    a.checked_add(b)
        .ok_or_else(|| MergeError::Overflow { what: what.into() })
}

/// Merge `parts` (the first one's client side is kept) of a run whose
/// start skew was `skew_ns` (`None`: unknown) into one result.
pub fn merge(parts: &[Part<'_>], skew_ns: Option<u64>) -> Result<BenchResult, MergeError> {
    let parsed: Vec<BenchResult> = parts
        .iter()
        .map(|p| {
            serde_json::from_value::<BenchResult>(p.result.clone()).map_err(|source| {
                MergeError::Json {
                    host: p.host.to_string(),
                    source,
                }
            })
        })
        .collect::<Result<_, _>>()?;
    let (Some(first), Some(first_part)) = (parsed.first(), parts.first()) else {
        return Err(MergeError::Empty);
    };
    let want = shape(first);
    for (b, p) in parsed.iter().zip(parts).skip(1) {
        let got = shape(b);
        if got != want {
            return Err(MergeError::Mismatch {
                first: first_part.host.to_string(),
                want,
                host: p.host.to_string(),
                got,
            });
        }
    }
    let mut out = first.clone();
    let mut notes: Vec<String> = Vec::new();
    for (i, dir) in out.results.iter_mut().enumerate() {
        merge_dir(dir, i, &parsed, parts, &mut notes)?;
    }
    out.intervals = merge_intervals(&parsed)?;
    out.interrupted = parsed.iter().any(|b| b.interrupted);
    out.server_side.rejected_connections = parsed.iter().try_fold(0u64, |a, b| {
        add(
            a,
            b.server_side.rejected_connections,
            "server_side.rejected_connections",
        )
    })?;
    let bytes = out
        .results
        .iter()
        .try_fold(0u64, |a, r| add(a, r.bytes.0, "bytes"))?;
    let msgs = out
        .results
        .iter()
        .try_fold(0u64, |a, r| add(a, r.msgs, "msgs"))?;
    out.server_service_demand = service_demand(
        out.config.test,
        out.server_side.cpu.host_busy_us,
        bytes,
        msgs,
    );
    let probers: Vec<usize> = (0..parsed.len())
        .filter(|i| parsed.get(*i).is_some_and(|b| b.probe.is_some()))
        .collect();
    out.probe = probers
        .first()
        .and_then(|i| parsed.get(*i))
        .and_then(|b| b.probe.clone());
    if let (true, Some(p)) = (
        probers.len() > 1,
        probers.first().and_then(|i| parts.get(*i)),
    ) {
        notes.push(format!(
            "{} clients ran a latency probe: the probe is {}'s",
            probers.len(),
            p.host
        ));
    }
    let n = parts.len();
    let names: Vec<&str> = parts.iter().map(|p| p.host).collect();
    let mut head = vec![
        format!(
            "{n} clients, synchronized start, skew {}: {} loaded the server at once; the results sum their runs (counts, rates, retransmits, losses; latency from their histograms added)",
            skew_ns.map_or_else(|| "unknown".into(), |s| format!("{:.3} ms", s as f64 / 1e6)),
            names.join(", ")
        ),
        format!(
            "the server side (facts, per-CPU use) is the one reported with {}'s run (the server is one host; every client's window on it overlaps); the server's service demand is that CPU over all {n} clients' work",
            first_part.host
        ),
        format!(
            "the client side (facts, per-CPU use, client service demand) is {}'s alone",
            first_part.host
        ),
    ];
    for (b, p) in parsed.iter().zip(parts) {
        head.push(share(p.host, b));
    }
    head.extend(notes);
    for (b, p) in parsed.iter().zip(parts) {
        for note in b.notes.iter().take(MAX_NOTES_PER_CLIENT) {
            let line = format!("{}: {note}", p.host);
            if !head.contains(&line) {
                head.push(line);
            }
        }
    }
    out.notes = head;
    Ok(out)
}

/// One client's share, as a note: `client HOST: N UNIT in S s (R/s, M Mbit/s)`
/// per direction, `;`-separated.
fn share(host: &str, b: &BenchResult) -> String {
    let dirs: Vec<String> = b
        .results
        .iter()
        .map(|r| {
            format!(
                "{} {} in {:.3} s ({:.1}/s, {:.3} Mbit/s)",
                r.msgs,
                if r.unit.is_empty() { "msgs" } else { &r.unit },
                r.seconds,
                r.per_sec,
                r.bits_per_sec / 1e6
            )
        })
        .collect();
    format!("client {host}: {}", dirs.join("; "))
}

/// Direction `i` of every client summed into `dir` (the first client's).
fn merge_dir(
    dir: &mut DirSummary,
    i: usize,
    parsed: &[BenchResult],
    parts: &[Part<'_>],
    notes: &mut Vec<String>,
) -> Result<(), MergeError> {
    let all: Vec<&DirSummary> = parsed.iter().filter_map(|b| b.results.get(i)).collect();
    let what = |f: &str| format!("results[{i}].{f}");
    let sum = |f: &dyn Fn(&DirSummary) -> u64, name: &str| {
        all.iter().try_fold(0u64, |a, d| add(a, f(d), &what(name)))
    };
    dir.bytes = Bytes(sum(&|d| d.bytes.0, "bytes")?);
    dir.msgs = sum(&|d| d.msgs, "msgs")?;
    dir.retransmits = sum(&|d| d.retransmits, "retransmits")?;
    dir.lost = sum(&|d| d.lost, "lost")?;
    dir.errors = sum(&|d| d.errors, "errors")?;
    dir.bits_per_sec = all.iter().map(|d| d.bits_per_sec).sum();
    dir.per_sec = all.iter().map(|d| d.per_sec).sum();
    dir.seconds = all
        .iter()
        .map(|d| d.seconds)
        .filter(|s| s.is_finite())
        .fold(0.0, f64::max);
    dir.tcp_info = all
        .iter()
        .flat_map(|d| d.tcp_info.iter().cloned())
        .collect();
    dir.udp = merge_udp(&all, &what)?;
    if dir.kernel_check.take().is_some() {
        notes.push(format!(
            "results[{i}]: no kernel cross-check: the server's UDP counters are the host's, one client's test does not bound the others'"
        ));
    }
    let with_latency = all.iter().filter(|d| d.latency.is_some()).count();
    dir.latency = None;
    if with_latency > 0 {
        let views: Vec<Value> = parts
            .iter()
            .map(|p| json!({ "results": [p.result.pointer(&format!("/results/{i}")).cloned().unwrap_or(Value::Null)] }))
            .collect();
        let refs: Vec<&Value> = views.iter().collect();
        match (with_latency == all.len(), merge_latency(&refs)) {
            (true, Some(m)) => {
                let mut buckets: BTreeMap<u64, u64> = BTreeMap::new();
                for l in all.iter().filter_map(|d| d.latency.as_ref()) {
                    for [v, c] in &l.histogram {
                        let e = buckets.entry(*v).or_insert(0);
                        *e = add(*e, *c, &what("latency.histogram"))?;
                    }
                }
                dir.latency = Some(Latency {
                    count: m.count,
                    min_ns: Nanos(m.min_ns),
                    mean_ns: m.mean_ns,
                    p50_ns: Nanos(m.p50_ns),
                    p90_ns: Nanos(m.p90_ns),
                    p99_ns: Nanos(m.p99_ns),
                    p999_ns: Nanos(m.p999_ns),
                    p9999_ns: Nanos(m.p9999_ns),
                    max_ns: Nanos(m.max_ns),
                    histogram: buckets.into_iter().map(|(v, c)| [v, c]).collect(),
                });
            }
            _ => notes.push(format!(
                "results[{i}]: some client's result carries no latency histogram: no merged latency"
            )),
        }
    }
    Ok(())
}

/// The clients' UDP summaries summed, loss % from the sums; `None` when no
/// client has one.
fn merge_udp(
    all: &[&DirSummary],
    what: &dyn Fn(&str) -> String,
) -> Result<Option<UdpSummary>, MergeError> {
    let mut out: Option<UdpSummary> = None;
    for u in all.iter().filter_map(|d| d.udp.as_ref()) {
        let o = out.get_or_insert_with(UdpSummary::default);
        o.sent = add(o.sent, u.sent, &what("udp.sent"))?;
        o.received = add(o.received, u.received, &what("udp.received"))?;
        o.lost = add(o.lost, u.lost, &what("udp.lost"))?;
        o.out_of_order = add(o.out_of_order, u.out_of_order, &what("udp.out_of_order"))?;
        o.duplicates = add(o.duplicates, u.duplicates, &what("udp.duplicates"))?;
        o.foreign = add(o.foreign, u.foreign, &what("udp.foreign"))?;
    }
    if let Some(o) = out.as_mut() {
        o.loss_pct = if o.sent == 0 {
            0.0
        } else {
            o.lost as f64 * 100.0 / o.sent as f64
        };
    }
    Ok(out)
}

/// Every client's intervals summed per direction and index (in the order
/// of index, then the first appearance of the direction). The timing and
/// per-CPU use are the first client's; per-interval percentiles do not add
/// up and are left out.
fn merge_intervals(parsed: &[BenchResult]) -> Result<Vec<IntervalReport>, MergeError> {
    let mut dirs: Vec<Option<FlowDir>> = Vec::new();
    let mut by: BTreeMap<(u64, usize), IntervalReport> = BTreeMap::new();
    for b in parsed {
        for iv in &b.intervals {
            let d = match dirs.iter().position(|d| *d == iv.dir) {
                Some(d) => d,
                None => {
                    dirs.push(iv.dir);
                    dirs.len() - 1
                }
            };
            match by.get_mut(&(iv.index, d)) {
                None => {
                    let mut first = iv.clone();
                    first.p50_ns = None;
                    first.p99_ns = None;
                    by.insert((iv.index, d), first);
                }
                Some(m) => {
                    let c = &iv.counters;
                    let over = |f: &str| MergeError::Overflow {
                        what: format!("intervals[{}].{f}", iv.index),
                    };
                    let mc = &mut m.counters;
                    for (a, b, f) in [
                        (&mut mc.bytes, c.bytes, "bytes"),
                        (&mut mc.msgs, c.msgs, "msgs"),
                        (&mut mc.expected, c.expected, "expected"),
                        (&mut mc.out_of_order, c.out_of_order, "out_of_order"),
                        (&mut mc.duplicates, c.duplicates, "duplicates"),
                        (&mut mc.foreign, c.foreign, "foreign"),
                        (&mut mc.lost, c.lost, "lost"),
                        (&mut mc.errors, c.errors, "errors"),
                        (&mut mc.reads, c.reads, "reads"),
                    ] {
                        *a = a.checked_add(b).ok_or_else(|| over(f))?;
                    }
                    m.lost_estimate = m
                        .lost_estimate
                        .checked_add(iv.lost_estimate)
                        .ok_or_else(|| over("lost_estimate"))?;
                    m.bits_per_sec += iv.bits_per_sec;
                    m.per_sec += iv.per_sec;
                }
            }
        }
    }
    Ok(by.into_values().collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use model::experiment::Metric;

    fn data(name: &str) -> Value {
        let p = format!(
            "{}/../runner/tests/data/bench-{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    }

    fn two(v: &Value) -> [Part<'_>; 2] {
        [
            Part {
                host: "cli1",
                result: v,
            },
            Part {
                host: "cli2",
                result: v,
            },
        ]
    }

    /// The merged document as the experiment runner reads it.
    fn record(b: &BenchResult, wanted: &[Metric]) -> model::results::RunRecord {
        let text = serde_json::to_string(b).unwrap();
        runner::metrics::record_from_json(&text, wanted).unwrap()
    }

    #[test]
    fn two_copies_of_a_tcp_rr_run_double_its_sums_and_keep_its_latency() {
        let v = data("tcp-rr-lo");
        let one: BenchResult = serde_json::from_value(v.clone()).unwrap();
        let m = merge(&two(&v), Some(412_000)).unwrap();
        let (a, r) = (&one.results[0], &m.results[0]);
        assert_eq!(r.msgs, 2 * a.msgs);
        assert_eq!(r.bytes.0, 2 * a.bytes.0);
        assert_eq!(r.per_sec, 2.0 * a.per_sec);
        assert_eq!(r.bits_per_sec, 2.0 * a.bits_per_sec);
        assert_eq!(r.tcp_info.len(), 2 * a.tcp_info.len());
        // The same histogram twice: the same percentiles, twice the samples.
        let (la, lm) = (a.latency.as_ref().unwrap(), r.latency.as_ref().unwrap());
        assert_eq!(lm.count, 2 * la.count);
        assert_eq!(lm.histogram.len(), la.histogram.len());
        assert_eq!(lm.histogram[0][1], 2 * la.histogram[0][1]);
        assert_eq!((lm.min_ns, lm.max_ns), (la.min_ns, la.max_ns));
        assert!((lm.mean_ns - la.mean_ns).abs() < 1e-6);
        // Percentiles from the bucket sum, as fleet bench's aggregate.
        let fb = merge_latency(&[&v]).unwrap();
        assert_eq!((lm.p50_ns.0, lm.p99_ns.0), (fb.p50_ns, fb.p99_ns));
        // Intervals summed per index.
        assert_eq!(m.intervals.len(), one.intervals.len());
        for (x, y) in m.intervals.iter().zip(&one.intervals) {
            assert_eq!(x.counters.msgs, 2 * y.counters.msgs);
            assert_eq!(x.per_sec, 2.0 * y.per_sec);
            assert_eq!((x.index, x.p50_ns), (y.index, None));
        }
        // The server's CPU over twice the work: half the demand.
        let (sa, sm) = (
            one.server_service_demand.us_per_transaction.unwrap(),
            m.server_service_demand.us_per_transaction.unwrap(),
        );
        assert!((sm * 2.0 - sa).abs() < 1e-9, "{sm} {sa}");
        assert_eq!(m.client_service_demand, one.client_service_demand);
        assert_eq!(m.server_side.cpu, one.server_side.cpu);
        let notes = m.notes.join("\n");
        assert!(
            notes.contains("2 clients, synchronized start, skew 0.412 ms"),
            "{notes}"
        );
        assert!(
            notes.contains(&format!("client cli2: {} transactions", a.msgs)),
            "{notes}"
        );
        assert!(notes.contains("is cli1's alone"), "{notes}");
        assert!(
            notes.contains("cli2: client and server run on one host"),
            "{notes}"
        );
        // The runner reads it: twice the transactions, half the CPU per work.
        let wanted = [Metric::Transactions, Metric::LatencyP99, Metric::CpuPerWork];
        let (ra, rm) = (record(&one, &wanted), record(&m, &wanted));
        let t = |r: &model::results::RunRecord, k: Metric| r.values[k.key()];
        assert_eq!(
            t(&rm, Metric::Transactions),
            2.0 * t(&ra, Metric::Transactions)
        );
        assert!((2.0 * t(&rm, Metric::CpuPerWork) - t(&ra, Metric::CpuPerWork)).abs() < 1e-9);
        assert!(t(&rm, Metric::LatencyP99) > 0.0);
        assert_eq!(rm.intervals[0].per_sec, 2.0 * ra.intervals[0].per_sec);
    }

    #[test]
    fn stream_runs_with_and_without_a_probe_add_up() {
        let (s, p) = (data("tcp-stream-lo"), data("tcp-stream-probe-lo"));
        let (a, b): (BenchResult, BenchResult) = (
            serde_json::from_value(s.clone()).unwrap(),
            serde_json::from_value(p.clone()).unwrap(),
        );
        let parts = [
            Part {
                host: "a",
                result: &s,
            },
            Part {
                host: "b",
                result: &p,
            },
            Part {
                host: "c",
                result: &s,
            },
        ];
        let m = merge(&parts, None).unwrap();
        let r = &m.results[0];
        assert_eq!(r.bytes.0, 2 * a.results[0].bytes.0 + b.results[0].bytes.0);
        assert_eq!(
            r.retransmits,
            2 * a.results[0].retransmits + b.results[0].retransmits
        );
        let want = 2.0 * a.results[0].bits_per_sec + b.results[0].bits_per_sec;
        assert!((r.bits_per_sec - want).abs() < 1e-3);
        assert!(m.notes[0].starts_with("3 clients, synchronized start, skew unknown"));
        // Only b ran a probe: it is kept.
        assert!(b.probe.is_some());
        assert_eq!(m.probe, b.probe);
        let rec = record(&m, &[Metric::Throughput, Metric::Retransmits]);
        assert!((rec.values["throughput"] - want).abs() < 1e-3);
    }

    #[test]
    fn udp_loss_is_summed_as_counts_then_a_percentage() {
        let mut v = data("tcp-stream-lo");
        v["results"][0]["udp"] = json!({"sent": 1000, "received": 900, "lost": 100,
            "loss_pct": 10.0, "out_of_order": 1, "duplicates": 0, "foreign": 0});
        let mut w = v.clone();
        w["results"][0]["udp"] = json!({"sent": 3000, "received": 3000, "lost": 0,
            "loss_pct": 0.0, "out_of_order": 0, "duplicates": 2, "foreign": 0});
        let parts = [
            Part {
                host: "a",
                result: &v,
            },
            Part {
                host: "b",
                result: &w,
            },
        ];
        let u = merge(&parts, Some(0)).unwrap().results[0].udp.unwrap();
        assert_eq!((u.sent, u.received, u.lost), (4000, 3900, 100));
        assert_eq!((u.out_of_order, u.duplicates), (1, 2));
        assert!((u.loss_pct - 2.5).abs() < 1e-12);
    }

    #[test]
    fn different_tests_bad_documents_and_overflows_are_refused_naming_them() {
        let (rr, st) = (data("tcp-rr-lo"), data("tcp-stream-lo"));
        let e = merge(
            &[
                Part {
                    host: "cli1",
                    result: &rr,
                },
                Part {
                    host: "cli2",
                    result: &st,
                },
            ],
            None,
        )
        .unwrap_err();
        let t = e.to_string();
        assert!(
            t.contains("cli2 ran tcp-stream") && t.contains("cli1 ran tcp-rr"),
            "{t}"
        );
        let junk = json!({"results": "no"});
        let e = merge(
            &[Part {
                host: "cli3",
                result: &junk,
            }],
            None,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("cli3's bench JSON: "), "{e}");
        assert!(matches!(merge(&[], None), Err(MergeError::Empty)));
        let mut big = rr.clone();
        big["results"][0]["msgs"] = json!(u64::MAX);
        let e = merge(&two(&big), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "results[0].msgs: the sum over the clients overflows"
        );
        // A client without a latency histogram: no merged latency, a note.
        let mut bare = rr.clone();
        bare["results"][0]["latency"] = Value::Null;
        let m = merge(
            &[
                Part {
                    host: "a",
                    result: &rr,
                },
                Part {
                    host: "b",
                    result: &bare,
                },
            ],
            None,
        )
        .unwrap();
        assert!(m.results[0].latency.is_none());
        assert!(m.notes.iter().any(|n| n.contains("no merged latency")));
    }
}
