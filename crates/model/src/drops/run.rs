//! Drops by reason over one run: what `bench --doctor` keeps for its
//! window and what the experiment runner (the lab, `experiment`,
//! `autotune`) keeps per run, or the one line saying why there are none.

use super::{DropInterval, Row};
use serde::{Deserialize, Serialize};

/// Drops by reason seen on one host's kernel over one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDrops {
    /// Whose kernel counted them (a lab's namespaces share the machine's
    /// kernel, so its drops are the machine's, every namespace's).
    pub host: String,
    /// What was seen, or why nothing could be.
    #[serde(flatten)]
    pub outcome: RunDropsOutcome,
}

/// Drops seen over a run, or why they could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunDropsOutcome {
    /// The watcher ran for the whole run.
    Seen(DropsSeen),
    /// It could not run (not root, no tracefs, a host whose agent does not
    /// record them): the one line it gave. The run itself went on.
    Unavailable {
        /// The reason, one line.
        unavailable: String,
    },
}

/// The counts of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DropsSeen {
    /// Seconds watched.
    pub seconds: f64,
    /// Every drop of the run (exact).
    pub total: u64,
    /// Whether the rows are exact counts (every drop sampled and none
    /// lost, or counted by reason in the kernel); otherwise they are the
    /// sampled shares of the exact total.
    pub exact: bool,
    /// By reason, largest first.
    pub reasons: Vec<Row>,
}

impl RunDrops {
    /// The drops of `interval` on `host`.
    pub fn seen(host: impl Into<String>, interval: &DropInterval) -> RunDrops {
        RunDrops {
            host: host.into(),
            outcome: RunDropsOutcome::Seen(DropsSeen {
                seconds: interval.seconds,
                total: interval.total,
                exact: interval.reasons_exact,
                reasons: interval.reasons.clone(),
            }),
        }
    }

    /// No drops on `host`, for `why` (one line).
    pub fn unavailable(host: impl Into<String>, why: impl std::fmt::Display) -> RunDrops {
        RunDrops {
            host: host.into(),
            outcome: RunDropsOutcome::Unavailable {
                unavailable: crate::text::printable_capped(&why.to_string(), 300),
            },
        }
    }

    /// From a watcher's result: the interval's drops, or its reason.
    pub fn of(host: impl Into<String>, r: &Result<DropInterval, super::Unavailable>) -> RunDrops {
        match r {
            Ok(i) => RunDrops::seen(host, i),
            Err(why) => RunDrops::unavailable(host, why),
        }
    }

    /// The counts, when the watcher ran.
    pub fn counts(&self) -> Option<&DropsSeen> {
        match &self.outcome {
            RunDropsOutcome::Seen(s) => Some(s),
            RunDropsOutcome::Unavailable { .. } => None,
        }
    }

    /// Why there are none, when the watcher could not run.
    pub fn why_not(&self) -> Option<&str> {
        match &self.outcome {
            RunDropsOutcome::Seen(_) => None,
            RunDropsOutcome::Unavailable { unavailable } => Some(unavailable),
        }
    }
}

impl DropsSeen {
    /// One line: `1234 drops in 10.0 s: NO_SOCKET 1200, TCP_RESET 34` with
    /// the `top` largest reasons (`no drops in 10.0 s` when quiet); shares
    /// of a sampled run are marked `~`.
    pub fn line(&self, top: usize) -> String {
        if self.total == 0 {
            return format!("no drops in {:.1} s", self.seconds);
        }
        let mark = if self.exact { "" } else { "~" };
        let noun = if self.total == 1 { "drop" } else { "drops" };
        let mut s = format!("{} {noun} in {:.1} s", self.total, self.seconds);
        for (i, r) in self.reasons.iter().take(top).enumerate() {
            s.push_str(if i == 0 { ": " } else { ", " });
            s.push_str(&format!("{} {mark}{}", r.name, r.count));
        }
        if self.reasons.len() > top {
            s.push_str(&format!(", {} more", self.reasons.len() - top));
        }
        s
    }
}

impl RunDrops {
    /// [`DropsSeen::line`], or the reason there are none.
    pub fn line(&self, top: usize) -> String {
        match &self.outcome {
            RunDropsOutcome::Seen(s) => s.line(top),
            RunDropsOutcome::Unavailable { unavailable } => unavailable.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drops::{DropCounts, Unavailable};

    #[test]
    fn a_run_reads_back_as_seen_or_as_its_one_line() {
        let mut a = DropCounts::new();
        let mut b = DropCounts::new();
        a.total = 10;
        b.total = 13;
        for _ in 0..3 {
            b.add_sample("NO_SOCKET", "udp_rcv+0x10", Some(0x0800));
        }
        let i = DropInterval::between(&a, &b, 2.0);
        let seen = RunDrops::seen("h1", &i);
        let text = serde_json::to_string(&seen).unwrap();
        assert_eq!(
            text,
            r#"{"host":"h1","seconds":2.0,"total":3,"exact":true,"reasons":[{"name":"NO_SOCKET","count":3,"per_sec":1.5}]}"#
        );
        assert_eq!(serde_json::from_str::<RunDrops>(&text).unwrap(), seen);
        assert_eq!(seen.counts().map(|c| c.total), Some(3));
        assert_eq!(seen.line(3), "3 drops in 2.0 s: NO_SOCKET 3");
        let not = RunDrops::of("h2", &Err(Unavailable::NoTracefs));
        let text = serde_json::to_string(&not).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"host":"h2","unavailable":"{}"}}"#,
                Unavailable::NoTracefs
            )
        );
        let back: RunDrops = serde_json::from_str(&text).unwrap();
        assert_eq!(back.why_not(), not.why_not());
        assert!(back.counts().is_none());
    }

    #[test]
    fn rows_counted_by_reason_in_the_kernel_are_exact_in_a_run() {
        let a = DropCounts::new();
        let mut b = DropCounts::new();
        b.counting = crate::drops::Counting::Bpf;
        b.by_reason.insert("NO_SOCKET".to_string(), 40);
        b.total = 40;
        b.lost = 3;
        let i = DropInterval::between(&a, &b, 2.0);
        let seen = RunDrops::seen("h1", &i);
        assert_eq!(seen.line(3), "40 drops in 2.0 s: NO_SOCKET 40");
    }
}
