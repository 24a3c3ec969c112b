//! Charts over time and distributions: throughput and softirq time series,
//! latency CDFs, and the softirq heat map.

use std::collections::BTreeMap;

use model::results::{CellResult, ExperimentResults};
use plotters::prelude::*;

use super::{
    cell_tick, cell_title, cells_desc, clean, color, extent, heat, ran_cells, render, slots, span,
    Chart, FONT, GRID, MAX_BARS, MAX_CPUS, MAX_POINTS, MAX_SERIES, MAX_SOFTIRQ_CHARTS,
    MAX_WORKLOAD_CHARTS, NOTE_CDF, NOTE_HEAT, NOTE_SOFTIRQ, NOTE_THROUGHPUT,
};
use crate::data::{decimate, measured, workload_names, MAX_WORKLOADS};
use crate::esc;
use crate::num::Scale;
use crate::ReportError;

/// A line of a line chart.
struct Line {
    name: String,
    points: Vec<(f64, f64)>,
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
    lines: &'a [Line],
}

fn line_chart(spec: LineChart<'_>) -> Result<Option<Chart>, ReportError> {
    let lines: Vec<&Line> = spec.lines.iter().filter(|l| !l.points.is_empty()).collect();
    let Some((x0, x1)) = extent(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0))) else {
        return Ok(None);
    };
    let (y0, y1) = match spec.y_range {
        Some(r) => r,
        None => {
            let (lo, hi) = extent(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)))
                .unwrap_or((0.0, 1.0));
            let (a, b) = span(lo.min(0.0), hi);
            (if lo >= 0.0 { 0.0 } else { a }, b)
        }
    };
    let (x0, x1) = if x1 > x0 { (x0, x1) } else { span(x0, x1) };
    let LineChart {
        id,
        title,
        x_desc,
        y_desc,
        legend_at,
        note: spec_note,
        ..
    } = spec;
    render(id, title, spec_note, |root, title| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 18))
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .light_line_style(GRID)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()?;
        for (i, l) in lines.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(l.points.iter().copied(), c.stroke_width(2)))?
                .label(l.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(legend_at)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 13))
            .draw()
    })
    .map(Some)
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
        let (title, x_desc) = if let Some((w, run)) = series_run {
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
        let max = raw
            .iter()
            .flat_map(|(_, p)| p.iter().map(|x| x.0.abs()))
            .fold(0.0, f64::max);
        let scale = Scale::for_unit("µs", max);
        let lines: Vec<Line> = raw
            .into_iter()
            .map(|(name, pts)| Line {
                name,
                points: pts.into_iter().map(|(l, f)| (scale.apply(l), f)).collect(),
            })
            .collect();
        if let Some(ch) = line_chart(LineChart {
            id: format!("chart-cdf-{k}"),
            title: format!("Latency CDF of {}, one run per cell", esc::label(&w, 40)),
            x_desc: format!("latency ({})", scale.unit),
            y_desc: "fraction of requests at or below".into(),
            y_range: Some((0.0, 1.0)),
            legend_at: SeriesLabelPosition::LowerRight,
            note: NOTE_CDF,
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
    let ticks: Vec<String> = cells.iter().map(|(c, _)| cell_tick(c)).collect();
    let (nx, ny) = (cells.len(), cpus.len());
    let title = "Softirq % per CPU and cell (mean over measured runs)".to_string();
    render("chart-heatmap".into(), title, NOTE_HEAT, |root, title| {
        let mut chart = ChartBuilder::on(root)
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
            .x_desc(cells_desc(r))
            .y_desc("CPU (softirq % of the CPU)")
            .draw()?;
        chart.draw_series(cells.iter().enumerate().flat_map(|(i, (_, m))| {
            cpus.iter().enumerate().map(move |(j, cpu)| {
                let fill = m.get(cpu).map_or(RGBColor(225, 225, 225), |v| heat(*v));
                Rectangle::new(
                    [
                        (SegmentValue::Exact(i), SegmentValue::Exact(j)),
                        (SegmentValue::Exact(i + 1), SegmentValue::Exact(j + 1)),
                    ],
                    fill.filled(),
                )
            })
        }))?;
        for (pct, name) in [
            (0.0, "0 %"),
            (25.0, "25 %"),
            (50.0, "50 %"),
            (75.0, "75 %"),
            (100.0, "100 %"),
        ] {
            let c = heat(pct);
            chart
                .draw_series(std::iter::empty::<
                    Rectangle<(SegmentValue<usize>, SegmentValue<usize>)>,
                >())?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
        }
        chart
            .draw_series(std::iter::empty::<
                Rectangle<(SegmentValue<usize>, SegmentValue<usize>)>,
            >())?
            .label("no data")
            .legend(|(x, y)| {
                Rectangle::new(
                    [(x, y - 6), (x + 14, y + 6)],
                    RGBColor(225, 225, 225).filled(),
                )
            });
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 13))
            .draw()
    })
    .map(Some)
}
