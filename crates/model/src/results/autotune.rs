//! The results of `nettune autotune`: what `DIR/results.json` holds with
//! `"kind": "autotune"` (docs/schema/autotune-results.json). The runner
//! builds it once (`runner::autotune::outcome`), the CLI adds the run's
//! header and writes it with [`AutotuneResults::to_json_pretty`]; `--from`,
//! `--recheck` and the report read it back with [`AutotuneResults::from_json`].
//!
//! The document is written through a `serde_json::Value`, whose objects keep
//! their keys sorted: the bytes are the same as when it was built with
//! `json!` (the field order below is for the reader, not the file).
//!
//! Files written before a field existed read with its default; lists are
//! read up to a bound (the rest skipped unread), so a hostile file cannot
//! make them large in memory.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

use super::Machine;
use crate::stats::Statistic;

/// Version of the autotune results.json document; a change that breaks
/// readers bumps it.
pub const AUTOTUNE_SCHEMA_VERSION: u32 = 1;
/// Most runs of a trace read back.
pub const MAX_TRACE_RUNS: usize = 100_000;
/// Most entries of every other list read back.
pub const MAX_ROWS: usize = 2000;

/// The `kind` of an autotune results.json (`nettune lab` and `nettune
/// experiment` write `lab` and `experiment`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutotuneKind {
    /// `nettune autotune`.
    #[default]
    Autotune,
}

/// Which side of the objective's metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Higher values are better (throughput, transactions).
    Higher,
    /// Lower values are better (latency).
    Lower,
}

/// The whole autotune results file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AutotuneResults {
    /// [`AUTOTUNE_SCHEMA_VERSION`]; 0 in files written before it.
    #[serde(default)]
    pub schema_version: u32,
    /// Always [`AutotuneKind::Autotune`].
    #[serde(default)]
    pub kind: AutotuneKind,
    /// The objective (`max-cps`); `None` only in a broken file.
    #[serde(default)]
    pub objective: Option<String>,
    /// The results key of the objective's metric (`transactions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Which side of the metric is better.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Better>,
    /// nettune version that ran the search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nettune_version: Option<String>,
    /// Start, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// End, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
    /// The client host's machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// What `--recheck DIR` measures again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<AutotuneWorkload>,
    /// The setting the search started from (`--from DIR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<FromSetting>,
    /// The factors searched.
    #[serde(default, deserialize_with = "rows")]
    pub space: Vec<SpaceFactor>,
    /// Factors and levels left out, with why.
    #[serde(default, deserialize_with = "rows")]
    pub excluded: Vec<ExcludedLevel>,
    /// Every run, in order.
    #[serde(default, deserialize_with = "runs")]
    pub trace: Vec<TraceRun>,
    /// Runs the search used.
    #[serde(default)]
    pub runs_used: usize,
    /// Whether Ctrl-C stopped the search.
    #[serde(default)]
    pub interrupted: bool,
    /// Race rounds over every pass.
    #[serde(default)]
    pub rounds: u32,
    /// The accepted changes.
    #[serde(default, deserialize_with = "rows")]
    pub accepted: Vec<AcceptedChange>,
    /// The rejected changes, with why.
    #[serde(default, deserialize_with = "rows")]
    pub rejected: Vec<RejectedChange>,
    /// The re-checks of combinations and single winners.
    #[serde(default, deserialize_with = "rows")]
    pub rechecks: Vec<RecheckRecord>,
    /// The passes (empty in files written before forward passes).
    #[serde(default, deserialize_with = "rows")]
    pub passes: Vec<PassRecord>,
    /// The outcome in words, as the terminal shows it.
    #[serde(default)]
    pub summary: String,
}

/// What `--recheck DIR` needs to measure the same workload again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AutotuneWorkload {
    /// The bench test (`tcp-crr`).
    #[serde(default)]
    pub test: Option<String>,
    /// Seconds per run.
    #[serde(default)]
    pub duration: Option<u32>,
    /// Flows per run.
    #[serde(default)]
    pub flows: Option<u32>,
    /// Message size, bytes (`null`: the test's default).
    #[serde(default)]
    pub size: Option<u32>,
    /// Bench options of the `--workload` file.
    #[serde(default, deserialize_with = "rows")]
    pub args: Vec<String>,
    /// Practical threshold, % of the baseline.
    #[serde(default)]
    pub min_effect_pct: Option<f64>,
    /// What each arm's runs are summed up by (files before it: the median).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<Statistic>,
    /// The search's seed.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Runs per arm and race round.
    #[serde(default)]
    pub repeats: Option<u32>,
    /// Runs per arm of a re-check.
    #[serde(default)]
    pub confirm_repeats: Option<u32>,
    /// The bench arguments of every run.
    #[serde(default, deserialize_with = "rows")]
    pub bench_args: Vec<String>,
}

/// The setting of `--from DIR`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FromSetting {
    /// The directory read.
    pub dir: PathBuf,
    /// Its accepted changes, `knob=level`.
    #[serde(default, deserialize_with = "rows")]
    pub setting: Vec<String>,
}

/// A factor of the search space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpaceFactor {
    /// The knob.
    pub knob: String,
    /// The host's level, the baseline.
    #[serde(default)]
    pub current: Option<String>,
    /// The levels tried.
    #[serde(default, deserialize_with = "rows")]
    pub levels: Vec<String>,
    /// The finding, rule or profile the levels come from.
    #[serde(default)]
    pub source: Option<String>,
}

/// A factor or level left out of the space.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExcludedLevel {
    /// The knob.
    pub knob: String,
    /// The level; `None` when the whole factor is out.
    #[serde(default)]
    pub level: Option<String>,
    /// Why, naming the host and file.
    pub reason: String,
}

/// One run of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRun {
    /// 0-based run number.
    pub seq: usize,
    /// The arm (`baseline`, a candidate, or `a + b`).
    pub arm: String,
    /// The objective's value (`null` in the file when not a number).
    #[serde(deserialize_with = "nan_if_null")]
    pub value: f64,
    /// Every metric the run yielded, by key.
    #[serde(default, deserialize_with = "values")]
    pub values: BTreeMap<String, f64>,
    /// What limited the run, when the bench said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<String>,
    /// Drops by reason over the run on each kernel it used, or why none
    /// (docs/schema/drops-run.json); empty in older results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drops: Vec<crate::drops::run::RunDrops>,
}

/// Whether an effect is in % of the baseline or a difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EffectUnit {
    /// In % of the baseline.
    #[serde(rename = "%")]
    Percent,
    /// A difference in the metric's unit (the baseline's median was zero).
    #[serde(rename = "difference")]
    Difference,
}

/// An effect on the objective with its interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectRecord {
    /// Point estimate.
    #[serde(deserialize_with = "nan_if_null")]
    pub estimate: f64,
    /// Lower bound.
    #[serde(deserialize_with = "nan_if_null")]
    pub lo: f64,
    /// Upper bound.
    #[serde(deserialize_with = "nan_if_null")]
    pub hi: f64,
    /// Confidence level (0.95).
    #[serde(deserialize_with = "nan_if_null")]
    pub level: f64,
    /// `%` or `difference`.
    pub unit: EffectUnit,
    /// The verdict, lower case (`gain`, `nochange`).
    pub verdict: String,
    /// Runs of the change.
    pub runs: usize,
    /// Runs of the baseline.
    pub baseline_runs: usize,
}

/// An accepted change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptedChange {
    /// The knob.
    pub knob: String,
    /// The level, as text.
    pub level: String,
    /// Its race's effect (always written; `None` only in a hand-written
    /// or older file, which `--recheck` still takes).
    #[serde(default)]
    pub race: Option<EffectRecord>,
    /// What earlier passes kept when it was raced (`knob=level`).
    #[serde(default, deserialize_with = "rows")]
    pub on_top_of: Vec<String>,
}

/// A rejected change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejectedChange {
    /// The knob.
    pub knob: String,
    /// The level, as text.
    pub level: String,
    /// Its race's effect, when it was raced.
    #[serde(default)]
    pub race: Option<EffectRecord>,
    /// Why it was rejected.
    pub reason: String,
    /// What earlier passes kept when it was last raced.
    #[serde(default, deserialize_with = "rows")]
    pub on_top_of: Vec<String>,
}

/// A re-check of a combination or a single winner on fresh runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecheckRecord {
    /// The changes re-checked (`knob=level`).
    #[serde(default, deserialize_with = "rows")]
    pub changes: Vec<String>,
    /// Their effect against the baseline.
    pub effect: EffectRecord,
    /// Against the best single change, when there were several.
    #[serde(default)]
    pub versus_best: Option<EffectRecord>,
    /// The backward check: the combination without each member.
    #[serde(default, deserialize_with = "rows")]
    pub without: Vec<WithoutRecord>,
    /// The constraints checked.
    #[serde(default, deserialize_with = "rows")]
    pub constraints: Vec<ConstraintRecord>,
    /// Whether it passed.
    #[serde(default)]
    pub passed: bool,
    /// What earlier passes kept under it.
    #[serde(default, deserialize_with = "rows")]
    pub on_top_of: Vec<String>,
}

/// The combination against itself without one member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WithoutRecord {
    /// The member left out (`knob=level`).
    pub change: String,
    /// The effect of leaving it out.
    pub effect: EffectRecord,
    /// Whether the loss without it is proven.
    pub needed: bool,
}

/// A constraint checked in a re-check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConstraintRecord {
    /// The constraint, as written.
    pub constraint: String,
    /// The watched response's effect.
    pub effect: EffectRecord,
    /// Whether it holds.
    pub holds: bool,
}

/// One pass of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassRecord {
    /// What earlier passes kept (`knob=level`).
    #[serde(default, deserialize_with = "rows")]
    pub on_top_of: Vec<String>,
    /// Seq of its first run.
    pub first_run: usize,
    /// Seq after its race's last run.
    pub race_end: usize,
    /// Rounds of its race.
    pub rounds: u32,
}

/// Why an autotune results file was refused.
#[derive(Debug, thiserror::Error)]
pub enum AutotuneResultsError {
    /// The text is not JSON (or ends early).
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    /// JSON, but a field has the wrong shape.
    #[error("not an autotune results file: {0}")]
    Shape(serde_json::Error),
}

impl From<serde_json::Error> for AutotuneResultsError {
    fn from(e: serde_json::Error) -> Self {
        if e.is_data() {
            AutotuneResultsError::Shape(e)
        } else {
            AutotuneResultsError::NotJson(e)
        }
    }
}

impl AutotuneResults {
    /// Read a results document (any of its versions up to this one's; the
    /// caller checks [`AutotuneResults::schema_version`]).
    pub fn from_json(text: &str) -> Result<AutotuneResults, AutotuneResultsError> {
        Ok(serde_json::from_str(text)?)
    }

    /// Read a results document already parsed.
    pub fn from_value(v: serde_json::Value) -> Result<AutotuneResults, AutotuneResultsError> {
        Ok(serde_json::from_value(v)?)
    }

    /// The document as results.json holds it: pretty, keys sorted (as
    /// `json!` built it before it had a type).
    pub fn to_json_pretty(&self) -> Result<String, AutotuneResultsError> {
        Ok(serde_json::to_string_pretty(&serde_json::to_value(self)?)?)
    }
}

fn rows<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    crate::bounded::vec_at_most(d, MAX_ROWS)
}

fn runs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<TraceRun>, D::Error> {
    crate::bounded::vec_at_most(d, MAX_TRACE_RUNS)
}

/// A number, or `null` (what a NaN is written as) as NaN.
fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

fn values<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    let m: BTreeMap<String, Option<f64>> = crate::bounded::map_at_most(d, MAX_ROWS)?;
    Ok(m.into_iter()
        .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
        .collect())
}

#[cfg(test)]
mod tests;

/// What `nettune autotune --recheck DIR --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecheckOutput {
    /// Whether every measured arm still holds.
    pub all_hold: bool,
    /// The accepted setting, then each change alone.
    pub rows: Vec<RecheckRow>,
    /// Runs used.
    pub runs_used: usize,
    /// Every run, in order.
    pub trace: Vec<TraceRun>,
    /// The objective re-checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// The results file re-checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<PathBuf>,
}

/// One arm of a re-check against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecheckRow {
    /// `knob=level`, or the changes joined by ` + `.
    pub changes: String,
    /// Whether this is the whole accepted setting.
    pub combined: bool,
    /// Its effect (`None`: not measured, budget).
    pub effect: Option<EffectRecord>,
    /// Whether it still holds.
    pub holds: bool,
}

impl RecheckOutput {
    /// The output, pretty, keys sorted (as `json!` built it before).
    pub fn to_json_pretty(&self) -> Result<String, AutotuneResultsError> {
        Ok(serde_json::to_string_pretty(&serde_json::to_value(self)?)?)
    }
}
