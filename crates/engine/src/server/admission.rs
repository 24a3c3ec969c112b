//! What the accept loop and a starting test are admitted against: new
//! connections per source prefix per second, the eviction log's lines per
//! second, and the server's total test memory.

use crate::config::human_bytes;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// New connections one source prefix (IPv4 /24, IPv6 /64) may open per
/// second, on average.
pub const NEW_PER_PREFIX_PER_SEC: u32 = 16;
/// New connections one prefix may open at once, after a quiet spell.
pub const NEW_PER_PREFIX_BURST: u32 = 32;
/// Prefixes whose rate is tracked; past it, prefixes that have been quiet
/// long enough to be back at their burst are forgotten, and a new prefix
/// is refused while none is.
pub const MAX_TRACKED_PREFIXES: usize = 4096;
/// Eviction lines the log takes per second; the rest are counted and
/// reported in one line.
pub const EVICTION_LINES_PER_SEC: u32 = 10;

/// A token bucket per source prefix: [`NEW_PER_PREFIX_BURST`] tokens,
/// refilled at [`NEW_PER_PREFIX_PER_SEC`] a second. Time is passed in, so
/// the arithmetic is tested without clocks.
#[derive(Debug, Default)]
pub(super) struct ConnRate {
    buckets: HashMap<IpAddr, (f64, Instant)>,
}

impl ConnRate {
    fn level(tokens: f64, since: Instant, now: Instant) -> f64 {
        let dt = now.saturating_duration_since(since).as_secs_f64();
        (tokens + dt * f64::from(NEW_PER_PREFIX_PER_SEC)).min(f64::from(NEW_PER_PREFIX_BURST))
    }

    /// Whether `prefix` may open a connection at `now` (and take a token).
    pub(super) fn admit(&mut self, prefix: IpAddr, now: Instant) -> bool {
        if !self.buckets.contains_key(&prefix) && self.buckets.len() >= MAX_TRACKED_PREFIXES {
            let full = f64::from(NEW_PER_PREFIX_BURST);
            self.buckets
                .retain(|_, (t, since)| Self::level(*t, *since, now) < full);
            if self.buckets.len() >= MAX_TRACKED_PREFIXES {
                return false;
            }
        }
        let full = f64::from(NEW_PER_PREFIX_BURST);
        let (tokens, since) = self.buckets.entry(prefix).or_insert((full, now));
        let level = Self::level(*tokens, *since, now);
        *since = now;
        if level >= 1.0 {
            *tokens = level - 1.0;
            true
        } else {
            *tokens = level;
            false
        }
    }
}

/// At most [`EVICTION_LINES_PER_SEC`] log lines per one-second window.
#[derive(Debug)]
pub(super) struct LogRate {
    window: Instant,
    lines: u32,
    dropped: u64,
}

impl LogRate {
    pub(super) fn new(now: Instant) -> LogRate {
        LogRate {
            window: now,
            lines: 0,
            dropped: 0,
        }
    }

    /// Whether a line may be written at `now`, and how many were dropped
    /// in the windows before (to be said once, when a new window opens).
    pub(super) fn line(&mut self, now: Instant) -> (bool, u64) {
        let mut dropped = 0;
        if now.saturating_duration_since(self.window) >= Duration::from_secs(1) {
            self.window = now;
            self.lines = 0;
            dropped = std::mem::take(&mut self.dropped);
        }
        if self.lines < EVICTION_LINES_PER_SEC {
            self.lines = self.lines.saturating_add(1);
            (true, dropped)
        } else {
            self.dropped = self.dropped.saturating_add(1);
            (false, dropped)
        }
    }
}

/// Test memory in use and tests per prefix, admitted together.
#[derive(Debug, Default)]
pub(super) struct Budget {
    /// Buffer bytes reserved by running tests.
    pub(super) bytes: u64,
    /// Running tests per source prefix.
    pub(super) per_prefix: HashMap<IpAddr, u32>,
}

/// Why a test was not admitted (the message the client is sent).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum NotAdmitted {
    /// The total would pass `--max-total-memory`.
    #[error("server memory budget: this test needs {}, {} of {} (--max-total-memory) is in use; try again later", human_bytes(*need), human_bytes(*used), human_bytes(*max))]
    Memory {
        /// Reserved now.
        used: u64,
        /// This test's need.
        need: u64,
        /// The budget.
        max: u64,
    },
    /// The prefix already runs its share.
    #[error("{prefix} (its /24 or /64) already runs {max} tests here (the per-prefix limit)")]
    Prefix {
        /// The prefix.
        prefix: IpAddr,
        /// The share.
        max: u32,
    },
    /// A thread panicked holding the budget's lock.
    #[error("server error (lock poisoned)")]
    Poisoned,
}

impl Budget {
    /// Reserve `need` bytes for a test from `prefix` within `max` bytes in
    /// all and `per_prefix` tests per prefix.
    pub(super) fn admit(
        &mut self,
        prefix: IpAddr,
        need: u64,
        max: u64,
        per_prefix: u32,
    ) -> Result<(), NotAdmitted> {
        let n = self.per_prefix.get(&prefix).copied().unwrap_or(0);
        if n >= per_prefix {
            return Err(NotAdmitted::Prefix {
                prefix,
                max: per_prefix,
            });
        }
        let total = self.bytes.checked_add(need).filter(|&t| t <= max);
        let Some(total) = total else {
            return Err(NotAdmitted::Memory {
                used: self.bytes,
                need,
                max,
            });
        };
        self.bytes = total;
        self.per_prefix.insert(prefix, n.saturating_add(1));
        Ok(())
    }

    /// Give back what [`Budget::admit`] reserved.
    pub(super) fn release(&mut self, prefix: IpAddr, need: u64) {
        self.bytes = self.bytes.saturating_sub(need);
        if let Some(n) = self.per_prefix.get_mut(&prefix) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_prefix.remove(&prefix);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_prefix_gets_its_burst_then_its_rate() {
        let mut r = ConnRate::default();
        let t0 = Instant::now();
        let a = ip("10.0.1.0");
        let admitted = (0..100).filter(|_| r.admit(a, t0)).count();
        assert_eq!(admitted, NEW_PER_PREFIX_BURST as usize);
        // Another prefix is not held back by the first.
        assert!(r.admit(ip("10.0.2.0"), t0));
        // One second later: the rate's worth again.
        let t1 = t0 + Duration::from_secs(1);
        let admitted = (0..100).filter(|_| r.admit(a, t1)).count();
        assert_eq!(admitted, NEW_PER_PREFIX_PER_SEC as usize);
    }

    #[test]
    fn tracked_prefixes_are_bounded() {
        let mut r = ConnRate::default();
        let t0 = Instant::now();
        for i in 0..MAX_TRACKED_PREFIXES {
            let p = IpAddr::V6(std::net::Ipv6Addr::new(
                0x2001, 0xdb8, 0, i as u16, 0, 0, 0, 0,
            ));
            assert!(r.admit(p, t0));
        }
        // All busy (each took a token just now): a new prefix waits.
        assert!(!r.admit(ip("10.9.9.0"), t0));
        assert_eq!(r.buckets.len(), MAX_TRACKED_PREFIXES);
        // Quiet long enough to be full again: forgotten, room made.
        assert!(r.admit(ip("10.9.9.0"), t0 + Duration::from_secs(60)));
        assert_eq!(r.buckets.len(), 1);
    }

    #[test]
    fn the_log_takes_ten_lines_a_second_and_counts_the_rest() {
        let t0 = Instant::now();
        let mut l = LogRate::new(t0);
        let written = (0..1000).filter(|_| l.line(t0).0).count();
        assert_eq!(written, EVICTION_LINES_PER_SEC as usize);
        assert_eq!(l.line(t0 + Duration::from_secs(1)), (true, 990));
        assert_eq!(l.line(t0 + Duration::from_secs(2)), (true, 0));
    }

    #[test]
    fn memory_and_prefix_shares_are_admitted_together() {
        let mut b = Budget::default();
        let (a, c) = (ip("10.0.1.0"), ip("10.0.2.0"));
        assert!(b.admit(a, 600, 1000, 2).is_ok());
        assert_eq!(
            b.admit(c, 600, 1000, 2),
            Err(NotAdmitted::Memory {
                used: 600,
                need: 600,
                max: 1000
            })
        );
        assert!(b.admit(a, 100, 1000, 2).is_ok());
        assert_eq!(
            b.admit(a, 1, 1000, 2),
            Err(NotAdmitted::Prefix { prefix: a, max: 2 })
        );
        assert_eq!(
            b.admit(c, u64::MAX, u64::MAX, 2),
            Err(NotAdmitted::Memory {
                used: 700,
                need: u64::MAX,
                max: u64::MAX
            })
        );
        b.release(a, 600);
        b.release(a, 100);
        assert_eq!((b.bytes, b.per_prefix.len()), (0, 0));
        assert!(b.admit(c, 1000, 1000, 2).is_ok());
    }
}
