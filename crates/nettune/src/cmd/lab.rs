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
//! experiment runner (`lab::runner`), so the repeats and statistics are
//! those of `nettune experiment`.

use anyhow::Context;
use lab::exec::{ExecError, Executor, HostId};
use lab::runner::{self, Applied, CellSetup, Outcome, Progress, ProgressEvent, Schedule};
use lab::{LabSession, LabSpec, LoopbackServer, NetnsExecutor, DEFAULT_LISTEN_TIMEOUT};
use model::experiment::Metric;
use model::plan::{Change, Plan};
use model::results::{
    CellResult, CellStatus, ExperimentResults, LabInfo, Machine, ResultsKind, WorkloadInfo,
    RESULTS_FILE, RESULTS_SCHEMA_VERSION,
};
use model::stats::{BootstrapConfig, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Default `--out`.
pub const DEFAULT_OUT: &str = "nettune-report";
/// Default `--repeats`: measured runs per workload and cell.
pub const DEFAULT_REPEATS: u32 = 5;
/// Default `--duration`, seconds of one run.
pub const DEFAULT_DURATION: f64 = 2.0;
/// Warm-up inside each bench run (bench `--warmup`), seconds.
const BENCH_WARMUP_S: f64 = 0.5;
/// Seconds of each doctor window (both hosts, while the load runs).
const DOCTOR_SAMPLE_S: f64 = 2.0;
/// Label of the baseline cell.
pub const BASELINE: &str = "baseline";
/// Label of the cell with doctor's plan applied.
pub const DOCTOR_PLAN: &str = "doctor plan";
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

  # The results as JSON (the results.json shape, docs/lab.md)
  sudo nettune lab --json > lab.json

The suite: tcp-stream, udp-stream of 64-byte datagrams, tcp-rr and tcp-crr, each with
per-CPU accounting, --repeats runs of --duration seconds per cell; the baseline is the
kernel's defaults in fresh namespaces. Doctor samples both hosts (the connecting client and
the receiver) under a tcp-stream, then under tcp-crr and 64-byte udp-stream; each host's plan
changes are applied on that host through a journal and rolled back at the end, and fixes
that are socket options (--rcvbuf, --congestion) go to the after suite's bench arguments.
The table says what was found, applied and not applied on which host. Ctrl-C rolls back, removes the lab and exits 130; the lab of a
killed run is removed at the next start. See docs/lab.md.";

/// Flags of `nettune lab`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Hosts (network namespaces), 2 to 8.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub hosts: u32,
    /// RX and TX queues per veth end, 1 to 16.
    #[arg(long, default_value_t = 2, value_name = "Q")]
    pub queues: u32,
    /// Link rate (tc tbf on every veth end), e.g. 100mbit, 1gbit, 500M.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Delay added to the round trip between the hosts (half in each
    /// direction), milliseconds: `--delay 20` makes ping show 20 ms more.
    #[arg(long, value_name = "MS")]
    pub delay: Option<f64>,
    /// Jitter of that round trip (± half in each direction), milliseconds.
    #[arg(long, value_name = "MS")]
    pub jitter: Option<f64>,
    /// Loss on every link, percent.
    #[arg(long, value_name = "PCT")]
    pub loss: Option<f64>,
    /// Measured runs per workload and cell (1 to 100; intervals need 3).
    #[arg(long, default_value_t = DEFAULT_REPEATS, value_name = "N")]
    pub repeats: u32,
    /// Seconds of each run (0.2 to 60).
    #[arg(long, default_value_t = DEFAULT_DURATION, value_name = "S")]
    pub duration: f64,
    /// Results directory.
    #[arg(long, default_value = DEFAULT_OUT, value_name = "DIR")]
    pub out: PathBuf,
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
    let t = s.trim().to_ascii_lowercase();
    let num = t
        .strip_suffix("bit/s")
        .or_else(|| t.strip_suffix("bps"))
        .or_else(|| t.strip_suffix("bit"))
        .unwrap_or(&t);
    let v = engine::config::parse_si(num).map_err(|e| anyhow::anyhow!("--rate `{s}`: {e}"))?;
    if !(1e3..=4e11).contains(&v) {
        anyhow::bail!("--rate `{s}`: must be 1kbit to 400gbit");
    }
    Ok(v as u64)
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

/// `--bdp RATE,RTT` for doctor and the plan of a lab with a rate and a
/// delay: the delay is already the added round trip ([`LabSpec::delay`]).
pub fn bdp_of(spec: &LabSpec) -> Option<String> {
    match (spec.rate, spec.delay) {
        (Some(rate), Some(d)) if !d.is_zero() => {
            Some(format!("{rate}bit,{}us", d.as_micros().max(1)))
        }
        _ => None,
    }
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

/// The suite: (name, bench arguments without duration).
const SUITE: &[(&str, &[&str])] = &[
    ("tcp-stream", &["--test", "tcp-stream"]),
    // bench's own default for udp-stream, spelled out so the table can
    // tell when a finding asks for what the suite already does; forced, as
    // before bench stopped forcing by default: inside the lab's namespaces
    // rmem_max is the machine's own and is never raised (its servers have
    // a token, so they force too).
    (
        "udp-stream-64",
        &[
            "--test",
            "udp-stream",
            "--size",
            "64",
            "--rcvbuf",
            "4M",
            "--force-buffers",
        ],
    ),
    ("tcp-rr", &["--test", "tcp-rr"]),
    ("tcp-crr", &["--test", "tcp-crr"]),
];

/// Metrics the table shows, in this order. Not `cpu_pct`: client and
/// server share the machine's CPUs, so busy % is saturated by design (the
/// per-CPU split of every run is kept in `runs[].cpus`).
const METRICS: &[Metric] = &[
    Metric::Throughput,
    Metric::Transactions,
    Metric::LatencyP50,
    Metric::LatencyP99,
    Metric::SoftirqPct,
    Metric::LossPct,
];

fn fmt_secs(s: f64) -> String {
    let t = format!("{s:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn workloads(duration: f64) -> (Vec<WorkloadInfo>, Vec<runner::WorkloadRun>) {
    let mut info = Vec::new();
    let mut runs = Vec::new();
    for (name, base) in SUITE {
        let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        args.extend([
            "--duration".into(),
            fmt_secs(duration),
            "--warmup".into(),
            fmt_secs(BENCH_WARMUP_S),
        ]);
        let expected = Duration::from_secs_f64(duration + BENCH_WARMUP_S + 0.5);
        info.push(WorkloadInfo {
            name: name.to_string(),
            test: base[1].to_string(),
            args: args.clone(),
        });
        runs.push(runner::WorkloadRun {
            name: name.to_string(),
            args,
            expected,
            deadline: expected * 3 + Duration::from_secs(20),
        });
    }
    (info, runs)
}

fn cell(index: usize, label: &str) -> CellResult {
    CellResult {
        index,
        label: label.into(),
        levels: Vec::new(),
        status: CellStatus::Pending,
        runs: Vec::new(),
        stats: Vec::new(),
    }
}

fn now() -> String {
    engine::report::rfc3339_utc(std::time::SystemTime::now())
}

fn skeleton(
    name: &str,
    machine: Machine,
    lab: LabInfo,
    workloads: Vec<WorkloadInfo>,
    cells: Vec<CellResult>,
) -> ExperimentResults {
    let order = cells.iter().map(|c| c.index).collect();
    ExperimentResults {
        schema_version: RESULTS_SCHEMA_VERSION,
        kind: ResultsKind::Lab,
        name: name.into(),
        description: String::new(),
        nettune_version: env!("CARGO_PKG_VERSION").into(),
        started: now(),
        finished: None,
        interrupted: false,
        seed: BootstrapConfig::default().seed,
        machine,
        lab: Some(lab),
        host_facts: BTreeMap::new(),
        workloads,
        factors: Vec::new(),
        metrics: METRICS.to_vec(),
        baseline_cell: 0,
        run_order: order,
        cells,
        overhead: Vec::new(),
        doctor_before: None,
        doctor_after: None,
        plans: BTreeMap::new(),
        notes: Vec::new(),
    }
}

fn machine(exec: &mut NetnsExecutor) -> Machine {
    exec.inspect(HostId(0))
        .ok()
        .and_then(|t| serde_json::from_str::<model::snapshot::HostSnapshot>(&t).ok())
        .map(|s| runner::experiment::machine_of(&s))
        .unwrap_or_default()
}

/// Progress: a bar on a terminal, plain lines on stderr otherwise.
#[derive(Debug, Clone)]
struct Ui {
    bar: Option<indicatif::ProgressBar>,
    started: u64,
}

impl Ui {
    fn new(total_runs: u64) -> Ui {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new(total_runs);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs  {msg}",
            ) {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Ui { bar, started: 0 }
    }

    fn line(&self, s: &str) {
        match &self.bar {
            Some(b) => b.println(s),
            None => eprintln!("{s}"),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Progress for Ui {
    fn event(&mut self, ev: &ProgressEvent) {
        match ev {
            ProgressEvent::Run {
                cell_pos,
                cells,
                label,
                workload,
                repeat,
                warmup,
                eta,
            } => {
                let what = format!(
                    "cell {cell_pos}/{cells} {label}: {workload} run {}{} (about {} s left)",
                    repeat + 1,
                    if *warmup { " (warm-up)" } else { "" },
                    eta.as_secs()
                );
                match &self.bar {
                    Some(b) => {
                        b.set_position(self.started);
                        b.set_message(what);
                    }
                    None => eprintln!("{what}"),
                }
                self.started += 1;
            }
            ProgressEvent::NotApplicable { label, reason } => {
                self.line(&format!("cell {label}: n/a: {reason}"));
            }
            ProgressEvent::CellEnd { label, status } => {
                if let Some(b) = &self.bar {
                    b.set_position(self.started);
                }
                let s = match status {
                    CellStatus::Done => "done".to_string(),
                    CellStatus::Failed { error } => format!("failed: {error}"),
                    CellStatus::Interrupted => "interrupted".into(),
                    CellStatus::NotApplicable { reason } => format!("n/a: {reason}"),
                    CellStatus::Pending => "pending".into(),
                };
                self.line(&format!("cell {label}: {s}"));
            }
            ProgressEvent::Overhead { workload, repeat } => {
                self.line(&format!("{workload} over loopback, run {}", repeat + 1));
            }
        }
    }
}

/// The lab's two cells: the baseline applies nothing; the doctor cell runs
/// doctor on every host of the suite (the connecting client and the
/// receiving server) under load, applies each host's plan on that host and
/// the findings' bench flags to the after suite, and (before rolling back)
/// runs doctor again under the same load.
#[derive(Debug)]
struct LabSetup {
    /// Two more executors, for the loads that run while doctor samples.
    loads: Vec<NetnsExecutor>,
    /// One more, for doctor on the client while `exec` runs it on the server.
    doctor2: NetnsExecutor,
    client: HostId,
    receiver: HostId,
    cancel: Arc<AtomicBool>,
    ui: Ui,
    /// `--bdp RATE,RTT` for doctor and the plan, when the link has a rate
    /// and a delay ([`bdp_of`]).
    bdp: Option<String>,
    doctor_before: Option<serde_json::Value>,
    doctor_after: Option<serde_json::Value>,
    /// Hosts with a plan applied (rolled back at the end).
    applied: Vec<HostId>,
}

impl LabSetup {
    /// Doctor on the client and the receiving host at once, in two windows:
    /// one while a tcp-stream loads them (reordering, retransmits), one
    /// while tcp-crr and 64-byte udp-stream do (connection churn, UDP socket
    /// drops); the rate rules need traffic in the window. Each host's two
    /// reports are merged ([`merge_windows`]). (host name, report) for
    /// each, client first.
    fn doctor_under_load(
        &mut self,
        exec: &mut dyn Executor,
    ) -> Result<Vec<(String, serde_json::Value)>, ExecError> {
        let load_s = DOCTOR_SAMPLE_S + 1.5;
        let args = |test: &[&str]| {
            let mut a: Vec<String> = test.iter().map(|s| s.to_string()).collect();
            a.extend([
                "--duration".into(),
                fmt_secs(load_s),
                "--warmup".into(),
                "0".into(),
            ]);
            a
        };
        let stream = vec![args(&["--test", "tcp-stream"])];
        let churn = vec![
            args(&["--test", "tcp-crr"]),
            args(&["--test", "udp-stream", "--size", "64"]),
        ];
        let mut per_host: [Vec<serde_json::Value>; 2] = [Vec::new(), Vec::new()];
        for loads in [&stream, &churn] {
            let (c, r) = self.window(exec, loads, load_s)?;
            per_host[0].push(c);
            per_host[1].push(r);
        }
        let [c, r] = per_host;
        Ok(vec![
            (exec.host_name(self.client), merge_windows(&c)),
            (exec.host_name(self.receiver), merge_windows(&r)),
        ])
    }

    /// One doctor window on both hosts under `load` (bench arguments, one
    /// flow each from the client to the receiver): their reports.
    fn window(
        &mut self,
        exec: &mut dyn Executor,
        load: &[Vec<String>],
        load_s: f64,
    ) -> Result<(serde_json::Value, serde_json::Value), ExecError> {
        let deadline = Duration::from_secs_f64(load_s) + Duration::from_secs(20);
        let (client, receiver) = (self.client, self.receiver);
        let mut dargs = vec!["--sample".to_string(), fmt_secs(DOCTOR_SAMPLE_S)];
        if let Some(b) = &self.bdp {
            dargs.extend(["--bdp".to_string(), b.clone()]);
        }
        let loads = &mut self.loads;
        let doctor2 = &mut self.doctor2;
        let (on_client, on_receiver) = std::thread::scope(|s| {
            for (ex, a) in loads.iter_mut().zip(load) {
                // A failed load leaves doctor's rate rules without traffic;
                // its report says so (skipped rules), nothing else breaks.
                s.spawn(move || {
                    let _ = ex.bench(client, receiver, a, deadline);
                });
            }
            std::thread::sleep(Duration::from_millis(500));
            let da = &dargs;
            let c = s.spawn(move || doctor2.doctor(client, da));
            let r = exec.doctor(receiver, &dargs);
            let c = c.join().unwrap_or_else(|_| {
                Err(ExecError::Failed {
                    what: format!("doctor on {client}"),
                    code: None,
                    stderr: "its thread panicked".into(),
                })
            });
            (c, r)
        });
        let parse = |host: HostId, doc: String| -> Result<serde_json::Value, ExecError> {
            serde_json::from_str(&doc).map_err(|e| ExecError::Failed {
                what: format!("doctor on {host}"),
                code: None,
                stderr: format!("its JSON did not parse: {e}"),
            })
        };
        Ok((parse(client, on_client?)?, parse(receiver, on_receiver?)?))
    }

    fn host_of(&self, exec: &dyn Executor, name: &str) -> HostId {
        if exec.host_name(self.client) == name {
            self.client
        } else {
            self.receiver
        }
    }
}

/// The plan doctor's findings recommend: the union of their `fix.changes`
/// (one per target, in phase order) on the header of a plan made in the
/// same namespace; or, when no finding lists changes, the plan of the first
/// `nettune plan ...` command a finding names. `None` when neither.
pub fn plan_from_doctor(
    doctor: &serde_json::Value,
    base_plan: impl FnOnce() -> Result<String, ExecError>,
    mut command_plan: impl FnMut(&[String]) -> Result<String, ExecError>,
) -> Result<Option<(Plan, Vec<String>)>, ExecError> {
    let findings = doctor
        .get("findings")
        .and_then(|f| f.as_array())
        .cloned()
        .unwrap_or_default();
    let mut changes: Vec<Change> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for f in &findings {
        let fix = f.get("fix");
        let list = fix
            .and_then(|x| x.get("changes"))
            .and_then(|c| c.as_array())
            .cloned()
            .unwrap_or_default();
        let mut took = false;
        for c in list {
            let Ok(c) = serde_json::from_value::<Change>(c) else {
                continue;
            };
            if !changes.iter().any(|x| x.target == c.target) {
                changes.push(c);
                took = true;
            }
        }
        if took {
            if let Some(id) = f.get("id").and_then(|i| i.as_str()) {
                ids.push(id.to_string());
            }
        }
    }
    let bad = |what: &str, e: String| ExecError::Failed {
        what: what.into(),
        code: None,
        stderr: e,
    };
    if !changes.is_empty() {
        changes.sort_by_key(|c| c.phase);
        let text = base_plan()?;
        let mut plan =
            Plan::from_json(&text).map_err(|e| bad("plan in the receiving host", e.to_string()))?;
        plan.changes = changes;
        plan.notes.clear();
        return Ok(Some((plan, ids)));
    }
    for f in &findings {
        let Some(cmd) = f
            .get("fix")
            .and_then(|x| x.get("command"))
            .and_then(|c| c.as_str())
        else {
            continue;
        };
        let Some(rest) = cmd.strip_prefix("nettune plan ") else {
            continue;
        };
        let args: Vec<String> = rest
            .split_whitespace()
            .filter(|a| *a != "--json")
            .map(str::to_string)
            .collect();
        if args.iter().any(|a| a == "--root" || a == "--script") {
            continue;
        }
        let text = command_plan(&args)?;
        let plan = Plan::from_json(&text).map_err(|e| bad(cmd, e.to_string()))?;
        if plan.changes.is_empty() {
            continue;
        }
        let id = f.get("id").and_then(|i| i.as_str()).unwrap_or("?");
        return Ok(Some((plan, vec![id.to_string()])));
    }
    Ok(None)
}

/// One line of the table's header per host: what doctor found, what was
/// applied and what was not (results.json keeps them in `notes`, these
/// prefixes first).
pub const FOUND: &str = "found on ";
/// Prefix of an "applied" note.
pub const APPLIED: &str = "applied on ";
/// Prefix of a "not applied" note.
pub const NOT_APPLIED: &str = "not applied on ";
/// Prefix of the note saying what the baseline is.
pub const BASELINE_NOTE: &str = "the baseline is ";
/// Prefix of the note when doctor found nothing on any host.
pub const NOTHING_FOUND: &str = "doctor found nothing ";

/// The bench arguments a finding's `fix.app` names: the flags after
/// `nettune bench:` (`--rcvbuf 4M`, with `--force-buffers` added to a
/// buffer size), or, for the socket option
/// `TCP_CONGESTION "NAME"`, `--congestion NAME` (bench sets it on its data
/// sockets). `None` when the fix names neither.
pub fn bench_flags(app: &str) -> Option<Vec<String>> {
    if let Some(i) = app.find("nettune bench:") {
        let rest = app.get(i + "nettune bench:".len()..)?;
        let rest = rest.split(';').next().unwrap_or("");
        let toks: Vec<String> = rest
            .split_whitespace()
            .map(|t| t.trim_end_matches(['.', ',']).to_string())
            .filter(|t| !t.is_empty())
            .collect();
        if toks
            .first()
            .is_some_and(|t| t.starts_with("--") && t.len() > 2)
        {
            // A buffer size is forced, as the lab always did: rmem_max in
            // its namespaces is the machine's own and is never raised.
            let mut toks = toks;
            let sized = toks.iter().any(|t| t == "--rcvbuf" || t == "--sndbuf");
            if sized && !toks.iter().any(|t| t == "--force-buffers") {
                toks.push("--force-buffers".into());
            }
            return Some(toks);
        }
        return None;
    }
    let i = app.find("TCP_CONGESTION")?;
    let rest = app.get(i..)?;
    let mut quoted = rest.split('"');
    let name = quoted.nth(1)?;
    let ok = !name.is_empty()
        && name.len() < 16
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    ok.then(|| vec!["--congestion".to_string(), name.to_string()])
}

/// The suite's workloads a finding's bench flags are for: the UDP ones for
/// a `udp-*` rule, the TCP ones for a `tcp-*` rule, every one otherwise.
/// `suite` is (workload name, bench test).
pub fn workloads_for(id: &str, suite: &[(&str, &str)]) -> Vec<String> {
    let proto = ["udp", "tcp"]
        .into_iter()
        .find(|p| id.starts_with(&format!("{p}-")));
    suite
        .iter()
        .filter(|(_, test)| proto.is_none_or(|p| test.starts_with(p)))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// What the lab puts in place from doctor's reports on its hosts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabFixes {
    /// Per host: the plan and the findings it comes from.
    pub plans: Vec<(String, Plan, Vec<String>)>,
    /// Extra bench arguments of the "after" suite, per workload.
    pub workload_args: Vec<(String, Vec<String>)>,
    /// `found on HOST: ...`, one per finding.
    pub found: Vec<String>,
    /// `applied on HOST: ...`, one per plan and per bench-flag finding.
    pub applied: Vec<String>,
    /// `not applied on HOST: ID: why`, one per finding the lab left.
    pub not_applied: Vec<String>,
}

impl LabFixes {
    /// Whether anything is applied in the "after" cell.
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty() && self.workload_args.is_empty()
    }
}

fn fix_str<'a>(f: &'a serde_json::Value, key: &str) -> Option<&'a str> {
    f.get("fix")
        .and_then(|x| x.get(key))
        .and_then(|c| c.as_str())
}

/// From each host's doctor report (host name, report JSON): each host's
/// plan ([`plan_from_doctor`], made and later applied on that host), the
/// bench flags of findings whose fix is a socket option (for the workloads
/// [`workloads_for`] names), and one line per finding saying what was
/// found, applied, or not applied and why. Pure but for the two plan
/// closures, which run `nettune plan` on the named host.
pub fn fixes_from_doctor(
    reports: &[(String, serde_json::Value)],
    suite: &[(&str, &[&str])],
    mut base_plan: impl FnMut(&str) -> Result<String, ExecError>,
    mut command_plan: impl FnMut(&str, &[String]) -> Result<String, ExecError>,
) -> Result<LabFixes, ExecError> {
    let mut out = LabFixes::default();
    for (host, doc) in reports {
        let planned = plan_from_doctor(
            doc,
            || base_plan(host),
            |a: &[String]| command_plan(host, a),
        )?;
        let ids: Vec<String> = planned.as_ref().map(|p| p.1.clone()).unwrap_or_default();
        let findings = doc
            .get("findings")
            .and_then(|f| f.as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for f in findings {
            let id = f.get("id").and_then(|i| i.as_str()).unwrap_or("?");
            let sev = f.get("severity").and_then(|i| i.as_str()).unwrap_or("?");
            let title = f.get("title").and_then(|i| i.as_str()).unwrap_or("");
            out.found
                .push(format!("{FOUND}{host}: {id} ({sev}): {title}"));
            let has_changes = f
                .get("fix")
                .and_then(|x| x.get("changes"))
                .and_then(|c| c.as_array())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| serde_json::from_value::<Change>(c.clone()).is_ok())
                });
            // In the plan: its own changes, or the same targets as another
            // finding's (one change per target), or its plan command.
            let in_plan = ids.iter().any(|i| i == id) || (planned.is_some() && has_changes);
            let bench = fix_str(f, "app").and_then(bench_flags);
            let tests: Vec<(&str, &str)> = suite
                .iter()
                .map(|(n, a)| {
                    let t = a
                        .iter()
                        .position(|x| *x == "--test")
                        .and_then(|i| a.get(i + 1))
                        .copied()
                        .unwrap_or("");
                    (*n, t)
                })
                .collect();
            // Flags every workload concerned already runs with change nothing.
            let already = bench.as_ref().is_some_and(|args| {
                let names = workloads_for(id, &tests);
                !names.is_empty()
                    && names.iter().all(|n| {
                        suite.iter().any(|(w, a)| {
                            let a: Vec<String> = a.iter().map(|x| x.to_string()).collect();
                            w == n && runner::merge_args(&a, args) == a
                        })
                    })
            });
            if let (true, Some(args)) = (already, &bench) {
                if !in_plan {
                    out.not_applied.push(format!(
                        "{NOT_APPLIED}{host}: {id}: bench {} is what the suite already runs with ({}): nothing left to apply",
                        args.join(" "),
                        workloads_for(id, &tests).join(", ")
                    ));
                }
                continue;
            }
            if let Some(args) = &bench {
                let names = workloads_for(id, &tests);
                for n in &names {
                    match out.workload_args.iter_mut().find(|(w, _)| w == n) {
                        Some((_, a)) => *a = runner::merge_args(a, args),
                        None => out.workload_args.push((n.clone(), args.clone())),
                    }
                }
                out.applied.push(format!(
                    "{APPLIED}{host}: {id}: bench {} on {} (the after suite)",
                    args.join(" "),
                    if names.is_empty() {
                        "no workload of the suite".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            }
            if in_plan || bench.is_some() {
                continue;
            }
            let why = match (fix_str(f, "command"), fix_str(f, "app")) {
                (Some(cmd), _) if planned.is_some() => format!(
                    "its fix is the command `{cmd}`, not run: the plan holds the other findings' changes"
                ),
                (Some(cmd), _) => {
                    format!("its command `{cmd}` gave no plan changes in this namespace")
                }
                (None, Some(app)) => format!(
                    "its fix lists no plan changes and names no bench flag, only: {app}"
                ),
                (None, None) => format!(
                    "its fix lists no plan changes, command or bench flag: {}",
                    fix_str(f, "text").unwrap_or("")
                ),
            };
            out.not_applied
                .push(format!("{NOT_APPLIED}{host}: {id}: {why}"));
        }
        if let Some((plan, ids)) = planned {
            out.applied.push(format!(
                "{APPLIED}{host}: plan of {} change(s) ({}) from {}, through its journal, rolled back at the end",
                plan.changes.len(),
                plan.changes
                    .iter()
                    .map(|c| format!("{}={}", c.knob, c.after.split_whitespace().collect::<Vec<_>>().join(" ")))
                    .collect::<Vec<_>>()
                    .join(", "),
                ids.join(", ")
            ));
            out.plans.push((host.clone(), plan, ids));
        }
    }
    Ok(out)
}

/// One host's reports from several doctor windows as one: each rule's
/// first finding per subject (the windows in order), and a rule skipped
/// only when it was skipped in every window.
pub fn merge_windows(reports: &[serde_json::Value]) -> serde_json::Value {
    let list = |r: &serde_json::Value, k: &str| -> Vec<serde_json::Value> {
        r.get(k)
            .and_then(|f| f.as_array())
            .cloned()
            .unwrap_or_default()
    };
    let key =
        |f: &serde_json::Value, k: &str| f.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let mut findings: Vec<serde_json::Value> = Vec::new();
    for r in reports {
        for f in list(r, "findings") {
            let dup = findings
                .iter()
                .any(|g| key(g, "id") == key(&f, "id") && key(g, "subject") == key(&f, "subject"));
            if !dup {
                findings.push(f);
            }
        }
    }
    let mut skipped: Vec<serde_json::Value> = Vec::new();
    for r in reports {
        for sk in list(r, "skipped") {
            let id = key(&sk, "id");
            let everywhere = reports
                .iter()
                .all(|o| list(o, "skipped").iter().any(|x| key(x, "id") == id));
            let ran = findings.iter().any(|f| key(f, "id") == id);
            if everywhere && !ran && !skipped.iter().any(|x| key(x, "id") == id) {
                skipped.push(sk);
            }
        }
    }
    serde_json::json!({
        "schema_version": doctor::finding::REPORT_SCHEMA_VERSION,
        "findings": findings,
        "skipped": skipped,
    })
}

/// Both hosts' reports as one report of doctor's `--json` shape (for
/// `doctor_before`/`doctor_after` and the report page): each finding's
/// subject and each skipped reason prefixed with its host, and a `host`
/// field added.
pub fn merge_reports(reports: &[(String, serde_json::Value)]) -> serde_json::Value {
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    for (host, doc) in reports {
        for f in doc
            .get("findings")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
        {
            let mut f = f.clone();
            if let Some(o) = f.as_object_mut() {
                let subj = o
                    .get("subject")
                    .and_then(|s| s.as_str())
                    .unwrap_or("")
                    .to_string();
                o.insert("subject".into(), format!("{host}: {subj}").into());
                o.insert("host".into(), host.clone().into());
            }
            findings.push(f);
        }
        for sk in doc
            .get("skipped")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
        {
            let mut sk = sk.clone();
            if let Some(o) = sk.as_object_mut() {
                let r = o
                    .get("reason")
                    .and_then(|s| s.as_str())
                    .unwrap_or("")
                    .to_string();
                o.insert("reason".into(), format!("{host}: {r}").into());
                o.insert("host".into(), host.clone().into());
            }
            skipped.push(sk);
        }
    }
    serde_json::json!({
        "schema_version": doctor::finding::REPORT_SCHEMA_VERSION,
        "findings": findings,
        "skipped": skipped,
    })
}

impl CellSetup for LabSetup {
    fn apply(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<Applied, ExecError> {
        if cell.index == 0 {
            return Ok(Applied::default());
        }
        self.ui.line(&format!(
            "doctor on {} (client) and {} (server), {} s while a tcp-stream loads them, then {} s under tcp-crr and 64-byte udp-stream",
            exec.host_name(self.client),
            exec.host_name(self.receiver),
            fmt_secs(DOCTOR_SAMPLE_S),
            fmt_secs(DOCTOR_SAMPLE_S)
        ));
        let reports = self.doctor_under_load(exec)?;
        self.doctor_before = Some(merge_reports(&reports));
        let mut base = vec!["--profile".to_string(), "balanced".into()];
        if let Some(b) = &self.bdp {
            base.extend(["--bdp".to_string(), b.clone()]);
        }
        let fixes = {
            let hosts: Vec<(String, HostId)> = [self.client, self.receiver]
                .into_iter()
                .map(|h| (exec.host_name(h), h))
                .collect();
            let id = |name: &str| {
                hosts
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(self.receiver, |(_, h)| *h)
            };
            let ex = std::cell::RefCell::new(&mut *exec);
            fixes_from_doctor(
                &reports,
                SUITE,
                |h| ex.borrow_mut().plan(id(h), &base),
                |h, args| ex.borrow_mut().plan(id(h), args),
            )?
        };
        for l in fixes
            .found
            .iter()
            .chain(&fixes.applied)
            .chain(&fixes.not_applied)
        {
            self.ui.line(l);
        }
        let mut notes: Vec<String> = Vec::new();
        if fixes.found.is_empty() {
            notes.push(format!(
                "{NOTHING_FOUND}on {} or {} under load",
                exec.host_name(self.client),
                exec.host_name(self.receiver)
            ));
        }
        notes.extend(fixes.found.iter().cloned());
        notes.extend(fixes.applied.iter().cloned());
        notes.extend(fixes.not_applied.iter().cloned());
        let mut plans = Vec::new();
        for (host, plan, _) in &fixes.plans {
            let json = serde_json::to_value(plan).map_err(|e| ExecError::Failed {
                what: "plan to JSON".into(),
                code: None,
                stderr: e.to_string(),
            })?;
            let h = self.host_of(exec, host);
            self.ui.line(&format!(
                "applying {} change(s) in {host}",
                plan.changes.len()
            ));
            exec.apply(h, &json.to_string())?;
            self.applied.push(h);
            plans.push((format!("{DOCTOR_PLAN} on {host}"), json));
        }
        Ok(Applied {
            bench_args: Vec::new(),
            workload_args: fixes.workload_args,
            plans,
            notes,
        })
    }

    fn rollback(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<(), ExecError> {
        if cell.index == 0 {
            return Ok(());
        }
        if !self.cancel.load(Ordering::SeqCst) && !self.applied.is_empty() {
            self.ui
                .line("doctor again on both hosts, under the same load, with the changes in place");
            match self.doctor_under_load(exec) {
                Ok(d) => self.doctor_after = Some(merge_reports(&d)),
                Err(e) => self.ui.line(&format!("doctor after the plan: {e}")),
            }
        }
        let mut first_err = None;
        for h in std::mem::take(&mut self.applied) {
            self.ui
                .line(&format!("rolling back in {}", exec.host_name(h)));
            if let Err(e) = exec.rollback(h) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Nothing to put in place: the loopback benchmark only measures.
#[derive(Debug)]
struct MeasureOnly;

impl CellSetup for MeasureOnly {
    fn apply(&mut self, _: &CellResult, _: &mut dyn Executor) -> Result<Applied, ExecError> {
        Ok(Applied::default())
    }
    fn rollback(&mut self, _: &CellResult, _: &mut dyn Executor) -> Result<(), ExecError> {
        Ok(())
    }
}

fn schedule(
    client: HostId,
    server: HostId,
    runs: Vec<runner::WorkloadRun>,
    repeats: u32,
) -> Schedule {
    Schedule {
        client,
        server,
        workloads: runs,
        warmup: 0,
        repeats,
        until_ci: None,
        bootstrap: BootstrapConfig::default(),
        overhead_repeats: 0,
    }
}

fn save(results: &ExperimentResults, dir: &Path) -> anyhow::Result<()> {
    let text = serde_json::to_vec_pretty(results)?;
    runner::write_atomic(&dir.join(RESULTS_FILE), &text)?;
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
    let (infos, runs) = workloads(args.duration);
    let total = 2 * runs.len() as u64 * u64::from(args.repeats);
    let mut ui = Ui::new(total);
    ui.line(&format!(
        "building the lab: {} namespaces, {} queue(s) per veth{}",
        spec.hosts,
        spec.queues,
        spec.rate
            .map(|r| format!(", {}", model::units::fmt_bits_per_sec(r as f64)))
            .unwrap_or_default()
    ));
    let session = LabSession::start(spec.clone(), &exe, DEFAULT_LISTEN_TIMEOUT)?;
    for r in session.reaped() {
        ui.line(&format!(
            "removed the lab {} of a killed run (pid {}): {} namespace(s), {} process(es)",
            r.lab,
            r.owner_pid,
            r.netns.len(),
            r.killed.len()
        ));
    }
    let mut exec = session.executor()?.with_cancel(cancel.clone());
    let loads = vec![
        session.executor()?.with_cancel(cancel.clone()),
        session.executor()?.with_cancel(cancel.clone()),
    ];
    let doctor2 = session.executor()?.with_cancel(cancel.clone());
    let mech = session.lab().delay_mechanism().id();
    let info = LabInfo {
        hosts: spec.hosts,
        queues: spec.queues,
        rate_mbit: spec.rate.map(|r| r as f64 / 1e6),
        delay_ms: spec.delay.map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        jitter_ms: spec.jitter.map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        loss_pct: spec.loss.unwrap_or(0.0),
        delay_mechanism: if spec.delay.is_some() || spec.loss.is_some() || spec.jitter.is_some() {
            mech.into()
        } else {
            "none".into()
        },
        path: "veth".into(),
    };
    let m = machine(&mut exec);
    let mut results = skeleton(
        session.lab().name(),
        m,
        info,
        infos,
        vec![cell(0, BASELINE), cell(1, DOCTOR_PLAN)],
    );
    let (client, receiver) = (HostId(0), HostId(1));
    results.notes.push(format!(
        "{BASELINE_NOTE}the kernel's defaults in fresh namespaces (nothing set; udp-stream-64 runs with bench's default SO_RCVBUF of 4 MiB); the suite runs from {} (client, connecting) to {} (server, receiving); doctor looks at both under load, each host's plan is applied on that host and the findings' bench flags go to the after suite",
        exec.host_name(client),
        exec.host_name(receiver)
    ));
    let sched = schedule(client, receiver, runs, args.repeats);
    let bdp = bdp_of(&spec);
    let mut setup = LabSetup {
        bdp,
        loads,
        client,
        receiver,
        cancel: cancel.clone(),
        ui: ui.clone(),
        doctor2,
        doctor_before: None,
        doctor_after: None,
        applied: Vec::new(),
    };
    let opts = runner::RunOptions {
        out_dir: args.out.clone(),
        experiment_text: None,
        cancel: cancel.clone(),
    };
    let outcome = runner::run(&mut results, &sched, &mut exec, &mut setup, &opts, &mut ui);
    results.doctor_before = setup.doctor_before.take();
    results.doctor_after = setup.doctor_after.take();
    // Teardown before anything is printed: servers killed, lab removed.
    drop(setup);
    drop(exec);
    drop(session);
    ui.finish();
    let saved = save(&results, &args.out);
    let outcome = outcome?;
    saved?;
    if outcome == Outcome::Cancelled {
        // What was measured, marked interrupted, in all three files.
        write_interrupted_report(&args.out);
        eprintln!(
            "nettune lab: interrupted: the plan was rolled back and the lab removed; results so far in {}",
            args.out.join(RESULTS_FILE).display()
        );
        return Ok(ExitCode::from(crate::exit::INTERRUPTED));
    }
    print_results(&args, &results)?;
    write_report(&args.out, t0, "lab")
}

/// After Ctrl-C: the page and summary of what was measured (results.json
/// says `interrupted`, which both show); a failure is reported, not fatal.
fn write_interrupted_report(out: &Path) {
    match report::write_dir(out) {
        Ok((html, md)) => eprintln!(
            "nettune lab: report of the runs so far in {} and {}",
            html.display(),
            md.display()
        ),
        Err(e) => eprintln!(
            "nettune lab: writing the report into {}: {e}",
            out.display()
        ),
    }
}

/// `nettune report`'s page and summary into the results directory, and the
/// closing line.
fn write_report(out: &Path, t0: Instant, what: &str) -> anyhow::Result<ExitCode> {
    let (html, md) = report::write_dir(out)
        .with_context(|| format!("writing the report into {}", out.display()))?;
    eprintln!(
        "{what} finished in {:.0} s; results in {}, report in {} and {}",
        t0.elapsed().as_secs_f64(),
        out.join(RESULTS_FILE).display(),
        html.display(),
        md.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn print_results(args: &Args, results: &ExperimentResults) -> anyhow::Result<()> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(results)?);
    } else {
        print!("{}", model::text::printable_lines(&render_table(results)));
    }
    Ok(())
}

/// `nettune lab --loopback`: the suite over 127.0.0.1, one cell.
fn run_loopback(args: &Args, exe: PathBuf) -> anyhow::Result<ExitCode> {
    let cancel = engine::interrupt::sigint_flag().context("installing the Ctrl-C handler")?;
    let t0 = Instant::now();
    let (infos, runs) = workloads(args.duration);
    let mut ui = Ui::new(runs.len() as u64 * u64::from(args.repeats));
    let server = LoopbackServer::start(&exe, DEFAULT_LISTEN_TIMEOUT)?;
    ui.line(&format!(
        "loopback benchmark: nettune serve on 127.0.0.1:{} (measuring only; nothing is tuned)",
        server.port()
    ));
    let mut exec = server.executor().with_cancel(cancel.clone());
    let info = LabInfo {
        hosts: 1,
        queues: 0,
        rate_mbit: None,
        delay_ms: 0.0,
        jitter_ms: 0.0,
        loss_pct: 0.0,
        delay_mechanism: "none".into(),
        path: "loopback".into(),
    };
    let m = machine(&mut exec);
    let mut results = skeleton("loopback", m, info, infos, vec![cell(0, "loopback")]);
    let sched = schedule(HostId(0), HostId(0), runs, args.repeats);
    let opts = runner::RunOptions {
        out_dir: args.out.clone(),
        experiment_text: None,
        cancel,
    };
    let outcome = runner::run(
        &mut results,
        &sched,
        &mut exec,
        &mut MeasureOnly,
        &opts,
        &mut ui,
    );
    drop(exec);
    drop(server);
    ui.finish();
    if outcome? == Outcome::Cancelled {
        write_interrupted_report(&args.out);
        eprintln!(
            "nettune lab: interrupted; results so far in {}",
            args.out.join(RESULTS_FILE).display()
        );
        return Ok(ExitCode::from(crate::exit::INTERRUPTED));
    }
    print_results(args, &results)?;
    write_report(&args.out, t0, "loopback benchmark")
}

/// A value in its metric's unit.
fn fmt_value(unit: &str, v: f64) -> String {
    match unit {
        "bit/s" => model::units::fmt_bits_per_sec(v),
        "1/s" => model::units::fmt_si(v, "/s"),
        "µs" => format!("{v:.1} µs"),
        "%" => format!("{v:.1} %"),
        _ => format!("{v:.0}"),
    }
}

fn signed(v: f64, decimals: usize) -> String {
    format!("{v:+.decimals$}")
}

/// The before/after table (or, with one cell, the one-column table) of a
/// lab's results: per workload and metric the medians, the 95 % interval
/// of the change and the verdict. Pure: the same results give the same text.
pub fn render_table(r: &ExperimentResults) -> String {
    let mut out = String::new();
    let lab = r.lab.as_ref();
    let path = lab.map_or("?", |l| l.path.as_str());
    let runs = r
        .cell(r.baseline_cell)
        .and_then(|c| c.stats.first())
        .and_then(|s| s.summary.as_ref())
        .map_or(0, |s| s.n);
    let _ = writeln!(
        out,
        "nettune lab on {} ({}, {} CPUs): {}{}",
        if r.machine.hostname.is_empty() {
            "?"
        } else {
            &r.machine.hostname
        },
        if r.machine.kernel.is_empty() {
            "?"
        } else {
            &r.machine.kernel
        },
        r.machine.cpus,
        match lab {
            Some(l) if l.path == "veth" => format!(
                "{} namespaces on veth, {} queue(s){}",
                l.hosts,
                l.queues,
                l.rate_mbit
                    .map(|m| format!(", {}", model::units::fmt_bits_per_sec(m * 1e6)))
                    .unwrap_or_default()
            ),
            _ => format!("{path} only, measuring (nothing tuned)"),
        },
        if r.interrupted { " [INTERRUPTED]" } else { "" }
    );
    let _ = writeln!(
        out,
        "{runs} run(s) per workload and cell; medians; 95 % bootstrap intervals"
    );
    for n in r.notes.iter().filter(|n| header_note(n)) {
        let _ = writeln!(out, "{n}");
    }
    if r.cells.len() == 1 {
        let Some(c) = r.cells.first() else {
            return out;
        };
        let mut rows = vec![[
            "workload".to_string(),
            "metric".into(),
            "median".into(),
            "95 % CI".into(),
        ]];
        for s in &c.stats {
            let median = s.summary.as_ref().map(|x| fmt_value(&s.unit, x.median));
            let ci = s.median_ci.map(|i| {
                format!(
                    "{} .. {}",
                    fmt_value(&s.unit, i.lo),
                    fmt_value(&s.unit, i.hi)
                )
            });
            rows.push([
                s.workload.clone(),
                runner::metric_key(s.metric).into(),
                median.unwrap_or_else(|| "-".into()),
                ci.unwrap_or_else(|| "-".into()),
            ]);
        }
        table(&mut out, &rows);
        status_line(&mut out, c);
        return out;
    }
    let base = r.cell(r.baseline_cell);
    for c in r.cells.iter().filter(|c| c.index != r.baseline_cell) {
        let mut rows = vec![[
            "workload".to_string(),
            "metric".into(),
            "before".into(),
            "after".into(),
            "change (95 % CI)".into(),
            "verdict".into(),
        ]];
        let mut counts = [0usize; 3];
        for s in &c.stats {
            let before = base
                .and_then(|b| {
                    b.stats
                        .iter()
                        .find(|x| x.workload == s.workload && x.metric == s.metric)
                })
                .and_then(|x| x.summary.as_ref())
                .map(|x| fmt_value(&s.unit, x.median));
            let after = s.summary.as_ref().map(|x| fmt_value(&s.unit, x.median));
            let (change, verdict) = match &s.vs_baseline {
                Some(cmp) => {
                    let change = match cmp.change_pct {
                        Some(p) => format!(
                            "{} % [{}, {}]",
                            signed(p.estimate, 1),
                            signed(p.lo, 1),
                            signed(p.hi, 1)
                        ),
                        // A zero baseline median: the difference, in the
                        // metric's unit (percentage points for a %).
                        None => format!(
                            "{} [{}, {}] {}",
                            signed(cmp.difference.estimate, 1),
                            signed(cmp.difference.lo, 1),
                            signed(cmp.difference.hi, 1),
                            if s.unit == "%" { "pp" } else { s.unit.as_str() }
                        ),
                    };
                    counts[match cmp.verdict {
                        Verdict::Gain => 0,
                        Verdict::Regression => 1,
                        Verdict::NoChange => 2,
                    }] += 1;
                    (change, cmp.verdict.to_string())
                }
                None => ("-".into(), "too few runs".into()),
            };
            rows.push([
                s.workload.clone(),
                runner::metric_key(s.metric).into(),
                before.unwrap_or_else(|| "-".into()),
                after.unwrap_or_else(|| "-".into()),
                change,
                verdict,
            ]);
        }
        let _ = writeln!(out, "\n{} against {}:", c.label, BASELINE);
        if r.plans.is_empty() && !r.notes.iter().any(|n| n.starts_with(APPLIED)) {
            let _ = writeln!(
                out,
                "(nothing was applied: both cells ran the same lab, so any verdict here is noise)"
            );
        }
        table(&mut out, &rows);
        let _ = writeln!(
            out,
            "{} gain(s), {} regression(s), {} without a change the intervals can show",
            counts[0], counts[1], counts[2]
        );
        status_line(&mut out, c);
    }
    if let Some(base) = base {
        status_line(&mut out, base);
    }
    for n in r.notes.iter().filter(|n| !header_note(n)) {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// Notes the table prints under its title: what the baseline is, what
/// doctor found on each host, what was applied and what was not.
fn header_note(n: &str) -> bool {
    [FOUND, APPLIED, NOT_APPLIED, BASELINE_NOTE, NOTHING_FOUND]
        .iter()
        .any(|p| n.starts_with(p))
}

fn status_line(out: &mut String, c: &CellResult) {
    match &c.status {
        CellStatus::Done => {}
        CellStatus::NotApplicable { reason } => {
            let _ = writeln!(out, "cell {}: n/a: {reason}", c.label);
        }
        CellStatus::Failed { error } => {
            let _ = writeln!(out, "cell {}: failed: {error}", c.label);
        }
        CellStatus::Interrupted => {
            let _ = writeln!(out, "cell {}: interrupted", c.label);
        }
        CellStatus::Pending => {
            let _ = writeln!(out, "cell {}: not run", c.label);
        }
    }
}

/// Left-aligned columns, two spaces apart.
fn table<const N: usize>(out: &mut String, rows: &[[String; N]]) {
    let mut w = [0usize; N];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            line.push_str(c);
            if i + 1 < N {
                let pad = w[i] - c.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
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

    /// The BDP doctor and the plan get uses the delay as the RTT, not twice it.
    #[test]
    fn bdp_rtt_is_the_delay() {
        let s = spec(&["--rate", "100mbit", "--delay", "20"]);
        assert_eq!(bdp_of(&s).as_deref(), Some("100000000bit,20000us"));
        assert_eq!(bdp_of(&spec(&["--rate", "100mbit"])), None);
        assert_eq!(bdp_of(&spec(&["--delay", "20"])), None);
    }
}
