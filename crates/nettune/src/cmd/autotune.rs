//! `nettune autotune --objective OBJ --lab`: search the lab host's factors
//! for the objective, each candidate applied through the journal, measured
//! against the baseline on bootstrap intervals and rolled back; the proven
//! changes become a plan `nettune apply --plan` takes and a profile
//! `nettune apply --profile` takes; results.json and the report say what was
//! kept and rejected, and why (docs/autotune.md).

mod check;
mod from;
mod on_fleet;
mod progress;
mod recheck;
mod search;
#[cfg(test)]
mod tests;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use model::experiment::{Knob, Level};
use model::plan::NetnsScope;
use runner::autotune::{self as at};
use runner::exec::HostId;
use runner::{self};
use tune::autotune::{Objective, Response, SearchConfig};

use super::present::{self, Ui};
use crate::exit;
use check::check;
use from::read_from;
use recheck::run_recheck;
use search::{lab_sources, search_on};

const EXAMPLES: &str = "\
Examples:
  sudo nettune autotune --objective max-cps --lab
  sudo nettune autotune --objective max-throughput --lab --time 5m --out tuned
  sudo nettune autotune --objective max-pps --lab --budget 60 --duration 2
  sudo nettune autotune --objective min-p99 --lab --constraint 'cpu_per_work<=+5%'
  sudo nettune autotune --objective max-cps --lab --workload crr.toml  the workload as a file
  sudo nettune autotune --objective max-cps --lab --dry-run      the space and the runs it may take
  sudo nettune apply --plan tuned/plan.json --dry-run            what the proven plan changes
  sudo nettune apply --profile tuned/profile.toml --dry-run      the same changes, as a profile
  nettune report tuned                                           the search trace chart again
  sudo nettune autotune --recheck tuned                          does the result still hold here?
  nettune autotune --objective min-p99 --inventory hosts.toml --server srv1 --clients clients
                                                                 on real hosts, through their agents

A workload file (--workload) is TOML: test = \"tcp-crr\", size = 64, flows = 4, duration = 3,
args = [\"--nodelay\"] (more bench options: --nodelay, --sndbuf, --outstanding, --threads, --cpus,
--rate, --reverse, --bidir, --tos, --mss, --zerocopy, --udp-gso, --udp-gro, --max-memory); every
key is optional.

The space comes from the lab host: the factors the objective's rules and profiles set (TIME_WAIT
reuse and the port range for max-cps; socket buffers, congestion control, pinning of the
workload and the NAPI knobs for max-throughput; RPS, busy polling and NAPI for max-pps and
min-p99), each starting from the host's current level; levels the host cannot take are left out
with the reason. Every candidate is applied through the journal and rolled back after its run; a
change is kept only when its 95 % interval, re-checked against fresh baseline runs, shows a gain
of at least --min-effect and every --constraint holds. A kept gain of --forward-after % or more
(default 20) starts a forward pass: the knobs left alone are raced again on top of the kept
setting, while the budget lasts (in the lab, gro_flush_timeout costs next to bbr and gains next
to cubic).

Writes DIR/results.json (accepted and rejected changes with their intervals and reasons, the
trace of every run; its schema is /usr/share/doc/nettune/docs/schema/autotune-results.json),
DIR/plan.json and DIR/profile.toml (the proven changes, for `apply --plan` and
`apply --profile`), and the report DIR/report.html and DIR/report.md (the search trace chart).

Exit codes:
  0    done (also when nothing was proven)
  1    error: not root, the lab could not be built, nothing on the host can be changed
  2    usage error: an objective the workload cannot measure, a bad --constraint, a budget
       below the minimum (said with the minimum, before anything runs)
  130  Ctrl-C: the current candidate is rolled back; the files keep what the runs so far
       proved: nothing during the race, during the re-check only a change that already
       passed it
With --recheck DIR:
  0    every accepted change still holds
  1    some no longer hold (or an error)
  2    DIR has no readable results.json";

/// Seconds per run without --duration.
const DEFAULT_DURATION: u32 = 3;

/// Runs a search may use without --budget or --time: the time it fits in.
const DEFAULT_TIME: Duration = Duration::from_secs(600);
/// Time of one run besides the bench's duration and warm-up: starting the
/// bench, applying and rolling back (measured in the lab: about 1.5 s).
const RUN_OVERHEAD: Duration = Duration::from_millis(1500);

/// Source addresses the lab's client takes in turn for tcp-crr runs: with
/// runs of 5 s or more, an address comes back after 2.5 minutes, when the
/// TIME_WAIT sockets of its previous run (60 s) are gone.
const SOURCE_POOL: u32 = 32;

/// Runs per arm and round for max-pps, whose runs are the noisiest.
const NOISY_REPEATS: u32 = 5;

/// Arguments of `nettune autotune`.
#[derive(Debug, Parser)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// What to improve: max-throughput, max-pps, min-p99 or max-cps.
    #[arg(long, value_name = "OBJ", value_parser = parse_objective, required_unless_present = "recheck")]
    pub objective: Option<Objective>,
    /// The workload's test [default: tcp-stream for max-throughput,
    /// udp-stream for max-pps, tcp-rr for min-p99, tcp-crr for max-cps].
    #[arg(long, value_name = "TEST", value_parser = clap::builder::PossibleValuesParser::new(model::experiment::TestKind::ALL.map(|k| k.name())))]
    pub test: Option<String>,
    /// Message or datagram size, bytes [default: 64 for udp-stream].
    #[arg(long, value_name = "BYTES")]
    pub size: Option<u32>,
    /// Seconds of each run (after a 1 s warm-up), 1 to 60 [default: 3].
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u32).range(1..=60))]
    pub duration: Option<u32>,
    /// Parallel flows of the workload [default: 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub flows: Option<u32>,
    /// The workload as a TOML file (test, size, flows, duration, args:
    /// more bench options) instead of --test, --size, --flows, --duration.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// Most bench runs in all.
    #[arg(long, value_name = "RUNS", conflicts_with = "time")]
    pub budget: Option<usize>,
    /// Most wall time of the runs (90s, 10m, 1h) [default: 10m without
    /// --budget]: a budget of runs at the estimated length of one, raised
    /// after each run while the runs take less (never lowered).
    #[arg(long, value_name = "DURATION", value_parser = parse_time)]
    pub time: Option<Duration>,
    /// A limit on a response's change, such as p99<=+5% (repeatable).
    #[arg(long, value_name = "NAME<=X%")]
    pub constraint: Vec<String>,
    /// Practical threshold: the least gain kept, % of the baseline.
    #[arg(long, default_value_t = model::stats::DEFAULT_MIN_EFFECT_PCT, value_name = "PCT", value_parser = present::parse_min_effect)]
    pub min_effect: f64,
    /// Forward passes: once a kept change gains at least PCT %, race the
    /// knobs it leaves alone again on top of it, while the budget lasts
    /// ("off": one pass) [default: 20].
    #[arg(long, value_name = "PCT|off", value_parser = parse_forward_after)]
    pub forward_after: Option<ForwardAfter>,
    /// What each arm's runs are summed up by: the mean (a rate over time;
    /// decides where runs fall in two modes) or the median (robust to an
    /// outlying run). The mean's interval is widened to a t interval's on
    /// few runs. Constraints stay on medians [default: mean for
    /// max-throughput, max-pps and max-cps; median for min-p99].
    #[arg(long, value_name = "STAT", value_parser = parse_statistic)]
    pub statistic: Option<model::stats::Statistic>,
    /// Seed of the run order and the bootstrap.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Tune the lab of network namespaces (the default target).
    #[arg(long, conflicts_with = "inventory")]
    pub lab: bool,
    /// Tune real hosts of an inventory instead (see nettune fleet), through
    /// their agents: --server and --clients pick them.
    #[arg(long, value_name = "FILE", requires_all = ["server", "clients"])]
    pub inventory: Option<PathBuf>,
    /// With --inventory: the server host (a name or pattern naming one host).
    #[arg(long, value_name = "HOST", requires = "inventory")]
    pub server: Option<String>,
    /// With --inventory: the load client (a host name or a role; its first
    /// host runs the load, and the changes are applied on it and the server).
    #[arg(long, value_name = "ROLE", requires = "inventory")]
    pub clients: Option<String>,
    /// With --inventory: each host's --state-dir (`{host}` is its name).
    #[arg(long, value_name = "TEMPLATE", requires = "inventory")]
    pub state_dir_template: Option<String>,
    /// With --inventory: each host's --root (`{host}` is its name).
    #[arg(long, value_name = "TEMPLATE", requires = "inventory")]
    pub root_template: Option<String>,
    /// With --inventory: most seconds for each host's step (connect, apply,
    /// a run beside its own length) [default: 120].
    #[arg(long, value_name = "S", requires = "inventory")]
    pub timeout: Option<f64>,
    /// With --inventory: never copy this nettune to a host whose agent
    /// differs.
    #[arg(long, requires = "inventory")]
    pub no_copy: bool,
    /// Output directory [default: nettune-autotune-OBJ].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the space and the estimated runs, then stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Print results.json on stdout at the end instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Re-measure the result saved in DIR (its results.json) on this host:
    /// exit 0 when every accepted change still holds, 1 when some do not.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["objective", "dry_run", "out", "constraint", "workload"])]
    pub recheck: Option<PathBuf>,
    /// Also race this change (KNOB=LEVEL as --dry-run shows levels:
    /// rps_cpus=1, busy_poll=50), before the proposals; repeatable.
    #[arg(long = "candidate", value_name = "KNOB=LEVEL", value_parser = at::space::parse_change, conflicts_with = "recheck")]
    pub candidates: Vec<(Knob, Level)>,
    /// Start from the setting an earlier run accepted (DIR/results.json):
    /// applied on the lab's hosts through their journals before the
    /// baseline, the search's changes on top, rolled back at the end.
    #[arg(long, value_name = "DIR", conflicts_with = "recheck")]
    pub from: Option<PathBuf>,
}

fn parse_objective(s: &str) -> Result<Objective, String> {
    Objective::parse(s).map_err(|e| e.to_string())
}

/// `90`, `90s`, `10m`, `1h`: 1 s to 24 h.
fn parse_time(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1),
        Some((i, 'm')) => (&t[..i], 60),
        Some((i, 'h')) => (&t[..i], 3600),
        _ => (t, 1),
    };
    match num
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
    {
        Some(secs) if (1..=86_400).contains(&secs) => Ok(Duration::from_secs(secs)),
        _ => Err(format!(
            "`{s}` is not a duration from 1s to 24h (90s, 10m, 1h)"
        )),
    }
}

/// What the arguments mean, checked before anything runs.
struct Checked {
    test: &'static str,
    /// Seconds per run.
    duration: u32,
    flows: u32,
    size: Option<u32>,
    /// Bench options of the workload file (`args`).
    extra: Vec<String>,
    bench_args: Vec<String>,
    cfg: SearchConfig,
    responses: Vec<Response>,
    /// The time budget (`--time`, or its default without `--budget`): the
    /// run budget is raised while runs are quicker than estimated.
    time: Option<Duration>,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("nettune: {msg}");
    ExitCode::from(exit::USAGE)
}

/// Run the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(dir) = args.recheck.clone() {
        return run_recheck(args, &dir);
    }
    let Some(objective_arg) = args.objective else {
        return Ok(usage("autotune needs --objective OBJ (or --recheck DIR)"));
    };
    let checked = match check(&args, objective_arg, false) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let from = match args.from.as_deref().map(read_from).transpose() {
        Ok(f) => f.unwrap_or_default(),
        Err(msg) => return Ok(usage(msg)),
    };
    let objective = objective_arg.name();
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("nettune-autotune-{objective}")));
    let ui = Ui::new(0, false);
    let run = Run {
        args: &args,
        checked: &checked,
        objective_arg,
        objective,
        from: &from,
        ui: &ui,
        cancel: engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?,
        dir: &dir,
        budget: checked.cfg.budget.unwrap_or(0),
        kept: std::cell::RefCell::new(None),
    };
    if let Some(inv) = &args.inventory {
        let result = on_fleet::search(&run, inv);
        ui.finish();
        return result;
    }
    if !lab::is_root() {
        anyhow::bail!(
            "autotune --lab needs root to build its lab of network namespaces (also for --dry-run: the space comes from the lab's hosts)"
        );
    }
    let spec = lab::LabSpec::new(2, 2);
    let exe = std::env::current_exe().context("finding the nettune binary")?;
    let session = present::start_lab(&spec, &exe, &ui).context("building the lab")?;
    let result = (|| -> anyhow::Result<ExitCode> {
        let mut exec = runner::SplitExecutor {
            bench: session.executor()?.with_cancel(run.cancel.clone()),
            rest: session.executor()?,
        };
        let (client, server) = (HostId(1), HostId(0));
        let sources = lab_sources(&session, client, checked.test)?;
        let target = Target {
            client,
            server,
            scope: NetnsScope::Child,
            sources,
            host_label: "the lab's client namespace".to_string(),
        };
        search_on(&mut exec, target, &run)
    })();
    if let Some(k) = run.kept.borrow_mut().as_mut() {
        let undone = session
            .executor()
            .map_err(anyhow::Error::from)
            .and_then(|mut e| k.undo(&mut e).map_err(anyhow::Error::from));
        if let Err(e) = undone {
            eprintln!("nettune: rolling back the --from setting: {e} (the lab is removed anyway)");
        }
    }
    ui.finish();
    session.teardown();
    result
}

/// Where a search runs: the client and server hosts of `exec`, the scope
/// their plans are made for, the client's source addresses (tcp-crr), and
/// how the profile names the host.
struct Target {
    client: HostId,
    server: HostId,
    scope: NetnsScope,
    sources: Vec<std::net::IpAddr>,
    host_label: String,
}

/// What every search of one `nettune autotune` run shares.
struct Run<'a> {
    args: &'a Args,
    checked: &'a Checked,
    objective_arg: Objective,
    objective: &'static str,
    from: &'a [(Knob, Level)],
    ui: &'a Ui,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    dir: &'a std::path::Path,
    budget: usize,
    kept: std::cell::RefCell<Option<at::drive::Kept>>,
}

/// `--forward-after`: a gain in % that starts a forward pass, or `None`
/// for one pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForwardAfter(Option<f64>);

fn parse_statistic(s: &str) -> Result<model::stats::Statistic, String> {
    model::stats::Statistic::parse(s).ok_or_else(|| format!("{s:?}: expected median or mean"))
}

fn parse_forward_after(s: &str) -> Result<ForwardAfter, String> {
    if s == "off" {
        return Ok(ForwardAfter(None));
    }
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 10_000.0 => Ok(ForwardAfter(Some(v))),
        _ => Err(format!(
            "{s:?}: a gain in % above 0 (20 means a kept gain of 20 % starts a forward pass), or off"
        )),
    }
}
