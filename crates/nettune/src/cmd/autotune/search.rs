//! One search on a pair of hosts (the lab's namespaces or a fleet's
//! agents), and the files it writes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use model::results::autotune::{AutotuneWorkload, Better, FromSetting};
use model::snapshot::HostSnapshot;
use runner;
use runner::autotune::{self as at, DriveConfig, Ended};
use runner::exec::{Executor, HostId};
use tune::autotune::{Search, SearchSpace};

use super::check::{run_time, space_lines};
use super::from::start_from;
use super::progress::progress_line;
use super::{Run, Target, SOURCE_POOL};
use crate::cmd::present::{self, Ui};
use crate::exit;

pub(super) fn snapshot(exec: &mut dyn Executor, h: HostId) -> anyhow::Result<HostSnapshot> {
    Ok(exec.inspect(h)?)
}

/// tcp-crr (a test whose transport is a TCP connection per transaction)
/// opens a connection per transaction and its client closes first:
/// each run leaves up to a port range of TIME_WAIT sockets for 60 s. A
/// fresh source address per run (a pool on the lab's client) keeps them off
/// the next runs' 4-tuples, so a run measures its arm, not the runs before.
pub(super) fn lab_sources(
    session: &lab::LabSession,
    client: HostId,
    test: &str,
) -> anyhow::Result<Vec<std::net::IpAddr>> {
    let per_transaction = test
        .parse::<model::catalogue::TestKind>()
        .is_ok_and(|k| k.spec().transport == model::catalogue::Transport::TcpPerTransaction);
    if !per_transaction {
        return Ok(Vec::new());
    }
    Ok(session
        .lab()
        .add_source_pool(client.0, SOURCE_POOL)
        .context("adding the client's source addresses")?
        .list()
        .iter()
        .map(|a| std::net::IpAddr::V4(*a))
        .collect())
}

/// The search on `t`'s hosts through `exec` (the lab's namespaces or a
/// fleet's agents): the space from their snapshots, the race, the
/// re-checks, then results.json, plan.json, profile.toml and the report.
pub(super) fn search_on(
    exec: &mut dyn Executor,
    t: Target,
    run: &Run<'_>,
) -> anyhow::Result<ExitCode> {
    let Run {
        args,
        checked,
        objective_arg,
        objective,
        from,
        ui,
        budget,
        ..
    } = *run;
    let cancel = run.cancel.clone();
    let (client, server, sources) = (t.client, t.server, t.sources.clone());
    let mut kept = run.kept.borrow_mut();
    let kept = &mut *kept;
    let mut snaps = vec![
        (client, snapshot(exec, client)?),
        (server, snapshot(exec, server)?),
    ];
    start_from(exec, ui, &mut snaps, from, args, kept)?;
    let mut built = at::build(objective_arg, &snaps, t.scope);
    at::space::add_candidates(&mut built, &snaps, t.scope, &args.candidates);
    at::space::start_from(&mut built, from);
    at::space::workload_sets(&mut built, &snaps, t.scope, &checked.extra);
    // Each level applied once on both hosts and rolled back: a host
    // that has a file but cannot write it (veth's `threaded`) is found
    // here, not in the middle of the search.
    at::probe(exec, &mut built, &snaps, t.scope)?;
    if built.factors.is_empty() {
        return Err(at::AutotuneRunError::NothingToChange {
            objective,
            reasons: built.excluded.clone(),
        }
        .into());
    }
    let space = SearchSpace::new(built.factors.clone())?;
    ui.line(&format!(
        "autotune {objective} with {} runs of {} s ({} each; arms compared on their {}s)",
        checked.test,
        checked.duration,
        checked.cfg.objective.key(),
        checked.cfg.statistic
    ));
    ui.line(space_lines(&built, &space, checked, budget).trim_end());
    if args.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    let mut search = Search::new(space, checked.cfg.clone())?;
    let cfg = DriveConfig {
        client,
        server,
        hosts: vec![client, server],
        snapshots: snaps.clone(),
        bench_args: runner::merge_args(
            &checked.bench_args,
            kept.as_ref()
                .map_or(&[][..], |k: &at::drive::Kept| &k.bench_args),
        ),
        deadline: run_time(checked.duration).saturating_mul(2) + Duration::from_secs(20),
        objective: checked.cfg.objective,
        responses: checked.responses.clone(),
        scope: t.scope,
        cancel: cancel.clone(),
        sources,
        time: checked.time,
    };
    let started = Instant::now();
    let started_at = model::time::rfc3339_utc(std::time::SystemTime::now());
    let bar = Ui::shown_if(budget as u64, !args.json);
    let mut on_run = |r: &at::RunTrace, search: &Search| {
        let used = r.seq.saturating_add(1);
        // A time budget raises the budget as the runs go.
        let budget = search.budget().unwrap_or(budget);
        bar.set_total(budget as u64);
        // The runs left at the pace measured so far.
        let pace = started
            .elapsed()
            .checked_div(u32::try_from(used).unwrap_or(u32::MAX))
            .unwrap_or_default();
        let left =
            pace.saturating_mul(u32::try_from(budget.saturating_sub(used)).unwrap_or(u32::MAX));
        bar.progress(
            used as u64,
            &progress_line(
                used,
                budget,
                r,
                checked.cfg.objective.key(),
                search,
                started.elapsed(),
                left,
            ),
        );
    };
    let (ended, trace) = at::drive(&mut search, exec, &cfg, &mut on_run)?;
    bar.finish();
    let written = write_files(run, &t, &snaps, &built, &ended, &trace, &started_at)?;
    present_ended(run, &ended, &trace, &written)
}

/// The files a search writes in its directory: their paths, the accepted
/// plan (for its summary) and the report's outcome.
struct Written {
    results: PathBuf,
    plan: PathBuf,
    accepted: at::AcceptedPlan,
    profile: PathBuf,
    report: Result<(PathBuf, PathBuf), report::ReportError>,
}

/// Write results.json (printed on stdout with --json), plan.json,
/// profile.toml and the report of an ended search.
fn write_files(
    run: &Run<'_>,
    t: &Target,
    snaps: &[(HostId, HostSnapshot)],
    built: &at::BuiltSpace,
    ended: &Ended,
    trace: &[at::RunTrace],
    started_at: &str,
) -> anyhow::Result<Written> {
    let Run {
        args,
        checked,
        objective,
        from,
        dir,
        ..
    } = *run;
    let mut doc = at::outcome(objective, built, ended, trace);
    // What `--recheck DIR` needs to measure the same workload again.
    doc.workload = Some(AutotuneWorkload {
        test: Some(checked.test.to_string()),
        duration: Some(checked.duration),
        flows: Some(checked.flows),
        size: checked.size,
        args: checked.extra.clone(),
        min_effect_pct: Some(args.min_effect),
        statistic: Some(checked.cfg.statistic),
        seed: Some(checked.cfg.seed),
        repeats: Some(checked.cfg.repeats),
        confirm_repeats: Some(checked.cfg.confirm_repeats),
        bench_args: checked.bench_args.clone(),
    });
    let machine = runner::experiment::machine_of(&snaps[0].1);
    doc.metric = Some(checked.cfg.objective.key().to_string());
    doc.direction = Some(match checked.cfg.objective.direction() {
        model::stats::Direction::LowerIsBetter => Better::Lower,
        _ => Better::Higher,
    });
    doc.nettune_version = Some(env!("CARGO_PKG_VERSION").to_string());
    doc.started = Some(started_at.to_string());
    let finished = model::time::rfc3339_utc(std::time::SystemTime::now());
    doc.finished = Some(finished.clone());
    doc.machine = Some(machine.clone());
    if let Some(dir) = &args.from {
        doc.from = Some(FromSetting {
            dir: dir.clone(),
            setting: from
                .iter()
                .map(|(k, l)| format!("{}={l}", k.name()))
                .collect(),
        });
    }
    let text = doc.to_json_pretty()?;
    let results_path = at::write_file(dir, at::RESULTS_FILE, text.as_bytes())?;
    let changes = at::accepted_changes(ended);
    let accepted = at::accepted_plan(&snaps[0].1, t.scope, &changes, objective)
        .map_err(|e| anyhow::anyhow!("the accepted plan: {e}"))?;
    let plan_path = at::write_file(
        dir,
        at::PLAN_FILE,
        serde_json::to_string_pretty(&accepted.plan)?.as_bytes(),
    )?;
    let header = at::ProfileHeader {
        objective: objective.to_string(),
        measured: format!(
            "{objective}: {} of a {} workload ({} s runs, {} flow(s))",
            checked.cfg.objective.key(),
            checked.test,
            checked.duration,
            checked.flows
        ),
        gain: passed_gain(ended),
        date: finished,
        host: format!("{} ({})", machine.hostname, t.host_label),
    };
    let profile = at::profile_toml(&snaps[0].1, t.scope, &changes, &header)
        .map_err(|e| anyhow::anyhow!("the accepted profile: {e}"))?;
    let profile_path = at::write_file(dir, at::PROFILE_FILE, profile.as_bytes())?;
    // The report is a view of results.json: its failure is said, not fatal.
    let report = report::write_dir(dir);
    if args.json {
        println!("{text}");
    }
    Ok(Written {
        results: results_path,
        plan: plan_path,
        accepted,
        profile: profile_path,
        report,
    })
}

/// What the terminal shows of an ended search (the files' paths on stderr
/// with --json) and its exit code.
fn present_ended(
    run: &Run<'_>,
    ended: &Ended,
    trace: &[at::RunTrace],
    written: &Written,
) -> anyhow::Result<ExitCode> {
    let Run { args, checked, .. } = *run;
    let Written {
        results: results_path,
        plan: plan_path,
        accepted,
        profile: profile_path,
        report,
    } = written;
    let files = |out: &mut dyn std::io::Write| -> std::io::Result<()> {
        writeln!(out, "Results: {}", results_path.display())?;
        writeln!(
            out,
            "Plan: {} ({})",
            plan_path.display(),
            model::text::printable_capped(&accepted.summary(), 400)
        )?;
        writeln!(out, "Profile: {}", profile_path.display())?;
        match &report {
            Ok((html, md)) => writeln!(out, "Report: {} and {}", html.display(), md.display()),
            Err(e) => writeln!(out, "Report: not written: {e}"),
        }
    };
    match ended {
        Ended::Done(o) => {
            if args.json {
                files(&mut std::io::stderr())?;
            } else {
                let unit = checked.cfg.objective.unit_for(checked.test);
                print!("{}", present::search_outcome(o, trace, unit));
                files(&mut std::io::stdout())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Ended::Cancelled(o) => {
            let kept = match o.proven_text() {
                Some(p) => format!("kept what its runs proved: {p}"),
                None => "nothing was proven yet, so nothing is kept".to_string(),
            };
            eprintln!(
                "nettune: interrupted after {} runs; the current candidate was rolled back; {kept} ({})",
                trace.len(),
                results_path.display()
            );
            Ok(ExitCode::from(exit::INTERRUPTED))
        }
    }
}

/// The gain of the passed re-checks that proved the accepted changes, with
/// their intervals, for profile.toml's header.
pub(super) fn passed_gain(ended: &Ended) -> Option<String> {
    let o = ended.outcome();
    match o.proven_steps().as_slice() {
        [one] => {
            let names: Vec<String> = one.changes.iter().map(ToString::to_string).collect();
            Some(format!("{} for {}", one.effect, names.join(" + ")))
        }
        _ => o.proven_text(),
    }
}
