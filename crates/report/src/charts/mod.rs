//! The report's charts, drawn with plotters' SVG backend into strings.
//!
//! Every chart has a title, axis descriptions with units and a legend, and
//! its `<svg>` carries `id`, `role="img"` and `aria-label` so tests (and
//! screen readers) can find it. Work is bounded whatever the input: at most
//! [`MAX_SERIES`] lines per chart, [`MAX_POINTS`] points per line (evenly
//! decimated), [`MAX_BARS`] bars, and a fixed number of charts.

use model::experiment::Metric;
use model::results::{CellResult, CellStatus, ExperimentResults, MetricStats};
use model::stats::Verdict;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::data::{workload_names, MAX_METRICS};
use crate::esc;
use crate::num::{metric_name, Scale};
use crate::ReportError;

mod forest;
mod key;
mod series;
#[cfg(test)]
mod tests;
mod trace;

pub(crate) use forest::forest;
use series::{cdfs, heatmap, softirq, throughput};
pub(crate) use trace::trace;

/// Lines per chart.
pub(crate) const MAX_SERIES: usize = 12;
/// Points per line.
pub(crate) const MAX_POINTS: usize = 1000;
/// Bars (cells) per bar chart, and cells in the heat map.
pub(crate) const MAX_BARS: usize = 48;
/// Bar charts (workload × metric).
pub(crate) const MAX_BAR_CHARTS: usize = 32;
/// Workloads with a throughput or latency chart.
pub(crate) const MAX_WORKLOAD_CHARTS: usize = 8;
/// Cells with a softirq time-series chart.
pub(crate) const MAX_SOFTIRQ_CHARTS: usize = 6;
/// CPUs per softirq chart and in the heat map.
pub(crate) const MAX_CPUS: usize = 64;
/// Largest magnitude charted; beyond it a value is left out as garbage.
const MAX_MAGNITUDE: f64 = 1e15;

const SIZE: (u32, u32) = (820, 420);

const NOTE_BARS: &str = "Bars: the median of the measured runs (warm-ups left out); whiskers: the 95 % bootstrap interval of the median. Colour: the verdict against the baseline (an interval of the difference that excludes zero).";
const NOTE_THROUGHPUT: &str = "One measured run per cell (the first after the warm-ups), one dot per interval: dots, not lines, because consecutive intervals of one run are not a trend. Every run's raw intervals are under runs/ in the results directory.";
const NOTE_SOFTIRQ: &str =
    "Receiving side, one colour per CPU, one dot per sample (or per measured run): where the network's softirq work ran.";
const NOTE_CDF: &str =
    "From the request/response workload or the latency probe that ran alongside the load. Latency on a log scale, so the body and the tail both show.";
const NOTE_HEAT: &str =
    "Each CPU's softirq % averaged over the cell's measured runs, printed in its square; colour: viridis (dark 0 %, yellow 100 %, lightness rising evenly); grey: no data for that CPU.";
const NOTE_FOREST: &str = "Each row: one metric of one cell against the baseline. Dot: the change of the median in %; whisker: its 95 % bootstrap interval; shaded band: the practical threshold (±min-effect), inside which a change counts as none. Green: gain, red triangle: regression, grey ring: no change (the whole interval inside the band), amber ring: inconclusive (the interval reaches past the band without excluding zero), blue dot: changed, on a metric with no better side (CPU %, softirq %; judge CPU per unit of work instead) (for latency, lower is better, so a negative change is a gain).";
const FONT: &str = "sans-serif";

type DrawResult<T> = Result<T, DrawingAreaErrorKind<std::io::Error>>;
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// One chart: its element id, its caption and the SVG (whose `aria-label`
/// is the chart's title).
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    /// The `id` of the `<svg>`.
    pub id: String,
    /// What the chart shows, for its caption.
    pub note: &'static str,
    /// The `<svg>` element.
    pub svg: String,
}

/// A value fit to chart, or `None` (NaN, infinite, absurd).
fn clean(v: f64) -> Option<f64> {
    (v.is_finite() && v.abs() <= MAX_MAGNITUDE).then_some(v)
}

/// A non-empty axis range around `lo..hi`, padded by 5 %.
fn span(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) || lo > hi {
        return (0.0, 1.0);
    }
    let w = hi - lo;
    let pad = if w > 0.0 {
        w * 0.05
    } else {
        lo.abs().max(1.0) * 0.1
    };
    (lo - pad, hi + pad)
}

/// An axis tick or a threshold: a whole number without decimals (`2`,
/// `100`), else about three significant digits (`0.25`, `1.5`).
fn tick_num(v: f64) -> String {
    if v.is_finite() && v.abs() < 1e12 && (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        crate::num::num(v)
    }
}

/// `lo..hi` of some values, `None` when there are none.
fn extent(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// Line colours (Tableau 10: distinct, readable on white).
const LINE_COLORS: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    let (r, g, b) = LINE_COLORS[i % LINE_COLORS.len()];
    RGBColor(r, g, b)
}

/// Light grid lines.
const GRID: RGBColor = RGBColor(236, 236, 236);

/// The segments of `n` categories on a segmented axis (plotters' `0..k`
/// segmented has `k + 1` slots).
fn slots(n: usize) -> std::ops::Range<usize> {
    if n >= 2 {
        0..n - 1
    } else {
        0..1
    }
}

const BASELINE: RGBColor = RGBColor(70, 110, 190);
const GAIN: RGBColor = RGBColor(40, 150, 70);
const REGRESSION: RGBColor = RGBColor(200, 50, 50);
const NO_CHANGE: RGBColor = RGBColor(150, 150, 150);
/// A change past the threshold of a metric with no better side (CPU %,
/// softirq %: more work may need more CPU; `cpu_per_work` carries the verdict).
const CHANGED: RGBColor = RGBColor(49, 104, 142);
/// A change the runs cannot decide on (the interval straddles the
/// threshold).
const INCONCLUSIVE: RGBColor = RGBColor(200, 140, 20);

/// Matplotlib's viridis colour map (Stéfan van der Walt and Nathaniel Smith)
/// sampled at ten evenly spaced points, 0 to 1: its published values. Its
/// lightness rises evenly from dark violet to yellow, so equal steps of the
/// value look like equal steps of colour, also in grey and to the common
/// colour-vision deficiencies.
const VIRIDIS: [(u8, u8, u8); 10] = [
    (0x44, 0x01, 0x54),
    (0x48, 0x28, 0x78),
    (0x3e, 0x49, 0x89),
    (0x31, 0x68, 0x8e),
    (0x26, 0x82, 0x8e),
    (0x1f, 0x9e, 0x89),
    (0x35, 0xb7, 0x79),
    (0x6e, 0xce, 0x58),
    (0xb5, 0xde, 0x2b),
    (0xfd, 0xe7, 0x25),
];

/// Heat-map colour of a softirq % (0 to 100 %, viridis, linearly between
/// its samples).
fn heat(pct: f64) -> RGBColor {
    let t = if pct.is_finite() {
        (pct / 100.0).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let last = VIRIDIS.len() - 1;
    let pos = t * last as f64;
    let i = (pos.floor() as usize).min(last - 1);
    let u = pos - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let lerp = |x: u8, y: u8| {
        (f64::from(x) + (f64::from(y) - f64::from(x)) * u)
            .round()
            .clamp(0.0, 255.0) as u8
    };
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}

/// Relative luminance (WCAG 2) of a colour, 0 (black) to 1 (white).
fn luminance(c: RGBColor) -> f64 {
    let lin = |v: u8| {
        let s = f64::from(v) / 255.0;
        if s <= 0.040_45 {
            s / 12.92
        } else {
            ((s + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(c.0) + 0.7152 * lin(c.1) + 0.0722 * lin(c.2)
}

/// Text colour that reads on `fill`: black on light fills, white on dark
/// (whichever has the higher WCAG contrast ratio).
fn text_on(fill: RGBColor) -> RGBColor {
    let l = luminance(fill);
    // (1.05) / (l + 0.05) against white, (l + 0.05) / 0.05 against black.
    if (l + 0.05) * (l + 0.05) > 1.05 * 0.05 {
        BLACK
    } else {
        WHITE
    }
}

/// Put `id`, `role`, `aria-label` and a `<title>` on plotters' `<svg>`, and
/// drop its `xmlns` (inline SVG in HTML needs none, and the page then names
/// no URL at all).
fn tag(svg: String, id: &str, title: &str) -> String {
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let t = esc::html(title);
    let open = format!("<svg id=\"{id}\" class=\"chart\" role=\"img\" aria-label=\"{t}\" ");
    let svg = svg.replacen("<svg ", &open, 1);
    match svg.find('>') {
        Some(end) => format!("{}\n<title>{t}</title>{}", &svg[..=end], &svg[end + 1..]),
        None => svg,
    }
}

fn render(
    id: String,
    title: String,
    note: &'static str,
    draw: impl FnOnce(&Area<'_>, &str) -> DrawResult<()>,
) -> Result<Chart, ReportError> {
    render_sized(id, title, note, SIZE, draw)
}

/// [`render`] on a canvas of `size` pixels.
fn render_sized(
    id: String,
    title: String,
    note: &'static str,
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>, &str) -> DrawResult<()>,
) -> Result<Chart, ReportError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .and_then(|()| draw(&root, &title))
            .and_then(|()| root.present());
        drawn.map_err(|error| ReportError::Chart {
            chart: id.clone(),
            error,
        })?;
    }
    let svg = tag(svg, &id, &title);
    Ok(Chart { id, note, svg })
}

/// Cells that ran (done or interrupted), by index, at most `max`.
fn ran_cells(r: &ExperimentResults, max: usize) -> Vec<&CellResult> {
    let mut cells: Vec<&CellResult> = r
        .cells
        .iter()
        .filter(|c| matches!(c.status, CellStatus::Done | CellStatus::Interrupted))
        .collect();
    cells.sort_by_key(|c| c.index);
    cells.truncate(max);
    cells
}

/// A cell's short name on an axis or in a legend: its index and its levels'
/// values (the knobs are named in the axis description), else its label.
pub(crate) fn cell_tick(c: &CellResult) -> String {
    let name = if c.levels.is_empty() {
        c.label.clone()
    } else {
        let values: Vec<&str> = c.levels.iter().take(8).map(|(_, v)| v.as_str()).collect();
        values.join(" · ")
    };
    format!("#{} {}", c.index, esc::label(&name, 22))
}

/// A cell's name in a chart title: its index and label.
fn cell_title(c: &CellResult) -> String {
    format!("#{} {}", c.index, esc::label(&c.label, 60))
}

/// The axis description of cells: the knobs whose levels the ticks show.
fn cells_desc(r: &ExperimentResults) -> String {
    let knobs: Vec<String> = r
        .factors
        .iter()
        .take(8)
        .map(|f| esc::label(&f.knob, 30))
        .collect();
    if knobs.is_empty() {
        "cell".into()
    } else {
        format!("cell ({})", knobs.join(" · "))
    }
}

/// All charts of the report, in page order.
pub(crate) fn all(r: &ExperimentResults) -> Result<Vec<Chart>, ReportError> {
    let mut out = bars(r)?;
    out.extend(throughput(r)?);
    out.extend(softirq(r)?);
    out.extend(cdfs(r)?);
    out.extend(heatmap(r)?);
    Ok(out)
}

/// (workload, metric) pairs that have statistics somewhere, workloads in
/// file order.
fn stat_pairs(r: &ExperimentResults) -> Vec<(String, Metric)> {
    let mut pairs = Vec::new();
    for w in workload_names(r, MAX_BAR_CHARTS) {
        let mut metrics: Vec<Metric> = Vec::new();
        for c in &r.cells {
            for s in &c.stats {
                if s.workload == w && s.summary.is_some() && !metrics.contains(&s.metric) {
                    metrics.push(s.metric);
                }
            }
        }
        metrics.sort_by_key(|m| {
            r.metrics
                .iter()
                .take(MAX_METRICS)
                .position(|x| x == m)
                .unwrap_or(usize::MAX)
        });
        pairs.extend(metrics.into_iter().map(|m| (w.clone(), m)));
    }
    pairs.truncate(MAX_BAR_CHARTS);
    pairs
}

/// The stats of `workload` × `metric` in a cell.
pub(crate) fn stats_of<'a>(
    c: &'a CellResult,
    workload: &str,
    metric: Metric,
) -> Option<&'a MetricStats> {
    c.stats
        .iter()
        .find(|s| s.workload == workload && s.metric == metric)
}

struct Bar {
    tick: String,
    median: f64,
    ci: Option<(f64, f64)>,
    color: RGBColor,
}

/// Bars with 95 % confidence intervals, one chart per workload × metric.
fn bars(r: &ExperimentResults) -> Result<Vec<Chart>, ReportError> {
    let mut out = Vec::new();
    for (k, (workload, metric)) in stat_pairs(r).into_iter().enumerate() {
        let mut unit = String::new();
        let mut rows: Vec<(&CellResult, &MetricStats)> = Vec::new();
        for c in ran_cells(r, usize::MAX) {
            if let Some(s) = stats_of(c, &workload, metric) {
                if s.summary.as_ref().and_then(|x| clean(x.median)).is_some() {
                    unit.clone_from(&s.unit);
                    rows.push((c, s));
                }
            }
            if rows.len() >= MAX_BARS {
                break;
            }
        }
        if rows.is_empty() {
            continue;
        }
        let max = rows
            .iter()
            .filter_map(|(_, s)| s.summary.as_ref().map(|x| x.median.abs()))
            .fold(0.0, f64::max);
        let scale = Scale::for_unit(&unit, max);
        let bars: Vec<Bar> = rows
            .iter()
            .filter_map(|(c, s)| {
                let median = scale.apply(clean(s.summary.as_ref()?.median)?);
                let ci = s
                    .median_ci
                    .or_else(|| s.vs_baseline.as_ref().map(|v| v.cell_median))
                    .and_then(|i| Some((scale.apply(clean(i.lo)?), scale.apply(clean(i.hi)?))));
                let color = if c.index == r.baseline_cell {
                    BASELINE
                } else {
                    match s.vs_baseline.as_ref().map(|v| v.verdict) {
                        Some(Verdict::Gain) => GAIN,
                        Some(Verdict::Regression) => REGRESSION,
                        Some(Verdict::Inconclusive) => INCONCLUSIVE,
                        _ => NO_CHANGE,
                    }
                };
                Some(Bar {
                    tick: cell_tick(c),
                    median,
                    ci,
                    color,
                })
            })
            .collect();
        let (lo, hi) = extent(bars.iter().flat_map(|b| {
            let (l, h) = b.ci.unwrap_or((b.median, b.median));
            [b.median, l, h, 0.0]
        }))
        .unwrap_or((0.0, 1.0));
        let (y0, y1) = span(lo, hi);
        let y0 = if lo >= 0.0 { 0.0 } else { y0 };
        // The legend box gets a band of its own, so it never covers a bar.
        let (y0, y1, legend_top) = with_legend_room(y0, y1, hi);
        let wname = esc::label(&workload, 40);
        let title = format!(
            "Median {} of {wname} per cell, with 95 % confidence interval",
            metric_name(metric)
        );
        let y_desc = format!("median {} ({})", metric_name(metric), scale.unit);
        let n = bars.len();
        out.push(render(format!("chart-bars-{k}"), title, NOTE_BARS, |root, title| {
            let mut chart = ChartBuilder::on(root)
                .caption(title, (FONT, 18))
                .margin(14)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(slots(n).into_segmented(), y0..y1)?;
            let fmt = |v: &SegmentValue<usize>| match v {
                SegmentValue::CenterOf(i) => bars.get(*i).map(|b| b.tick.clone()).unwrap_or_default(),
                _ => String::new(),
            };
            chart
                .configure_mesh()
.label_style((FONT, 12))
.axis_desc_style((FONT, 13))
                .disable_x_mesh()
                .light_line_style(GRID)
                .x_labels(n.max(1))
                .x_label_formatter(&fmt)
                .x_desc(format!(
                    "{} · blue: baseline, green: gain, red: regression, grey: no change or no comparison",
                    cells_desc(r)
                ))
                .y_desc(y_desc)
                .draw()?;
            chart
                .draw_series(bars.iter().enumerate().map(|(i, b)| {
                    let mut bar = Rectangle::new(
                        [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), b.median)],
                        b.color.filled(),
                    );
                    bar.set_margin(0, 0, 8, 8);
                    bar
                }))?
                .label("median")
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], BASELINE.filled()));
            chart
                .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                    let (l, h) = b.ci?;
                    Some(PathElement::new(
                        vec![(SegmentValue::CenterOf(i), l), (SegmentValue::CenterOf(i), h)],
                        BLACK.stroke_width(2),
                    ))
                }))?
                .label("95 % CI of the median")
                .legend(|(x, y)| PathElement::new(vec![(x + 7, y - 7), (x + 7, y + 7)], BLACK.stroke_width(2)));
            chart
                .configure_series_labels()
                .position(if legend_top {
                    SeriesLabelPosition::UpperRight
                } else {
                    SeriesLabelPosition::LowerRight
                })
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font((FONT, 13))
                .draw()
        })?);
    }
    Ok(out)
}

/// Share of a bar chart's value axis kept free for the legend box (at 420 px
/// the plot is about 320 px high; the box of two entries needs about 60).
pub(super) const LEGEND_ROOM: f64 = 0.25;

/// The value range `y0..y1` widened so that the legend's band, at the top
/// when a bar rises above 0 and else at the bottom, holds no bar: the range
/// grows by the band, and the band is [`LEGEND_ROOM`] of the new range.
/// Returns the new range and whether the band is at the top.
pub(super) fn with_legend_room(y0: f64, y1: f64, hi: f64) -> (f64, f64, bool) {
    let len = (y1 - y0).abs().max(f64::MIN_POSITIVE);
    let extra = len * LEGEND_ROOM / (1.0 - LEGEND_ROOM);
    if hi > 0.0 {
        (y0, y1 + extra, true)
    } else {
        (y0 - extra, y1, false)
    }
}
