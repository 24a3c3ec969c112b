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

use crate::data::{text, MAX_ROWS};
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
    fn of(v: &Value) -> Option<Eff> {
        let f = |k: &str| v.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
        let n = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .and_then(|x| usize::try_from(x).ok())
                .unwrap_or(0)
        };
        Some(Eff {
            estimate: f("estimate")?,
            lo: f("lo")?,
            hi: f("hi")?,
            unit: text(v, "unit"),
            verdict: text(v, "verdict"),
            runs: n("runs"),
            baseline_runs: n("baseline_runs"),
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

fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_ROWS)
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    list(v, key)
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect()
}

fn decided(v: &Value) -> Decided {
    Decided {
        label: format!("{}={}", text(v, "knob"), text(v, "level")),
        race: v.get("race").and_then(Eff::of),
        reason: text(v, "reason"),
        on_top_of: strings(v, "on_top_of"),
    }
}

impl AutotuneResults {
    /// Read an autotune results document; `None` when `doc` is not one
    /// (no `"kind": "autotune"`).
    pub fn from_value(doc: &Value) -> Option<AutotuneResults> {
        if doc.get("kind").and_then(Value::as_str) != Some(AUTOTUNE_KIND) {
            return None;
        }
        let w = doc.get("workload").cloned().unwrap_or(Value::Null);
        let workload = {
            let mut s = text(&w, "test");
            for (k, unit) in [("duration", " s runs"), ("flows", " flow(s)")] {
                let t = text(&w, k);
                if !t.is_empty() {
                    let _ = write!(s, ", {t}{unit}");
                }
            }
            let size = text(&w, "size");
            if !size.is_empty() {
                let _ = write!(s, ", {size} bytes");
            }
            s
        };
        let m = doc.get("machine").cloned().unwrap_or(Value::Null);
        let machine = if m.is_object() {
            format!(
                "{}, kernel {}, {} CPUs",
                text(&m, "hostname"),
                text(&m, "kernel"),
                text(&m, "cpus")
            )
        } else {
            String::new()
        };
        let rechecks = list(doc, "rechecks")
            .map(|r| {
                let effect = r.get("effect").and_then(Eff::of);
                let versus_best = r.get("versus_best").and_then(Eff::of);
                let names = strings(r, "changes");
                let kept = strings(r, "on_top_of");
                Recheck {
                    label: format!("{}{}", names.join(" + "), on_top(&kept)),
                    arm: arm_label(&kept, &names),
                    on_top_of: kept,
                    effect,
                    versus_best,
                    passed: r.get("passed").and_then(Value::as_bool).unwrap_or(false),
                }
            })
            .collect();
        let trace = doc
            .get("trace")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(MAX_RUNS)
            .filter_map(|r| {
                Some(Run {
                    seq: usize::try_from(r.get("seq")?.as_u64()?).ok()?,
                    arm: r.get("arm")?.as_str()?.to_string(),
                    value: r.get("value")?.as_f64().filter(|v| v.is_finite())?,
                })
            })
            .collect();
        let usize_of = |v: Option<&Value>| {
            v.and_then(Value::as_u64)
                .and_then(|x| usize::try_from(x).ok())
        };
        let passes = list(doc, "passes")
            .filter_map(|p| {
                Some(PassView {
                    on_top_of: strings(p, "on_top_of"),
                    first_run: usize_of(p.get("first_run"))?,
                    race_end: usize_of(p.get("race_end"))?,
                    rounds: p.get("rounds").and_then(Value::as_u64)?,
                })
            })
            .collect();
        Some(AutotuneResults {
            schema_version: doc
                .get("schema_version")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            objective: text(doc, "objective"),
            metric: text(doc, "metric"),
            direction: text(doc, "direction"),
            min_effect_pct: w
                .get("min_effect_pct")
                .and_then(Value::as_f64)
                .filter(|v| v.is_finite())
                .unwrap_or(model::stats::DEFAULT_MIN_EFFECT_PCT),
            statistic: w
                .get("statistic")
                .and_then(Value::as_str)
                .and_then(model::stats::Statistic::parse)
                .unwrap_or_default(),
            repeats: usize_of(w.get("repeats")).filter(|r| *r > 0).unwrap_or(3),
            seed: w.get("seed").and_then(Value::as_u64),
            workload,
            nettune_version: text(doc, "nettune_version"),
            started: text(doc, "started"),
            finished: text(doc, "finished"),
            machine,
            interrupted: doc
                .get("interrupted")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            rounds: doc.get("rounds").and_then(Value::as_u64).unwrap_or(0),
            runs_used: usize_of(doc.get("runs_used")).unwrap_or(0),
            space: list(doc, "space")
                .map(|f| {
                    let levels: Vec<String> = list(f, "levels")
                        .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_string))
                        .collect();
                    (
                        text(f, "knob"),
                        text(f, "current"),
                        levels.join(", "),
                        text(f, "source"),
                    )
                })
                .collect(),
            excluded: list(doc, "excluded")
                .map(|e| (text(e, "knob"), text(e, "level"), text(e, "reason")))
                .collect(),
            accepted: list(doc, "accepted").map(decided).collect(),
            rejected: list(doc, "rejected").map(decided).collect(),
            rechecks,
            trace,
            passes,
        })
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
    match AutotuneResults::from_value(&doc) {
        Some(r) if r.schema_version > AUTOTUNE_SCHEMA_VERSION => Err(ReportError::NewerAutotune {
            path,
            found: r.schema_version,
        }),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests;
