//! The page and the Markdown summary of an autotune results directory
//! ([`AutotuneResults`], read by `autotune`): the search trace chart and the
//! tables of accepted, rejected and left-out changes and re-checks, every
//! text escaped.

use std::fmt::Write as _;

use crate::autotune::{AutotuneResults, Eff};
use crate::charts::{self, Chart};
use crate::esc::{html as h, md};
use crate::ReportError;

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;color:#222;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.gain{background:#d7f2dc;color:#135a25;font-weight:600}.regression{background:#f8d5d5;color:#8a1414;font-weight:600}.banner{background:#fff3cd;border:1px solid #e0c060;padding:.5em 1em}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.facts dt{font-weight:600}dl.facts dd{margin:0}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}svg.chart{max-width:100%;height:auto;border:1px solid #eee}
footer{margin-top:2em;font-size:.8em;color:#777}
";

fn facts(r: &AutotuneResults) -> Vec<(&'static str, String)> {
    let better = match r.direction.as_str() {
        "lower" => " (lower is better)",
        "higher" => " (higher is better)",
        _ => "",
    };
    vec![
        (
            "objective",
            format!("{}: {}{better}", r.objective, r.metric),
        ),
        ("workload", r.workload.clone()),
        (
            "acceptance",
            format!(
                "95 % interval excludes zero and the gain is at least {} %, on fresh baseline runs",
                r.min_effect_pct
            ),
        ),
        (
            "runs",
            if r.passes.len() > 1 {
                let from: Vec<String> = r
                    .passes
                    .iter()
                    .skip(1)
                    .map(|p| {
                        format!(
                            "from run {} on top of {}",
                            p.first_run,
                            p.on_top_of.join(" + ")
                        )
                    })
                    .collect();
                format!(
                    "{} in {} passes ({} race round(s) of {} run(s) per arm in all, each pass's race then its re-checks; a later pass races the knobs left alone on top of what the earlier ones kept: {})",
                    r.runs_used,
                    r.passes.len(),
                    r.rounds,
                    r.repeats,
                    from.join("; ")
                )
            } else {
                format!(
                    "{} ({} race round(s) of {} run(s) per arm, then the re-checks)",
                    r.runs_used, r.rounds, r.repeats
                )
            },
        ),
        ("started", r.started.clone()),
        ("finished", r.finished.clone()),
        ("machine", r.machine.clone()),
        ("nettune", r.nettune_version.clone()),
    ]
}

fn eff_text(e: Option<&Eff>) -> String {
    e.map_or_else(|| "not raced".to_string(), Eff::text)
}

/// The HTML page of an autotune result.
pub fn render_autotune_html(r: &AutotuneResults) -> Result<String, ReportError> {
    let chart = charts::trace(r)?;
    let title = format!("nettune autotune: {}", h(&r.objective));
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<header>\n<h1>{title}</h1>\n"
    );
    if r.interrupted {
        let _ = writeln!(
            out,
            "<p class=\"banner\"><strong>Interrupted:</strong> {}</p>",
            h(interrupted_note(r))
        );
    }
    out.push_str("</header>\n<section id=\"search\">\n<h2>The search</h2>\n<dl class=\"facts\">\n");
    for (k, v) in facts(r) {
        let _ = writeln!(out, "<dt>{k}</dt><dd>{}</dd>", h(&v));
    }
    out.push_str("</dl>\n");
    match &chart {
        Some(c) => figure(&mut out, c),
        None => out.push_str("<p>No race round to chart.</p>\n"),
    }
    let missing = r.not_charted();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "<p>Not on the chart, their race has no % change (the baseline's median was zero, the interval is a difference, in the tables): {}.</p>",
            h(&missing.join(", "))
        );
    }
    out.push_str("</section>\n<section id=\"accepted\">\n<h2>Accepted</h2>\n");
    if r.accepted.is_empty() {
        out.push_str("<p>Nothing proven: the host stays as it is.</p>\n");
    } else {
        out.push_str(
            "<table><tr><th>change</th><th>race: change vs baseline [95 % CI]</th></tr>\n",
        );
        for a in &r.accepted {
            let _ = writeln!(
                out,
                "<tr><td class=\"gain\">{}</td><td>{}</td></tr>",
                h(&a.shown()),
                h(&eff_text(a.race.as_ref()))
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str(
        "</section>\n<section id=\"rechecks\">\n<h2>Re-checks on fresh baseline runs</h2>\n",
    );
    if r.rechecks.is_empty() {
        out.push_str("<p>No re-check ran.</p>\n");
    } else {
        out.push_str("<table><tr><th>changes</th><th>change vs baseline [95 % CI]</th><th>vs its best member alone</th><th>passed</th></tr>\n");
        for c in &r.rechecks {
            let class = if c.passed { "gain" } else { "regression" };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td></tr>",
                h(&c.label),
                h(&eff_text(c.effect.as_ref())),
                h(&c.versus_best.as_ref().map_or_else(String::new, Eff::text)),
                if c.passed { "yes" } else { "no" }
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n<section id=\"rejected\">\n<h2>Rejected</h2>\n");
    if r.rejected.is_empty() {
        out.push_str("<p>None.</p>\n");
    } else {
        out.push_str("<table><tr><th>change</th><th>race: change vs baseline [95 % CI]</th><th>why</th></tr>\n");
        for c in &r.rejected {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                h(&c.shown()),
                h(&eff_text(c.race.as_ref())),
                h(&c.reason)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n<section id=\"space\">\n<h2>The space</h2>\n");
    out.push_str("<table><tr><th>factor</th><th>now</th><th>tried</th><th>from</th></tr>\n");
    for (k, now, tried, from) in &r.space {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            h(k),
            h(now),
            h(tried),
            h(from)
        );
    }
    out.push_str("</table>\n");
    if !r.excluded.is_empty() {
        out.push_str("<table><tr><th>left out</th><th>level</th><th>why</th></tr>\n");
        for (k, l, why) in &r.excluded {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                h(k),
                h(l),
                h(why)
            );
        }
        out.push_str("</table>\n");
    }
    let _ = writeln!(
        out,
        "</section>\n<footer>Written by <code>nettune report</code> from an autotune results.json (schema {}). Self-contained: no scripts, fonts or network fetches.</footer>\n</body>\n</html>",
        r.schema_version
    );
    Ok(out)
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

/// What an interrupted search kept.
fn interrupted_note(r: &AutotuneResults) -> &'static str {
    if r.accepted.is_empty() {
        "the search was stopped before it proved anything; nothing is kept."
    } else {
        "the search was stopped early; it keeps only what its re-check had already proved."
    }
}

/// The Markdown summary of an autotune result.
pub fn render_autotune_markdown(r: &AutotuneResults) -> String {
    let mut out = format!("# nettune autotune: {}\n\n", md(&r.objective));
    if r.interrupted {
        let _ = writeln!(out, "**Interrupted:** {}\n", md(interrupted_note(r)));
    }
    for (k, v) in facts(r) {
        let _ = writeln!(out, "- **{k}**: {}", md(&v));
    }
    out.push_str("\nThe search trace chart is in report.html.\n\n## Accepted\n\n");
    if r.accepted.is_empty() {
        out.push_str("Nothing proven: the host stays as it is.\n\n");
    } else {
        out.push_str("| change | race: change vs baseline [95 % CI] |\n| --- | --- |\n");
        for a in &r.accepted {
            let _ = writeln!(
                out,
                "| {} | {} |",
                md(&a.shown()),
                md(&eff_text(a.race.as_ref()))
            );
        }
        out.push('\n');
    }
    out.push_str("## Re-checks on fresh baseline runs\n\n");
    if r.rechecks.is_empty() {
        out.push_str("No re-check ran.\n\n");
    } else {
        out.push_str("| changes | change vs baseline [95 % CI] | vs its best member alone | passed |\n| --- | --- | --- | --- |\n");
        for c in &r.rechecks {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                md(&c.label),
                md(&eff_text(c.effect.as_ref())),
                md(&c.versus_best.as_ref().map_or_else(String::new, Eff::text)),
                if c.passed { "yes" } else { "no" }
            );
        }
        out.push('\n');
    }
    out.push_str("## Rejected\n\n");
    if r.rejected.is_empty() {
        out.push_str("None.\n\n");
    } else {
        out.push_str(
            "| change | race: change vs baseline [95 % CI] | why |\n| --- | --- | --- |\n",
        );
        for c in &r.rejected {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                md(&c.shown()),
                md(&eff_text(c.race.as_ref())),
                md(&c.reason)
            );
        }
        out.push('\n');
    }
    out.push_str("## The space\n\n| factor | now | tried | from |\n| --- | --- | --- | --- |\n");
    for (k, now, tried, from) in &r.space {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            md(k),
            md(now),
            md(tried),
            md(from)
        );
    }
    if !r.excluded.is_empty() {
        out.push_str("\n| left out | level | why |\n| --- | --- | --- |\n");
        for (k, l, why) in &r.excluded {
            let _ = writeln!(out, "| {} | {} | {} |", md(k), md(l), md(why));
        }
    }
    out
}
