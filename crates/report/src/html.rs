//! The self-contained HTML page: inline CSS, inline SVG charts, no scripts,
//! no fonts, no network fetches.

use std::fmt::Write as _;

use model::results::ExperimentResults;
use model::stats::Verdict;

use crate::charts::{self, Chart};
use crate::data::{changes, facts_text, findings, subject, MAX_ROWS, MAX_SECTIONS};
use crate::esc::html as h;
use crate::markdown::{cleared, facts, unit_of};
use crate::num::{metric_name, num, Scale};
use crate::{rhel_bdp, table, ReportError};
use model::findings::{Finding, OnHost};

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;color:#222;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.gain{background:#d7f2dc;color:#135a25;font-weight:600}.regression{background:#f8d5d5;color:#8a1414;font-weight:600}
.nochange{color:#666}.inconclusive{color:#8a5a00;font-style:italic}.baseline{color:#2d4f95}.sev-critical{color:#a00;font-weight:600}.sev-warning{color:#9a5b00;font-weight:600}.banner{background:#fff3cd;border:1px solid #e0c060;padding:.5em 1em}
.desc{font-size:1.05em;color:#444}dl.facts{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.facts dt{font-weight:600}dl.facts dd{margin:0}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}svg.chart{max-width:100%;height:auto;border:1px solid #eee}
pre{background:#f7f7f7;padding:.6em;overflow:auto;max-height:30em;font-size:.8em}details{margin:.4em 0}summary{cursor:pointer}
footer{margin-top:2em;font-size:.8em;color:#777}
";

fn verdict_class(v: Option<Verdict>, baseline: bool) -> &'static str {
    match v {
        _ if baseline => "baseline",
        Some(Verdict::Gain) => "gain",
        Some(Verdict::Regression) => "regression",
        Some(Verdict::Inconclusive) => "inconclusive",
        _ => "nochange",
    }
}

fn findings_table(out: &mut String, list: &[OnHost<Finding>]) {
    if list.is_empty() {
        out.push_str("<p>No findings.</p>\n");
        return;
    }
    out.push_str("<table><tr><th>id</th><th>severity</th><th>subject</th><th>title</th></tr>\n");
    for f in list {
        let severity = f.item.severity.as_str();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"sev-{severity}\">{severity}</td><td>{}</td><td>{}</td></tr>",
            h(f.item.id.as_str()),
            h(&subject(f)),
            h(&f.item.title)
        );
    }
    out.push_str("</table>\n");
}

fn figure(out: &mut String, c: &Chart) {
    let _ = writeln!(
        out,
        "<figure id=\"fig-{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>",
        c.id,
        c.svg,
        h(c.note)
    );
}

/// The HTML page of `r`.
pub fn render_html(r: &ExperimentResults) -> Result<String, ReportError> {
    let charts = charts::all(r)?;
    let forest = charts::forest(r)?;
    let mut out = String::new();
    section_header(&mut out, r);
    section_forest(&mut out, forest.as_ref());
    section_machine(&mut out, r);
    section_bottom(&mut out, r);
    section_cells(&mut out, r);
    section_rhel_bdp(&mut out, r);
    section_charts(&mut out, &charts);
    section_overhead(&mut out, r);
    section_plans(&mut out, r);
    section_doctor(&mut out, r);
    section_notes(&mut out, r);
    section_hosts(&mut out, r);
    let _ = writeln!(
        out,
        "<footer>Written by <code>nettune report</code> from results.json (schema {}). Self-contained: no scripts, fonts or network fetches.</footer>\n</body>\n</html>",
        r.schema_version
    );
    Ok(out)
}

/// The document head and the page header: name, description, an interrupted run's banner.
fn section_header(out: &mut String, r: &ExperimentResults) {
    let name = h(&r.name);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>nettune report: {name}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n"
    );
    let _ = writeln!(out, "<header>\n<h1>nettune report: {name}</h1>");
    let _ = writeln!(
        out,
        "<p class=\"headline\"><strong>{}</strong></p>",
        h(&crate::table::headline(r))
    );
    if !r.description.is_empty() {
        let _ = writeln!(out, "<p class=\"desc\">{}</p>", h(&r.description));
    }
    if r.interrupted {
        out.push_str("<p class=\"banner\"><strong>Interrupted:</strong> the run stopped before every cell ran; what follows is what was measured so far.</p>\n");
    }
    out.push_str("</header>\n");
}

/// The forest plot, first thing under the header: every change against
/// the baseline at a glance.
fn section_forest(out: &mut String, forest: Option<&Chart>) {
    if let Some(c) = forest {
        out.push_str(
            "<section id=\"at-a-glance\">\n<h2>At a glance: change against the baseline</h2>\n",
        );
        figure(out, c);
        out.push_str("</section>\n");
    }
}

/// Machine and lab: facts, workloads and factors.
fn section_machine(out: &mut String, r: &ExperimentResults) {
    out.push_str("<section id=\"machine\">\n<h2>Machine and lab</h2>\n<dl class=\"facts\">\n");
    for (k, v) in facts(r) {
        let _ = writeln!(out, "<dt>{k}</dt><dd>{}</dd>", h(&v));
    }
    if let Some(l) = &r.lab {
        let _ = writeln!(
            out,
            "<dt>delay mechanism</dt><dd>{}</dd>",
            h(&l.delay_mechanism)
        );
    }
    out.push_str("</dl>\n");
    if !r.workloads.is_empty() {
        out.push_str("<table><tr><th>workload</th><th>test</th><th>arguments</th></tr>\n");
        for w in r.workloads.iter().take(MAX_ROWS) {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                h(&w.name),
                h(&w.test),
                h(&w.args.join(" "))
            );
        }
        out.push_str("</table>\n");
    }
    if !r.factors.is_empty() {
        out.push_str("<table><tr><th>factor</th><th>levels</th></tr>\n");
        for f in r.factors.iter().take(MAX_ROWS) {
            let levels: Vec<String> = f.levels.iter().take(MAX_ROWS).map(|l| h(l)).collect();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td></tr>",
                h(&f.knob),
                levels.join(" · ")
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n");
}

/// Results per cell, and the cells not measured in full.
fn section_cells(out: &mut String, r: &ExperimentResults) {
    out.push_str("<section id=\"cells\">\n<h2>Results per cell</h2>\n");
    let table::StatRows { rows, left_out } = table::rows(r);
    if rows.is_empty() {
        out.push_str("<p>No statistics yet.</p>\n");
    } else {
        out.push_str("<table><tr><th>cell</th><th>status</th><th>workload</th><th>metric</th><th>n</th><th>median</th><th>95 % CI</th><th>change vs baseline [95 % CI]</th><th>verdict</th></tr>\n");
        for row in &rows {
            let class = verdict_class(row.text.verdict, row.baseline);
            let stop = if row.stats.stop.as_deref().unwrap_or_default().is_empty() {
                String::new()
            } else {
                format!(
                    " title=\"until-ci: {}\"",
                    h(row.stats.stop.as_deref().unwrap_or_default())
                )
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\"{stop}>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
                h(&table::cell_name(row.cell)),
                table::status_word(&row.cell.status),
                h(&row.stats.workload),
                crate::num::metric_name(row.stats.metric),
                row.n,
                h(&row.text.median),
                h(&row.text.ci),
                h(&row.text.change),
                h(&row.text.verdict_word())
            );
        }
        out.push_str("</table>\n");
        if left_out > 0 {
            let _ = writeln!(out, "<p>{left_out} more rows left out.</p>");
        }
    }
    let (drops, left_out) = table::drops(r);
    if !drops.is_empty() {
        out.push_str("<h3>Drops by reason per cell</h3>\n<table><tr><th>cell</th><th>kernel</th><th>runs watched</th><th>drops</th><th>drops/s</th><th>largest reasons</th></tr>\n");
        for d in &drops {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                h(&d.cell),
                h(&d.host),
                d.runs,
                h(&d.total),
                h(&d.per_sec),
                h(&d.reasons)
            );
        }
        out.push_str("</table>\n");
        if left_out > 0 {
            let _ = writeln!(out, "<p>{left_out} more rows left out.</p>");
        }
    }
    let unmeasured = table::unmeasured(r);
    if !unmeasured.is_empty() {
        out.push_str("<h3>Cells not measured in full</h3>\n<table><tr><th>cell</th><th>status</th><th>reason</th></tr>\n");
        for (cell, status, reason) in &unmeasured {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{status}</td><td>{}</td></tr>",
                h(cell),
                h(reason)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n");
}

/// Red Hat's BDP table beside this run, when the run is that pipe.
fn section_rhel_bdp(out: &mut String, r: &ExperimentResults) {
    if let Some(rows) = rhel_bdp::rows(r) {
        out.push_str("<section id=\"rhel6-bdp\">\n<h2>Red Hat's BDP table beside this run</h2>\n<p>Jeremy Eder, &ldquo;Performance Tuning: Red Hat Enterprise Linux 6&rdquo; (Red Hat slides, &ldquo;Bandwidth Delay Product/Long Fat Pipe&rdquo;) measured a 100 Mbit/s, 100 ms RTT pipe on a Linux 2.6-era host (5 GB transfers); this run is the same pipe in the lab.</p>\n");
        out.push_str("<table><tr><th>setting</th><th>Red Hat slides (Mbit/s)</th><th>this run: median (Mbit/s)</th><th>95 % CI</th><th>n</th><th>from</th></tr>\n");
        for row in &rows {
            let (median, ci, n) = row.cells();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{median}</td><td>{ci}</td><td class=\"num\">{n}</td><td>{}</td></tr>",
                row.setting,
                num(row.seed_mbit),
                h(&row.source)
            );
        }
        out.push_str("</table>\n</section>\n");
    }
}

/// The charts, each a figure with its caption.
fn section_charts(out: &mut String, charts: &[Chart]) {
    out.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n");
    if charts.is_empty() {
        out.push_str("<p>Nothing to chart yet.</p>\n");
    }
    for c in charts {
        figure(out, c);
    }
    out.push_str("</section>\n");
}

/// Lab overhead: loopback against the lab path.
fn section_overhead(out: &mut String, r: &ExperimentResults) {
    if !r.overhead.is_empty() {
        out.push_str(
            "<section id=\"overhead\">\n<h2>Lab overhead: loopback against the lab path</h2>\n",
        );
        out.push_str("<table><tr><th>workload</th><th>metric</th><th>loopback median (n)</th><th>lab path median (n)</th><th>lab / loopback</th></tr>\n");
        for o in r.overhead.iter().take(MAX_ROWS) {
            let scale = Scale::for_unit(&unit_of(r, &o.workload, o.metric), o.loopback.median);
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{} ({})</td><td class=\"num\">{} ({})</td><td class=\"num\">{}</td></tr>",
                h(&o.workload),
                metric_name(o.metric),
                h(&scale.fmt(o.loopback.median)),
                o.loopback.n,
                h(&scale.fmt(o.lab.median)),
                o.lab.n,
                num(o.lab.median / o.loopback.median)
            );
        }
        out.push_str("</table>\n</section>\n");
    }
}

/// The plans applied, within the row budget.
/// What weakens the measurement, and each fix's bottom line.
fn section_bottom(out: &mut String, r: &ExperimentResults) {
    if !r.warnings.is_empty() {
        out.push_str("<section id=\"warnings\">\n<h2>Warnings</h2>\n<ul>\n");
        for w in r.warnings.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "<li class=\"banner\">{}</li>", h(w));
        }
        out.push_str("</ul>\n</section>\n");
    }
    let lines = model::bottom::bottom_line(r);
    if !lines.is_empty() {
        out.push_str("<section id=\"bottom\">\n<h2>Bottom line</h2>\n<p>Each fix alone against the baseline, on the workloads it concerns:</p>\n<ul>\n");
        for l in lines.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "<li>{}</li>", h(&l.text()));
        }
        out.push_str("</ul>\n</section>\n");
    }
}

fn section_plans(out: &mut String, r: &ExperimentResults) {
    let apps = crate::markdown::app_options(r);
    if !apps.is_empty() {
        out.push_str("<section id=\"app-options\">\n<h2>Application options applied</h2>\n<p>Socket options of the bench in a fix's cell, not host settings:</p>\n<ul>\n");
        for a in apps.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "<li>{}</li>", h(a));
        }
        out.push_str("</ul>\n</section>\n");
    }
    if !r.plans.is_empty() {
        out.push_str("<section id=\"plans\">\n<h2>Plans applied</h2>\n");
        let mut budget = MAX_ROWS;
        for (label, plan) in r.plans.iter().take(MAX_SECTIONS) {
            let _ = writeln!(out, "<h3>{}</h3>", h(label));
            let mut list = changes(plan);
            list.truncate(budget);
            budget = budget.saturating_sub(list.len());
            if list.is_empty() {
                out.push_str("<p>No changes.</p>\n");
                continue;
            }
            out.push_str("<table><tr><th>knob</th><th>target</th><th>before → after</th><th>rule</th><th>reason</th></tr>\n");
            for c in &list {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code> → <code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    h(&c.knob),
                    h(&c.target),
                    h(&c.before),
                    h(&c.after),
                    h(&c.rule),
                    h(&c.reason)
                );
            }
            out.push_str("</table>\n");
        }
        out.push_str("</section>\n");
    }
}

/// Doctor findings before and after, and the ones cleared.
fn section_doctor(out: &mut String, r: &ExperimentResults) {
    if r.doctor_before.is_some() || r.doctor_after.is_some() {
        out.push_str("<section id=\"doctor\">\n<h2>Doctor findings</h2>\n");
        let before = r.doctor_before.as_ref().map(findings).unwrap_or_default();
        let after = r.doctor_after.as_ref().map(findings).unwrap_or_default();
        out.push_str("<h3>Before</h3>\n");
        if r.doctor_before.is_some() {
            findings_table(out, before);
        } else {
            out.push_str("<p>Doctor did not run.</p>\n");
        }
        out.push_str("<h3>After</h3>\n");
        if r.doctor_after.is_some() {
            findings_table(out, after);
            let gone = cleared(before, after);
            if !gone.is_empty() {
                let ids: Vec<String> = gone.iter().map(|i| h(i)).collect();
                let _ = writeln!(out, "<p>Cleared: {}.</p>", ids.join(", "));
            }
        } else {
            out.push_str("<p>Doctor did not run.</p>\n");
        }
        out.push_str("</section>\n");
    }
}

/// The run's notes.
fn section_notes(out: &mut String, r: &ExperimentResults) {
    if !r.notes.is_empty() {
        out.push_str("<section id=\"notes\">\n<h2>Notes</h2>\n<ul>\n");
        for n in r.notes.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "<li>{}</li>", h(n.text()));
        }
        out.push_str("</ul>\n</section>\n");
    }
}

/// Each host's facts, folded.
fn section_hosts(out: &mut String, r: &ExperimentResults) {
    if !r.host_facts.is_empty() {
        out.push_str("<section id=\"hosts\">\n<h2>Host facts</h2>\n");
        for (host, facts) in r.host_facts.iter().take(MAX_SECTIONS) {
            let _ = writeln!(
                out,
                "<details><summary>{}</summary>\n<pre>{}</pre>\n</details>",
                h(host),
                crate::esc::html_upto(&facts_text(facts), crate::data::MAX_FACTS_BYTES + 64)
            );
        }
        out.push_str("</section>\n");
    }
}
