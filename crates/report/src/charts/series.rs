//! Charts over time and distributions: throughput and softirq time series,
//! latency CDFs, and the softirq heat map.

use std::collections::BTreeMap;

use model::results::{CellResult, ExperimentResults};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    cell_tick, cell_title, cells_desc, clean, color, extent, heat, ran_cells, render, slots, span,
    text_on, tick_num, Area, Chart, DrawResult, FONT, GRID, MAX_BARS, MAX_CPUS, MAX_POINTS,
    MAX_SERIES, MAX_SOFTIRQ_CHARTS, MAX_WORKLOAD_CHARTS, NOTE_CDF, NOTE_HEAT, NOTE_SOFTIRQ,
    NOTE_THROUGHPUT,
};
use crate::data::{decimate, measured, workload_names, MAX_WORKLOADS};
use crate::esc;
use crate::num::Scale;
use crate::ReportError;

/// A series of a chart: its name and its (x, y) points.
struct Line {
    name: String,
    points: Vec<(f64, f64)>,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mark {
    /// A dot per point and nothing between: samples of one run (intervals,
    /// runs) are not a trend, and a line through two of them reads as one.
    Dots,
    /// A line through the points (a CDF, which is a curve).
    Line,
}

/// The x axis.
#[derive(Debug, Clone, Copy, PartialEq)]
enum XAxis {
    /// Linear, numbered as plotters chooses (time in s).
    Linear,
    /// Run (repeat) numbers: whole-number ticks only.
    Runs,
    /// Latency in µs on a log scale over whole decades, ticks in µs/ms/s.
    LatencyLog,
}

struct LineChart<'a> {
    id: String,
    title: String,
    x_desc: String,
    y_desc: String,
    /// Fixed y range (a CDF's 0..1), else from the data.
    y_range: Option<(f64, f64)>,
    legend_at: SeriesLabelPosition,
    note: &'static str,
    mark: Mark,
    x_axis: XAxis,
    lines: &'a [Line],
}

/// The smallest latency charted on the log axis, µs (1 ns).
const MIN_LATENCY_US: f64 = 1e-3;

/// The log axis of `lo..hi`: from the decade at or below `lo` (its 1×, 2×
/// and 5× ticks name the scale) to 20 % past `hi`; `None`
/// without a latency of 1 ns or more.
fn decades(lo: f64, hi: f64) -> Option<(f64, f64)> {
    if !(lo >= MIN_LATENCY_US && hi >= lo && hi.is_finite()) {
        return None;
    }
    let a = 10f64.powf(lo.log10().floor());
    Some((a, hi * 1.2))
}

/// A log axis tick: decades and their 2× and 5× with µs/ms/s units, the
/// other minor ticks (3×, 4×, 6× to 9×) unlabelled grid lines.
fn latency_tick(v: f64) -> String {
    if !(v > 0.0 && v.is_finite()) {
        return String::new();
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    let named = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6);
    if named {
        let scale = Scale::for_unit("µs", v);
        format!("{} {}", tick_num(scale.apply(v)), scale.unit)
    } else {
        String::new()
    }
}

/// A run-number tick: whole numbers only.
fn run_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        tick_num(v)
    } else {
        String::new()
    }
}

fn line_chart(spec: LineChart<'_>) -> Result<Option<Chart>, ReportError> {
    // A log axis shows only latencies of 1 ns and more: zero, negative and
    // denormal values have no place on it (and would make plotters' log
    // ticks loop forever).
    let positive = |p: &(f64, f64)| spec.x_axis != XAxis::LatencyLog || p.0 >= MIN_LATENCY_US;
    let lines: Vec<(&str, Vec<(f64, f64)>)> = spec
        .lines
        .iter()
        .map(|l| {
            let pts: Vec<(f64, f64)> = l.points.iter().copied().filter(positive).collect();
            (l.name.as_str(), pts)
        })
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let Some((x0, x1)) = extent(lines.iter().flat_map(|l| l.1.iter().map(|p| p.0))) else {
        return Ok(None);
    };
    let (y0, y1) = match spec.y_range {
        Some(r) => r,
        None => {
            let (lo, hi) =
                extent(lines.iter().flat_map(|l| l.1.iter().map(|p| p.1))).unwrap_or((0.0, 1.0));
            let (a, b) = span(lo.min(0.0), hi);
            (if lo >= 0.0 { 0.0 } else { a }, b)
        }
    };
    let look = Look {
        x_desc: spec.x_desc,
        y_desc: spec.y_desc,
        legend_at: spec.legend_at,
        mark: spec.mark,
    };
    match spec.x_axis {
        XAxis::LatencyLog => {
            let Some((a, b)) = decades(x0, x1) else {
                return Ok(None);
            };
            render(spec.id, spec.title, spec.note, |root, title| {
                plot(
                    root,
                    title,
                    (a..b).log_scale(),
                    (y0, y1),
                    &look,
                    &lines,
                    &|v| latency_tick(*v),
                    30,
                )
            })
            .map(Some)
        }
        XAxis::Runs => {
            let (a, b) = (x0 - 0.5, x1 + 0.5);
            let ticks = usize::try_from((x1 - x0).round() as i64)
                .unwrap_or(0)
                .saturating_add(2)
                .min(12);
            render(spec.id, spec.title, spec.note, |root, title| {
                plot(
                    root,
                    title,
                    a..b,
                    (y0, y1),
                    &look,
                    &lines,
                    &|v| run_tick(*v),
                    ticks,
                )
            })
            .map(Some)
        }
        XAxis::Linear => {
            // Padded: a dot on the first or last interval is whole, not
            // cut in half by the axis.
            let (a, b) = span(x0, x1);
            render(spec.id, spec.title, spec.note, |root, title| {
                plot(
                    root,
                    title,
                    a..b,
                    (y0, y1),
                    &look,
                    &lines,
                    &|v| tick_num(*v),
                    10,
                )
            })
            .map(Some)
        }
    }
}

/// What a line chart looks like, whatever its x axis.
struct Look {
    x_desc: String,
    y_desc: String,
    legend_at: SeriesLabelPosition,
    mark: Mark,
}

/// Draw `lines` on `root` over the x axis `x` (linear or log).
#[allow(clippy::too_many_arguments)]
fn plot<X>(
    root: &Area<'_>,
    title: &str,
    x: X,
    (y0, y1): (f64, f64),
    look: &Look,
    lines: &[(&str, Vec<(f64, f64)>)],
    xfmt: &dyn Fn(&f64) -> String,
    x_labels: usize,
) -> DrawResult<()>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 18))
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y0..y1)?;
    chart
        .configure_mesh()
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .light_line_style(GRID)
        .x_labels(x_labels)
        .x_label_formatter(xfmt)
        .x_desc(look.x_desc.as_str())
        .y_desc(look.y_desc.as_str())
        .draw()?;
    for (i, (name, points)) in lines.iter().enumerate() {
        let c = color(i);
        match look.mark {
            Mark::Line => {
                chart
                    .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))?
                    .label(*name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                    });
            }
            Mark::Dots => {
                chart
                    .draw_series(points.iter().map(|p| Circle::new(*p, 3, c.filled())))?
                    .label(*name)
                    .legend(move |(x, y)| Circle::new((x + 9, y), 4, c.filled()));
            }
        }
    }
    chart
        .configure_series_labels()
        .position(look.legend_at.clone())
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 13))
        .draw()
}

/// Whether a workload's intervals count transactions rather than bits.
fn counts_transactions(r: &ExperimentResults, workload: &str) -> bool {
    r.workloads
        .iter()
        .find(|w| w.name == workload)
        .is_some_and(|w| w.test.ends_with("-rr") || w.test.ends_with("-crr"))
}

/// Throughput (or transactions) per interval, one chart per workload, one
/// line per cell (its first measured run).
pub(super) fn throughput(r: &ExperimentResults) -> Result<Vec<Chart>, ReportError> {
    let mut out = Vec::new();
    for (k, w) in workload_names(r, MAX_WORKLOADS)
        .into_iter()
        .filter(|w| {
            r.cells
                .iter()
                .any(|c| measured(c, w).any(|run| !run.intervals.is_empty()))
        })
        .take(MAX_WORKLOAD_CHARTS)
        .enumerate()
    {
        let tx = counts_transactions(r, &w);
        let mut raw: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for c in ran_cells(r, usize::MAX) {
            if raw.len() >= MAX_SERIES {
                break;
            }
            let Some(run) = measured(c, &w).find(|run| !run.intervals.is_empty()) else {
                continue;
            };
            let pts: Vec<(f64, f64)> = run
                .intervals
                .iter()
                .filter_map(|p| {
                    let v = if tx { p.per_sec } else { p.bits_per_sec };
                    Some((clean(p.t_s)?, clean(v)?))
                })
                .collect();
            raw.push((
                format!("{} (run {})", cell_tick(c), run.repeat),
                decimate(&pts, MAX_POINTS),
            ));
        }
        let max = raw
            .iter()
            .flat_map(|(_, p)| p.iter().map(|x| x.1.abs()))
            .fold(0.0, f64::max);
        let scale = Scale::for_unit(if tx { "1/s" } else { "bit/s" }, max);
        let lines: Vec<Line> = raw
            .into_iter()
            .map(|(name, pts)| Line {
                name,
                points: pts.into_iter().map(|(t, v)| (t, scale.apply(v))).collect(),
            })
            .collect();
        let what = if tx { "Transactions" } else { "Throughput" };
        let wname = esc::label(&w, 40);
        if let Some(ch) = line_chart(LineChart {
            id: format!("chart-throughput-{k}"),
            title: format!("{what} of {wname} per interval, one run per cell"),
            x_desc: "time since the run's start (s)".into(),
            y_desc: format!("{} ({})", what.to_lowercase(), scale.unit),
            y_range: None,
            legend_at: SeriesLabelPosition::LowerRight,
            note: NOTE_THROUGHPUT,
            mark: Mark::Dots,
            x_axis: XAxis::Linear,
            lines: &lines,
        })? {
            out.push(ch);
        }
    }
    Ok(out)
}

/// Per-CPU softirq % over time, one chart per cell (its first measured run
/// with a softirq series), or per run from the runs' CPU accounting.
pub(super) fn softirq(r: &ExperimentResults) -> Result<Vec<Chart>, ReportError> {
    let workloads = workload_names(r, MAX_WORKLOADS);
    let mut out = Vec::new();
    for c in ran_cells(r, usize::MAX) {
        if out.len() >= MAX_SOFTIRQ_CHARTS {
            break;
        }
        let series_run = workloads.iter().find_map(|w| {
            measured(c, w)
                .find(|run| !run.softirq_series.is_empty())
                .map(|run| (w, run))
        });
        let mut per_cpu: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
        let mut add = |cpu: u32, x: f64, y: f64| {
            if per_cpu.len() < MAX_SERIES || per_cpu.contains_key(&cpu) {
                per_cpu.entry(cpu).or_default().push((x, y));
            }
        };
        let (title, x_desc, x_axis) = if let Some((w, run)) = series_run {
            for p in &run.softirq_series {
                if let (Some(t), Some(v)) = (clean(p.t_s), clean(p.pct)) {
                    add(p.cpu, t, v);
                }
            }
            (
                format!(
                    "Softirq % per CPU over time: cell {}, {} run {}",
                    cell_title(c),
                    esc::label(w, 30),
                    run.repeat
                ),
                "time since the run's start (s)",
                XAxis::Linear,
            )
        } else {
            let Some(w) = workloads
                .iter()
                .find(|w| measured(c, w).any(|run| !run.cpus.is_empty()))
            else {
                continue;
            };
            for run in measured(c, w) {
                for p in &run.cpus {
                    if let Some(v) = clean(p.softirq) {
                        add(p.cpu, f64::from(run.repeat), v);
                    }
                }
            }
            (
                format!(
                    "Softirq % per CPU per run: cell {}, {}",
                    cell_title(c),
                    esc::label(w, 30)
                ),
                "run (repeat number)",
                XAxis::Runs,
            )
        };
        let lines: Vec<Line> = per_cpu
            .into_iter()
            .map(|(cpu, mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Line {
                    name: format!("CPU {cpu}"),
                    points: decimate(&pts, MAX_POINTS),
                }
            })
            .collect();
        let k = out.len();
        if let Some(ch) = line_chart(LineChart {
            id: format!("chart-softirq-{k}"),
            title,
            x_desc: x_desc.into(),
            y_desc: "softirq (% of the CPU)".into(),
            y_range: None,
            legend_at: SeriesLabelPosition::UpperRight,
            note: NOTE_SOFTIRQ,
            mark: Mark::Dots,
            x_axis,
            lines: &lines,
        })? {
            out.push(ch);
        }
    }
    Ok(out)
}

/// Latency CDFs (RR workloads or the probe), one chart per workload, one line
/// per cell (its first measured run with a CDF).
pub(super) fn cdfs(r: &ExperimentResults) -> Result<Vec<Chart>, ReportError> {
    let mut out = Vec::new();
    for (k, w) in workload_names(r, MAX_WORKLOADS)
        .into_iter()
        .filter(|w| {
            r.cells
                .iter()
                .any(|c| measured(c, w).any(|run| !run.latency_cdf.is_empty()))
        })
        .take(MAX_WORKLOAD_CHARTS)
        .enumerate()
    {
        let mut raw: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for c in ran_cells(r, usize::MAX) {
            if raw.len() >= MAX_SERIES {
                break;
            }
            let Some(run) = measured(c, &w).find(|run| !run.latency_cdf.is_empty()) else {
                continue;
            };
            let mut pts: Vec<(f64, f64)> = run
                .latency_cdf
                .iter()
                .filter_map(|[l, f]| Some((clean(*l)?, clean(*f)?.clamp(0.0, 1.0))))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            let probe = run
                .probe
                .as_ref()
                .map(|p| format!(", {} probe", esc::label(&p.kind, 8)))
                .unwrap_or_default();
            raw.push((
                format!("{} (run {}{probe})", cell_tick(c), run.repeat),
                decimate(&pts, MAX_POINTS),
            ));
        }
        // Kept in µs: the log axis names its ticks in µs, ms or s.
        let lines: Vec<Line> = raw
            .into_iter()
            .map(|(name, points)| Line { name, points })
            .collect();
        if let Some(ch) = line_chart(LineChart {
            id: format!("chart-cdf-{k}"),
            title: format!("Latency CDF of {}, one run per cell", esc::label(&w, 40)),
            x_desc: "latency (log scale)".into(),
            y_desc: "fraction of requests at or below".into(),
            y_range: Some((0.0, 1.0)),
            legend_at: SeriesLabelPosition::LowerRight,
            note: NOTE_CDF,
            mark: Mark::Line,
            x_axis: XAxis::LatencyLog,
            lines: &lines,
        })? {
            out.push(ch);
        }
    }
    Ok(out)
}

/// Mean softirq % per CPU of a cell's measured runs: from the runs' CPU
/// accounting, else from their softirq series.
fn cell_softirq(c: &CellResult) -> BTreeMap<u32, f64> {
    let mut sums: BTreeMap<u32, (f64, u32)> = BTreeMap::new();
    let mut add = |cpu: u32, v: f64| {
        if sums.len() < MAX_CPUS || sums.contains_key(&cpu) {
            let e = sums.entry(cpu).or_insert((0.0, 0));
            e.0 += v;
            e.1 = e.1.saturating_add(1);
        }
    };
    let runs = || c.runs.iter().filter(|r| !r.warmup);
    if runs().any(|r| !r.cpus.is_empty()) {
        for p in runs().flat_map(|r| r.cpus.iter()) {
            if let Some(v) = clean(p.softirq) {
                add(p.cpu, v);
            }
        }
    } else {
        for p in runs().flat_map(|r| r.softirq_series.iter()) {
            if let Some(v) = clean(p.pct) {
                add(p.cpu, v);
            }
        }
    }
    sums.into_iter()
        .filter(|(_, (_, n))| *n > 0)
        .map(|(cpu, (s, n))| (cpu, s / f64::from(n)))
        .collect()
}

/// Width of the heat map's colour key, right of the squares.
const KEY_PX: u32 = 120;
/// Fill of a square without data.
const NO_DATA: RGBColor = RGBColor(225, 225, 225);

/// A softirq % as printed in its square: one decimal under 10, else whole.
fn heat_value(v: f64) -> String {
    if v.abs() < 9.95 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// The heat map's colour key: a bar from 0 % (bottom) to 100 % (top) with
/// ticks every 25 %, and the no-data grey.
fn heat_key(side: &Area<'_>) -> DrawResult<()> {
    let text = (FONT, 12).into_font().color(&BLACK);
    let (x, top, height) = (10, 60, 240);
    side.draw(&Text::new("softirq %", (x, top - 22), text.clone()))?;
    for k in 0..height {
        let pct = 100.0 * f64::from(height - k) / f64::from(height);
        side.draw(&Rectangle::new(
            [(x, top + k), (x + 18, top + k + 1)],
            heat(pct).filled(),
        ))?;
    }
    side.draw(&Rectangle::new(
        [(x, top), (x + 18, top + height)],
        BLACK.stroke_width(1),
    ))?;
    for pct in [0, 25, 50, 75, 100] {
        let y = top + height - height * pct / 100;
        side.draw(&PathElement::new(
            vec![(x + 18, y), (x + 23, y)],
            BLACK.stroke_width(1),
        ))?;
        side.draw(&Text::new(
            format!("{pct} %"),
            (x + 27, y - 6),
            text.clone(),
        ))?;
    }
    let y = top + height + 24;
    side.draw(&Rectangle::new(
        [(x, y), (x + 18, y + 14)],
        NO_DATA.filled(),
    ))?;
    side.draw(&Text::new("no data", (x + 27, y), text))?;
    Ok(())
}

/// Softirq % per CPU (rows) and cell (columns).
pub(super) fn heatmap(r: &ExperimentResults) -> Result<Option<Chart>, ReportError> {
    let cells: Vec<(&CellResult, BTreeMap<u32, f64>)> = ran_cells(r, MAX_BARS)
        .into_iter()
        .map(|c| (c, cell_softirq(c)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    let mut cpus: Vec<u32> = cells.iter().flat_map(|(_, m)| m.keys().copied()).collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus.truncate(MAX_CPUS);
    if cells.is_empty() || cpus.is_empty() {
        return Ok(None);
    }
    let (nx, ny) = (cells.len(), cpus.len());
    // Whole names where they fit under their column, else the index alone
    // (the results table names every cell).
    let ticks: Vec<String> = cells.iter().map(|(c, _)| cell_tick(c)).collect();
    let widest = ticks.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    let column_px = 600 / nx.max(1);
    let short = widest.saturating_mul(6) > column_px;
    let ticks: Vec<String> = if short {
        cells.iter().map(|(c, _)| format!("#{}", c.index)).collect()
    } else {
        ticks
    };
    let x_desc = if short {
        format!("{} · by index, as in the results table", cells_desc(r))
    } else {
        cells_desc(r)
    };
    let title = "Softirq % per CPU and cell (mean over measured runs)".to_string();
    render("chart-heatmap".into(), title, NOTE_HEAT, |root, title| {
        let (w, _) = root.dim_in_pixel();
        let (main, side) = root.split_horizontally(w.saturating_sub(KEY_PX));
        let mut chart = ChartBuilder::on(&main)
            .caption(title, (FONT, 18))
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(slots(nx).into_segmented(), slots(ny).into_segmented())?;
        let xfmt = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => ticks.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let yfmt = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(j) => {
                cpus.get(*j).map(|c| format!("CPU {c}")).unwrap_or_default()
            }
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .disable_mesh()
            .x_labels(nx)
            .y_labels(ny)
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .x_desc(x_desc.as_str())
            .y_desc("CPU (softirq % of the CPU)")
            .draw()?;
        chart.draw_series(cells.iter().enumerate().flat_map(|(i, (_, m))| {
            cpus.iter().enumerate().map(move |(j, cpu)| {
                let fill = m.get(cpu).map_or(NO_DATA, |v| heat(*v));
                Rectangle::new(
                    [
                        (SegmentValue::Exact(i), SegmentValue::Exact(j)),
                        (SegmentValue::Exact(i + 1), SegmentValue::Exact(j + 1)),
                    ],
                    fill.filled(),
                )
            })
        }))?;
        // The value in each square, as large as the square allows (none
        // when it would be unreadably small).
        let (pw, ph) = chart.plotting_area().dim_in_pixel();
        let slot = |n: usize, px: u32| f64::from(px) / (slots(n).end + 1) as f64;
        let size = (slot(ny, ph) * 0.55).min(slot(nx, pw) / 2.6).min(14.0);
        if size >= 7.0 {
            let centre = Pos::new(HPos::Center, VPos::Center);
            chart.draw_series(cells.iter().enumerate().flat_map(|(i, (_, m))| {
                cpus.iter().enumerate().filter_map(move |(j, cpu)| {
                    let v = *m.get(cpu)?;
                    let style = (FONT, size)
                        .into_font()
                        .color(&text_on(heat(v)))
                        .pos(centre);
                    Some(Text::new(
                        heat_value(v),
                        (SegmentValue::CenterOf(i), SegmentValue::CenterOf(j)),
                        style,
                    ))
                })
            }))?;
        }
        heat_key(&side)
    })
    .map(Some)
}
