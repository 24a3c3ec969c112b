//! The report rendered from the SYNTHETIC fixture (tests/common): the
//! Markdown snapshot, the page's structure, escaping, bounds, refusals, and
//! no panic on arbitrary-ish input.

mod common;

use model::results::{
    CellStatus, CpuPoint, ExperimentResults, IntervalPoint, SoftirqPoint, RESULTS_SCHEMA_VERSION,
};
use nettune_report::{read_results, render_html, render_markdown, write_dir, ReportError};
use proptest::prelude::*;

#[test]
fn fixture_file_is_current() {
    let text = serde_json::to_string_pretty(&common::synthetic()).unwrap() + "\n";
    if std::env::var_os("UPDATE_FIXTURE").is_some() {
        std::fs::write(common::FIXTURE, &text).unwrap();
    }
    let on_disk = std::fs::read_to_string(common::FIXTURE).unwrap();
    assert!(
        on_disk == text,
        "{} is stale: UPDATE_FIXTURE=1 cargo test -p nettune-report --test render",
        common::FIXTURE
    );
    ExperimentResults::from_json(&on_disk).unwrap();
}

#[test]
fn markdown_of_the_synthetic_fixture() {
    insta::assert_snapshot!(render_markdown(&common::synthetic()));
}

/// The `<svg ...>` opening tag with this id, if any.
fn svg_tag<'a>(page: &'a str, id: &str) -> Option<&'a str> {
    let start = page.find(&format!("<svg id=\"{id}\""))?;
    let end = page[start..].find('>')?;
    Some(&page[start..start + end])
}

#[test]
fn every_chart_is_present_and_labelled() {
    let page = render_html(&common::synthetic()).unwrap();
    let expected = [
        (
            "chart-forest",
            "Change against the baseline, every metric and cell",
        ),
        (
            "chart-bars-0",
            "Median throughput of stream per cell, with 95 % confidence interval",
        ),
        ("chart-bars-1", "Median transactions of rr per cell"),
        ("chart-bars-2", "Median latency p99 of rr per cell"),
        ("chart-throughput-0", "Throughput of stream per interval"),
        ("chart-throughput-1", "Transactions of rr per interval"),
        (
            "chart-softirq-0",
            "Softirq % per CPU over time: cell #0 baseline",
        ),
        (
            "chart-softirq-1",
            "Softirq % per CPU over time: cell #1 rps_cpus=0-1",
        ),
        (
            "chart-softirq-2",
            "Softirq % per CPU over time: cell #2 rps_cpus=1",
        ),
        ("chart-cdf-0", "Latency CDF of rr"),
        ("chart-heatmap", "Softirq % per CPU and cell"),
    ];
    for (id, label) in expected {
        let tag = svg_tag(&page, id).unwrap_or_else(|| panic!("no chart {id}"));
        assert!(
            tag.contains(&format!("aria-label=\"{label}")),
            "{id}: {tag}"
        );
        assert!(tag.contains("role=\"img\""), "{tag}");
    }
    assert_eq!(page.matches("<svg ").count(), expected.len());
    // The n/a cell is charted nowhere and listed with its reason.
    // Bars and heat-map columns are named by index and level values.
    assert!(page.contains("\n#0 off\n</text>"));
    assert!(page.contains("\n#2 1\n</text>"));
    assert!(!page.contains("\n#3 0-3\n</text>"));
    assert!(page.contains("cell (rps_cpus)"));
    assert!(page.contains("rps_cpus 0-3: CPUs 2-3 are not online (this host has 2)"));
    // Axis descriptions with units and legends.
    for text in [
        "median throughput (Mbit/s)",
        "time since the run&apos;s start (s)",
        "softirq (% of the CPU)",
        "fraction of requests at or below",
        "95 % CI of the median",
        "CPU 1",
    ] {
        assert!(page.contains(text), "missing {text:?}");
    }
}

#[test]
fn the_page_carries_every_section() {
    let page = render_html(&common::synthetic()).unwrap();
    for text in [
        "6.18.0-fixture",
        "delay mechanism</dt><dd>userspace",
        "<details><summary>nt-fixture-a</summary>",
        "/sys/class/net/veth1/queues/rx-0/rps_cpus",
        "<code>0</code> → <code>3</code>",
        "factor rps_cpus level 0-1 (synthetic fixture)",
        "softirq-concentrated",
        "Cleared: softirq-concentrated.",
        "class=\"gain\">gain</td>",
        "<th>lab / loopback</th>",
        "SYNTHETIC FIXTURE",
        "Interrupted:",
    ] {
        assert!(page.contains(text), "missing {text:?}");
    }
}

/// Issue 38: a headline sentence at the top says what was compared and
/// the verdicts, counted here from the results themselves.
#[test]
fn the_report_opens_with_a_headline_of_verdict_counts() {
    let r = common::synthetic();
    let mut gains = 0;
    for c in r.cells.iter().filter(|c| c.index != r.baseline_cell) {
        for s in &c.stats {
            if s.vs_baseline.as_ref().map(|v| v.verdict) == Some(model::stats::Verdict::Gain) {
                gains += 1;
            }
        }
    }
    assert!(gains > 0);
    let others = r.cells.len() - 1;
    let want = format!(
        "{others} cell{} compared with baseline cell #{} over",
        if others == 1 { "" } else { "s" },
        r.baseline_cell
    );
    let gain = format!("{gains} gain{}", if gains == 1 { "" } else { "s" });
    let page = render_html(&r).unwrap();
    let head = page.split("</header>").next().unwrap();
    let line = head
        .split("<p class=\"headline\">")
        .nth(1)
        .expect("a headline in the header");
    assert!(line.contains(&want) && line.contains(&gain), "{line}");
    let md = render_markdown(&r);
    let second = md
        .lines()
        .find(|l| !l.is_empty() && !l.starts_with("# "))
        .unwrap();
    assert!(
        second.starts_with("**") && second.contains(&want) && second.contains(&gain),
        "{second}"
    );
}

#[test]
fn the_page_fetches_nothing() {
    let page = render_html(&common::synthetic()).unwrap();
    let lower = page.to_lowercase();
    for bad in [
        "http://", "https://", "<script", "<link", "@import", "url(", "<img", "<iframe",
    ] {
        assert!(!lower.contains(bad), "page contains {bad:?}");
    }
    for attr in ["src=", "href="] {
        assert!(!lower.contains(attr), "page has a {attr} attribute");
    }
}

#[test]
fn text_from_the_file_is_escaped() {
    let mut r = common::synthetic();
    r.name = "<img src=x onerror=alert(1)>".into();
    r.cells[1].label = "<b>bold</b>".into();
    r.notes
        .push("<a href=\"https://example.invalid/\">x</a>".into());
    let page = render_html(&r).unwrap();
    assert!(page.contains("&lt;script&gt;alert(&#39;fixture&#39;)&lt;/script&gt;"));
    assert!(!page.contains("<script>"));
    assert!(!page.contains("<img"));
    assert!(!page.contains("<b>bold"));
    assert!(!page.contains("<a href"));
    assert!(page.contains("&lt;b&gt;bold&lt;/b&gt;"));
    let md = render_markdown(&r);
    // Every `<` is backslash-escaped: Markdown shows it, no tag is opened.
    let raw = md
        .char_indices()
        .filter(|&(i, c)| c == '<' && !md[..i].ends_with('\\'))
        .count();
    assert_eq!(raw, 0, "{md}");
    assert!(md.contains("\\<script\\>") && md.contains("\\<img src=x"));
}

#[test]
fn rhel6_bdp_sets_the_run_beside_the_slides() {
    let mut r = common::synthetic();
    assert!(!render_markdown(&r).contains("Red Hat's BDP table"));
    r.name = "rhel6-bdp".into();
    let levels = [
        "4096 131072 6291456",
        "4096 87380 1250000",
        "4096 87380 1662500",
    ];
    for (c, l) in r.cells.iter_mut().zip(levels) {
        c.levels = vec![("tcp_rmem".into(), l.into())];
    }
    let md = render_markdown(&r);
    assert!(
        md.contains("## Red Hat's BDP table beside this run"),
        "{md}"
    );
    // The table names the public slides it comes from, never a field note.
    assert!(
        md.contains("Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\""),
        "{md}"
    );
    assert!(
        !md.contains("Seed 004") && !md.contains("The seed") && !md.contains("| seed (Mbit/s)"),
        "{md}"
    );
    // Cell #0 (today's default, the example's untuned level) measured the
    // synthetic 41 Mbit/s; the app-buffer row
    // has no "stream-appbuf" workload here.
    let untuned = md.lines().find(|l| l.starts_with("| untuned")).unwrap();
    assert!(
        untuned.contains("| 21.0 |") && untuned.contains("| 41.0 |"),
        "{untuned}"
    );
    // RHEL 6's 2.6.32 computed tcp_rmem's maximum from memory, up to 4 MB
    // (tcp_init); 174760 was an earlier 2.6 default, not the slides' host.
    assert!(
        !untuned.contains("174760") && untuned.contains("up to 4194304"),
        "{untuned}"
    );
    let app = md
        .lines()
        .find(|l| l.starts_with("| system and application"))
        .unwrap();
    assert!(
        app.contains("| 95.0 |") && app.contains("not measured"),
        "{app}"
    );
    let page = render_html(&r).unwrap();
    assert!(page.contains("<section id=\"rhel6-bdp\">"));
    assert!(page.contains("<h2>Red Hat's BDP table beside this run</h2>"));
    assert!(page.contains("<th>Red Hat slides (Mbit/s)</th>"));
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = serde_json::to_value(common::synthetic()).unwrap();
    v["schema_version"] = serde_json::json!(RESULTS_SCHEMA_VERSION + 1);
    std::fs::write(dir.path().join("results.json"), v.to_string()).unwrap();
    let e = read_results(dir.path()).unwrap_err();
    assert!(matches!(e, ReportError::Results { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("results.json") && msg.contains("newer"),
        "{msg}"
    );
    assert!(write_dir(dir.path()).is_err());
    assert!(!dir.path().join("report.html").exists());
}

#[test]
fn missing_and_bad_inputs_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_results(&dir.path().join("nope")).unwrap_err();
    assert!(matches!(e, ReportError::NotADirectory { .. }), "{e}");
    let e = read_results(dir.path()).unwrap_err();
    assert!(matches!(e, ReportError::NoResults { .. }), "{e}");
    std::fs::write(dir.path().join("results.json"), "{\"not\": \"results\"}").unwrap();
    let e = read_results(dir.path()).unwrap_err();
    assert!(e.to_string().contains("results.json"), "{e}");
}

#[test]
fn write_dir_writes_both_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::FIXTURE, dir.path().join("results.json")).unwrap();
    let (html, md) = write_dir(dir.path()).unwrap();
    assert_eq!(html, dir.path().join("report.html"));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .starts_with("# nettune report"));
}

#[test]
fn huge_series_are_decimated() {
    let mut r = common::synthetic();
    let run = &mut r.cells[0].runs[1];
    run.intervals = (0..200_000)
        .map(|i| IntervalPoint {
            t_s: f64::from(i) * 0.01,
            bits_per_sec: 1e6 + f64::from(i % 7),
            per_sec: 1.0,
        })
        .collect();
    run.softirq_series = (0..200_000)
        .map(|i| SoftirqPoint {
            t_s: f64::from(i / 1000),
            cpu: i % 1000,
            pct: 5.0,
        })
        .collect();
    run.cpus = (0..10_000)
        .map(|c| CpuPoint {
            cpu: c,
            usr: 0.0,
            sys: 0.0,
            irq: 0.0,
            softirq: 1.0,
            idle: 99.0,
        })
        .collect();
    run.latency_cdf = (0..200_000)
        .map(|i| [f64::from(i), f64::from(i) / 200_000.0])
        .collect();
    // Many distinct workloads, repeated metrics, many plans of many changes.
    let template = r.cells[1].runs[1].clone();
    r.cells[1].runs.extend((0..20_000).map(|i| {
        let mut run = template.clone();
        run.workload = format!("w{i}");
        run.intervals.truncate(2);
        run
    }));
    r.metrics = vec![model::experiment::Metric::Retransmits; 100_000];
    let changes: Vec<serde_json::Value> = (0..3000)
        .map(|i| serde_json::json!({"knob": format!("k{i}"), "before": "0", "after": "1"}))
        .collect();
    for p in 0..300 {
        r.plans.insert(
            format!("plan {p}"),
            serde_json::json!({ "changes": changes }),
        );
    }
    let page = render_html(&r).unwrap();
    assert!(page.len() < 4_000_000, "page is {} bytes", page.len());
    let md = render_markdown(&r);
    assert!(md.len() < 1_000_000, "markdown is {} bytes", md.len());
    assert!(
        md.matches("| k1 |").count() <= 1,
        "plan rows are not capped in all"
    );
}

fn arb_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        -1e3f64..1e9,
        Just(0.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::MAX),
    ]
}

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        Just("<script>x</script>".to_string()),
        Just(String::new()),
        Just("|`*_[]\n\r\u{0}".to_string())
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Arbitrary-ish results (the fixture with numbers, texts, indexes and
    /// statuses replaced) never make either renderer panic.
    #[test]
    fn arbitrary_results_never_panic(
        nums in prop::collection::vec(arb_f64(), 64),
        texts in prop::collection::vec(arb_text(), 8),
        cpus in prop::collection::vec(any::<u32>(), 8),
        baseline in 0usize..6,
        drop_stats in any::<bool>(),
        status in 0u8..5,
    ) {
        let mut r = common::synthetic();
        let mut n = nums.iter().copied().cycle();
        let mut t = texts.iter().cloned().cycle();
        let mut c = cpus.iter().copied().cycle();
        r.baseline_cell = baseline;
        r.name = t.next().unwrap_or_default();
        r.notes.push(t.next().unwrap_or_default().into());
        if let Some(l) = &mut r.lab {
            l.delay_ms = n.next().unwrap_or(0.0);
            l.rate_mbit = Some(n.next().unwrap_or(0.0));
        }
        for o in &mut r.overhead {
            o.loopback.median = n.next().unwrap_or(0.0);
            o.lab.median = n.next().unwrap_or(0.0);
        }
        for cell in &mut r.cells {
            cell.label = t.next().unwrap_or_default();
            if cell.index == 2 {
                cell.status = match status {
                    0 => CellStatus::Pending,
                    1 => CellStatus::Done,
                    2 => CellStatus::NotApplicable { reason: t.next().unwrap_or_default() },
                    3 => CellStatus::Failed { error: t.next().unwrap_or_default() },
                    _ => CellStatus::Interrupted,
                };
            }
            if drop_stats {
                cell.stats.clear();
            }
            for s in &mut cell.stats {
                s.unit = t.next().unwrap_or_default();
                if let Some(sum) = &mut s.summary {
                    sum.median = n.next().unwrap_or(0.0);
                }
                if let Some(ci) = &mut s.median_ci {
                    ci.lo = n.next().unwrap_or(0.0);
                    ci.hi = n.next().unwrap_or(0.0);
                }
                if let Some(v) = &mut s.vs_baseline {
                    v.difference.estimate = n.next().unwrap_or(0.0);
                    v.change_pct = None;
                }
            }
            for run in &mut cell.runs {
                run.workload = if n.next().unwrap_or(0.0) > 0.5 { t.next().unwrap_or_default() } else { run.workload.clone() };
                for p in &mut run.intervals {
                    p.t_s = n.next().unwrap_or(0.0);
                    p.bits_per_sec = n.next().unwrap_or(0.0);
                }
                for p in &mut run.cpus {
                    p.cpu = c.next().unwrap_or(0);
                    p.softirq = n.next().unwrap_or(0.0);
                }
                for p in &mut run.softirq_series {
                    p.cpu = c.next().unwrap_or(0);
                    p.pct = n.next().unwrap_or(0.0);
                    p.t_s = n.next().unwrap_or(0.0);
                }
                for p in &mut run.latency_cdf {
                    *p = [n.next().unwrap_or(0.0), n.next().unwrap_or(0.0)];
                }
            }
        }
        let _ = render_markdown(&r);
        let _ = render_html(&r);
    }
}

/// A REAL results.json: `nettune experiment` (the runner, 2026-11-24
/// 01:00 UTC) on the development VM (kernel 6.18.44, 2 CPUs) in a
/// two-namespace lab, one repeat of tcp-rr with tcp_tw_reuse 0 and 1
/// (`tests/fixtures/real-tiny-results.json`, copied as written). Checks the
/// renderer against what the runner really writes, not only against the
/// synthetic fixture.
#[test]
fn a_real_results_file_renders() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/real-tiny-results.json"
        ),
        dir.path().join("results.json"),
    )
    .unwrap();
    let r = read_results(dir.path()).unwrap();
    let page = render_html(&r).unwrap();
    for id in [
        "chart-bars-0",
        "chart-throughput-0",
        "chart-softirq-0",
        "chart-cdf-0",
        "chart-heatmap",
    ] {
        assert!(svg_tag(&page, id).is_some(), "no {id}");
    }
    let md = render_markdown(&r);
    assert!(
        md.contains("| #0 tcp_tw_reuse=0 | done | rr | transactions | 1 |"),
        "{md}"
    );
    assert!(md.contains("## Lab overhead"), "{md}");
}

/// Arbitrary JSON, a few levels deep.
fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        arb_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("findings".to_string()),
                        Just("changes".to_string()),
                        Just("id".to_string()),
                        Just("target".to_string()),
                        Just("kind".to_string()),
                        Just("client".to_string()),
                        "[a-z]{1,6}",
                    ],
                    inner
                ),
                0..4
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The parts other commands own (plans, host facts) may hold any JSON,
    /// and doctor's reports whatever of any JSON their types read; cells
    /// may be missing, repeated or out of order, and the baseline may name
    /// no cell.
    #[test]
    fn arbitrary_json_parts_and_cell_lists_never_panic(
        before in arb_json(),
        after in arb_json(),
        plan in arb_json(),
        facts in arb_json(),
        picks in prop::collection::vec(0usize..4, 0..6),
        indexes in prop::collection::vec(0usize..8, 6),
        baseline in 0usize..10,
        no_metrics in any::<bool>(),
    ) {
        let mut r = common::synthetic();
        r.doctor_before = serde_json::from_value(before).ok();
        r.doctor_after = serde_json::from_value(after).ok();
        r.plans.insert("x".into(), plan);
        r.host_facts.insert("h".into(), facts);
        let cells = r.cells.clone();
        r.cells = picks
            .iter()
            .zip(&indexes)
            .map(|(&p, &i)| {
                let mut c = cells[p].clone();
                c.index = i;
                c
            })
            .collect();
        r.baseline_cell = baseline;
        if no_metrics {
            r.metrics.clear();
            r.workloads.clear();
            r.factors.clear();
        }
        let _ = render_markdown(&r);
        let _ = render_html(&r);
    }
}

/// The per-work CPU is a row of the results tables of the page and the
/// Markdown, in its test's unit and with its verdict; a softirq % change
/// is "changed", neither gain nor regression.
#[test]
fn cpu_per_work_and_changed_rows_in_the_results_tables() {
    use model::experiment::Metric;
    use model::results::MetricStats;
    use model::stats::{compare, median_interval, summarize, BootstrapConfig};
    let mut r = common::synthetic();
    let cfg = BootstrapConfig::default();
    let before = [1.17, 1.18, 1.16, 1.17, 1.19];
    let after = [0.85, 0.86, 0.84, 0.85, 0.87];
    let soft_before = [20.0, 20.5, 19.5, 20.2, 19.8];
    let soft_after = [30.0, 30.5, 29.5, 30.2, 29.8];
    let stat = |m: Metric, unit: &str, v: &[f64], b: Option<&[f64]>| MetricStats {
        workload: "stream".into(),
        metric: m,
        unit: unit.into(),
        values: v.to_vec(),
        summary: summarize(v).ok(),
        median_ci: median_interval(v, &cfg).ok(),
        vs_baseline: b.and_then(|b| compare(v, b, m.direction(), &cfg).ok()),
        stop: None,
        limits: vec![],
    };
    r.metrics.extend([Metric::CpuPerWork, Metric::SoftirqPct]);
    let base = r.baseline_cell;
    let other = r
        .cells
        .iter()
        .find(|c| c.index != base && c.status == CellStatus::Done)
        .map(|c| c.index)
        .unwrap();
    for c in &mut r.cells {
        if c.index == base {
            c.stats
                .push(stat(Metric::CpuPerWork, "CPU-s/GB", &before, None));
            c.stats
                .push(stat(Metric::SoftirqPct, "%", &soft_before, None));
        } else if c.index == other {
            c.stats
                .push(stat(Metric::CpuPerWork, "CPU-s/GB", &after, Some(&before)));
            c.stats.push(stat(
                Metric::SoftirqPct,
                "%",
                &soft_after,
                Some(&soft_before),
            ));
        }
    }
    // The overhead row of CPU per work takes its workload's unit.
    let ovh = |v: &[f64]| summarize(v).unwrap();
    r.overhead.push(model::results::OverheadRow {
        workload: "stream".into(),
        metric: Metric::CpuPerWork,
        loopback: ovh(&[0.5, 0.6, 0.55]),
        lab: ovh(&[before[0], before[1], before[2]]),
    });
    let md = render_markdown(&r);
    assert!(
        md.lines()
            .any(|l| l.contains("CPU per work") && l.contains("0.550 CPU-s/GB")),
        "no overhead row of CPU per work in\n{md}"
    );
    let row = md
        .lines()
        .find(|l| l.contains("CPU per work") && l.contains("0.850 CPU-s/GB"))
        .unwrap_or_else(|| panic!("no CPU per work row in\n{md}"));
    assert!(row.contains("**gain**"), "{row}");
    let soft = md
        .lines()
        .find(|l| l.contains("| softirq |") && l.contains("30.0 %"))
        .unwrap_or_else(|| panic!("no softirq row in\n{md}"));
    assert!(soft.contains("| changed |"), "{soft}");
    assert!(!soft.contains("regression"), "{soft}");
    let page = render_html(&r).unwrap();
    assert!(
        page.contains("0.850 CPU-s/GB"),
        "no CPU per work in the page"
    );
    assert!(page.contains(">changed<"), "no changed verdict in the page");
}
