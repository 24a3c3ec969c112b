//! The bottom line of a lab run: for each fix measured in its own cell
//! ([`LabFix`]), what its workloads' first judged metric says against the
//! baseline, and what to do next: keep it (and plan it for a real
//! interface), drop it, or measure more.

use crate::experiment::Metric;
use crate::results::{ExperimentResults, LabFix, MetricStats};
use crate::stats::{Direction, Verdict, MAX_MORE_RUNS};

/// What the runs say of one fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A gain on a workload it targets, and no change on every other.
    Keep,
    /// A gain on one workload, no regression, and the runs cannot tell on
    /// another: measure more before keeping it.
    Promising,
    /// A regression and no gain.
    Drop,
    /// A gain and a regression (of any metric better one way, the CPU's
    /// cost and latency included): a trade-off.
    Mixed,
    /// Within the threshold on every workload it targets.
    NoEffect,
    /// The runs cannot tell on at least one workload, and nothing was shown.
    Unproven,
}

impl Call {
    /// The word that leads its line.
    pub fn word(self) -> &'static str {
        match self {
            Call::Keep => "keep",
            Call::Promising => "promising",
            Call::Drop => "drop",
            Call::Mixed => "weigh",
            Call::NoEffect => "no effect",
            Call::Unproven => "unproven",
        }
    }
}

/// The bottom line of one fix.
#[derive(Debug, Clone, PartialEq)]
pub struct FixLine {
    /// The fix.
    pub fix: LabFix,
    /// The call.
    pub call: Call,
    /// Per workload: `tcp-stream throughput +120 % [+80.1, +150] (gain)`.
    pub evidence: Vec<String>,
    /// What to run next.
    pub next: Option<String>,
}

impl FixLine {
    /// The line as the terminal and the summary print it.
    pub fn text(&self) -> String {
        let mut what: Vec<String> = if self.fix.summary.is_empty() {
            self.fix.changes.clone()
        } else {
            self.fix.summary.clone()
        };
        what.extend(
            self.fix
                .app_options
                .iter()
                .map(|a| format!("bench {a} (an application option)")),
        );
        let next = self
            .next
            .as_deref()
            .map(|n| format!("; next: {n}"))
            .unwrap_or_default();
        format!(
            "{} {} ({}): {}{next}",
            self.call.word(),
            self.fix.finding,
            what.join(", "),
            if self.evidence.is_empty() {
                "not measured".to_string()
            } else {
                self.evidence.join("; ")
            }
        )
    }
}

/// The first metric of `stats` (in `metrics` order) that is better one way.
fn judged<'a>(
    metrics: &[Metric],
    stats: &'a [MetricStats],
    workload: &str,
) -> Option<&'a MetricStats> {
    metrics
        .iter()
        .filter(|m| m.direction() != Direction::Neither && **m != Metric::CpuPerWork)
        .find_map(|m| {
            stats
                .iter()
                .find(|s| s.workload == workload && s.metric == *m && s.vs_baseline.is_some())
        })
}

/// The bottom line of every fix of `r`, in cell order.
pub fn bottom_line(r: &ExperimentResults) -> Vec<FixLine> {
    r.fixes
        .iter()
        .filter_map(|fix| {
            let cell = r.cell(fix.cell)?;
            let (mut gains, mut losses, mut open, mut none) = (0, 0, 0, 0);
            let mut more = 0u32;
            let mut n = 0usize;
            let mut evidence = Vec::new();
            for w in &fix.workloads {
                // A regression of any metric that is better one way (the
                // CPU's cost and latency too) weighs against a gain.
                for s in cell.stats.iter().filter(|s| {
                    s.workload == *w
                        && s.metric.direction() != Direction::Neither
                        && s.vs_baseline
                            .as_ref()
                            .is_some_and(|c| c.verdict == Verdict::Regression)
                }) {
                    let Some(first) = judged(&r.metrics, &cell.stats, w) else {
                        continue;
                    };
                    if first.metric != s.metric {
                        losses += 1;
                        let t = crate::results::table::StatText::of(s);
                        evidence.push(format!(
                            "{w} {} {} (regression)",
                            s.metric.name(),
                            t.change.unwrap_or_default()
                        ));
                    }
                }
                let Some(s) = judged(&r.metrics, &cell.stats, w) else {
                    continue;
                };
                let Some(c) = s.vs_baseline.as_ref() else {
                    continue;
                };
                match c.verdict {
                    Verdict::Gain => gains += 1,
                    Verdict::Regression => losses += 1,
                    Verdict::Inconclusive => {
                        open += 1;
                        more = more.max(c.more_runs.unwrap_or(MAX_MORE_RUNS));
                        n = n.max(c.cell.n);
                    }
                    Verdict::NoChange | Verdict::Changed => none += 1,
                }
                let t = crate::results::table::StatText::of(s);
                evidence.push(format!(
                    "{w} {} {} ({})",
                    s.metric.name(),
                    t.change.unwrap_or_default(),
                    t.verdict_text.unwrap_or_default()
                ));
            }
            let call = match (gains > 0, losses > 0) {
                (true, false) if open > 0 => Call::Promising,
                (true, false) => Call::Keep,
                (false, true) => Call::Drop,
                (true, true) => Call::Mixed,
                (false, false) if open > 0 => Call::Unproven,
                (false, false) if none > 0 => Call::NoEffect,
                _ => Call::Unproven,
            };
            let next = match call {
                Call::Keep | Call::Mixed => fix.next.clone(),
                Call::Unproven | Call::Promising if more >= MAX_MORE_RUNS => Some(
                    "the spread is too wide for more runs to decide here; isolate it with nettune experiment (a file with this one factor) or nettune autotune".into(),
                ),
                Call::Unproven | Call::Promising => Some(format!(
                    "measure it with more runs: nettune lab --repeats {}",
                    n.saturating_add(more as usize).min(100)
                )),
                Call::Drop | Call::NoEffect => None,
            };
            Some(FixLine {
                fix: fix.clone(),
                call,
                evidence,
                next,
            })
        })
        .collect()
}
