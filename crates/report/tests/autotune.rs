//! The page of an autotune results directory (issue 20): the search trace
//! chart and the tables, from `fixtures/autotune-results.json`, a real
//! `nettune autotune --objective max-throughput --lab` run of 2026-11-26
//! (the figures in docs/autotune.md; written as outcome.json by the version
//! of that day, with the fields results.json has since — kind, metric,
//! direction, workload, machine, times, `versus_best: null` — filled in).

#![allow(clippy::unwrap_used)]

use nettune_report::{
    read_autotune, render_autotune_html, render_autotune_markdown, write_dir, AutotuneResults,
};
use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/autotune-results.json")
}

/// A results.json of `fixtures/`, read.
fn load(name: &str) -> AutotuneResults {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    AutotuneResults::from_value(&doc).expect("an autotune results.json")
}

fn results() -> AutotuneResults {
    load("autotune-results.json")
}

fn chart(page: &str) -> &str {
    let start = page.find("<svg id=\"chart-autotune-trace\"").unwrap();
    let end = page[start..].find("</svg>").unwrap();
    &page[start..start + end + "</svg>".len()]
}

#[test]
fn markdown_of_the_autotune_fixture() {
    insta::assert_snapshot!(render_autotune_markdown(&results()));
}

#[test]
fn the_search_trace_chart_of_the_autotune_fixture() {
    let page = render_autotune_html(&results()).unwrap();
    insta::assert_snapshot!(chart(&page));
}

#[test]
fn the_trace_chart_has_a_point_per_candidate_round_and_the_recheck() {
    let page = render_autotune_html(&results()).unwrap();
    let svg = chart(&page);
    assert!(svg.contains("aria-label=\"Search trace: max-throughput (throughput)"));
    // The ±2 % band and the names of the candidates and the re-check.
    assert!(svg.contains("fill=\"#FFEEBA\""));
    for name in [
        "congestion_control=cubic",
        "rps_cpus=0,1",
        "tcp_wmem=4096 16384 33554432",
        "re-check congestion_control=cubic",
    ] {
        assert!(svg.contains(name), "{name}");
    }
    // Accepted (green) and rejected (red) dots: congestion_control=cubic
    // raced 4 rounds; the 5 rejected candidates their rounds each.
    let dots = |fill: &str| {
        svg.split("<circle")
            .skip(1)
            .filter(|c| c[..c.find("/>").unwrap()].contains(fill))
            .count()
    };
    // 4 race rounds of the accepted change, and the legend's dot.
    assert_eq!(dots("fill=\"#289646\""), 5, "{svg:.2000}");
    // The rejected ones: a point per round each, and the legend's dot.
    assert!(dots("fill=\"#C83232\"") > 5, "{svg:.2000}");
    // The tables: accepted, the re-check, rejected with the reasons.
    assert!(page.contains("<td class=\"gain\">congestion_control=cubic</td>"));
    assert!(page.contains("harmful: the interval excludes zero on the worse side"));
    assert!(
        page.contains("+180.8 % [+167.9, +218.4]"),
        "re-check interval"
    );
}

/// `fixtures/autotune-forward-results.json`: a real `nettune autotune
/// --objective max-throughput --lab --seed 1` of 2026-11-29 (vm, kernel
/// 6.18.44-fc-v657, 2 CPUs; bench/studies/autotune-grid): cubic kept by
/// the first pass (+108.2 %), then a forward pass on top of it that proved
/// nothing at the lab's noise.
fn forward() -> AutotuneResults {
    load("autotune-forward-results.json")
}

#[test]
fn markdown_of_a_search_with_a_forward_pass() {
    insta::assert_snapshot!(render_autotune_markdown(&forward()));
}

#[test]
fn a_forward_pass_is_charted_against_the_setting_it_started_from() {
    let page = render_autotune_html(&forward()).unwrap();
    let svg = chart(&page);
    // The second pass's candidates, raced on top of cubic, are drawn
    // (their runs are `congestion_control=cubic + ...` against
    // `congestion_control=cubic`), named with a plus.
    for name in [
        "+ gro_flush_timeout=50000",
        "+ napi_defer_hard_irqs=2",
        "+ rps_cpus=0,1",
        "re-check congestion_control=cubic",
    ] {
        assert!(svg.contains(name), "{name}");
    }
    let dots = svg.split("<circle").count() - 1;
    // First pass: cubic 2 rounds; second: 5 candidates, 1 to 3 rounds.
    assert!(dots >= 2 + 5 + 2, "{dots}");
    assert!(page.contains("in 2 passes"));
    assert!(page.contains("gro_flush_timeout=50000 (on top of congestion_control=cubic)"));
}

#[test]
fn write_dir_tells_an_autotune_result_from_an_experiment() {
    let t = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(), t.path().join("results.json")).unwrap();
    assert!(read_autotune(t.path()).unwrap().is_some());
    let (html, md) = write_dir(t.path()).unwrap();
    assert!(std::fs::read_to_string(html)
        .unwrap()
        .contains("chart-autotune-trace"));
    assert!(std::fs::read_to_string(md)
        .unwrap()
        .starts_with("# nettune autotune: max-throughput"));
    // An experiment's results.json is not an autotune result.
    let e = tempfile::tempdir().unwrap();
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/synthetic-results.json"),
        e.path().join("results.json"),
    )
    .unwrap();
    assert!(read_autotune(e.path()).unwrap().is_none());
    // A newer schema is refused, naming the file.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    doc["schema_version"] = 2.into();
    std::fs::write(t.path().join("results.json"), doc.to_string()).unwrap();
    let err = read_autotune(t.path()).unwrap_err().to_string();
    assert!(
        err.contains("results.json") && err.contains("schema_version 2"),
        "{err}"
    );
}

/// Untrusted text is escaped; a field of the wrong shape refuses the file
/// (naming it and the field's trouble), never a panic.
#[test]
fn hostile_text_is_escaped_and_broken_fields_refused() {
    let doc = serde_json::json!({
        "schema_version": 1, "kind": "autotune", "objective": "<script>x</script>",
        "accepted": [{"knob": "<b>", "level": "1", "race": {"estimate": null, "lo": 1.0,
            "hi": 2.0, "level": 0.95, "unit": "%", "verdict": "gain", "runs": 3, "baseline_runs": 3}}],
        "trace": [{"seq": 0, "arm": "baseline", "value": null}],
        "workload": {"repeats": 0},
    });
    let r = AutotuneResults::from_value(&doc).unwrap();
    let page = render_autotune_html(&r).unwrap();
    assert!(!page.contains("<script>") && !page.contains("<b>"));
    assert!(page.contains("&lt;script&gt;"));
    let md = render_autotune_markdown(&r);
    assert!(md.contains("not raced"), "{md}");
    let t = tempfile::tempdir().unwrap();
    for broken in [
        serde_json::json!({"kind": "autotune", "rejected": "not a list"}),
        serde_json::json!({"kind": "autotune", "rechecks": [{"changes": [1, 2], "effect": null}]}),
        serde_json::json!({"kind": "autotune", "trace": [{"seq": -1, "arm": "baseline", "value": 1.0}]}),
        serde_json::json!({"kind": "autotune", "workload": {"min_effect_pct": "x"}}),
    ] {
        assert!(AutotuneResults::from_value(&broken).is_none(), "{broken}");
        std::fs::write(t.path().join("results.json"), broken.to_string()).unwrap();
        let err = read_autotune(t.path()).unwrap_err().to_string();
        assert!(
            err.contains("results.json: not an autotune results file"),
            "{err}"
        );
    }
}

/// Whether every key of `want` is in `got` with the same value (`got` may
/// have more: the keys a file of before did not have yet).
fn holds(got: &serde_json::Value, want: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|gv| holds(gv, v))),
        (Value::Array(g), Value::Array(w)) => {
            g.len() == w.len() && g.iter().zip(w).all(|(a, b)| holds(a, b))
        }
        _ => got == want,
    }
}

/// Every fixture reads into the typed results and writes back with every
/// field it had, unchanged: the type holds every field a real file has
/// (fields added since are written with their defaults).
#[test]
fn the_typed_results_hold_every_field_of_the_fixtures() {
    for name in [
        "autotune-results.json",
        "autotune-max-cps-results.json",
        "autotune-forward-results.json",
    ] {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let text = std::fs::read_to_string(p).unwrap();
        let typed = model::results::autotune::AutotuneResults::from_json(&text).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(&typed.to_json_pretty().unwrap()).unwrap();
        let want: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(holds(&back, &want), "{name}");
    }
}

/// The earlier rounds are recomputed by the search's rule and seed: on the
/// runs of the last round they give the search's own interval exactly.
#[test]
fn the_recomputed_rounds_use_the_search_rule_and_seed() {
    use model::stats::{compare, BootstrapConfig, Direction};
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    let trace = doc["trace"].as_array().unwrap();
    let race = &trace[..trace.len() - 18]; // the re-check: 9 + 9 runs
    let runs = |arm: &str| -> Vec<f64> {
        race.iter()
            .filter(|r| r["arm"] == arm)
            .map(|r| r["value"].as_f64().unwrap())
            .collect()
    };
    let cell = runs("congestion_control=cubic");
    let base = runs("baseline");
    assert_eq!((cell.len(), base.len()), (12, 12));
    let boot = BootstrapConfig {
        seed: doc["workload"]["seed"].as_u64().unwrap() ^ 0x005E_ED0F_B007,
        resamples: 1000,
        min_effect_pct: 2.0,
        ..BootstrapConfig::default()
    };
    let c = compare(&cell, &base, Direction::HigherIsBetter, &boot).unwrap();
    let p = c.change_pct.unwrap();
    let race = &doc["accepted"][0]["race"];
    for (got, key) in [(p.estimate, "estimate"), (p.lo, "lo"), (p.hi, "hi")] {
        let want = race[key].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{key}: {got} vs {want}");
    }
}

/// A real max-cps run (1 s runs, 2026-11-26 04:25) whose race had a zero
/// baseline median (intervals as differences) and two re-checks sharing
/// their batches: the re-checks are charted at their arms' last runs, the
/// race's rounds end where the trace says, and the candidates without a %
/// change are named under the chart.
#[test]
fn a_zero_baseline_race_and_shared_rechecks() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/autotune-max-cps-results.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let r = AutotuneResults::from_value(&doc).unwrap();
    let page = render_autotune_html(&r).unwrap();
    let svg = chart(&page);
    assert!(svg.contains("re-check tcp_tw_reuse=1 + ip_local_port_range=1024-65535"));
    assert!(
        svg.contains("re-check tcp_tw_reuse=1<") || svg.contains("re-check tcp_tw_reuse=1\n"),
        "{svg:.3000}"
    );
    assert!(
        page.contains("Not on the chart, their race has no % change"),
        "{page:.3000}"
    );
    assert!(page.contains("tcp_tw_reuse=1, ip_local_port_range=1024-65535"));
}

/// A search judged on means (`--statistic mean`): the chart says so and
/// recomputes its earlier rounds on means, not medians.
#[test]
fn a_search_on_means_is_charted_on_means() {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    let on_medians = AutotuneResults::from_value(&doc).unwrap();
    doc["workload"]["statistic"] = serde_json::json!("mean");
    let on_means = AutotuneResults::from_value(&doc).unwrap();
    let medians = render_autotune_html(&on_medians).unwrap();
    let means = render_autotune_html(&on_means).unwrap();
    assert!(chart(&medians).contains("change of the median vs baseline"));
    assert!(chart(&means).contains("change of the mean vs baseline"));
    let points = |svg: &str| -> Vec<String> {
        svg.lines()
            .filter(|l| l.contains("<circle"))
            .map(str::to_string)
            .collect()
    };
    assert!(!points(chart(&medians)).is_empty());
    assert_ne!(points(chart(&medians)), points(chart(&means)));
}
