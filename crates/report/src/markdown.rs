//! The Markdown summary.

use model::stats::Verdict;
use std::fmt::Write as _;

use model::results::{ExperimentResults, ResultsKind};

use crate::data::{changes, findings, subject, MAX_ROWS, MAX_SECTIONS};
use crate::esc::md;
use crate::num::{metric_name, num, Scale};
use crate::{rhel_bdp, table};
use model::findings::{Finding, OnHost};

/// Short facts of the run, shared with the page: (label, raw text).
pub(crate) fn facts(r: &ExperimentResults) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (
            "kind",
            match r.kind {
                ResultsKind::Lab => "nettune lab".to_string(),
                ResultsKind::Experiment => "nettune experiment".to_string(),
            },
        ),
        ("nettune", r.nettune_version.clone()),
        ("started", r.started.clone()),
        (
            "finished",
            r.finished.clone().unwrap_or_else(|| "not finished".into()),
        ),
        ("seed", r.seed.to_string()),
    ];
    let m = &r.machine;
    let mut machine = format!("{}, kernel {}, {} CPUs", m.hostname, m.kernel, m.cpus);
    if let Some(model) = &m.cpu_model {
        let _ = write!(machine, " ({model})");
    }
    out.push(("machine", machine));
    out.push(("lab", lab_text(r)));
    out
}

/// The lab in one line.
pub(crate) fn lab_text(r: &ExperimentResults) -> String {
    let Some(l) = &r.lab else {
        return "none (remote agents or this host)".into();
    };
    let rate = l.rate_mbit.map_or("no rate limit".to_string(), |v| {
        format!("rate {} Mbit/s", num(v))
    });
    format!(
        "{} hosts × {} queues over {}, {rate}, round trip +{} ms (half each way), jitter {} ms, loss {} %; delay mechanism: {}",
        l.hosts,
        l.queues,
        l.path,
        num(l.delay_ms),
        num(l.jitter_ms),
        num(l.loss_pct),
        l.delay_mechanism
    )
}

fn finding_rows(out: &mut String, list: &[OnHost<Finding>]) {
    if list.is_empty() {
        out.push_str("No findings.\n\n");
        return;
    }
    out.push_str("| id | severity | subject | title |\n| --- | --- | --- | --- |\n");
    for f in list {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            md(f.item.id.as_str()),
            md(f.item.severity.as_str()),
            md(&subject(f)),
            md(&f.item.title)
        );
    }
    out.push('\n');
}

/// Ids found before and not after, on the same host.
pub(crate) fn cleared(before: &[OnHost<Finding>], after: &[OnHost<Finding>]) -> Vec<String> {
    let mut ids: Vec<String> = before
        .iter()
        .filter(|b| {
            !after
                .iter()
                .any(|a| a.item.id == b.item.id && a.host == b.host)
        })
        .map(|b| b.item.id.to_string())
        .collect();
    ids.dedup();
    ids
}

/// The title, description, an interrupted run's banner, facts, workloads and factors.
fn section_header(out: &mut String, r: &ExperimentResults) {
    let _ = writeln!(out, "# nettune report: {}\n", md(&r.name));
    let _ = writeln!(out, "**{}**\n", md(&crate::table::headline(r)));
    if !r.description.is_empty() {
        // Not a `> ` quote: a shell would take `>` as a redirection.
        let _ = writeln!(out, "Description: {}\n", md(&r.description));
    }
    if r.interrupted {
        out.push_str("**Interrupted:** the run stopped before every cell ran. The results below are what was measured so far.\n\n");
    }
    for (k, v) in facts(r) {
        let _ = writeln!(out, "- {k}: {}", md(&v));
    }
    out.push_str("\nThe charts are in the HTML report (report.html by default).\n\n");
    if !r.workloads.is_empty() {
        out.push_str("Workloads:\n\n");
        for w in r.workloads.iter().take(MAX_ROWS) {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                md(&w.name),
                md(&w.test),
                md(&w.args.join(" "))
            );
        }
        out.push('\n');
    }
    if !r.factors.is_empty() {
        out.push_str("Factors:\n\n");
        for f in r.factors.iter().take(MAX_ROWS) {
            let levels: Vec<String> = f.levels.iter().take(MAX_ROWS).map(|l| md(l)).collect();
            let _ = writeln!(out, "- {}: {}", md(&f.knob), levels.join(" · "));
        }
        out.push('\n');
    }
}

/// Results per cell, and the cells not measured in full.
fn section_cells(out: &mut String, r: &ExperimentResults) {
    out.push_str("## Results per cell\n\n");
    let table::StatRows { rows, left_out } = table::rows(r);
    if rows.is_empty() {
        out.push_str("No statistics yet.\n\n");
    } else {
        out.push_str("| cell | status | workload | metric | n | median | 95 % CI | change vs baseline [95 % CI] | verdict |\n");
        out.push_str("| --- | --- | --- | --- | ---: | ---: | --- | --- | --- |\n");
        for row in &rows {
            let verdict = row.text.verdict_word();
            let verdict = match row.text.verdict {
                Some(Verdict::Gain | Verdict::Regression) => format!("**{verdict}**"),
                _ => verdict,
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {verdict} |",
                md(&table::cell_name(row.cell)),
                table::status_word(&row.cell.status),
                md(&row.stats.workload),
                crate::num::metric_name(row.stats.metric),
                row.n,
                md(&row.text.median),
                md(&row.text.ci),
                md(&row.text.change),
            );
        }
        if left_out > 0 {
            let _ = writeln!(out, "\n{left_out} more rows left out.");
        }
        out.push('\n');
    }

    let (drops, left_out) = table::drops(r);
    if !drops.is_empty() {
        out.push_str("## Drops by reason per cell\n\nThe kernel's drop reasons (`skb:kfree_skb`) over each cell's measured runs, per kernel that counted them (docs/drops.md).\n\n| cell | kernel | runs watched | drops | drops/s | largest reasons |\n| --- | --- | ---: | ---: | ---: | --- |\n");
        for d in &drops {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                md(&d.cell),
                md(&d.host),
                d.runs,
                d.total,
                d.per_sec,
                md(&d.reasons)
            );
        }
        if left_out > 0 {
            let _ = writeln!(out, "\n{left_out} more rows left out.");
        }
        out.push('\n');
    }

    let unmeasured = table::unmeasured(r);
    if !unmeasured.is_empty() {
        out.push_str(
            "## Cells not measured in full\n\n| cell | status | reason |\n| --- | --- | --- |\n",
        );
        for (cell, status, reason) in &unmeasured {
            let _ = writeln!(out, "| {} | {status} | {} |", md(cell), md(reason));
        }
        out.push('\n');
    }
}

/// Red Hat's BDP table beside this run, when the run is that pipe.
fn section_rhel_bdp(out: &mut String, r: &ExperimentResults) {
    if let Some(rows) = rhel_bdp::rows(r) {
        out.push_str("## Red Hat's BDP table beside this run\n\n");
        out.push_str("Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, \"Bandwidth Delay Product/Long Fat Pipe\") measured a 100 Mbit/s, 100 ms RTT pipe on a Linux 2.6-era host (5 GB transfers); this run is the same pipe in the lab.\n\n");
        out.push_str("| setting | Red Hat slides (Mbit/s) | this run: median (Mbit/s) | 95 % CI | n | from |\n| --- | ---: | ---: | --- | ---: | --- |\n");
        for row in &rows {
            let (median, ci, n) = row.cells();
            let _ = writeln!(
                out,
                "| {} | {} | {median} | {ci} | {n} | {} |",
                row.setting,
                num(row.seed_mbit),
                md(&row.source)
            );
        }
        out.push('\n');
    }
}

/// Lab overhead: loopback against the lab path.
fn section_overhead(out: &mut String, r: &ExperimentResults) {
    if !r.overhead.is_empty() {
        out.push_str("## Lab overhead: loopback against the lab path\n\n");
        out.push_str("| workload | metric | loopback median (n) | lab path median (n) | lab / loopback |\n| --- | --- | ---: | ---: | ---: |\n");
        for o in r.overhead.iter().take(MAX_ROWS) {
            let scale = Scale::for_unit(&unit_of(r, &o.workload, o.metric), o.loopback.median);
            let ratio = o.lab.median / o.loopback.median;
            let _ = writeln!(
                out,
                "| {} | {} | {} ({}) | {} ({}) | {} |",
                md(&o.workload),
                metric_name(o.metric),
                md(&scale.fmt(o.loopback.median)),
                o.loopback.n,
                md(&scale.fmt(o.lab.median)),
                o.lab.n,
                num(ratio)
            );
        }
        out.push('\n');
    }
}

/// What weakens the measurement, and each fix's bottom line.
fn section_bottom(out: &mut String, r: &ExperimentResults) {
    if !r.warnings.is_empty() {
        out.push_str("## Warnings\n\n");
        for w in r.warnings.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- {}", md(w));
        }
        out.push('\n');
    }
    let lines = model::bottom::bottom_line(r);
    if !lines.is_empty() {
        out.push_str("## Bottom line\n\nEach fix alone against the baseline, on the workloads it concerns:\n\n");
        for l in lines.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- {}", md(&l.text()));
        }
        out.push('\n');
    }
}

/// Application options each fix's cell ran with (socket options of the
/// bench, not host settings), as `finding: bench FLAGS on WORKLOADS`.
pub(crate) fn app_options(r: &ExperimentResults) -> Vec<String> {
    r.fixes
        .iter()
        .filter(|f| !f.app_options.is_empty())
        .map(|f| {
            format!(
                "{}: bench {} on {}",
                f.finding,
                f.app_options.join(" "),
                f.workloads.join(", ")
            )
        })
        .collect()
}

/// The application options and the plans applied, within the row budget.
fn section_plans(out: &mut String, r: &ExperimentResults) {
    let apps = app_options(r);
    if !apps.is_empty() {
        out.push_str("## Application options applied\n\nSocket options of the bench in a fix's cell, not host settings:\n\n");
        for a in apps.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- {}", md(a));
        }
        out.push('\n');
    }
    if !r.plans.is_empty() {
        out.push_str("## Plans applied\n\n");
        let mut budget = MAX_ROWS;
        for (label, plan) in r.plans.iter().take(MAX_SECTIONS) {
            let _ = writeln!(out, "### {}\n", md(label));
            let mut list = changes(plan);
            list.truncate(budget);
            budget = budget.saturating_sub(list.len());
            if list.is_empty() {
                out.push_str("No changes.\n\n");
                continue;
            }
            out.push_str("| knob | target | before → after | rule | reason |\n| --- | --- | --- | --- | --- |\n");
            for c in &list {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} → {} | {} | {} |",
                    md(&c.knob),
                    md(&c.target),
                    md(&c.before),
                    md(&c.after),
                    md(&c.rule),
                    md(&c.reason)
                );
            }
            out.push('\n');
        }
    }
}

/// Doctor findings before and after.
fn section_doctor(out: &mut String, r: &ExperimentResults) {
    if r.doctor_before.is_some() || r.doctor_after.is_some() {
        out.push_str("## Doctor findings\n\n");
        let before = r.doctor_before.as_ref().map(findings).unwrap_or_default();
        let after = r.doctor_after.as_ref().map(findings).unwrap_or_default();
        out.push_str("### Before\n\n");
        if r.doctor_before.is_some() {
            finding_rows(out, before);
        } else {
            out.push_str("Doctor did not run.\n\n");
        }
        out.push_str("### After\n\n");
        if r.doctor_after.is_some() {
            finding_rows(out, after);
            let gone = cleared(before, after);
            if !gone.is_empty() {
                let ids: Vec<String> = gone.iter().map(|i| md(i)).collect();
                let _ = writeln!(out, "Cleared: {}.\n", ids.join(", "));
            }
        } else {
            out.push_str("Doctor did not run.\n\n");
        }
    }
}

/// The run's notes, and where the host facts are.
fn section_notes(out: &mut String, r: &ExperimentResults) {
    if !r.notes.is_empty() {
        out.push_str("## Notes\n\n");
        for n in r.notes.iter().take(MAX_ROWS) {
            let _ = writeln!(out, "- {}", md(n.text()));
        }
        out.push('\n');
    }
    if !r.host_facts.is_empty() {
        let hosts: Vec<String> = r
            .host_facts
            .keys()
            .take(MAX_SECTIONS)
            .map(|h| md(h))
            .collect();
        let _ = writeln!(
            out,
            "Host facts ({}) are in report.html and results.json.",
            hosts.join(", ")
        );
    }
}

/// The Markdown summary of `r`.
pub fn render_markdown(r: &ExperimentResults) -> String {
    let mut out = String::new();
    section_header(&mut out, r);
    section_bottom(&mut out, r);
    section_cells(&mut out, r);
    section_rhel_bdp(&mut out, r);
    section_overhead(&mut out, r);
    section_plans(&mut out, r);
    section_doctor(&mut out, r);
    section_notes(&mut out, r);
    out
}

/// The unit the cells' statistics give a metric of a workload (CPU per
/// work has its test's unit), else of any workload, else its usual one.
pub(crate) fn unit_of(
    r: &ExperimentResults,
    workload: &str,
    m: model::experiment::Metric,
) -> String {
    let stats = || r.cells.iter().flat_map(|c| c.stats.iter());
    stats()
        .find(|s| s.metric == m && s.workload == workload)
        .or_else(|| stats().find(|s| s.metric == m))
        .map_or_else(|| m.unit().to_string(), |s| s.unit.clone())
}

#[cfg(test)]
mod tests {
    use super::cleared;
    use model::findings::{Finding, FindingId, HostReports, Report, Severity};

    fn on(host: &str, ids: &[FindingId]) -> (String, Report) {
        let f = |id: &FindingId| Finding::new(*id, Severity::Warning, "eth0", "t".into());
        let report = Report {
            schema_version: 1,
            findings: ids.iter().map(f).collect(),
            skipped: Vec::new(),
        };
        (host.to_string(), report)
    }

    /// A finding is cleared on its host: the same id on the other host
    /// after does not keep it.
    #[test]
    fn cleared_compares_a_finding_on_the_same_host() {
        let before = HostReports::merge(&[on("h0", &[FindingId::RpsOff]), on("h1", &[])]);
        let after = HostReports::merge(&[on("h0", &[]), on("h1", &[FindingId::RpsOff])]);
        assert_eq!(cleared(&before.findings, &after.findings), ["rps-off"]);
        assert!(cleared(&before.findings, &before.findings).is_empty());
    }
}
