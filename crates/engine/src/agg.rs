//! Merge the measuring workers' interval snapshots into [`IntervalReport`]s.

use crate::config::{FlowDir, TestConfig};
use crate::report::{new_histogram, Counters, IntervalReport};
use hdrhistogram::Histogram;
use model::Nanos;
use std::collections::BTreeMap;

#[derive(Debug)]
struct Pending {
    n: usize,
    c: Counters,
    hist: Option<Box<Histogram<u64>>>,
}

/// Collects per-worker interval pieces; an interval is complete when every
/// measuring worker of its direction has reported it.
#[derive(Debug)]
pub struct Aggregator {
    expect: Vec<(FlowDir, usize)>,
    pending: BTreeMap<(u8, u64), Pending>,
    interval_s: f64,
    duration_s: f64,
}

fn key(d: FlowDir) -> u8 {
    match d {
        FlowDir::Forward => 0,
        FlowDir::Reverse => 1,
    }
}

impl Aggregator {
    /// `expect`: how many measuring workers each direction has on this side.
    pub fn new(cfg: &TestConfig, expect: Vec<(FlowDir, usize)>) -> Aggregator {
        Aggregator {
            expect,
            pending: BTreeMap::new(),
            interval_s: cfg.interval_ms as f64 / 1000.0,
            duration_s: cfg.duration_ms as f64 / 1000.0,
        }
    }

    /// Add one worker's piece; returns the interval when it completes.
    pub fn add(
        &mut self,
        dir: FlowDir,
        index: u64,
        c: Counters,
        hist: Option<Box<Histogram<u64>>>,
    ) -> Option<IntervalReport> {
        let want = self
            .expect
            .iter()
            .find(|(d, _)| *d == dir)
            .map(|(_, n)| *n)?;
        let e = self.pending.entry((key(dir), index)).or_insert(Pending {
            n: 0,
            c: Counters::default(),
            hist: None,
        });
        e.n += 1;
        e.c.add(&c);
        if let Some(h) = hist {
            let merged = e.hist.get_or_insert_with(|| Box::new(new_histogram()));
            let _ = merged.add(&*h);
        }
        if e.n < want {
            return None;
        }
        let p = self.pending.remove(&(key(dir), index))?;
        let start_s = index as f64 * self.interval_s;
        let end_s = ((index + 1) as f64 * self.interval_s).min(self.duration_s);
        let len = (end_s - start_s).max(1e-9);
        let (p50, p99) = match &p.hist {
            Some(h) if !h.is_empty() => (
                Some(h.value_at_quantile(0.5)),
                Some(h.value_at_quantile(0.99)),
            ),
            _ => (None, None),
        };
        Some(IntervalReport {
            dir: Some(dir),
            index,
            start_s,
            end_s,
            counters: p.c,
            bits_per_sec: p.c.bytes as f64 * 8.0 / len,
            per_sec: p.c.msgs as f64 / len,
            lost_estimate: if p.c.expected > 0 {
                p.c.expected as i64 - p.c.msgs as i64
            } else {
                0
            },
            p50_ns: p50.map(Nanos),
            p99_ns: p99.map(Nanos),
            cpu: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_when_all_workers_reported() {
        let cfg = TestConfig {
            duration_ms: 1500,
            interval_ms: 1000,
            ..TestConfig::default()
        };
        let mut a = Aggregator::new(&cfg, vec![(FlowDir::Forward, 2)]);
        let c = Counters {
            bytes: 1000,
            msgs: 10,
            expected: 12,
            ..Counters::default()
        };
        assert!(a.add(FlowDir::Forward, 1, c, None).is_none());
        let r = a.add(FlowDir::Forward, 1, c, None).unwrap();
        assert_eq!(r.counters.bytes, 2000);
        assert_eq!(r.lost_estimate, 4);
        assert!((r.end_s - 1.5).abs() < 1e-9);
        assert!((r.bits_per_sec - 2000.0 * 8.0 / 0.5).abs() < 1e-6);
        assert!(a.add(FlowDir::Reverse, 0, c, None).is_none());
    }
}
