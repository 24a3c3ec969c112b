//! A cell against its baseline: difference of medians (or of means) with its
//! own bootstrap interval, and a verdict per metric.

use std::fmt;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::bootstrap::{interval_sample, median_interval, resample_median};
use super::summary::{median_sorted, summarize};
use super::{BootstrapConfig, Interval, SplitMix64, StatsError, Summary};

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Throughput, transactions/s: more is better.
    HigherIsBetter,
    /// Latency, CPU per work, loss: less is better.
    LowerIsBetter,
    /// CPU and softirq %: neither way is better by itself (a rise may
    /// come with more work done), so a change is only "changed".
    Neither,
}

/// What a comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The difference's interval (and the % change's) excludes zero, on
    /// the better side.
    Gain,
    /// The difference's interval (and the % change's) excludes zero, on
    /// the worse side.
    Regression,
    /// The whole interval of the change lies within ± the practical
    /// threshold: whatever changed is too small to matter.
    NoChange,
    /// A change the interval shows, of a metric that is neither better nor
    /// worse by itself ([`Direction::Neither`]).
    Changed,
    /// The runs cannot tell: the interval reaches past the practical
    /// threshold on one side and does not exclude zero, or excludes zero
    /// with a change smaller than the threshold while reaching past it
    /// ([`Comparison::more_runs`] says about how many more runs would tell).
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Gain => "gain",
            Verdict::Regression => "regression",
            Verdict::NoChange => "no change",
            Verdict::Changed => "changed",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

/// The statistic a comparison takes of each sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// The median: robust to an outlying run.
    #[default]
    Median,
    /// The mean: for a rate, what a user gets over time. Where runs fall in
    /// two modes (the lab's unpinned TCP runs are about 17 or 32 Gbit/s),
    /// the median jumps between them under resampling and its interval
    /// stays wide; the mean's narrows with the runs.
    ///
    /// A percentile bootstrap of a mean is too narrow on few runs (it
    /// divides the variance by n, and takes normal quantiles), so its
    /// interval is widened about the estimate to a Welch t interval's
    /// width (the "expanded percentile" interval); the factor tends to 1
    /// as the runs grow.
    Mean,
}

impl Statistic {
    /// The name used in flags and results.json.
    pub fn name(self) -> &'static str {
        match self {
            Statistic::Median => "median",
            Statistic::Mean => "mean",
        }
    }

    /// The statistic named `s` (`median` or `mean`).
    pub fn parse(s: &str) -> Option<Statistic> {
        match s {
            "median" => Some(Statistic::Median),
            "mean" => Some(Statistic::Mean),
            _ => None,
        }
    }

    fn of_sorted(self, sorted: &[f64]) -> f64 {
        match self {
            Statistic::Median => median_sorted(sorted),
            Statistic::Mean => mean_of(sorted.iter().copied()),
        }
    }

    fn of_resample(self, sorted: &[f64], idx: &mut [usize], rng: &mut SplitMix64) -> f64 {
        match self {
            Statistic::Median => resample_median(sorted, idx, rng),
            Statistic::Mean => {
                let n = sorted.len();
                mean_of(idx.iter_mut().map(|slot| {
                    *slot = rng.below(n);
                    sorted[*slot]
                }))
            }
        }
    }
}

/// How much the percentile interval of `stat` is widened about its
/// estimate for samples `c` and `b` at `level` (1 for the median): the
/// ratio of the Welch standard error to the bootstrap's (which divides the
/// variances by n, not n − 1), times t over z quantiles at the Welch–
/// Satterthwaite degrees of freedom.
fn widening(stat: Statistic, c: &[f64], b: &[f64], level: f64) -> f64 {
    if stat == Statistic::Median {
        return 1.0;
    }
    let var = |x: &[f64]| {
        let m = mean_of(x.iter().copied());
        let ss: f64 = x.iter().map(|v| (v - m) * (v - m)).sum();
        ss / (x.len() as f64 - 1.0)
    };
    let (nc, nb) = (c.len() as f64, b.len() as f64);
    let (wc, wb) = (var(c) / nc, var(b) / nb);
    let welch = wc + wb;
    let boot = wc * (nc - 1.0) / nc + wb * (nb - 1.0) / nb;
    if !(boot > 0.0 && welch.is_finite()) {
        return 1.0;
    }
    let df = welch * welch / (wc * wc / (nc - 1.0) + wb * wb / (nb - 1.0));
    let df = if df.is_finite() && df >= 1.0 {
        df
    } else {
        (nc.min(nb) - 1.0).max(1.0)
    };
    let p = 1.0 - (1.0 - level) / 2.0;
    let t = StudentsT::new(0.0, 1.0, df).map(|d| d.inverse_cdf(p));
    let z = Normal::new(0.0, 1.0).map(|d| d.inverse_cdf(p));
    match (t, z) {
        (Ok(t), Ok(z)) => {
            let k = (welch / boot).sqrt() * t / z;
            if k.is_finite() && k >= 1.0 {
                k
            } else {
                1.0
            }
        }
        _ => 1.0,
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Running mean (no overflow on large values).
fn mean_of(values: impl Iterator<Item = f64>) -> f64 {
    let mut mean = 0.0;
    for (i, x) in values.enumerate() {
        mean += (x - mean) / (i + 1) as f64;
    }
    mean
}

/// How the change of a metric is measured against its baseline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeScale {
    /// Relative to the baseline, in % (`+12.3 %`): rates, latencies, CPU.
    #[default]
    Relative,
    /// A difference of percentage points (`+1.10 pp`), for a metric that is
    /// itself a share (loss %): a relative change of a share near zero
    /// means nothing (0 → 1 % is "+∞ %").
    Points,
}

impl ChangeScale {
    /// The unit a change is written in: `%` or `pp`.
    pub fn unit(self) -> &'static str {
        match self {
            ChangeScale::Relative => "%",
            ChangeScale::Points => "pp",
        }
    }

    fn is_relative(&self) -> bool {
        *self == ChangeScale::Relative
    }
}

/// The practical threshold of a change in percentage points
/// ([`ChangeScale::Points`]): a loss change smaller than one datagram in a
/// thousand is no change worth a name.
pub const MIN_EFFECT_POINTS: f64 = 0.1;

/// Most further runs [`Comparison::more_runs`] names; past it, "more
/// than" this.
pub const MAX_MORE_RUNS: u32 = 1_000;

/// A cell compared with its baseline, for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The cell's summary.
    pub cell: Summary,
    /// The baseline's summary.
    pub baseline: Summary,
    /// Interval of the cell's median.
    pub cell_median: Interval,
    /// Interval of the baseline's median.
    pub baseline_median: Interval,
    /// stat(cell) − stat(baseline), with its bootstrap interval (the
    /// median, unless compared with [`compare_by`]).
    pub difference: Interval,
    /// (stat(cell) / stat(baseline) − 1) × 100, with its interval; `None`
    /// when a baseline resample's statistic was zero, and on
    /// [`ChangeScale::Points`], where the difference is the change.
    pub change_pct: Option<Interval>,
    /// The metric's direction.
    pub direction: Direction,
    /// The verdict.
    pub verdict: Verdict,
    /// How the change is measured (absent in results.json: relative).
    #[serde(default, skip_serializing_if = "ChangeScale::is_relative")]
    pub scale: ChangeScale,
    /// For [`Verdict::Inconclusive`]: about how many more runs per cell
    /// (and baseline) would narrow the interval enough to decide, at the
    /// measured spread (the interval's width falls as one over the square
    /// root of the runs); at most [`MAX_MORE_RUNS`], which means "more
    /// than that". `None` otherwise, or when no number of runs would tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_runs: Option<u32>,
}

impl Comparison {
    /// The interval the verdict judges: the change in % on
    /// [`ChangeScale::Relative`] (the difference when the baseline is
    /// zero), the difference in points on [`ChangeScale::Points`].
    pub fn shown(&self) -> &Interval {
        match (&self.change_pct, self.scale) {
            (Some(p), ChangeScale::Relative) => p,
            _ => &self.difference,
        }
    }
}

/// Seed offset so the cell's and baseline's own intervals use other streams
/// than the difference's.
const STREAM: u64 = 0xA076_1D64_78BD_642F;

/// Compare a cell's values with its baseline's for a metric of `direction`.
///
/// The difference's interval is a percentile bootstrap: each replicate
/// resamples both samples independently and takes the difference (and the
/// ratio) of their medians. The verdict ([`judge`]) is gain or regression
/// (changed for [`Direction::Neither`]) when that interval, and the %
/// change's when there is one, exclude zero on the same side and the change
/// is at least `cfg.min_effect_pct` % of the baseline (the practical
/// threshold; with a zero baseline, where no % exists, the interval alone
/// decides); no change when the whole interval lies within ± the threshold;
/// inconclusive otherwise.
pub fn compare(
    cell: &[f64],
    baseline: &[f64],
    direction: Direction,
    cfg: &BootstrapConfig,
) -> Result<Comparison, StatsError> {
    compare_by(cell, baseline, direction, cfg, Statistic::Median)
}

/// [`compare`] on the statistic `stat` of each sample (the difference and
/// the change; `cell_median` and `baseline_median` stay medians). On
/// [`Statistic::Mean`] both intervals are widened for few runs (see there).
pub fn compare_by(
    cell: &[f64],
    baseline: &[f64],
    direction: Direction,
    cfg: &BootstrapConfig,
    stat: Statistic,
) -> Result<Comparison, StatsError> {
    compare_scaled(cell, baseline, direction, cfg, stat, ChangeScale::Relative)
}

/// [`compare_by`] with the change measured on `scale`: on
/// [`ChangeScale::Points`] the difference (in the metric's own %) is the
/// change, judged against [`MIN_EFFECT_POINTS`].
pub fn compare_scaled(
    cell: &[f64],
    baseline: &[f64],
    direction: Direction,
    cfg: &BootstrapConfig,
    stat: Statistic,
    scale: ChangeScale,
) -> Result<Comparison, StatsError> {
    cfg.validate()?;
    let c = interval_sample("cell", cell)?;
    let b = interval_sample("baseline", baseline)?;
    let (mc, mb) = (stat.of_sorted(&c), stat.of_sorted(&b));
    let mut rng = SplitMix64::new(cfg.seed);
    let mut ic = vec![0usize; c.len()];
    let mut ib = vec![0usize; b.len()];
    let mut diffs = Vec::with_capacity(cfg.resamples);
    let mut ratios = Vec::with_capacity(cfg.resamples);
    let mut ratio_defined = mb != 0.0 && scale == ChangeScale::Relative;
    for _ in 0..cfg.resamples {
        let rc = stat.of_resample(&c, &mut ic, &mut rng);
        let rb = stat.of_resample(&b, &mut ib, &mut rng);
        diffs.push(rc - rb);
        if rb == 0.0 {
            ratio_defined = false;
        } else if ratio_defined {
            ratios.push((rc / rb - 1.0) * 100.0);
        }
    }
    diffs.sort_by(f64::total_cmp);
    let k = widening(stat, &c, &b, cfg.level);
    let difference = Interval::from_replicates(mc - mb, &diffs, cfg.level).widened(k);
    let change_pct = if ratio_defined && ratios.iter().all(|r| r.is_finite()) {
        ratios.sort_by(f64::total_cmp);
        Some(Interval::from_replicates((mc / mb - 1.0) * 100.0, &ratios, cfg.level).widened(k))
    } else {
        None
    };
    let threshold = match (scale, &change_pct) {
        (ChangeScale::Points, _) => MIN_EFFECT_POINTS,
        (ChangeScale::Relative, Some(_)) => cfg.min_effect_pct,
        // A zero baseline has no %: the interval alone decides.
        (ChangeScale::Relative, None) => 0.0,
    };
    let shown = change_pct.unwrap_or(difference);
    let j = judge(
        &shown,
        &difference,
        threshold,
        direction,
        c.len().min(b.len()),
    );
    let own = |seed: u64| BootstrapConfig {
        seed: cfg.seed ^ seed,
        ..*cfg
    };
    Ok(Comparison {
        cell: summarize(cell)?,
        baseline: summarize(baseline)?,
        cell_median: median_interval(cell, &own(STREAM))?,
        baseline_median: median_interval(baseline, &own(STREAM.rotate_left(17)))?,
        difference,
        change_pct,
        direction,
        verdict: j.verdict,
        scale,
        more_runs: j.more_runs,
    })
}

/// What [`judge`] concluded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// For an inconclusive verdict, about how many more runs would tell.
    pub more_runs: Option<u32>,
}

/// The verdict on a change whose interval is `shown` (in % or points, with
/// the raw `difference` beside it, which must exclude zero on the same
/// side), for a practical threshold `threshold` in the same unit, from `n`
/// runs per sample:
/// - gain or regression (changed, for [`Direction::Neither`]): both
///   intervals exclude zero on one side, and the estimate reaches the
///   threshold;
/// - no change: the whole interval lies within ± the threshold;
/// - inconclusive: anything else, with about how many more runs per sample
///   would narrow the interval to decide at the measured spread.
pub fn judge(
    shown: &Interval,
    difference: &Interval,
    threshold: f64,
    direction: Direction,
    n: usize,
) -> Judgement {
    let above = shown.lo > 0.0 && difference.lo > 0.0;
    let under = shown.hi < 0.0 && difference.hi < 0.0;
    let reaches = shown.estimate.abs() >= threshold;
    let named = |up: bool| match (direction, up) {
        (Direction::Neither, _) => Verdict::Changed,
        (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => Verdict::Gain,
        _ => Verdict::Regression,
    };
    let verdict = if (above || under) && reaches {
        named(above)
    } else if shown.lo >= -threshold && shown.hi <= threshold {
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    };
    let more_runs = (verdict == Verdict::Inconclusive)
        .then(|| more_runs(shown, threshold, n))
        .flatten();
    Judgement { verdict, more_runs }
}

/// About how many more runs per sample would make `shown` decide: its
/// width falls as 1/√n, so the side that must move has to shrink by the
/// factor its distance to the bound it must clear allows.
fn more_runs(shown: &Interval, t: f64, n: usize) -> Option<u32> {
    let (e, lo, hi) = (shown.estimate, shown.lo, shown.hi);
    if !(e.is_finite() && lo.is_finite() && hi.is_finite()) || n == 0 {
        return None;
    }
    let ratio = |side: f64, room: f64| {
        if side <= 0.0 {
            0.0
        } else if room <= 0.0 {
            f64::INFINITY
        } else {
            (side / room).powi(2)
        }
    };
    let k = if e.abs() >= t && e != 0.0 {
        // Exclude zero: the side toward zero must come within |e|.
        if e > 0.0 {
            ratio(e - lo, e)
        } else {
            ratio(hi - e, -e)
        }
    } else if e.abs() < t {
        // Fit within ±t.
        ratio(e - lo, e + t).max(ratio(hi - e, t - e))
    } else {
        return None;
    };
    let n = n as f64;
    let more = (n * k - n).ceil().max(1.0);
    if !more.is_finite() || more >= f64::from(MAX_MORE_RUNS) {
        Some(MAX_MORE_RUNS)
    } else {
        Some(more as u32)
    }
}
