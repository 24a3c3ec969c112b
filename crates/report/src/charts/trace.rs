//! The search trace chart of an autotune result: each candidate's change of
//! the objective against the baseline after each race round, with its 95 %
//! bootstrap interval, over the run number; then each re-check on fresh
//! runs; the practical-threshold band and the baseline at zero.

use model::stats::{compare_by, BootstrapConfig, Direction};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::forest::BAND;
use super::key::{draw_key, Mark, KEY_PX};
use super::{clean, extent, render_sized, span, tick_num, Chart, FONT, GAIN, GRID, REGRESSION};
use crate::autotune::{AutotuneResults, Eff, PassView};
use crate::esc;
use crate::ReportError;

/// Candidates charted.
pub(crate) const MAX_CANDIDATES: usize = 24;
/// Rounds charted per candidate.
const MAX_ROUNDS: usize = 64;
const WIDTH: u32 = 1000;
const HEIGHT: u32 = 520;
/// The search's bootstrap seed is its seed with these bits flipped
/// (`tune::autotune::SearchConfig::bootstrap`): the same seed on the same
/// runs gives the search's own intervals.
const BOOTSTRAP_SEED_XOR: u64 = 0x005E_ED0F_B007;
/// Resamples of the search's bootstrap (`SearchConfig::new`).
const SEARCH_RESAMPLES: usize = 1000;

const NOTE_TRACE: &str = "x: the run number; y: the change of the objective's median (or mean, as the y axis says) against the baseline's, in %, with its 95 % bootstrap interval as a bar. One point per candidate and race round, at the round's last run (candidates of a round side by side); the last point of each candidate is the search's own interval, earlier ones are recomputed from the runs so far by the same rule and seed. Triangles: the re-checks of the winners against fresh baseline runs. Green: accepted (or a re-check that passed), red: rejected (or a re-check that failed). Shaded band: ±min-effect, inside which a change counts as none; the line at 0 is the baseline. A forward pass (after a kept gain large enough to move the operating point) races the knobs left alone on top of what was kept: its points are against that setting, its own baseline, and are named \"+ change\" (the tables say on top of what).";

/// One point of the chart.
struct Point {
    x: f64,
    estimate: f64,
    lo: f64,
    hi: f64,
    kept: bool,
    recheck: bool,
    /// The candidate's name, on its last point.
    label: Option<String>,
}

fn point(x: f64, e: &Eff, kept: bool, recheck: bool) -> Option<Point> {
    if !e.relative() {
        return None;
    }
    let (estimate, lo, hi) = (clean(e.estimate)?, clean(e.lo)?, clean(e.hi)?);
    Some(Point {
        x,
        estimate,
        lo: lo.min(estimate),
        hi: hi.max(estimate),
        kept,
        recheck,
        label: None,
    })
}

fn points(r: &AutotuneResults) -> Vec<Point> {
    let passes = r.pass_views();
    let mut out = Vec::new();
    for (k, pass) in passes.iter().enumerate() {
        let next = passes.get(k + 1).map_or(r.trace.len(), |p| p.first_run);
        pass_points(r, pass, next, &mut out);
    }
    out
}

/// The points of one pass: its candidates per race round against the
/// pass's baseline (what earlier passes kept), then its re-checks, whose
/// runs end before `next` (the next pass's first run).
fn pass_points(r: &AutotuneResults, pass: &PassView, next: usize, out: &mut Vec<Point>) {
    let ends = r.round_ends_in(pass);
    let race = r.trace.get(pass.first_run..pass.race_end).unwrap_or(&[]);
    let base_arm = if pass.on_top_of.is_empty() {
        "baseline".to_string()
    } else {
        pass.on_top_of.join(" + ")
    };
    let base: Vec<(usize, f64)> = race
        .iter()
        .filter(|t| t.arm == base_arm)
        .map(|t| (t.seq, t.value))
        .collect();
    let direction = if r.direction == "lower" {
        Direction::LowerIsBetter
    } else {
        Direction::HigherIsBetter
    };
    let boot = BootstrapConfig {
        seed: r.seed.unwrap_or(0) ^ BOOTSTRAP_SEED_XOR,
        resamples: SEARCH_RESAMPLES,
        min_effect_pct: r.min_effect_pct,
        ..BootstrapConfig::default()
    };
    let candidates: Vec<(&crate::autotune::Decided, bool)> = r
        .accepted
        .iter()
        .map(|d| (d, true))
        .chain(r.rejected.iter().map(|d| (d, false)))
        .filter(|(d, _)| d.on_top_of == pass.on_top_of)
        .take(MAX_CANDIDATES)
        .collect();
    let m = candidates.len();
    for (j, (d, kept)) in candidates.iter().enumerate() {
        // Side by side within a round: at most half a run apart.
        let offset = (j as f64 - (m as f64 - 1.0) / 2.0) * 0.5;
        let arm = d.arm();
        let runs: Vec<(usize, f64)> = race
            .iter()
            .filter(|t| t.arm == arm)
            .map(|t| (t.seq, t.value))
            .collect();
        let blocks = (runs.len() / r.repeats).min(MAX_ROUNDS);
        let first = out.len();
        for k in 1..=blocks {
            let n = k * r.repeats;
            let nb = n.min(base.len());
            let Some(b_at) = base.get(nb.saturating_sub(1)) else {
                break;
            };
            // At the round's last run (an interrupted search, whose rounds
            // are not known: the later of the arm's and the baseline's).
            let at = ends
                .get(k - 1)
                .map_or(runs[n - 1].0.max(b_at.0), |e| e.saturating_sub(1));
            let x = at as f64 + offset;
            let stored = (k == blocks).then_some(d.race.as_ref()).flatten();
            let eff = match stored {
                Some(e) => Some(e.clone()),
                None => {
                    let cell: Vec<f64> = runs[..n].iter().map(|v| v.1).collect();
                    let b: Vec<f64> = base[..nb].iter().map(|v| v.1).collect();
                    compare_by(&cell, &b, direction, &boot, r.statistic)
                        .ok()
                        .and_then(|c| {
                            let p = c.change_pct?;
                            Some(Eff {
                                estimate: p.estimate,
                                lo: p.lo,
                                hi: p.hi,
                                unit: "%".into(),
                                verdict: String::new(),
                                runs: n,
                                baseline_runs: nb,
                            })
                        })
                }
            };
            if let Some(p) = eff.and_then(|e| point(x, &e, *kept, false)) {
                out.push(p);
            }
        }
        if let Some(last) = out.get_mut(first..).and_then(|s| s.last_mut()) {
            // A later pass's change: `+ change`, on top of its baseline.
            let name = if d.on_top_of.is_empty() {
                d.label.clone()
            } else {
                format!("+ {}", d.label)
            };
            last.label = Some(esc::label(&name, 40));
        }
    }
    // A re-check at the last run of its arm (the re-checks of a
    // combination and of its best member share their batches).
    let after = r.trace.get(pass.race_end..next).unwrap_or(&[]);
    for c in r
        .rechecks
        .iter()
        .filter(|c| c.on_top_of == pass.on_top_of)
        .take(MAX_CANDIDATES)
    {
        let last = after
            .iter()
            .rev()
            .find(|t| t.arm == c.arm)
            .map_or(next.saturating_sub(1), |t| t.seq);
        let x = last as f64;
        if let Some(mut p) = c.effect.as_ref().and_then(|e| point(x, e, c.passed, true)) {
            p.label = Some(format!("re-check {}", esc::label(&c.label, 60)));
            out.push(p);
        }
    }
}

/// The search trace chart, `None` when there is no point to draw.
pub(crate) fn trace(r: &AutotuneResults) -> Result<Option<Chart>, ReportError> {
    let pts = points(r);
    if pts.is_empty() {
        return Ok(None);
    }
    let threshold = clean(r.min_effect_pct).map_or(0.0, f64::abs).min(100.0);
    let (lo, hi) = extent(
        pts.iter()
            .flat_map(|p| [p.lo, p.hi])
            .chain([0.0, -threshold, threshold]),
    )
    .unwrap_or((-1.0, 1.0));
    let (y0, y1) = span(lo, hi);
    let runs = r.trace.len().max(r.runs_used).max(1) as f64;
    // Room on the right for the names of the last points.
    let (x0, x1) = (-1.0, runs * 1.1 + 1.0);
    let better = if r.direction == "lower" {
        "lower is better"
    } else {
        "higher is better"
    };
    let title = format!(
        "Search trace: {} ({}), change against the baseline per round, 95 % interval",
        esc::label(&r.objective, 30),
        esc::label(&r.metric, 30)
    );
    let y_desc = format!("change of the {} vs baseline (%), {better}", r.statistic);
    let band_name = format!("±{} % practical threshold", tick_num(threshold));
    let size = (WIDTH, HEIGHT);
    let chart = render_sized(
        "chart-autotune-trace".into(),
        title,
        NOTE_TRACE,
        size,
        |root, title| {
            let (main, foot) = root.split_vertically(size.1.saturating_sub(KEY_PX));
            let mut chart = ChartBuilder::on(&main)
                .caption(title, (FONT, 18))
                .margin(14)
                .x_label_area_size(44)
                .y_label_area_size(70)
                .build_cartesian_2d(x0..x1, y0..y1)?;
            let yfmt = |v: &f64| format!("{} %", tick_num(*v));
            let xfmt = |v: &f64| tick_num(*v);
            chart
                .configure_mesh()
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 13))
                .light_line_style(GRID)
                .y_label_formatter(&yfmt)
                .x_label_formatter(&xfmt)
                .x_desc("run number (race rounds, then the re-checks)")
                .y_desc(y_desc)
                .draw()?;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, -threshold), (x1, threshold)],
                BAND.filled(),
            )))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x0, 0.0), (x1, 0.0)],
                BLACK.stroke_width(1),
            )))?;
            let color = |p: &Point| if p.kept { GAIN } else { REGRESSION };
            chart.draw_series(pts.iter().map(|p| {
                PathElement::new(vec![(p.x, p.lo), (p.x, p.hi)], color(p).stroke_width(2))
            }))?;
            for p in &pts {
                let c = color(p);
                if p.recheck {
                    chart.draw_series(std::iter::once(TriangleMarker::new(
                        (p.x, p.estimate),
                        7,
                        c.filled(),
                    )))?;
                } else {
                    chart.draw_series(std::iter::once(Circle::new(
                        (p.x, p.estimate),
                        4,
                        c.filled(),
                    )))?;
                }
            }
            let label_font = (FONT, 11).into_font().color(&BLACK);
            // Each candidate's name beside its last point, 6 px to the
            // right; every other one above, the rest below, so that names
            // of close points do not print over each other.
            for (i, (p, l)) in pts
                .iter()
                .filter_map(|p| Some((p, p.label.as_ref()?)))
                .enumerate()
            {
                let dy = if i % 2 == 0 { -14 } else { 2 };
                // In the right third, the name goes left of its point.
                let (dx, font) = if p.x > x0 + (x1 - x0) * 0.66 {
                    (-8, label_font.pos(Pos::new(HPos::Right, VPos::Top)))
                } else {
                    (6, label_font.clone())
                };
                chart.draw_series(std::iter::once(
                    EmptyElement::at((p.x, p.estimate)) + Text::new(l.clone(), (dx, dy), font),
                ))?;
            }
            draw_key(
                &foot,
                &[
                    (Mark::Dot(GAIN, 4), "accepted", 100),
                    (Mark::Dot(REGRESSION, 4), "rejected", 100),
                    (Mark::Triangle(BLACK), "re-check on fresh runs", 190),
                    (Mark::Upright, "95 % bootstrap interval", 200),
                    (Mark::Band(BAND), band_name.as_str(), 0),
                ],
            )?;
            Ok(())
        },
    )?;
    Ok(Some(chart))
}
