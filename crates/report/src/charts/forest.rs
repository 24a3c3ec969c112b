//! The forest plot at the top of the page: every metric's change against
//! the baseline, cell by cell, with its interval and the practical
//! threshold band, so an A/B result reads at a glance.

use model::results::{CellResult, ExperimentResults};
use model::stats::Verdict;
use plotters::prelude::*;

use super::key::{draw_key, Mark, KEY_PX};
use super::{
    clean, extent, ran_cells, render_sized, slots, span, stat_pairs, stats_of, tick_num, Chart,
    CHANGED, FONT, GAIN, GRID, INCONCLUSIVE, NOTE_FOREST, NO_CHANGE, REGRESSION,
};
use crate::esc;
use crate::num::metric_name;
use crate::ReportError;

/// Rows of the forest plot (metric × cell).
pub(crate) const MAX_FOREST_ROWS: usize = 48;
/// Fill of the practical-threshold band (a pale amber no series uses).
pub(crate) const BAND: RGBColor = RGBColor(255, 238, 186);
/// Canvas width; the height grows with the rows.
const WIDTH: u32 = 1000;
/// Pixels per row.
const ROW_PX: u32 = 24;
/// Pixels above and below the rows: caption, x axis, legend.
const FRAME_PX: u32 = 150;

/// One row: a metric of a cell against the baseline, in %.
struct Row {
    label: String,
    estimate: f64,
    lo: f64,
    hi: f64,
    verdict: Verdict,
}

fn verdict_color(v: Verdict) -> RGBColor {
    match v {
        Verdict::Gain => GAIN,
        Verdict::Regression => REGRESSION,
        Verdict::NoChange => NO_CHANGE,
        Verdict::Changed => CHANGED,
        Verdict::Inconclusive => INCONCLUSIVE,
    }
}

/// A cell's name in a row: its index and levels' values, longer than on
/// the other charts' axes (the row has the room), else its label.
fn cell_name(c: &CellResult) -> String {
    let name = if c.levels.is_empty() {
        c.label.clone()
    } else {
        let values: Vec<&str> = c.levels.iter().take(8).map(|(_, v)| v.as_str()).collect();
        values.join(" · ")
    };
    format!("#{} {}", c.index, esc::label(&name, 34))
}

/// The rows, metric by metric (the bar charts' order), cells by index;
/// only comparisons with a % change (a zero baseline has none).
fn rows(r: &ExperimentResults) -> Vec<Row> {
    let mut out = Vec::new();
    for (workload, metric) in stat_pairs(r) {
        for c in ran_cells(r, usize::MAX) {
            if c.index == r.baseline_cell {
                continue;
            }
            let Some(v) = stats_of(c, &workload, metric).and_then(|s| s.vs_baseline.as_ref())
            else {
                continue;
            };
            let Some(p) = v.change_pct.as_ref() else {
                continue;
            };
            let (Some(estimate), Some(lo), Some(hi)) =
                (clean(p.estimate), clean(p.lo), clean(p.hi))
            else {
                continue;
            };
            out.push(Row {
                label: format!(
                    "{} · {} {}",
                    cell_name(c),
                    esc::label(&workload, 16),
                    metric_name(metric)
                ),
                estimate,
                lo: lo.min(estimate),
                hi: hi.max(estimate),
                verdict: v.verdict,
            });
            if out.len() >= MAX_FOREST_ROWS {
                return out;
            }
        }
    }
    out
}

/// The forest plot of `r`, `None` when no cell has a % change against the
/// baseline (a single cell, one repeat, a zero baseline).
pub(crate) fn forest(r: &ExperimentResults) -> Result<Option<Chart>, ReportError> {
    let rows = rows(r);
    if rows.is_empty() {
        return Ok(None);
    }
    let threshold = clean(r.min_effect_pct).map_or(0.0, f64::abs).min(100.0);
    let (lo, hi) = extent(
        rows.iter()
            .flat_map(|w| [w.lo, w.hi])
            .chain([0.0, -threshold, threshold]),
    )
    .unwrap_or((-1.0, 1.0));
    let (x0, x1) = span(lo, hi);
    let n = rows.len();
    let slot_count = slots(n).end + 1;
    let rows_px = u32::try_from(slot_count)
        .unwrap_or(u32::MAX)
        .saturating_mul(ROW_PX);
    let size = (WIDTH, FRAME_PX.saturating_add(rows_px));
    let title = format!(
        "Change against the baseline, every metric and cell (95 % interval, ±{} % threshold shaded)",
        tick_num(threshold)
    );
    let band_name = format!("±{} % practical threshold", tick_num(threshold));
    let chart = render_sized(
        "chart-forest".into(),
        title,
        NOTE_FOREST,
        size,
        |root, title| {
            let (main, foot) = root.split_vertically(size.1.saturating_sub(KEY_PX));
            // Row j of the axis (counted from the bottom) is rows[n - 1 - j]:
            // the first row on top.
            let row_at = |j: usize| n.checked_sub(j + 1).and_then(|i| rows.get(i));
            let mut chart = ChartBuilder::on(&main)
                .caption(title, (FONT, 18))
                .margin(14)
                .x_label_area_size(44)
                .y_label_area_size(360)
                .build_cartesian_2d(x0..x1, slots(n).into_segmented())?;
            let yfmt = |v: &SegmentValue<usize>| match v {
                SegmentValue::CenterOf(j) => {
                    row_at(*j).map(|w| w.label.clone()).unwrap_or_default()
                }
                _ => String::new(),
            };
            let xfmt = |v: &f64| format!("{} %", tick_num(*v));
            chart
                .configure_mesh()
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 13))
                .disable_y_mesh()
                .light_line_style(GRID)
                .y_labels(slot_count)
                .y_label_formatter(&yfmt)
                .x_label_formatter(&xfmt)
                .x_desc("change of the median against the baseline (%)")
                .draw()?;
            let bottom = SegmentValue::Exact(0);
            chart.draw_series(std::iter::once(Rectangle::new(
                [
                    (-threshold, bottom.clone()),
                    (threshold, SegmentValue::Last),
                ],
                BAND.filled(),
            )))?;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(0.0, bottom), (0.0, SegmentValue::Last)],
                BLACK.stroke_width(1),
            )))?;
            let y = |i: usize| SegmentValue::CenterOf(n.saturating_sub(i + 1));
            chart.draw_series(rows.iter().enumerate().map(|(i, w)| {
                PathElement::new(
                    vec![(w.lo, y(i)), (w.hi, y(i))],
                    verdict_color(w.verdict).stroke_width(2),
                )
            }))?;
            for (i, w) in rows.iter().enumerate() {
                let at = (w.estimate, y(i));
                let c = verdict_color(w.verdict);
                match w.verdict {
                    Verdict::Gain | Verdict::Changed => {
                        chart.draw_series(std::iter::once(Circle::new(at, 5, c.filled())))?;
                    }
                    Verdict::Regression => {
                        chart.draw_series(std::iter::once(TriangleMarker::new(
                            at,
                            7,
                            c.filled(),
                        )))?;
                    }
                    Verdict::NoChange | Verdict::Inconclusive => {
                        chart.draw_series(std::iter::once(Circle::new(
                            at.clone(),
                            5,
                            WHITE.filled(),
                        )))?;
                        chart.draw_series(std::iter::once(Circle::new(
                            at,
                            5,
                            c.stroke_width(2),
                        )))?;
                    }
                }
            }
            // The key, in a strip under the plot.
            draw_key(
                &foot,
                &[
                    (Mark::Dot(GAIN, 5), "gain", 80),
                    (Mark::Triangle(REGRESSION), "regression", 120),
                    (Mark::Ring(NO_CHANGE, 5), "no change", 110),
                    (Mark::Ring(INCONCLUSIVE, 5), "inconclusive", 120),
                    (Mark::Dot(CHANGED, 5), "changed (no better side)", 170),
                    (Mark::Across, "95 % interval of the change", 190),
                    (Mark::Band(BAND), band_name.as_str(), 0),
                ],
            )?;
            Ok(())
        },
    )?;
    Ok(Some(chart))
}
