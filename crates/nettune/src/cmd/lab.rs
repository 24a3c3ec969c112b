//! `nettune lab [--hosts N] [--queues Q] [--rate RATE] [--delay MS]
//! [--jitter MS] [--loss PCT] [--repeats N] [--duration S] [--out DIR]
//! [--json] [--loopback]`: the whole loop on one machine. Build hosts as
//! network namespaces, measure a baseline suite, let doctor look at both
//! hosts of the suite under load, apply what it recommends inside the lab
//! (each host's plan on that host, socket-option fixes as bench flags),
//! measure again, roll back, and print a before/after table with intervals
//! and verdicts; results go to `DIR/results.json`.
//!
//! The two cells (baseline, doctor's plan, in that order) run through the
//! experiment runner (`runner`), so the repeats and statistics are
//! those of `nettune experiment`. The loop's stages live in `runner::loop_`
//! (docs/architecture.md, "The loop"); this module parses the flags and
//! hands the results to the terminal presenter ([`super::present`]).

pub use super::present::lab_table as render_table;
use super::present::{End, Ui};
use anyhow::Context;
use lab::{LabSpec, LoopbackServer, DEFAULT_LISTEN_TIMEOUT};
use runner;
use runner::exec::{Executor, HostId};
use runner::loop_::setup::{DoctorSetup, MeasureOnly};
use runner::loop_::{suite, BASELINE};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Default `--out`.
pub const DEFAULT_OUT: &str = "nettune-report";
/// Default `--repeats`: measured runs per workload and cell.
pub const DEFAULT_REPEATS: u32 = 5;
/// Default `--duration`, seconds of one run.
pub const DEFAULT_DURATION: f64 = 2.0;
/// Set to `1` to behave as when not root (for tests of the message).
pub const NOT_ROOT_ENV: &str = "NETTUNE_TEST_NOT_ROOT";

const EXAMPLES: &str = "\
Examples:
  # The whole loop (as root): two namespaces on a 2-queue veth, baseline suite,
  # doctor under load, its plan applied inside the lab, the suite again, rollback,
  # a before/after table; results in nettune-report/results.json
  sudo nettune lab

  # Quicker, on a 100 Mbit/s link, results elsewhere
  sudo nettune lab --repeats 3 --duration 1 --rate 100mbit --out /tmp/lab1

  # Four hosts with 4 queues each (the suite runs from host 0 to host 1)
  sudo nettune lab --hosts 4 --queues 4

  # Without root: the same suite over 127.0.0.1 against a server it starts,
  # measuring only (nothing on the host is changed)
  nettune lab --loopback

  # The results as JSON (its shape: lab.md in /usr/share/doc/nettune/docs)
  sudo nettune lab --json > lab.json

The suite: tcp-stream, udp-stream of 64-byte datagrams, tcp-rr and tcp-crr, each with
per-CPU accounting, --repeats runs of --duration seconds per cell; the baseline is the
kernel's defaults in fresh namespaces. Doctor samples both hosts (the connecting client and
the receiver) under a tcp-stream, then under tcp-crr and 64-byte udp-stream; each host's plan
changes are applied on that host through a journal and rolled back at the end, and fixes
that are socket options (--rcvbuf, --congestion) go to the after suite's bench arguments.
The table says what was found, applied and not applied on which host. Ctrl-C rolls back, removes the lab and exits 130; the lab of a
killed run is removed at the next start. See
/usr/share/doc/nettune/docs/lab.md.";

/// Flags of `nettune lab`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Hosts (network namespaces), 2 to 32.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub hosts: u32,
    /// RX and TX queues per veth end, 1 to 16.
    #[arg(long, default_value_t = 2, value_name = "Q")]
    pub queues: u32,
    /// Link rate (tc tbf on every veth end), e.g. 100mbit, 1gbit, 500M.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Delay added to the round trip between the hosts (half in each
    /// direction), milliseconds or with a unit (20ms, 0.02s): `--delay 20`
    /// makes ping show 20 ms more.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub delay: Option<f64>,
    /// Jitter of that round trip (± half in each direction), milliseconds
    /// or with a unit.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub jitter: Option<f64>,
    /// Loss on every link, percent.
    #[arg(long, value_name = "PCT")]
    pub loss: Option<f64>,
    /// Measured runs per workload and cell (1 to 100; intervals need 3).
    #[arg(long, default_value_t = DEFAULT_REPEATS, value_name = "N")]
    pub repeats: u32,
    /// Seconds of each run (0.2 to 60).
    #[arg(long, default_value_t = DEFAULT_DURATION, value_name = "S", value_parser = model::units::parse_seconds)]
    pub duration: f64,
    /// Results directory.
    #[arg(long, default_value = DEFAULT_OUT, value_name = "DIR")]
    pub out: PathBuf,
    /// Practical threshold: a change whose 95 % interval excludes zero is
    /// called a gain or a regression only when it is at least PCT % of the
    /// baseline (0: every change the interval shows).
    #[arg(long, default_value_t = model::stats::DEFAULT_MIN_EFFECT_PCT, value_name = "PCT", value_parser = super::present::parse_min_effect)]
    pub min_effect: f64,
    /// Print the results (the results.json shape) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No namespaces, no root, no tuning: the suite over 127.0.0.1 only.
    #[arg(long, conflicts_with_all = ["hosts", "queues", "rate", "delay", "jitter", "loss"])]
    pub loopback: bool,
}

/// The one line printed when `nettune lab` is run without root.
pub fn needs_root_message() -> String {
    "nettune lab needs root to create network namespaces (try `sudo nettune lab`); without root, `nettune lab --loopback` runs the same benchmark over 127.0.0.1, measuring only".into()
}

fn running_as_root() -> bool {
    lab::is_root() && std::env::var(NOT_ROOT_ENV).map_or(true, |v| v != "1")
}

/// A link rate: `100mbit`, `1gbit`, `1.5G`, `500M`, `100000000` (bit/s).
pub fn parse_rate(s: &str) -> anyhow::Result<u64> {
    let v = model::units::parse_rate(s).map_err(|e| anyhow::anyhow!("--rate `{s}`: {e}"))?;
    if !(1e3..=4e11).contains(&v) {
        anyhow::bail!("--rate `{s}`: must be 1kbit to 400gbit");
    }
    Ok(v as u64)
}

/// Milliseconds from `20` (a bare number) or a time with its unit (`20ms`,
/// `0.02s`), as `bench -O 500ms` takes one.
fn parse_ms(s: &str) -> Result<f64, String> {
    if let Ok(v) = s.trim().parse::<f64>() {
        return Ok(v);
    }
    model::units::parse_seconds(s)
        .map(|secs| secs * 1000.0)
        .map_err(|e| e.to_string())
}

fn ms(flag: &str, v: Option<f64>) -> anyhow::Result<Option<Duration>> {
    v.map(|v| {
        if !(v.is_finite() && (0.0..=10_000.0).contains(&v)) {
            anyhow::bail!("--{flag} {v}: must be 0 to 10000 ms");
        }
        Ok(Duration::from_secs_f64(v / 1000.0))
    })
    .transpose()
}

/// The lab the flags describe.
pub fn spec_of(args: &Args) -> anyhow::Result<LabSpec> {
    let spec = LabSpec {
        prefix: "ntlab".into(),
        hosts: args.hosts,
        queues: args.queues,
        rate: args.rate.as_deref().map(parse_rate).transpose()?,
        delay: ms("delay", args.delay)?,
        jitter: ms("jitter", args.jitter)?,
        loss: args.loss,
        mechanism: lab::MechanismChoice::Auto,
    };
    spec.validate()?;
    Ok(spec)
}

fn check_run_flags(args: &Args) -> anyhow::Result<()> {
    if !(1..=100).contains(&args.repeats) {
        anyhow::bail!("--repeats {}: must be 1 to 100", args.repeats);
    }
    if !(args.duration.is_finite() && (0.2..=60.0).contains(&args.duration)) {
        anyhow::bail!("--duration {}: must be 0.2 to 60 seconds", args.duration);
    }
    Ok(())
}

/// Run `nettune lab`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    check_run_flags(&args)?;
    let exe = std::env::current_exe().context("the nettune binary's own path")?;
    if args.loopback {
        return run_loopback(&args, exe);
    }
    if !running_as_root() {
        eprintln!("{}", needs_root_message());
        return Ok(ExitCode::from(crate::exit::ERROR));
    }
    let spec = spec_of(&args)?;
    let cancel = engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?;
    let t0 = Instant::now();
    let (infos, runs) = suite::workloads(args.duration);
    let mut ui = Ui::new(runs.len() as u64 * u64::from(args.repeats), true);
    let session = super::present::start_lab(&spec, &exe, &ui)?;
    let executor = || -> anyhow::Result<_> { Ok(session.executor()?.with_cancel(cancel.clone())) };
    let mut exec = executor()?;
    let (loads, doctor2) = (vec![executor()?, executor()?], executor()?);
    let info = lab::lab_info(&spec, session.lab().delay_mechanism().id());
    let (client, receiver) = (HostId(0), HostId(1));
    let m = suite::machine(&mut exec);
    let mut results = suite::skeleton(
        session.lab().name(),
        m,
        info,
        infos,
        vec![suite::cell(0, BASELINE)],
    );
    results.min_effect_pct = args.min_effect;
    results.notes.push(suite::baseline_note(
        &exec.host_name(client),
        &exec.host_name(receiver),
    ));
    let mut sched = suite::schedule(client, receiver, runs, args.repeats);
    sched.bootstrap.min_effect_pct = args.min_effect;
    let say = ui.clone();
    let mut setup = DoctorSetup {
        bdp: lab::bdp_of(&spec),
        loads: loads
            .into_iter()
            .map(|l| Box::new(l) as Box<dyn runner::exec::Executor + Send>)
            .collect(),
        client,
        receiver,
        cancel: cancel.clone(),
        say: Box::new(move |l| say.line(l)),
        doctor2: Box::new(doctor2),
        doctor_before: None,
        doctor_after: None,
        applied: Vec::new(),
        units: Vec::new(),
        plans: Vec::new(),
        notes: Vec::new(),
    };
    let opts = runner::RunOptions {
        out_dir: args.out.clone(),
        experiment_text: None,
        cancel,
    };
    // The baseline first, then doctor on the hosts as the baseline left
    // them, then each fix in its own cell against that baseline.
    let mut outcome = runner::run(&mut results, &sched, &mut exec, &mut setup, &opts, &mut ui);
    if matches!(outcome, Ok(runner::Outcome::Completed)) {
        outcome = fixes_phase(&mut results, &sched, &mut exec, &mut setup, &opts, &mut ui);
    }
    results.doctor_before = setup.doctor_before.take();
    results.doctor_after = setup.doctor_after.take();
    // Teardown before anything is printed: servers killed, lab removed.
    drop(setup);
    drop(exec);
    drop(session);
    let end = End {
        out: &args.out,
        json: args.json,
        cancelled: "nettune lab: interrupted: the plan was rolled back and the lab removed",
        what: "lab",
    };
    end.finish(&results, outcome, &ui, t0)
}

/// Doctor, one cell per fix, then every fix at once for doctor's second
/// look: the lab's second phase, after the baseline.
fn fixes_phase(
    results: &mut model::results::ExperimentResults,
    sched: &runner::Schedule,
    exec: &mut lab::NetnsExecutor,
    setup: &mut DoctorSetup,
    opts: &runner::RunOptions,
    ui: &mut Ui,
) -> Result<runner::Outcome, runner::RunError> {
    let units = match setup.prepare(exec) {
        Ok(u) => u,
        Err(e) => {
            results
                .notes
                .push(format!("doctor could not run, so nothing was applied: {e}").into());
            return Ok(runner::Outcome::Completed);
        }
    };
    for n in std::mem::take(&mut setup.notes) {
        if !results.notes.contains(&n) {
            results.notes.push(n);
        }
    }
    let runs: usize = units.iter().map(|u| u.workloads.len()).sum();
    ui.add_total(runs as u64 * u64::from(sched.repeats));
    for (i, u) in units.iter().enumerate() {
        let index = i + 1;
        results.cells.push(suite::cell(index, &u.label()));
        results.run_order.push(index);
        results.fixes.push(u.record(index));
    }
    let outcome = runner::run(results, sched, exec, setup, opts, ui)?;
    if outcome == runner::Outcome::Completed {
        if let Err(e) = setup.check_all(exec) {
            results
                .notes
                .push(format!("doctor with every fix in place: {e}").into());
        }
    }
    Ok(outcome)
}

/// `nettune lab --loopback`: the suite over 127.0.0.1, one cell.
fn run_loopback(args: &Args, exe: PathBuf) -> anyhow::Result<ExitCode> {
    let cancel = engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?;
    let t0 = Instant::now();
    let (infos, runs) = suite::workloads(args.duration);
    let mut ui = Ui::new(runs.len() as u64 * u64::from(args.repeats), true);
    let server = LoopbackServer::start(&exe, DEFAULT_LISTEN_TIMEOUT)?;
    ui.line(&format!(
        "loopback benchmark: nettune serve on 127.0.0.1:{} (measuring only; nothing is tuned)",
        server.port()
    ));
    let mut exec = server.executor().with_cancel(cancel.clone());
    let m = suite::machine(&mut exec);
    let cells = vec![suite::cell(0, "loopback")];
    let info = suite::loopback_info();
    let mut results = suite::skeleton("loopback", m, info, infos, cells);
    let sched = suite::schedule(HostId(0), HostId(0), runs, args.repeats);
    let opts = runner::RunOptions {
        out_dir: args.out.clone(),
        experiment_text: None,
        cancel,
    };
    let mut setup = MeasureOnly;
    let outcome = runner::run(&mut results, &sched, &mut exec, &mut setup, &opts, &mut ui);
    drop(exec);
    drop(server);
    let end = End {
        out: &args.out,
        json: args.json,
        cancelled: "nettune lab: interrupted",
        what: "loopback benchmark",
    };
    end.finish(&results, outcome, &ui, t0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        lab: Args,
    }

    fn spec(args: &[&str]) -> LabSpec {
        let cli = Cli::try_parse_from(std::iter::once("lab").chain(args.iter().copied()))
            .expect("flags parse");
        spec_of(&cli.lab).expect("valid lab")
    }

    /// `--delay MS` is the added round trip: the spec carries it whole and
    /// each direction of the link gets half.
    #[test]
    fn delay_is_the_added_round_trip_half_each_way() {
        let s = spec(&["--delay", "20", "--jitter", "4"]);
        assert_eq!(s.delay, Some(Duration::from_millis(20)));
        assert_eq!(s.jitter, Some(Duration::from_millis(4)));
        let each_way = s.delay_spec();
        assert_eq!(each_way.delay, Duration::from_millis(10));
        assert_eq!(each_way.jitter, Duration::from_millis(2));
    }

    /// Issue 38: `--delay 20ms` is refused while `bench -O 500ms` parses;
    /// the lab's times take a unit too (a bare number stays milliseconds).
    #[test]
    fn delay_and_jitter_take_a_unit_like_the_other_times() {
        for (delay, want) in [("20ms", 20), ("0.02s", 20), ("20", 20)] {
            let s = spec(&["--delay", delay, "--jitter", "4ms"]);
            assert_eq!(s.delay, Some(Duration::from_millis(want)), "{delay}");
            assert_eq!(s.jitter, Some(Duration::from_millis(4)));
        }
        let bad = Cli::try_parse_from(["lab", "--delay", "20 furlongs"]);
        assert!(bad.is_err());
    }
}
