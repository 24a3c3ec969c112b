//! What the arguments of `nettune autotune` mean, checked before anything
//! runs, and the search space as `--dry-run` prints it.

use std::process::ExitCode;
use std::time::Duration;

use super::{
    usage, workload, Args, Checked, ForwardAfter, DEFAULT_DURATION, DEFAULT_TIME, NOISY_REPEATS,
    RUN_OVERHEAD,
};
use model::experiment::TestKind;
use runner::autotune as at;
use runner::experiment::BENCH_WARMUP_S;
use tune::autotune::{Constraint, Objective, SearchConfig, SearchSpace};

pub(super) fn default_test(o: Objective) -> TestKind {
    match o {
        Objective::MaxThroughput => TestKind::TcpStream,
        Objective::MaxPps => TestKind::UdpStream,
        Objective::MinP99 => TestKind::TcpRr,
        Objective::MaxCps => TestKind::TcpCrr,
    }
}

/// One run's wall time.
pub(super) fn run_time(duration_s: u32) -> Duration {
    Duration::from_secs(u64::from(duration_s))
        + Duration::from_secs_f64(BENCH_WARMUP_S)
        + RUN_OVERHEAD
}

pub(super) fn check(args: &Args, objective: Objective, recheck: bool) -> Result<Checked, ExitCode> {
    let file = match &args.workload {
        None => workload::WorkloadFile::default(),
        Some(path) => {
            let given: Vec<&str> = [
                ("--test", args.test.is_some()),
                ("--size", args.size.is_some()),
                ("--flows", args.flows.is_some()),
                ("--duration", args.duration.is_some()),
            ]
            .into_iter()
            .filter_map(|(f, on)| on.then_some(f))
            .collect();
            if !given.is_empty() {
                return Err(usage(format!(
                    "--workload {} gives the workload: it cannot be used with {}",
                    path.display(),
                    given.join(", ")
                )));
            }
            workload::read(path).map_err(usage)?
        }
    };
    let duration = file.duration.or(args.duration).unwrap_or(DEFAULT_DURATION);
    let flows = file.flows.or(args.flows).unwrap_or(1);
    let kind = match file.test {
        Some(k) => k,
        None => match args.test.as_deref() {
            Some(t) => t.parse::<TestKind>().map_err(usage)?,
            None => default_test(objective),
        },
    };
    let test = kind.name();
    let metric = objective
        .metric_for(kind, false)
        .map_err(|e| match &args.workload {
            Some(path) if file.test.is_some() => {
                usage(format!("{}: key `test`: {e}", path.display()))
            }
            _ => usage(e),
        })?;
    let mut constraints = Vec::new();
    for text in &args.constraint {
        let c = Constraint::parse(text).map_err(usage)?;
        c.check_workload(kind, false).map_err(usage)?;
        constraints.push(c);
    }
    let responses = constraints.iter().map(|c| c.response).collect();
    let mut cfg = SearchConfig::new(metric);
    if objective == Objective::MaxPps {
        // 64-byte datagrams on a shared 2-CPU lab: sender, receiver and
        // softirq contend for the CPUs and a run varies by ±30 %, so each
        // arm takes more runs per round (and the re-check three times that).
        cfg.repeats = NOISY_REPEATS;
        cfg.confirm_repeats = NOISY_REPEATS.saturating_mul(3);
    }
    cfg.constraints = constraints;
    cfg.min_effect_pct = args.min_effect;
    cfg.statistic = args
        .statistic
        .unwrap_or_else(|| objective.default_statistic());
    if let Some(ForwardAfter(f)) = args.forward_after {
        cfg.forward_after_pct = f;
    }
    if let Some(s) = args.seed {
        cfg.seed = s;
    }
    let per_run = run_time(duration);
    cfg.budget = Some(args.budget.unwrap_or_else(|| {
        let t = args.time.unwrap_or(DEFAULT_TIME);
        usize::try_from(t.as_millis() / per_run.as_millis().max(1)).unwrap_or(usize::MAX)
    }));
    // A re-check runs no race: its budget is checked by its caller.
    let checked_cfg = if recheck {
        SearchConfig {
            budget: None,
            ..cfg.clone()
        }
    } else {
        cfg.clone()
    };
    if let Err(e) = checked_cfg.validate() {
        let hint = match (&e, args.budget) {
            (tune::autotune::AutotuneError::BudgetTooSmall { minimum, .. }, None) => format!(
                " (--time gives {} runs of about {:.1} s; at least {} s are needed)",
                cfg.budget.unwrap_or(0),
                per_run.as_secs_f64(),
                per_run
                    .saturating_mul(u32::try_from(*minimum).unwrap_or(u32::MAX))
                    .as_secs()
            ),
            _ => String::new(),
        };
        return Err(usage(format!("{e}{hint}")));
    }
    let given_size = file.size.or(args.size);
    let size = given_size.or((kind == TestKind::UdpStream).then_some(64));
    let mut bench_args = vec![
        "--test".to_string(),
        test.into(),
        "--duration".into(),
        duration.to_string(),
        "--warmup".into(),
        format!("{BENCH_WARMUP_S}"),
        "--flows".into(),
        flows.to_string(),
    ];
    if let Some(s) = size {
        bench_args.extend(["--size".into(), s.to_string()]);
    }
    bench_args.extend(file.args.iter().cloned());
    Ok(Checked {
        test,
        duration,
        flows,
        size: given_size,
        extra: file.args,
        bench_args,
        cfg,
        responses,
        time: args
            .budget
            .is_none()
            .then(|| args.time.unwrap_or(DEFAULT_TIME)),
    })
}

pub(super) fn space_lines(
    built: &at::BuiltSpace,
    space: &SearchSpace,
    checked: &Checked,
    budget: usize,
) -> String {
    let repeats = checked.cfg.repeats;
    let forward = checked.cfg.forward_after_pct.is_some();
    let mut out = String::from("search space:\n");
    for f in space.factors() {
        let levels: Vec<String> = f.levels.iter().skip(1).map(ToString::to_string).collect();
        let source = built
            .sources
            .iter()
            .find(|(k, _)| *k == f.knob)
            .map_or("", |(_, s)| s);
        out.push_str(&format!(
            "  {:<20} now {:<14} try {:<22} ({source})\n",
            f.knob.name(),
            f.levels[0].to_string(),
            levels.join(", ")
        ));
    }
    for e in &built.excluded {
        out.push_str(&format!("  left out  {e}\n"));
    }
    let estimate = if forward {
        space.estimate_runs_in_passes(repeats)
    } else {
        space.estimate_runs(repeats)
    };
    let budget_text = match checked.time {
        Some(t) => format!(
            "budget {budget}: {} s at about {:.1} s a run, raised after each run while runs take less",
            t.as_secs(),
            run_time(checked.duration).as_secs_f64(),
        ),
        None => format!("budget {budget}"),
    };
    out.push_str(&format!(
        "{} candidates; at most {} runs ({budget_text}; the full grid would be {})\n",
        space.candidates().len(),
        estimate.min(budget),
        space.grid_runs(repeats)
    ));
    out
}
