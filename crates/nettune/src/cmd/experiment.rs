//! `nettune experiment FILE.toml`: run a factorial experiment in a lab of
//! network namespaces, or on a fleet's hosts (`[hosts.fleet]`, `on_fleet`),
//! with repeats, confidence intervals and rollback.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::builder::TypedValueParser;
use clap::Parser;
use model::experiment::{Experiment, FleetHosts, Hosts, LabPath};
use model::plan::NetnsScope;
use model::results::ExperimentResults;
use runner::exec::{Executor, HostId};
use runner::{self, experiment as rx, Outcome, RunOptions};

use super::present::{self, Ui};
use crate::exit;

pub(crate) mod on_fleet;
mod size;

use size::{confirm, schedule_runs};

/// The result table ([`present::experiment_table`]).
pub use super::present::experiment_table as table;

const EXAMPLES: &str = "\
Examples:
  nettune experiment examples/time-wait.toml
  nettune experiment examples/congestion-control.toml --out cc-results
  nettune experiment examples/rps.toml --until-ci 2     repeat each cell until its 95 % CI is within 2 %
  nettune experiment examples/rps.toml --resume cc-results   continue after Ctrl-C
  nettune experiment examples/time-wait.toml --json > results.json
  nettune experiment big.toml --yes < /dev/null      start a design above one hour unattended
  nettune experiment examples/fleet-itr-rr.toml --timeout 60   [hosts.fleet]: on real hosts

A lab ([hosts.lab]) needs root (it builds network namespaces). A fleet ([hosts.fleet]) is
reached through its inventory's agents, as `nettune fleet` does (--parallel, --timeout,
--no-copy, --root-template, --state-dir-template, --confirm-timeout): the levels are applied
on the server and every client (a factor with `hosts` only on those it names) through each
host's journal and rolled back per cell; every client loads the server at once in each run
(synchronized start), the run's result their sum. A host whose agent dies mid-run stops the
run (exit 1): the cell
is rolled back on the others, and the `nettune fleet rollback` command for the lost host is
printed. Results: DIR/results.json (rewritten after every run),
DIR/runs/cell-NNN/*.json (raw bench output), DIR/experiment.toml, and at the end DIR/report.html
and DIR/report.md (`nettune report DIR`). Exit codes: 0 done, 1 error,
2 usage error or an invalid experiment file (one line naming the line and key, before anything
runs), 130 Ctrl-C (the current cell is rolled back; --resume DIR continues).
Before anything starts, the number of bench runs and the estimated wall time are printed; above
one hour a terminal asks, and without one --yes is required (exit 2 otherwise).";

/// Arguments of `nettune experiment`.
#[derive(Debug, Parser)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The experiment file (TOML; see /usr/share/doc/nettune/docs/experiment.md).
    pub file: PathBuf,
    /// Results directory [default: nettune-experiment-NAME].
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the run in DIR: done and n/a cells are kept, the rest run
    /// (refused when FILE differs from DIR/experiment.toml).
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Repeat each cell until the 95 % CI of its median is within PCT % of
    /// the median (at least `repeats`, at most `max_repeats` runs).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub until_ci: Option<f64>,
    /// Practical threshold: a change whose 95 % interval excludes zero is
    /// called a gain or a regression only when it is at least PCT % of the
    /// baseline (0: every change the interval shows).
    #[arg(long, default_value_t = model::stats::DEFAULT_MIN_EFFECT_PCT, value_name = "PCT", value_parser = super::present::parse_min_effect)]
    pub min_effect: f64,
    /// Print results.json on stdout at the end instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Start a design estimated above one hour without asking. Without a
    /// terminal on stdin such a design is refused unless --yes is given.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// [hosts.fleet]: hosts connected at once [default: 16].
    #[arg(long, value_name = "N", help_heading = FLEET,
          value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    pub parallel: Option<usize>,
    /// [hosts.fleet]: seconds each host may take to connect and for each
    /// step but a bench (inspect, apply, rollback) [default: 120]; a bench
    /// has the workload's own deadline.
    #[arg(long, value_name = "SECONDS", help_heading = FLEET,
          value_parser = super::fleet::parse_timeout)]
    pub timeout: Option<f64>,
    /// [hosts.fleet]: never copy this nettune to an ssh host; fail one of
    /// another version, naming both.
    #[arg(long, help_heading = FLEET)]
    pub no_copy: bool,
    /// [hosts.fleet]: each host's --root, `{host}` replaced by its inventory
    /// name (default: its `root` label, else its real /).
    #[arg(long, value_name = "TEMPLATE", help_heading = FLEET)]
    pub root_template: Option<String>,
    /// [hosts.fleet]: each host's --state-dir, `{host}` as in
    /// --root-template (default: its `state_dir` label, else the agent's own).
    #[arg(long, value_name = "TEMPLATE", help_heading = FLEET)]
    pub state_dir_template: Option<String>,
    /// [hosts.fleet]: seconds a host waits for the confirm of a cell's plan
    /// that can cut the path (channels, rings, module parameters; over ssh
    /// or kubectl also moderation, IRQs and steering) before rolling it
    /// back by itself [default: 60]; 0: no deadline.
    #[arg(long, value_name = "SECONDS", help_heading = FLEET)]
    pub confirm_timeout: Option<u32>,
}

const FLEET: &str = "Fleet ([hosts.fleet])";

impl Args {
    /// The first fleet-only flag given, for a file without `[hosts.fleet]`.
    fn fleet_flag(&self) -> Option<&'static str> {
        [
            (self.parallel.is_some(), "--parallel"),
            (self.timeout.is_some(), "--timeout"),
            (self.no_copy, "--no-copy"),
            (self.root_template.is_some(), "--root-template"),
            (self.state_dir_template.is_some(), "--state-dir-template"),
            (self.confirm_timeout.is_some(), "--confirm-timeout"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

/// Designs estimated above this need `--yes` (or a "y" on a terminal).
pub const CONFIRM_ABOVE: Duration = Duration::from_secs(3600);

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(format!("`{s}` is not a percentage above 0, at most 100")),
    }
}

/// Read and validate the experiment file; the error is one line naming
/// the file, line and key.
pub fn load(path: &Path) -> Result<(Experiment, String), String> {
    // The one bounded reader: a FIFO or device is refused at once, and at
    // most MAX_FILE_BYTES are read whatever the metadata says (/dev/zero).
    let text = host::files::read_bounded_text(path, model::experiment::MAX_FILE_BYTES as u64)
        .map_err(|e| e.to_string())?;
    let exp = model::experiment::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((exp, text))
}

/// `hosts.fleet.inventory`, a relative path taken from the experiment file's directory.
pub fn fleet_inventory_path(file: &Path, f: &FleetHosts) -> PathBuf {
    file.parent()
        .unwrap_or_else(|| Path::new(""))
        .join(&f.inventory)
}

/// Run the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (exp, text) = match load(&args.file) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("nettune: {e}");
            return Ok(ExitCode::from(exit::USAGE));
        }
    };
    if let (Hosts::Lab(_) | Hosts::Agents(_), Some(flag)) = (&exp.hosts, args.fleet_flag()) {
        eprintln!(
            "nettune: {flag} is for an experiment on a fleet ([hosts.fleet]); {} has none",
            args.file.display()
        );
        return Ok(ExitCode::from(exit::USAGE));
    }
    if let Hosts::Fleet(f) = &exp.hosts {
        let f = f.clone();
        return on_fleet::run(&args, exp, text, &f);
    }
    if let Err(code) = confirm(&exp, args.until_ci, args.yes) {
        return Ok(code);
    }
    let topo = match &exp.hosts {
        Hosts::Lab(t) => t.clone(),
        Hosts::Fleet(_) => anyhow::bail!("{}: [hosts.fleet] runs on its own path", args.file.display()),
        Hosts::Agents(_) => anyhow::bail!(
            "{}: hosts.agents is not supported yet; use [hosts.lab] (a lab of namespaces on this machine)",
            args.file.display()
        ),
    };
    if !lab::is_root() {
        anyhow::bail!(
            "experiment needs root to build its lab of network namespaces; without root, `nettune serve` and `nettune bench 127.0.0.1` measure over loopback"
        );
    }
    let (dir, mut results) = prepare(&args, &exp, &text)?;
    let cancel = engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?;

    let spec = lab_spec(&topo);
    let exe = std::env::current_exe().context("finding the nettune binary")?;
    let runs = schedule_runs(&exp, results.cells.len());
    let mut progress = Ui::new(runs, !args.json);
    let session = present::start_lab(&spec, &exe, &progress).context("building the lab")?;
    // Ctrl-C stops a running bench at once, but not the rollback after it.
    let mut exec = runner::SplitExecutor {
        bench: session.executor()?.with_cancel(cancel.clone()),
        rest: session.executor()?,
    };
    if let Some(info) = results.lab.as_mut() {
        info.delay_mechanism = session.lab().delay_mechanism().id().into();
    }
    if results.machine.hostname.is_empty() {
        if let Ok(snap) = exec.inspect(HostId(0)) {
            results.machine = rx::machine_of(&snap);
        }
    }
    let (client, server) = match topo.path {
        LabPath::Veth => (HostId(1), HostId(0)),
        LabPath::Loopback => (HostId(0), HostId(0)),
    };
    let mut schedule = rx::schedule(&exp, client, server, args.until_ci);
    schedule.bootstrap.min_effect_pct = args.min_effect;
    let mut setup = rx::ExperimentSetup::lab(exp.clone(), client, server, NetnsScope::Child);
    let opts = RunOptions {
        out_dir: dir.clone(),
        experiment_text: Some(text),
        cancel,
    };
    let outcome = runner::run(
        &mut results,
        &schedule,
        &mut exec,
        &mut setup,
        &opts,
        &mut progress,
    );
    progress.finish();
    drop(exec);
    session.teardown();
    let outcome = outcome?;
    finish(&args, &dir, &results, outcome)
}

/// The results directory and its results: fresh (refused over earlier
/// results) or, with `--resume`, those of DIR.
fn prepare(
    args: &Args,
    exp: &Experiment,
    text: &str,
) -> anyhow::Result<(PathBuf, ExperimentResults)> {
    let dir = args
        .resume
        .clone()
        .or(args.out.clone())
        .unwrap_or_else(|| PathBuf::from(format!("nettune-experiment-{}", exp.name)));
    let mut results = match &args.resume {
        Some(d) => runner::load_for_resume(d, text)?,
        None => {
            if dir.join(model::results::RESULTS_FILE).exists() {
                anyhow::bail!(
                    "{}: holds results already; continue them with --resume {0} or choose another --out",
                    dir.display()
                );
            }
            ExperimentResults {
                started: model::time::rfc3339_utc(std::time::SystemTime::now()),
                ..rx::results_skeleton(exp, Default::default(), String::new())
            }
        }
    };
    results.min_effect_pct = args.min_effect;
    Ok((dir, results))
}

/// Write the report, print the table (or results.json) and give the exit
/// status of `outcome`.
fn finish(
    args: &Args,
    dir: &Path,
    results: &ExperimentResults,
    outcome: Outcome,
) -> anyhow::Result<ExitCode> {
    show(args, dir, results)?;
    Ok(match outcome {
        Outcome::Completed => ExitCode::SUCCESS,
        Outcome::Cancelled => {
            eprintln!(
                "nettune: interrupted; the current cell was rolled back. Continue with: nettune experiment {} --resume {}",
                args.file.display(),
                dir.display()
            );
            ExitCode::from(exit::INTERRUPTED)
        }
    })
}

/// The page and summary of `nettune report`, also after Ctrl-C or a lost
/// host (of what was measured; a failure to write them is reported, not
/// fatal), then the table or results.json.
fn show(args: &Args, dir: &Path, results: &ExperimentResults) -> anyhow::Result<()> {
    let report = report::write_dir(dir);
    if args.json {
        println!("{}", serde_json::to_string_pretty(results)?);
    } else {
        print!(
            "{}",
            model::text::printable_lines(&present::experiment_table(results))
        );
        println!(
            "Results: {}",
            dir.join(model::results::RESULTS_FILE).display()
        );
    }
    match report {
        Ok((html, md)) => eprintln!("Report: {} and {}", html.display(), md.display()),
        Err(e) => eprintln!("nettune: writing the report into {}: {e}", dir.display()),
    }
    Ok(())
}

/// The lab of an experiment's topology. `delay_ms` and `jitter_ms` are
/// what the round trip grows (varies) by, as `LabSpec`'s `delay` and
/// `jitter` are: the lab puts half in each direction.
pub fn lab_spec(t: &model::experiment::LabTopology) -> lab::LabSpec {
    let ms = |ms: f64| (ms > 0.0).then(|| Duration::from_secs_f64(ms / 1000.0));
    lab::LabSpec {
        prefix: "ntexp".into(),
        rate: t.rate_mbit.map(|m| (m * 1e6).round() as u64),
        delay: ms(t.delay_ms),
        jitter: ms(t.jitter_ms),
        loss: (t.loss_pct > 0.0).then_some(t.loss_pct),
        ..lab::LabSpec::new(t.hosts, t.queues)
    }
}
