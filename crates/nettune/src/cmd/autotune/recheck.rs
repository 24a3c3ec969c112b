//! `nettune autotune --recheck DIR`: re-measure a saved result.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use model::experiment::{Knob, Level};
use model::plan::NetnsScope;
use runner;
use runner::autotune::{self as at, DriveConfig};
use runner::exec::HostId;
use tune::autotune::Objective;

use super::check::run_time;
use super::search::snapshot;
use super::{check, lab_sources, usage, Args};
use crate::cmd::present::{self, Ui};
use crate::exit;

/// What a saved results.json says, for `--recheck`.
#[derive(Debug, Default)]
pub(super) struct Saved {
    objective: Option<Objective>,
    interrupted: bool,
    /// Accepted changes as `(knob, level)` text.
    accepted: Vec<(String, String)>,
    /// Per accepted change, what it was kept on top of (`knob=level`;
    /// empty for a first pass's change or a file of before forward passes).
    on_top_of: Vec<Vec<String>>,
    test: Option<String>,
    duration: Option<u32>,
    flows: Option<u32>,
    size: Option<u32>,
    min_effect: Option<f64>,
    statistic: model::stats::Statistic,
    seed: Option<u64>,
    repeats: Option<u32>,
    /// Bench options of the workload file.
    extra: Vec<String>,
    /// The file read.
    path: PathBuf,
}

/// Read `DIR/results.json` (or `DIR/outcome.json`, its name before); the
/// error is one line naming the file.
pub(super) fn read_saved(dir: &std::path::Path) -> anyhow::Result<Saved> {
    let (path, doc) = at::read_results(dir).map_err(|e| match e {
        at::ReadResultsError::Read { path, source } => anyhow::anyhow!(
            "--recheck {}: cannot read {} ({source}): a directory written by `nettune autotune --out DIR`",
            dir.display(),
            path.display()
        ),
        e => anyhow::anyhow!("{e}"),
    })?;
    let bad = |what: &str| anyhow::anyhow!("{}: {what}", path.display());
    let objective = doc
        .objective
        .as_deref()
        .ok_or_else(|| bad("no `objective`"))
        .and_then(|o| Objective::parse(o).map_err(|e| bad(&e.to_string())))?;
    let accepted: Vec<(String, String)> = doc
        .accepted
        .iter()
        .map(|a| (a.knob.clone(), a.level.clone()))
        .collect();
    let on_top_of: Vec<Vec<String>> = doc.accepted.iter().map(|a| a.on_top_of.clone()).collect();
    // A change is re-checked on top of what it was kept with, which must
    // be accepted too (and not the change itself).
    let names: Vec<String> = accepted.iter().map(|(k, l)| format!("{k}={l}")).collect();
    for (name, under) in names.iter().zip(&on_top_of) {
        if let Some(u) = under.iter().find(|u| !names.contains(u) || *u == name) {
            return Err(bad(&format!(
                "{name} is kept on top of {u}, which is not another accepted change"
            )));
        }
    }
    let w = doc.workload.unwrap_or_default();
    Ok(Saved {
        objective: Some(objective),
        interrupted: doc.interrupted,
        accepted,
        on_top_of,
        test: w.test,
        duration: w.duration,
        flows: w.flows,
        size: w.size,
        min_effect: w.min_effect_pct,
        // A file from before the key: its search ran on medians.
        statistic: w.statistic.unwrap_or(model::stats::Statistic::Median),
        seed: w.seed,
        repeats: w.confirm_repeats,
        extra: w.args,
        path,
    })
}

/// Fewest runs per arm of a re-check.
pub(super) const RECHECK_MIN_REPEATS: usize = 3;

/// `nettune autotune --recheck DIR`.
pub(super) fn run_recheck(mut args: Args, dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let saved = match read_saved(dir) {
        Ok(s) => s,
        Err(e) => return Ok(usage(e)),
    };
    let Some(objective_arg) = saved.objective else {
        return Ok(usage(format!(
            "--recheck: {} names no objective",
            saved.path.display()
        )));
    };
    if saved.interrupted && saved.accepted.is_empty() {
        return Ok(usage(format!(
            "--recheck {}: that run was interrupted before it proved anything",
            dir.display()
        )));
    }
    if saved.accepted.is_empty() {
        println!(
            "nothing was accepted in {}: nothing to re-check",
            saved.path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // The workload of the original run (older files: the defaults).
    if saved.test.is_some() {
        args.test = saved.test.clone();
    }
    args.duration = saved.duration.or(args.duration);
    args.flows = saved.flows.or(args.flows);
    args.size = saved.size.or(args.size);
    if let Some(m) = saved.min_effect {
        args.min_effect = m;
    }
    args.statistic = Some(saved.statistic);
    args.seed = args.seed.or(saved.seed);
    let mut checked = match check(&args, objective_arg, true) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    checked.bench_args.extend(saved.extra.iter().cloned());
    let budget = checked.cfg.budget.unwrap_or(usize::MAX);
    let min_runs = 2 * RECHECK_MIN_REPEATS;
    if budget < min_runs {
        return Ok(usage(format!(
            "a budget of {budget} runs is too small for a re-check: the baseline and the setting, {RECHECK_MIN_REPEATS} runs each, need at least {min_runs} runs"
        )));
    }
    let repeats = (saved.repeats.unwrap_or(checked.cfg.confirm_repeats) as usize)
        .clamp(RECHECK_MIN_REPEATS, (budget / 2).max(RECHECK_MIN_REPEATS));
    if !lab::is_root() {
        anyhow::bail!("autotune --recheck needs root to build its lab of network namespaces");
    }
    let objective = objective_arg.name();
    let cancel = engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?;
    let spec = lab::LabSpec::new(2, 2);
    let exe = std::env::current_exe().context("finding the nettune binary")?;
    let ui = Ui::new(0, false);
    let session = present::start_lab(&spec, &exe, &ui).context("building the lab")?;
    let result = (|| -> anyhow::Result<ExitCode> {
        let mut exec = runner::SplitExecutor {
            bench: session.executor()?.with_cancel(cancel.clone()),
            rest: session.executor()?,
        };
        let (client, server) = (HostId(1), HostId(0));
        let sources = lab_sources(&session, client, checked.test)?;
        let snaps = vec![
            (client, snapshot(&mut exec, client)?),
            (server, snapshot(&mut exec, server)?),
        ];
        // The accepted levels, found among the levels this host offers.
        let built = at::build(objective_arg, &snaps, NetnsScope::Child);
        let (accepted, on_top_of) = accepted_levels(&saved, &built, objective)?;
        let rc = at::RecheckConfig {
            repeats,
            budget,
            seed: checked.cfg.seed,
            min_effect_pct: checked.cfg.min_effect_pct,
            statistic: checked.cfg.statistic,
        };
        let arms = at::recheck::arms(&accepted, &on_top_of, &rc).len();
        ui.line(&format!(
            "re-check of {}: {objective} with {} runs of {} s, {repeats} runs per arm ({} arm(s) and the baseline, interleaved)",
            dir.display(),
            checked.test,
            checked.duration,
            arms
        ));
        let drive = DriveConfig {
            client,
            server,
            hosts: vec![client, server],
            snapshots: snaps.clone(),
            bench_args: checked.bench_args.clone(),
            deadline: run_time(checked.duration).saturating_mul(2) + Duration::from_secs(20),
            objective: checked.cfg.objective,
            responses: Vec::new(),
            scope: NetnsScope::Child,
            cancel: cancel.clone(),
            sources,
            time: None,
        };
        let bar = Ui::shown_if((arms.saturating_add(1) * repeats) as u64, !args.json);
        let mut on_run = |r: &at::RunTrace, total: usize| {
            let used = r.seq.saturating_add(1);
            bar.progress(
                used as u64,
                &format!(
                    "run {used}/{total} {}: {} = {:.4e}",
                    r.arm,
                    checked.cfg.objective.key(),
                    r.value
                ),
            );
        };
        let report = at::recheck(&mut exec, &drive, &accepted, &on_top_of, &rc, &mut on_run)?;
        bar.finish();
        let Some(report) = report else {
            eprintln!("nettune: interrupted; the current arm was rolled back");
            return Ok(ExitCode::from(exit::INTERRUPTED));
        };
        print_report(&report, args.json, objective, &saved.path, repeats)?;
        Ok(if report.all_hold() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(exit::ERROR)
        })
    })();
    ui.finish();
    session.teardown();
    result
}

/// What a re-check found: its JSON (with the objective and the results
/// file) with --json, else its table and a bottom line.
fn print_report(
    report: &at::RecheckReport,
    json: bool,
    objective: &str,
    results: &std::path::Path,
    repeats: usize,
) -> anyhow::Result<()> {
    if json {
        let mut out = report.output();
        out.objective = Some(objective.to_string());
        out.results = Some(results.to_path_buf());
        println!("{}", out.to_json_pretty()?);
    } else {
        print!("{}", present::recheck_outcome(report, repeats));
    }
    Ok(())
}

/// Changes as knobs and levels.
type Setting = Vec<(Knob, Level)>;

/// The saved accepted changes as levels `built` offers on this host, and
/// what each was kept on top of (accepted changes too); an error names the
/// file and the change it cannot find.
fn accepted_levels(
    saved: &Saved,
    built: &at::BuiltSpace,
    objective: &str,
) -> anyhow::Result<(Setting, Vec<Setting>)> {
    let mut accepted = Vec::new();
    for (knob, level) in &saved.accepted {
        let found = built
            .factors
            .iter()
            .filter(|f| f.knob.name() == knob)
            .flat_map(|f| f.levels.iter().map(move |l| (f.knob, l)))
            .find(|(_, l)| l.to_string() == *level);
        match found {
            Some((k, l)) => accepted.push((k, l.clone())),
            None => anyhow::bail!(
                "{}: {knob}={level} is not a level this host offers for {objective}",
                saved.path.display()
            ),
        }
    }
    // What each change was kept on top of: accepted changes too.
    let mut on_top_of = Vec::new();
    for under in &saved.on_top_of {
        let mut set = Vec::new();
        for name in under {
            match accepted
                .iter()
                .find(|(k, l)| format!("{}={l}", k.name()) == *name)
            {
                Some(c) => set.push(c.clone()),
                None => anyhow::bail!(
                    "{}: a change is kept on top of {name}, which is not accepted there",
                    saved.path.display()
                ),
            }
        }
        on_top_of.push(set);
    }
    Ok((accepted, on_top_of))
}
