//! `nettune autotune --recheck DIR`: measure a saved result again on the
//! same host. The baseline, the accepted setting and (budget permitting)
//! each accepted change with what it was kept on top of (alone, for a
//! first pass's change) are run in a seeded random interleaved order,
//! `repeats` runs each. The setting is compared with the baseline, each
//! change with what it was kept on top of, and each holds when its interval
//! excludes zero on the better side by at least the practical threshold
//! (the verdict "gain" of `model::stats::compare`).

use std::sync::atomic::Ordering;

use model::experiment::{Knob, Level};
use model::results::autotune::{RecheckOutput, RecheckRow, TraceRun};
use model::stats::{compare_by, BootstrapConfig, SplitMix64, Statistic, Verdict};
use tune::autotune::{AutotuneError, Effect};

use super::drive::{measure, Measured, RunTrace};
use super::results::{effect, trace_run};
use super::{AutotuneRunError, DriveConfig};
use crate::exec::{ExecError, Executor};

/// Parameters of a re-check.
#[derive(Debug, Clone, PartialEq)]
pub struct RecheckConfig {
    /// Runs per arm (at least 3).
    pub repeats: usize,
    /// Most runs in all; arms of single changes are left out first.
    pub budget: usize,
    /// Seed of the run order and of the bootstrap.
    pub seed: u64,
    /// Practical threshold, % of the baseline.
    pub min_effect_pct: f64,
    /// The statistic of the objective's runs (the search's).
    pub statistic: Statistic,
}

/// One arm re-checked against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// `knob=level`, or the changes joined by ` + ` for the setting.
    pub label: String,
    /// Whether this is the whole accepted setting (several changes).
    pub combined: bool,
    /// Its effect on the objective (`None`: not measured, budget).
    pub effect: Option<Effect>,
    /// Whether it still holds.
    pub holds: bool,
}

/// The result of a re-check.
#[derive(Debug, Clone, PartialEq)]
pub struct RecheckReport {
    /// The accepted setting, then each change alone.
    pub rows: Vec<Held>,
    /// Every run, in order.
    pub trace: Vec<RunTrace>,
    /// The statistic the effects are of.
    pub statistic: Statistic,
}

impl RecheckReport {
    /// Whether every measured arm still holds.
    pub fn all_hold(&self) -> bool {
        self.rows
            .iter()
            .filter(|r| r.effect.is_some())
            .all(|r| r.holds)
    }

    /// The rows as a table.
    pub fn render(&self) -> String {
        let width = self
            .rows
            .iter()
            .map(|r| r.label.chars().count())
            .max()
            .unwrap_or(0)
            .max("change".len());
        let mut out = format!(
            "{:<width$}  {:<32}  verdict\n",
            "change",
            format!("effect ({}, 95 %)", self.statistic)
        );
        for r in &self.rows {
            let (effect, verdict) = match &r.effect {
                None => ("not measured alone".to_string(), "budget"),
                Some(e) if r.holds => (e.to_string(), "holds"),
                Some(e) => (e.to_string(), "no longer holds"),
            };
            out.push_str(&format!("{:<width$}  {effect:<32}  {verdict}\n", r.label));
        }
        out.push_str(&format!("runs {}\n", self.trace.len()));
        out
    }

    /// The report as `--recheck --json` prints it (the caller adds the
    /// objective and the results file).
    pub fn output(&self) -> RecheckOutput {
        RecheckOutput {
            all_hold: self.all_hold(),
            rows: self
                .rows
                .iter()
                .map(|r| RecheckRow {
                    changes: r.label.clone(),
                    combined: r.combined,
                    effect: r.effect.as_ref().map(effect),
                    holds: r.holds,
                })
                .collect(),
            runs_used: self.trace.len(),
            // The re-check's trace says nothing of what limited its runs.
            trace: self
                .trace
                .iter()
                .map(|r| TraceRun {
                    limited_by: None,
                    ..trace_run(r)
                })
                .collect(),
            objective: None,
            results: None,
        }
    }
}

fn label(changes: &[(Knob, Level)]) -> String {
    let names: Vec<String> = changes
        .iter()
        .map(|(k, l)| format!("{}={l}", k.name()))
        .collect();
    if names.is_empty() {
        "baseline".into()
    } else {
        names.join(" + ")
    }
}

/// One row of a re-check: an arm against another (or the baseline).
#[derive(Debug, Clone, PartialEq)]
struct RowPlan {
    label: String,
    combined: bool,
    /// Index into the arms.
    arm: usize,
    /// The arm it is compared with; `None`: the baseline.
    against: Option<usize>,
}

/// The index of `setting` among `arms`, added if new.
fn arm_index(arms: &mut Vec<Vec<(Knob, Level)>>, setting: Vec<(Knob, Level)>) -> usize {
    let sorted = |v: &[(Knob, Level)]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    let key = sorted(&setting);
    if let Some(i) = arms.iter().position(|a| sorted(a) == key) {
        return i;
    }
    arms.push(setting);
    arms.len() - 1
}

/// The arms (the baseline aside) and rows of a re-check of `accepted`:
/// the whole setting against the baseline; then, when there are several
/// changes and the budget pays for their arms, each change against what
/// it was kept on top of (`on_top_of`, parallel to `accepted`; the
/// baseline for a change of the first pass), as the search proved it.
fn plan(
    accepted: &[(Knob, Level)],
    on_top_of: &[Vec<(Knob, Level)>],
    cfg: &RecheckConfig,
) -> (Vec<Vec<(Knob, Level)>>, Vec<RowPlan>) {
    let mut arms = Vec::new();
    let whole = arm_index(&mut arms, accepted.to_vec());
    let mut rows = vec![RowPlan {
        label: label(accepted),
        combined: accepted.len() > 1,
        arm: whole,
        against: None,
    }];
    if accepted.len() < 2 {
        return (arms, rows);
    }
    let mut more = arms.clone();
    let mut each = Vec::new();
    for (i, c) in accepted.iter().enumerate() {
        let under = on_top_of.get(i).cloned().unwrap_or_default();
        let mut setting = under.clone();
        setting.push(c.clone());
        let arm = arm_index(&mut more, setting);
        let against = (!under.is_empty()).then(|| arm_index(&mut more, under.clone()));
        let on_top = if under.is_empty() {
            String::new()
        } else {
            format!(" (on top of {})", label(&under))
        };
        each.push(RowPlan {
            label: format!("{}{on_top}", label(std::slice::from_ref(c))),
            combined: false,
            arm,
            against,
        });
    }
    let all = more.len().saturating_add(1).saturating_mul(cfg.repeats);
    if all <= cfg.budget {
        arms = more;
        rows.extend(each);
    } else {
        // Not measured: the rows say so.
        rows.extend(each.into_iter().map(|r| RowPlan {
            arm: usize::MAX,
            ..r
        }));
    }
    (arms, rows)
}

/// The arms of a re-check of `accepted` (the baseline aside): the whole
/// setting, then, when there are several changes and the budget pays,
/// each change with what it was kept on top of, and that setting.
pub fn arms(
    accepted: &[(Knob, Level)],
    on_top_of: &[Vec<(Knob, Level)>],
    cfg: &RecheckConfig,
) -> Vec<Vec<(Knob, Level)>> {
    plan(accepted, on_top_of, cfg).0
}

/// Re-check `accepted` on `exec` (`on_top_of`: per change, what the search
/// kept it on top of; empty for a first pass's change); `None` on Ctrl-C
/// (the current arm was rolled back). `on_run` is called after each run.
pub fn recheck(
    exec: &mut dyn Executor,
    drive: &DriveConfig,
    accepted: &[(Knob, Level)],
    on_top_of: &[Vec<(Knob, Level)>],
    cfg: &RecheckConfig,
    on_run: &mut dyn FnMut(&RunTrace, usize),
) -> Result<Option<RecheckReport>, AutotuneRunError> {
    let (arms, plans) = plan(accepted, on_top_of, cfg);
    // 0 is the baseline, i + 1 arm i.
    let mut order: Vec<usize> = Vec::new();
    for _ in 0..cfg.repeats {
        order.extend(0..=arms.len());
    }
    let mut rng = SplitMix64::new(cfg.seed);
    rng.shuffle(&mut order);
    let total = order.len();
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); arms.len().saturating_add(1)];
    let mut trace = Vec::new();
    for (seq, &a) in order.iter().enumerate() {
        if drive.cancel.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let changes: &[(Knob, Level)] = if a == 0 { &[] } else { &arms[a - 1] };
        let Measured {
            values: got,
            limited_by,
            others,
            drops,
        } = match measure(exec, drive, changes, seq) {
            Ok(v) => v,
            Err(ExecError::Cancelled) => return Ok(None),
            Err(_) if drive.cancel.load(Ordering::SeqCst) => return Ok(None),
            Err(e) => {
                return Err(AutotuneRunError::Run {
                    seq,
                    arm: label(changes),
                    source: e,
                })
            }
        };
        let value = got.get(drive.objective.key()).copied().unwrap_or(f64::NAN);
        if !value.is_finite() {
            return Err(AutotuneError::BadValue {
                seq,
                key: drive.objective.key(),
                value: value.to_string(),
            }
            .into());
        }
        values[a].push(value);
        let run = RunTrace {
            seq,
            arm: label(changes),
            value,
            values: got,
            limited_by,
            others,
            drops,
        };
        on_run(&run, total);
        trace.push(run);
    }
    let boot = BootstrapConfig {
        seed: cfg.seed ^ 0x005E_ED0F_B007,
        min_effect_pct: cfg.min_effect_pct,
        ..BootstrapConfig::default()
    };
    let mut rows = Vec::new();
    for p in plans {
        let Some(arm) = values.get(p.arm.saturating_add(1)) else {
            rows.push(Held {
                label: p.label,
                combined: p.combined,
                effect: None,
                holds: false,
            });
            continue;
        };
        let base = &values[p.against.map_or(0, |a| a.saturating_add(1))];
        let c = compare_by(arm, base, drive.objective.direction(), &boot, cfg.statistic)
            .map_err(AutotuneError::from)?;
        rows.push(Held {
            label: p.label,
            combined: p.combined,
            effect: Some(Effect::of(&c)),
            holds: c.verdict == Verdict::Gain,
        });
    }
    Ok(Some(RecheckReport {
        rows,
        trace,
        statistic: cfg.statistic,
    }))
}
