//! How the charts draw (issue 21, item 7), read from their SVG: the forest
//! plot at the top, dots for per-interval and per-run series, whole run
//! numbers, a log latency axis, values in the heat map's squares.
//! The SYNTHETIC fixture (tests/common), and the real one.

mod common;

use nettune_report::{read_results, render_html};

/// The `<svg id="ID" ...>...</svg>` element.
fn svg<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("<svg id=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}"));
    let end = page[start..].find("</svg>").expect("unclosed svg");
    &page[start..start + end]
}

/// The texts drawn in an SVG (plotters writes each on its own line).
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// The polylines of an SVG that are not axes (black) or grid (light
/// grey): a series drawn as a line.
fn series_lines(svg: &str) -> usize {
    svg.split("<polyline")
        .skip(1)
        .filter(|p| {
            let tag = &p[..p.find("/>").unwrap_or(p.len())];
            !tag.contains("stroke=\"#000000\"") && !tag.contains("stroke=\"#ECECEC\"")
        })
        .count()
}

#[test]
fn the_forest_plot_comes_first_with_a_band_and_a_row_per_change() {
    let r = common::synthetic();
    let page = render_html(&r).unwrap();
    let at = page
        .find("<svg id=\"chart-forest\"")
        .expect("no forest plot");
    // Above every other chart and above the tables.
    assert!(at < page.find("<svg id=\"chart-bars-0\"").unwrap());
    assert!(at < page.find("<section id=\"machine\"").unwrap());
    let f = svg(&page, "chart-forest");
    assert!(
        f.contains("aria-label=\"Change against the baseline"),
        "{f:.400}"
    );
    // The ±2 % band: a rectangle filled with the band's colour.
    assert!(
        f.contains("fill=\"#FFEEBA\""),
        "no threshold band in the forest plot"
    );
    assert!(texts(f).iter().any(|t| t == "±2 % practical threshold"));
    // One row per metric of the one compared cell (#1): throughput,
    // transactions and latency p99, each a gain (green dot).
    // (plotters writes the axis labels bottom up; the first row is on top)
    let mut labels: Vec<String> = texts(f)
        .into_iter()
        .filter(|t| t.starts_with("#1 "))
        .collect();
    labels.reverse();
    assert_eq!(
        labels,
        [
            "#1 0-1 · stream throughput",
            "#1 0-1 · rr transactions",
            "#1 0-1 · rr latency p99"
        ]
    );
    let green_dots = f.matches("<circle").count();
    // 3 rows + the legend's gain dot, no-change ring, inconclusive ring and
    // changed dot.
    assert_eq!(green_dots, 7, "{f}");
}

/// The whole forest plot of the synthetic fixture, key strip included.
#[test]
fn the_forest_plot_of_the_synthetic_fixture() {
    let page = render_html(&common::synthetic()).unwrap();
    insta::assert_snapshot!(svg(&page, "chart-forest"));
}

#[test]
fn without_comparisons_there_is_no_forest_plot() {
    let mut r = common::synthetic();
    for c in &mut r.cells {
        for s in &mut c.stats {
            s.vs_baseline = None;
        }
    }
    let page = render_html(&r).unwrap();
    assert!(!page.contains("chart-forest"));
    assert!(!page.contains("id=\"at-a-glance\""));
}

#[test]
fn per_interval_series_are_dots_not_lines() {
    let mut r = common::synthetic();
    // Two intervals per run: a line through them would read as a trend.
    for c in &mut r.cells {
        for run in &mut c.runs {
            run.intervals.truncate(2);
        }
    }
    let page = render_html(&r).unwrap();
    for id in [
        "chart-throughput-0",
        "chart-throughput-1",
        "chart-softirq-0",
    ] {
        let s = svg(&page, id);
        assert_eq!(series_lines(s), 0, "{id} joins its points: {s}");
        assert!(s.contains("<circle"), "{id} has no dots");
    }
}

#[test]
fn per_run_softirq_has_dots_at_whole_run_numbers() {
    let mut r = common::synthetic();
    for c in &mut r.cells {
        for run in &mut c.runs {
            run.softirq_series.clear();
        }
    }
    let page = render_html(&r).unwrap();
    let s = svg(&page, "chart-softirq-0");
    assert!(
        s.contains("aria-label=\"Softirq % per CPU per run"),
        "{s:.300}"
    );
    assert_eq!(series_lines(s), 0, "per-run points joined by lines");
    assert!(s.contains("<circle"));
    let ticks: Vec<String> = texts(s)
        .into_iter()
        .filter(|t| t.parse::<f64>().is_ok())
        .collect();
    // Runs 1 to 5 of cell #0; no 0.5, 1.5, ... on the run axis.
    for run in ["1", "2", "3", "4", "5"] {
        assert!(ticks.iter().any(|t| t == run), "no tick {run}: {ticks:?}");
    }
    assert!(
        !ticks.iter().any(|t| t.ends_with(".5")),
        "half runs: {ticks:?}"
    );
}

#[test]
fn the_latency_cdf_axis_is_logarithmic() {
    let page = render_html(&common::synthetic()).unwrap();
    let s = svg(&page, "chart-cdf-0");
    let t = texts(s);
    // The fixture's latencies, 57 to 222 µs, from the decade below (10 µs)
    // on: ticks at 1×, 2× and 5× of each decade, a decade apart and more.
    for tick in ["10 µs", "20 µs", "50 µs", "100 µs", "200 µs"] {
        assert!(t.iter().any(|x| x == tick), "no tick {tick}: {t:?}");
    }
    assert!(t.iter().any(|x| x == "latency (log scale)"), "{t:?}");
    // The CDF itself is still a curve.
    assert!(series_lines(s) >= 3, "one line per cell");
}

#[test]
fn the_heat_map_prints_each_value() {
    let page = render_html(&common::synthetic()).unwrap();
    let s = svg(&page, "chart-heatmap");
    let t = texts(s);
    // Cell #0, CPU 0: about 62.6 % in every run; CPU 1 about 3 %.
    let values: Vec<&String> = t
        .iter()
        .filter(|x| x.parse::<f64>().is_ok() && !x.contains(' '))
        .collect();
    assert!(values.len() >= 6, "3 cells × 2 CPUs: {t:?}");
    assert!(t.iter().any(|x| x == "softirq %"), "no colour key: {t:?}");
    assert!(t.iter().any(|x| x == "100 %"), "no colour key: {t:?}");
}

#[test]
fn a_real_results_file_charts_per_run_on_whole_numbers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/real-tiny-results.json"
        ),
        dir.path().join("results.json"),
    )
    .unwrap();
    let page = render_html(&read_results(dir.path()).unwrap()).unwrap();
    // One repeat, so no comparison and no forest plot.
    assert!(!page.contains("chart-forest"));
    let s = svg(&page, "chart-softirq-0");
    assert_eq!(series_lines(s), 0);
    let c = svg(&page, "chart-cdf-0");
    assert!(texts(c)
        .iter()
        .any(|x| x.ends_with("µs") || x.ends_with("ms")));
}

/// `CHARTS_DUMP=page.html [CHARTS_RESULTS=dir] cargo test -p nettune-report
/// --test charts dump -- --ignored`: the page of the synthetic fixture (or
/// of a results directory), to look at or screenshot.
#[test]
#[ignore = "writes the page to $CHARTS_DUMP for a look"]
fn dump() {
    let r = match std::env::var_os("CHARTS_RESULTS") {
        Some(dir) => read_results(std::path::Path::new(&dir)).unwrap(),
        None => common::synthetic(),
    };
    let page = render_html(&r).unwrap();
    std::fs::write(std::env::var("CHARTS_DUMP").unwrap(), page).unwrap();
}

/// Latencies of zero, negative or denormal size are left off the log axis
/// (they once made plotters' log ticks loop forever).
#[test]
fn tiny_latencies_do_not_hang_the_log_axis() {
    let mut r = common::synthetic();
    for c in &mut r.cells {
        for run in &mut c.runs {
            if !run.latency_cdf.is_empty() {
                run.latency_cdf = vec![[5e-324, 0.0], [1e-320, 0.5], [0.0, 0.7], [-3.0, 1.0]];
            }
        }
    }
    let page = render_html(&r).unwrap();
    assert!(!page.contains("chart-cdf-0"));
}
