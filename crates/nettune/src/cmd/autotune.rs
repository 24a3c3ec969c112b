//! `nettune autotune --objective OBJ --lab`: search the lab host's factors
//! for the objective, each candidate applied through the journal, measured
//! against the baseline on bootstrap intervals and rolled back; the proven
//! changes become a plan `nettune apply --plan` takes and a profile
//! `nettune apply --profile` takes; results.json and the report say what was
//! kept and rejected, and why (docs/autotune.md).

mod on_fleet;
mod workload;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use lab::autotune::{self as at, DriveConfig, Ended};
use lab::exec::{Executor, HostId};
use lab::runner::{self, experiment::BENCH_WARMUP_S};
use model::experiment::{Knob, Level, TestKind};
use model::plan::NetnsScope;
use model::snapshot::HostSnapshot;
use tune::autotune::{Constraint, Objective, Response, Search, SearchConfig, SearchSpace};

use super::present::{self, Ui};
use crate::exit;

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
reuse and the port range for max-cps; socket buffers, congestion control, pinning of the workload
and the NAPI knobs for max-throughput; RPS, busy polling and NAPI for max-pps and min-p99), each starting from the host's
current level; levels the host cannot take are left out with the reason. Every candidate is
applied through the journal and rolled back after its run; a change is kept only when its 95 %
interval, re-checked against fresh baseline runs, shows a gain of at least --min-effect and every
--constraint holds. A kept gain of --forward-after % or more (default 20) starts a forward pass:
the knobs left alone are raced again on top of the kept setting, while the budget lasts (in the
lab, gro_flush_timeout costs next to bbr and gains next to cubic). Writes DIR/results.json (accepted and rejected changes with their intervals
and reasons, the trace of every run; its schema is
/usr/share/doc/nettune/docs/schema/autotune-results.json), DIR/plan.json and DIR/profile.toml
(the proven changes, for `apply --plan` and `apply --profile`), and the report DIR/report.html
and DIR/report.md (the search trace chart). Exit codes: 0 done
(also when nothing was proven), 1 error (not root, the lab could not be built, nothing on the host
can be changed), 2 usage errors: an objective the workload cannot measure, a bad --constraint, a
budget below the minimum (said with the minimum, before anything runs); 130 Ctrl-C (the current
candidate is rolled back; the files keep what the runs so far proved: nothing during the race,
during the re-check only a change that already passed it). With --recheck DIR: 0 every accepted change still
holds, 1 some no longer hold (or an error), 2 DIR has no readable results.json (or outcome.json,
its name before).";

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
    #[arg(long, value_name = "TEST", value_parser = ["tcp-stream", "udp-stream", "tcp-rr", "tcp-crr"])]
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

fn test_kind(name: &str) -> TestKind {
    match name {
        "udp-stream" => TestKind::UdpStream,
        "tcp-rr" => TestKind::TcpRr,
        "tcp-crr" => TestKind::TcpCrr,
        _ => TestKind::TcpStream,
    }
}

fn default_test(o: Objective) -> &'static str {
    match o {
        Objective::MaxThroughput => "tcp-stream",
        Objective::MaxPps => "udp-stream",
        Objective::MinP99 => "tcp-rr",
        Objective::MaxCps => "tcp-crr",
    }
}

/// One run's wall time.
fn run_time(duration_s: u32) -> Duration {
    Duration::from_secs(u64::from(duration_s))
        + Duration::from_secs_f64(BENCH_WARMUP_S)
        + RUN_OVERHEAD
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

fn check(args: &Args, objective: Objective, recheck: bool) -> Result<Checked, ExitCode> {
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
    let test = file
        .test
        .or(args.test.as_deref())
        .map_or(default_test(objective), |t| match t {
            "udp-stream" => "udp-stream",
            "tcp-rr" => "tcp-rr",
            "tcp-crr" => "tcp-crr",
            _ => "tcp-stream",
        });
    let kind = test_kind(test);
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

fn snapshot(exec: &mut dyn Executor, h: HostId) -> anyhow::Result<HostSnapshot> {
    let text = exec.inspect(h)?;
    serde_json::from_str(&text)
        .with_context(|| format!("inspect on {}: not a host snapshot", exec.host_name(h)))
}

fn space_lines(
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

/// The run's progress on stderr: a bar on a terminal, a line per run
/// otherwise (none with --json).
struct Bar {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
}

impl Bar {
    fn new(total: u64, shown: bool) -> Bar {
        let bar = (shown && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs  {msg}",
            ) {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Bar { bar, lines: shown }
    }

    fn set_total(&self, total: u64) {
        if let Some(b) = &self.bar {
            b.set_length(total);
        }
    }

    fn progress(&self, pos: u64, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.set_position(pos);
                b.set_message(msg.to_string());
            }
            None if self.lines => eprintln!("{msg}"),
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
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

/// tcp-crr opens a connection per transaction and its client closes first:
/// each run leaves up to a port range of TIME_WAIT sockets for 60 s. A
/// fresh source address per run (a pool on the lab's client) keeps them off
/// the next runs' 4-tuples, so a run measures its arm, not the runs before.
fn lab_sources(
    session: &lab::LabSession,
    client: HostId,
    test: &str,
) -> anyhow::Result<Vec<std::net::IpAddr>> {
    if test != "tcp-crr" {
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

/// The search on `t`'s hosts through `exec` (the lab's namespaces or a
/// fleet's agents): the space from their snapshots, the race, the
/// re-checks, then results.json, plan.json, profile.toml and the report.
fn search_on(exec: &mut dyn Executor, t: Target, run: &Run<'_>) -> anyhow::Result<ExitCode> {
    let Run {
        args,
        checked,
        objective_arg,
        objective,
        from,
        ui,
        dir,
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
    let bar = Bar::new(budget as u64, !args.json);
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
    let mut doc = at::outcome_json(objective, &built, &ended, &trace);
    // What `--recheck DIR` needs to measure the same workload again.
    doc["workload"] = serde_json::json!({
        "test": checked.test,
        "duration": checked.duration,
        "flows": checked.flows,
        "size": checked.size,
        "args": checked.extra,
        "min_effect_pct": args.min_effect,
        "statistic": checked.cfg.statistic.name(),
        "seed": checked.cfg.seed,
        "repeats": checked.cfg.repeats,
        "confirm_repeats": checked.cfg.confirm_repeats,
        "bench_args": checked.bench_args,
    });
    let machine = lab::runner::experiment::machine_of(&snaps[0].1);
    doc["metric"] = serde_json::json!(checked.cfg.objective.key());
    doc["direction"] = serde_json::json!(match checked.cfg.objective.direction() {
        model::stats::Direction::LowerIsBetter => "lower",
        _ => "higher",
    });
    doc["nettune_version"] = serde_json::json!(env!("CARGO_PKG_VERSION"));
    doc["started"] = serde_json::json!(started_at);
    doc["finished"] = serde_json::json!(model::time::rfc3339_utc(std::time::SystemTime::now()));
    doc["machine"] = serde_json::to_value(&machine)?;
    if let Some(dir) = &args.from {
        doc["from"] = serde_json::json!({
            "dir": dir,
            "setting": from.iter().map(|(k, l)| format!("{}={l}", k.name())).collect::<Vec<_>>(),
        });
    }
    let results_path = at::write_file(
        dir,
        at::RESULTS_FILE,
        serde_json::to_string_pretty(&doc)?.as_bytes(),
    )?;
    let changes = at::accepted_changes(&ended);
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
        gain: passed_gain(&ended),
        date: doc["finished"].as_str().unwrap_or("").to_string(),
        host: format!("{} ({})", machine.hostname, t.host_label),
    };
    let profile = at::profile_toml(&snaps[0].1, t.scope, &changes, &header)
        .map_err(|e| anyhow::anyhow!("the accepted profile: {e}"))?;
    let profile_path = at::write_file(dir, at::PROFILE_FILE, profile.as_bytes())?;
    // The report is a view of results.json: its failure is said, not fatal.
    let report = report::write_dir(dir);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
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
    match &ended {
        Ended::Done(o) => {
            if args.json {
                files(&mut std::io::stderr())?;
            } else {
                print!("{}", model::text::printable_lines(&o.render()));
                if o.accepted.is_empty() {
                    println!("nothing proven: the host stays as it is");
                }
                let unit = checked.cfg.objective.unit_for(checked.test);
                let fmt = |v| model::metric::format_value(unit, v);
                let limits = at::limits_lines(&trace, &fmt);
                if !limits.is_empty() {
                    println!("what limited the runs (each end's busiest bench thread):");
                    for l in &limits {
                        println!("  {}", model::text::printable_capped(l, 400));
                    }
                }
                if let Some(n) = at::two_states_note(&trace, &fmt) {
                    println!("note: {}", model::text::printable_capped(&n, 600));
                }
                if let Some(n) = at::busy_note(&trace) {
                    println!("warning: {}", model::text::printable_capped(&n, 600));
                }
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

/// Largest `--from DIR` results file read (as `report` reads results).
const MAX_FROM_BYTES: u64 = 256 << 20;

/// `--from DIR`: the accepted levels of `DIR/results.json` (or of an
/// older `DIR/outcome.json`), or one line naming the file.
fn read_from(dir: &std::path::Path) -> Result<Vec<(Knob, Level)>, String> {
    let path = [at::RESULTS_FILE, at::OLD_OUTCOME_FILE]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.exists())
        .unwrap_or_else(|| dir.join(at::RESULTS_FILE));
    let bad = |what: String| format!("--from {}: {what}", path.display());
    // A regular file only (a FIFO or /dev/zero is refused, not read), and
    // at most as large as any results file.
    let text = host::files::read_bounded_text(&path, MAX_FROM_BYTES).map_err(|e| {
        bad(format!(
            "cannot read it: {e} (a directory written by `nettune autotune --out DIR`)"
        ))
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Some(accepted) = doc["accepted"].as_array() else {
        return Err(bad("no `accepted` list".into()));
    };
    if doc["interrupted"].as_bool() == Some(true) && accepted.is_empty() {
        return Err(bad(
            "that run was interrupted before it proved anything".into()
        ));
    }
    accepted
        .iter()
        .map(|a| match (a["knob"].as_str(), a["level"].as_str()) {
            (Some(k), Some(l)) => {
                at::space::parse_change(&format!("{k}={l}")).map_err(|e| bad(e.to_string()))
            }
            _ => Err(bad("an accepted change without `knob` and `level`".into())),
        })
        .collect()
}

/// Apply the `--from` setting on the lab's hosts through their journals
/// (kept in `kept` for [`undo_from`]) and read their snapshots again: the
/// search starts from there.
fn start_from(
    exec: &mut dyn Executor,
    ui: &Ui,
    snaps: &mut [(HostId, HostSnapshot)],
    setting: &[(Knob, Level)],
    args: &Args,
    kept: &mut Option<at::drive::Kept>,
) -> anyhow::Result<()> {
    let Some(dir) = &args.from else {
        return Ok(());
    };
    let k = at::drive::keep(exec, snaps, NetnsScope::Child, setting)
        .with_context(|| format!("applying the setting of --from {}", dir.display()))?;
    let names: Vec<String> = setting
        .iter()
        .map(|(k, l)| format!("{}={l}", k.name()))
        .collect();
    ui.line(&format!(
        "starting from {}: {} (on both hosts through their journals; rolled back at the end)",
        dir.display(),
        if names.is_empty() {
            "nothing accepted there".to_string()
        } else {
            names.join(", ")
        }
    ));
    *kept = Some(k);
    for (h, snap) in snaps.iter_mut() {
        *snap = snapshot(exec, *h)?;
    }
    Ok(())
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

/// One progress line: the run, its arm and value, what Ctrl-C would keep
/// now (the best proven gain), the time used and the most left.
fn progress_line(
    used: usize,
    budget: usize,
    r: &at::RunTrace,
    key: &str,
    search: &Search,
    elapsed: Duration,
    left: Duration,
) -> String {
    let best = search
        .outcome_so_far()
        .ok()
        .and_then(|o| o.proven_text())
        .unwrap_or_else(|| "none yet".to_string());
    format!(
        "run {used}/{budget} {}: {key} = {:.4e}; best proven: {best} ({} s elapsed, at most {} s left)",
        r.arm,
        r.value,
        elapsed.as_secs(),
        left.as_secs()
    )
}

/// The gain of the passed re-checks that proved the accepted changes, with
/// their intervals, for profile.toml's header.
fn passed_gain(ended: &Ended) -> Option<String> {
    let o = ended.outcome();
    match o.proven_steps().as_slice() {
        [one] => {
            let names: Vec<String> = one.changes.iter().map(ToString::to_string).collect();
            Some(format!("{} for {}", one.effect, names.join(" + ")))
        }
        _ => o.proven_text(),
    }
}

/// What a saved results.json says, for `--recheck`.
#[derive(Debug, Default)]
struct Saved {
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
fn read_saved(dir: &std::path::Path) -> anyhow::Result<Saved> {
    let mut path = dir.join(at::RESULTS_FILE);
    let old = dir.join(at::OLD_OUTCOME_FILE);
    if !path.exists() && old.exists() {
        path = old;
    }
    let text = host::files::read_bounded_text(&path, report::MAX_RESULTS_BYTES).map_err(|e| {
        anyhow::anyhow!(
            "--recheck {}: cannot read {} ({e}): a directory written by `nettune autotune --out DIR`",
            dir.display(),
            path.display()
        )
    })?;
    let bad = |what: &str| anyhow::anyhow!("{}: {what}", path.display());
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let objective = doc["objective"]
        .as_str()
        .ok_or_else(|| bad("no `objective`"))
        .and_then(|o| Objective::parse(o).map_err(|e| bad(&e.to_string())))?;
    let mut accepted = Vec::new();
    let mut on_top_of = Vec::new();
    for a in doc["accepted"].as_array().into_iter().flatten() {
        let mut under = Vec::new();
        for c in a["on_top_of"].as_array().into_iter().flatten() {
            match c.as_str() {
                Some(c) => under.push(c.to_string()),
                None => return Err(bad("an `on_top_of` entry that is not a `knob=level` text")),
            }
        }
        on_top_of.push(under);
        match (a["knob"].as_str(), a["level"].as_str()) {
            (Some(k), Some(l)) => accepted.push((k.to_string(), l.to_string())),
            _ => return Err(bad("an accepted change without `knob` and `level`")),
        }
    }
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
    let w = &doc["workload"];
    let small = |v: &serde_json::Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    Ok(Saved {
        objective: Some(objective),
        interrupted: doc["interrupted"].as_bool().unwrap_or(false),
        accepted,
        on_top_of,
        test: w["test"].as_str().map(str::to_string),
        duration: small(&w["duration"]),
        flows: small(&w["flows"]),
        size: small(&w["size"]),
        min_effect: w["min_effect_pct"].as_f64(),
        statistic: match &w["statistic"] {
            // A file from before the key: its search ran on medians.
            serde_json::Value::Null => model::stats::Statistic::Median,
            v => v
                .as_str()
                .and_then(model::stats::Statistic::parse)
                .ok_or_else(|| bad("`workload.statistic` is not `median` or `mean`"))?,
        },
        seed: w["seed"].as_u64(),
        repeats: small(&w["confirm_repeats"]),
        extra: w["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect(),
        path,
    })
}

/// Fewest runs per arm of a re-check.
const RECHECK_MIN_REPEATS: usize = 3;

/// `nettune autotune --recheck DIR`.
fn run_recheck(mut args: Args, dir: &std::path::Path) -> anyhow::Result<ExitCode> {
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
        let bar = Bar::new((arms.saturating_add(1) * repeats) as u64, !args.json);
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
        if args.json {
            let mut j = report.json();
            j["objective"] = serde_json::json!(objective);
            j["results"] = serde_json::json!(saved.path);
            println!("{}", serde_json::to_string_pretty(&j)?);
        } else {
            print!("{}", model::text::printable_lines(&report.render()));
            let unmeasured = report.rows.iter().filter(|r| r.effect.is_none()).count();
            if !report.all_hold() {
                println!("some accepted changes no longer hold");
            } else if unmeasured > 0 {
                println!(
                    "the accepted setting still holds; its {unmeasured} changes were not measured alone (a budget of {} runs would)",
                    unmeasured.saturating_add(2).saturating_mul(repeats)
                );
            } else {
                println!("every accepted change still holds");
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_time("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_time("1h").unwrap(), Duration::from_secs(3600));
        assert!(parse_time("0s").is_err());
        assert!(parse_time("25h").is_err());
        assert!(parse_time("m").is_err());
    }

    #[test]
    fn forward_after_takes_a_percentage_or_off() {
        assert_eq!(parse_forward_after("20"), Ok(ForwardAfter(Some(20.0))));
        assert_eq!(parse_forward_after("7.5%"), Ok(ForwardAfter(Some(7.5))));
        assert_eq!(parse_forward_after("off"), Ok(ForwardAfter(None)));
        for bad in ["0", "-5", "nan", "inf", "1e9", "x", ""] {
            let e = parse_forward_after(bad).unwrap_err();
            assert!(e.contains("or off"), "{bad}: {e}");
        }
    }

    #[test]
    fn statistic_is_median_or_mean() {
        use model::stats::Statistic;
        assert_eq!(parse_statistic("median"), Ok(Statistic::Median));
        assert_eq!(parse_statistic("mean"), Ok(Statistic::Mean));
        let e = parse_statistic("average").unwrap_err();
        assert!(
            e.contains("\"average\"") && e.contains("median or mean"),
            "{e}"
        );
    }

    /// A rate is judged on means and a 99th percentile on medians, unless
    /// `--statistic` says otherwise.
    #[test]
    fn the_statistic_follows_the_objective() {
        use model::stats::Statistic;
        let judged = |line: &[&str]| {
            let args = Args::try_parse_from(line).unwrap();
            let objective = args.objective.unwrap();
            check(&args, objective, false).unwrap().cfg.statistic
        };
        for o in ["max-throughput", "max-pps", "max-cps"] {
            assert_eq!(
                judged(&["autotune", "--objective", o]),
                Statistic::Mean,
                "{o}"
            );
        }
        assert_eq!(
            judged(&["autotune", "--objective", "min-p99"]),
            Statistic::Median
        );
        assert_eq!(
            judged(&[
                "autotune",
                "--objective",
                "max-throughput",
                "--statistic",
                "median"
            ]),
            Statistic::Median
        );
        assert_eq!(
            judged(&["autotune", "--objective", "min-p99", "--statistic", "mean"]),
            Statistic::Mean
        );
    }

    /// The progress line names what a Ctrl-C would keep: "none yet" in the
    /// race, then the change its re-check proved, with the interval.
    #[test]
    fn progress_shows_the_best_proven_gain() {
        use model::experiment::{Factor, Metric};
        use tune::autotune::{Observation, SearchConfig, Step};
        let space = SearchSpace::new(vec![Factor {
            knob: Knob::TcpTwReuse,
            levels: vec![Level::Int(2), Level::Int(1)],
        }])
        .unwrap();
        let mut search = Search::new(space, SearchConfig::new(Metric::Transactions)).unwrap();
        let mut rng = model::stats::SplitMix64::new(7);
        let mut lines = Vec::new();
        while let Step::Measure { arm, seq } = search.next_step().unwrap() {
            let base = if arm.changes().is_empty() {
                500.0
            } else {
                14_000.0
            };
            let value = rng.normal(base, base * 0.02);
            search.record(&arm, Observation::new(value)).unwrap();
            let run = at::RunTrace {
                seq,
                arm: search.label(&arm),
                value,
                values: Default::default(),
                limited_by: None,
                others: None,
            };
            lines.push(progress_line(
                seq + 1,
                60,
                &run,
                "transactions",
                &search,
                Duration::from_secs(seq as u64),
                Duration::from_secs(60 - seq as u64),
            ));
        }
        assert!(lines[0].contains("best proven: none yet"), "{}", lines[0]);
        assert!(lines[0].starts_with("run 1/60 "), "{}", lines[0]);
        let last = lines.last().unwrap();
        assert!(
            last.contains("best proven: tcp_tw_reuse=1 +") && last.contains(" % ["),
            "{last}"
        );
        assert!(last.contains("s elapsed, at most"), "{last}");
    }
}
