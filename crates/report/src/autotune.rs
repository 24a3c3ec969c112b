//! The page of an autotune results directory: `DIR/results.json` with
//! `"kind": "autotune"` (written by `nettune autotune`,
//! docs/schema/autotune-results.json) rendered as the search trace chart and
//! the tables of accepted, rejected and left-out changes and re-checks.
//!
//! The file is untrusted input: it is read leniently (a field of the wrong
//! shape is left out, never a panic), every text is escaped, and the work is
//! bounded (runs, candidates, rows).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use model::results::autotune::{AutotuneResults as Typed, Better, EffectRecord, EffectUnit};

use crate::ReportError;

/// The `kind` of an autotune results.json.
pub const AUTOTUNE_KIND: &str = "autotune";
/// The newest autotune results.json schema this version reads.
pub const AUTOTUNE_SCHEMA_VERSION: u64 = 1;
/// Runs of the trace read.
pub(crate) const MAX_RUNS: usize = 100_000;

/// An effect against the baseline, in % (or a difference when the
/// baseline's median was zero).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Eff {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
    /// `%` or `difference`.
    pub unit: String,
    pub verdict: String,
    pub runs: usize,
    pub baseline_runs: usize,
}

impl Eff {
    /// The effect as shown; `None` when a bound is not a number.
    fn of(e: &EffectRecord) -> Option<Eff> {
        let fin = |x: f64| x.is_finite().then_some(x);
        Some(Eff {
            estimate: fin(e.estimate)?,
            lo: fin(e.lo)?,
            hi: fin(e.hi)?,
            unit: match e.unit {
                EffectUnit::Percent => "%",
                EffectUnit::Difference => "difference",
            }
            .to_string(),
            verdict: e.verdict.clone(),
            runs: e.runs,
            baseline_runs: e.baseline_runs,
        })
    }

    /// Whether the effect is a % change (the chart's axis).
    pub fn relative(&self) -> bool {
        self.unit == "%"
    }

    /// `+12.3 % [+4.5, +20.1]`, as the terminal's summary writes it.
    pub fn text(&self) -> String {
        let unit = if self.relative() { " %" } else { "" };
        format!(
            "{:+.1}{unit} [{:+.1}, {:+.1}]",
            self.estimate, self.lo, self.hi
        )
    }
}

/// An accepted or rejected change.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decided {
    /// `knob=level`, as the trace names its arm.
    pub label: String,
    pub race: Option<Eff>,
    /// Empty for an accepted change.
    pub reason: String,
    /// What earlier passes kept when it was raced (its race is against
    /// that); empty in the first pass.
    pub on_top_of: Vec<String>,
}

impl Decided {
    /// The arm of its race runs in the trace: what earlier passes kept,
    /// then the change.
    pub(crate) fn arm(&self) -> String {
        arm_label(&self.on_top_of, std::slice::from_ref(&self.label))
    }

    /// The change for a table: `c (on top of a + b)` after a forward pass.
    pub(crate) fn shown(&self) -> String {
        format!("{}{}", self.label, on_top(&self.on_top_of))
    }
}

/// `a + b + c` for kept `a`, `b` and added `c`; `baseline` for nothing.
fn arm_label(kept: &[String], added: &[String]) -> String {
    let all: Vec<&str> = kept.iter().chain(added).map(String::as_str).collect();
    if all.is_empty() {
        "baseline".into()
    } else {
        all.join(" + ")
    }
}

/// ` (on top of a + b)`, or nothing in the first pass.
fn on_top(kept: &[String]) -> String {
    if kept.is_empty() {
        String::new()
    } else {
        format!(" (on top of {})", kept.join(" + "))
    }
}

/// One pass of the search: its race's runs and the setting it started
/// from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PassView {
    pub on_top_of: Vec<String>,
    pub first_run: usize,
    pub race_end: usize,
    pub rounds: u64,
}

/// A re-check of a combination or a single winner on fresh runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recheck {
    /// The changes re-checked, and what earlier passes kept under them.
    pub label: String,
    /// The arm of its combination in the trace.
    pub arm: String,
    /// What earlier passes kept, under every arm of it.
    pub on_top_of: Vec<String>,
    pub effect: Option<Eff>,
    pub versus_best: Option<Eff>,
    pub passed: bool,
}

/// One run of the trace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    pub seq: usize,
    pub arm: String,
    pub value: f64,
}

/// An autotune results.json, as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct AutotuneResults {
    pub(crate) schema_version: u64,
    pub(crate) objective: String,
    pub(crate) metric: String,
    /// `higher` or `lower` is better.
    pub(crate) direction: String,
    pub(crate) min_effect_pct: f64,
    /// The statistic the search judged the objective on (older files: the
    /// median).
    pub(crate) statistic: model::stats::Statistic,
    /// Runs per arm and round of the race.
    pub(crate) repeats: usize,
    /// The search's seed (its bootstrap's seed is derived from it).
    pub(crate) seed: Option<u64>,
    pub(crate) workload: String,
    pub(crate) nettune_version: String,
    pub(crate) started: String,
    pub(crate) finished: String,
    pub(crate) machine: String,
    pub(crate) interrupted: bool,
    pub(crate) rounds: u64,
    pub(crate) runs_used: usize,
    pub(crate) space: Vec<(String, String, String, String)>,
    pub(crate) excluded: Vec<(String, String, String)>,
    pub(crate) accepted: Vec<Decided>,
    pub(crate) rejected: Vec<Decided>,
    pub(crate) rechecks: Vec<Recheck>,
    pub(crate) trace: Vec<Run>,
    /// The passes as saved (empty in files written before forward passes).
    pub(crate) passes: Vec<PassView>,
}

impl AutotuneResults {
    /// Read an autotune results document; `None` when `doc` is not one
    /// (no `"kind": "autotune"`) or a field has the wrong shape
    /// ([`read_autotune`] says which).
    pub fn from_value(doc: &Value) -> Option<AutotuneResults> {
        if doc.get("kind").and_then(Value::as_str) != Some(AUTOTUNE_KIND) {
            return None;
        }
        Typed::from_value(doc.clone()).ok().map(AutotuneResults::of)
    }

    /// The view of a typed results file (lists already bounded as read).
    pub fn of(doc: Typed) -> AutotuneResults {
        let w = doc.workload.unwrap_or_default();
        let mut workload = w.test.clone().unwrap_or_default();
        if let Some(d) = w.duration {
            let _ = write!(workload, ", {d} s runs");
        }
        if let Some(f) = w.flows {
            let _ = write!(workload, ", {f} flow(s)");
        }
        if let Some(size) = w.size {
            let _ = write!(workload, ", {size} bytes");
        }
        let machine = doc.machine.map_or_else(String::new, |m| {
            format!("{}, kernel {}, {} CPUs", m.hostname, m.kernel, m.cpus)
        });
        let decided = |knob: &str,
                       level: &str,
                       race: Option<&EffectRecord>,
                       reason: &str,
                       on_top_of: &[String]| Decided {
            label: format!("{knob}={level}"),
            race: race.and_then(Eff::of),
            reason: reason.to_string(),
            on_top_of: on_top_of.to_vec(),
        };
        AutotuneResults {
            schema_version: u64::from(doc.schema_version),
            objective: doc.objective.unwrap_or_default(),
            metric: doc.metric.unwrap_or_default(),
            direction: match doc.direction {
                Some(Better::Higher) => "higher",
                Some(Better::Lower) => "lower",
                None => "",
            }
            .to_string(),
            min_effect_pct: w
                .min_effect_pct
                .filter(|v| v.is_finite())
                .unwrap_or(model::stats::DEFAULT_MIN_EFFECT_PCT),
            statistic: w.statistic.unwrap_or_default(),
            repeats: w
                .repeats
                .filter(|r| *r > 0)
                .map_or(3, |r| usize::try_from(r).unwrap_or(usize::MAX)),
            seed: w.seed,
            workload,
            nettune_version: doc.nettune_version.unwrap_or_default(),
            started: doc.started.unwrap_or_default(),
            finished: doc.finished.unwrap_or_default(),
            machine,
            interrupted: doc.interrupted,
            rounds: u64::from(doc.rounds),
            runs_used: doc.runs_used,
            space: doc
                .space
                .into_iter()
                .map(|f| {
                    (
                        f.knob,
                        f.current.unwrap_or_default(),
                        f.levels.join(", "),
                        f.source.unwrap_or_default(),
                    )
                })
                .collect(),
            excluded: doc
                .excluded
                .into_iter()
                .map(|e| (e.knob, e.level.unwrap_or_default(), e.reason))
                .collect(),
            accepted: doc
                .accepted
                .iter()
                .map(|a| decided(&a.knob, &a.level, a.race.as_ref(), "", &a.on_top_of))
                .collect(),
            rejected: doc
                .rejected
                .iter()
                .map(|r| decided(&r.knob, &r.level, r.race.as_ref(), &r.reason, &r.on_top_of))
                .collect(),
            rechecks: doc
                .rechecks
                .into_iter()
                .map(|r| Recheck {
                    label: format!("{}{}", r.changes.join(" + "), on_top(&r.on_top_of)),
                    arm: arm_label(&r.on_top_of, &r.changes),
                    effect: Eff::of(&r.effect),
                    versus_best: r.versus_best.as_ref().and_then(Eff::of),
                    passed: r.passed,
                    on_top_of: r.on_top_of,
                })
                .collect(),
            trace: doc
                .trace
                .into_iter()
                .take(MAX_RUNS)
                .filter(|r| r.value.is_finite())
                .map(|r| Run {
                    seq: r.seq,
                    arm: r.arm,
                    value: r.value,
                })
                .collect(),
            passes: doc
                .passes
                .into_iter()
                .map(|p| PassView {
                    on_top_of: p.on_top_of,
                    first_run: p.first_run,
                    race_end: p.race_end,
                    rounds: u64::from(p.rounds),
                })
                .collect(),
        }
    }

    /// Runs of the race: the trace's first `rounds` rounds. A round runs
    /// every arm still in the race `repeats` times, interleaved, and an arm
    /// never comes back once dropped, so a round ends where the next run is
    /// of an arm that has had its `repeats` runs in the round, or of an arm
    /// that was not in the round before (a re-check's combination). Without
    /// `rounds` (an interrupted search of before they were saved) the whole
    /// trace.
    pub(crate) fn race_runs(&self) -> usize {
        if self.rechecks.is_empty() && self.rounds == 0 {
            return self.trace.len();
        }
        self.round_ends().last().copied().unwrap_or(0)
    }

    /// Where each race round ends in the trace (the index after its last
    /// run); empty without `rounds`.
    pub(crate) fn round_ends(&self) -> Vec<usize> {
        let allowed: Vec<&str> = std::iter::once("baseline")
            .chain(
                self.accepted
                    .iter()
                    .chain(&self.rejected)
                    .map(|d| d.label.as_str()),
            )
            .collect();
        self.rounds_of(&self.trace, allowed, self.rounds, 0)
    }

    /// Where each of `rounds` rounds of `race` ends (the index after its
    /// last run, plus `offset`): a round runs every arm still in it
    /// `repeats` times, interleaved, and starts with the arms of `allowed`;
    /// an arm dropped from a round never comes back.
    fn rounds_of<'a>(
        &self,
        race: &'a [Run],
        mut allowed: Vec<&'a str>,
        rounds: u64,
        offset: usize,
    ) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut p = 0usize;
        for _ in 0..rounds.min(MAX_RUNS as u64) {
            let mut counts: Vec<(&str, usize)> = Vec::new();
            while let Some(run) = race.get(p) {
                let arm = run.arm.as_str();
                if !allowed.contains(&arm) {
                    break;
                }
                match counts.iter_mut().find(|(a, _)| *a == arm) {
                    Some((_, n)) if *n >= self.repeats => break,
                    Some((_, n)) => *n += 1,
                    None => counts.push((arm, 1)),
                }
                p += 1;
            }
            if counts.is_empty() {
                break;
            }
            ends.push(offset + p);
            allowed = counts.iter().map(|(a, _)| *a).collect();
        }
        ends
    }

    /// The passes: as saved, clamped to the trace; for a file written
    /// before forward passes, one pass from the baseline over
    /// [`AutotuneResults::race_runs`].
    pub(crate) fn pass_views(&self) -> Vec<PassView> {
        let n = self.trace.len();
        if self.passes.is_empty() {
            return vec![PassView {
                on_top_of: Vec::new(),
                first_run: 0,
                race_end: self.race_runs(),
                rounds: self.rounds,
            }];
        }
        self.passes
            .iter()
            .map(|p| {
                let first_run = p.first_run.min(n);
                PassView {
                    race_end: p.race_end.clamp(first_run, n),
                    first_run,
                    ..p.clone()
                }
            })
            .collect()
    }

    /// Where each race round of `pass` ends in the trace: for a saved pass,
    /// rounds of the arms in its race's runs; else [`round_ends`].
    ///
    /// [`round_ends`]: AutotuneResults::round_ends
    pub(crate) fn round_ends_in(&self, pass: &PassView) -> Vec<usize> {
        if self.passes.is_empty() {
            return self.round_ends();
        }
        let race = self.trace.get(pass.first_run..pass.race_end).unwrap_or(&[]);
        let mut allowed: Vec<&str> = Vec::new();
        for r in race {
            if !allowed.contains(&r.arm.as_str()) {
                allowed.push(&r.arm);
            }
        }
        self.rounds_of(race, allowed, pass.rounds, pass.first_run)
    }

    /// Candidates whose race has no % change (the baseline's median was
    /// zero): not on the chart.
    pub(crate) fn not_charted(&self) -> Vec<&str> {
        self.accepted
            .iter()
            .chain(&self.rejected)
            .filter(|d| d.race.as_ref().is_some_and(|e| !e.relative()))
            .map(|d| d.label.as_str())
            .collect()
    }
}

/// Read `DIR/results.json` if it is an autotune result: `Ok(None)` when the
/// file is another kind (an experiment's or a lab's).
pub fn read_autotune(dir: &Path) -> Result<Option<AutotuneResults>, ReportError> {
    if !dir.is_dir() {
        return Err(ReportError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let path = dir.join(model::results::RESULTS_FILE);
    let text = match host::files::read_bounded_text(&path, crate::MAX_RESULTS_BYTES) {
        Ok(t) => t,
        Err(host::HostError::NotFound { .. }) => {
            return Err(ReportError::NoResults {
                path: dir.to_path_buf(),
            })
        }
        Err(host::HostError::TooLarge { .. }) => return Err(ReportError::TooLarge { path }),
        Err(e) => return Err(ReportError::File(e)),
    };
    let Ok(doc) = serde_json::from_str::<Value>(&text) else {
        // Not JSON: the experiment reader says why.
        return Ok(None);
    };
    if doc.get("kind").and_then(Value::as_str) != Some(AUTOTUNE_KIND) {
        return Ok(None);
    }
    // A newer shape is refused as newer, before its fields are read.
    let found = doc.get("schema_version").and_then(Value::as_u64);
    if let Some(found) = found.filter(|v| *v > AUTOTUNE_SCHEMA_VERSION) {
        return Err(ReportError::NewerAutotune { path, found });
    }
    let typed = Typed::from_value(doc).map_err(|e| ReportError::BadAutotune {
        path: path.clone(),
        message: e.to_string(),
    })?;
    Ok(Some(AutotuneResults::of(typed)))
}

#[cfg(test)]
mod tests;
