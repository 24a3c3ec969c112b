//! `nettune plan --profile P [--root DIR] [--iface IF...] [--cpus LIST]
//! [--exclude-cpus LIST] [--bdp RATE,RTT|RATE,HOST] [--json | --script]`: compute a
//! tuning plan from a snapshot and show it as a diff with reasons.
//!
//! Also holds the helpers `apply`, `rollback`, `verify` and `history` share.

use host::journal::StateDir;
use host::Root;
use model::plan::{NetnsScope, Plan, PlanOptions, MAX_PLAN_BYTES};
use model::snapshot::HostSnapshot;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  # What would the throughput profile change on this host?
  nettune plan --profile throughput

  # Another host: record it there with `nettune capture --out host-a`, copy the
  # directory here and plan from it
  nettune plan --profile throughput --root host-a

  # Keep CPUs 2-3 for the application, size buffers for 10 Gbit/s at 20 ms
  nettune plan --profile throughput --exclude-cpus 2-3 --bdp 10gbit,20ms

  # ... or measure the RTT to the peer: a short tcp-rr against `nettune serve` on it,
  # else 5 ICMP echoes within 2 s; the median is used and shown with its source
  nettune plan --profile throughput --bdp 10gbit,peer-b

  # Your own profile: inherit a built-in, override settings, disable rules (start
  # from a copy of the shipped example)
  nettune plan --profile /usr/share/doc/nettune/examples/profile.toml

  # A shell script with the same writes, to review or run by hand
  nettune plan --profile latency --script > tune.sh

Profiles: latency (IRQs local, no RPS hop, coalescing off, busy polling, no deep
C-states), throughput (RSS + RPS on the node's other cores, RFS, adaptive
coalescing, larger rings on drops, 1.33 x BDP buffers), balanced. Every change
names its rule; the rules' rationale and source (a kernel document, driver README or
published article) follow the diff.";

/// Options shared by `plan` and `apply --profile`.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanFlags {
    /// Only these interfaces (repeatable); default: every interface with a driver.
    #[arg(long = "iface", value_name = "IF")]
    pub iface: Vec<String>,
    /// CPUs the tuning may use (cpulist, e.g. 0-7); must be online.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// CPUs reserved for the application (cpulist); their whole cores are left out.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub exclude_cpus: Option<String>,
    /// Bandwidth-delay product input, e.g. 10gbit,1ms or 100mbit,100ms
    /// (rate 1kbit..2tbit, RTT 1us..10s); or RATE,HOST (a name or address) to
    /// measure the RTT: `nettune serve` on HOST's port 5290 (tcp-rr), else ICMP echo.
    #[arg(long, value_name = "RATE,RTT|RATE,HOST", allow_hyphen_values = true)]
    pub bdp: Option<String>,
    /// Namespace scope: auto (compare /proc/self/ns/net with /proc/1/ns/net), init or child.
    #[arg(long, value_enum, default_value = "auto")]
    pub netns_scope: ScopeArg,
}

/// `--netns-scope`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ScopeArg {
    /// Detect.
    Auto,
    /// The initial namespace: global knobs allowed.
    Init,
    /// A child namespace: per-namespace and per-device knobs only.
    Child,
}

/// Flags of `nettune plan`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Profile: latency, throughput, balanced, or a path to a TOML profile.
    #[arg(long, short)]
    pub profile: String,
    /// Directory standing for `/` (a fixture or a `nettune capture`).
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Planner options.
    #[command(flatten)]
    pub flags: PlanFlags,
    /// Print the plan as JSON (the input of `apply --plan`).
    #[arg(long, conflicts_with = "script")]
    pub json: bool,
    /// Print a reviewable shell script with the same writes.
    #[arg(long)]
    pub script: bool,
}

/// Run `nettune plan`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let root = open_root(&args.root)?;
    let (plan, _) = make_plan(&root, &args.profile, &args.flags)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else if args.script {
        print!("{}", tune::render::script(&plan));
    } else {
        print!("{}", tune::render::human(&plan));
    }
    Ok(ExitCode::SUCCESS)
}

/// Planner options from the flags (`--bdp RATE,HOST` measures the RTT).
pub(crate) fn options(flags: &PlanFlags) -> anyhow::Result<PlanOptions> {
    crate::ops::plan::options(&crate::ops::plan::PlanRequest {
        ifaces: &flags.iface,
        cpus: flags.cpus.as_deref(),
        exclude_cpus: flags.exclude_cpus.as_deref(),
        bdp: flags.bdp.as_deref(),
        netns: match flags.netns_scope {
            ScopeArg::Auto => None,
            ScopeArg::Init => Some(NetnsScope::Init),
            ScopeArg::Child => Some(NetnsScope::Child),
        },
    })
}

pub(crate) use crate::ops::plan::{open_root, replan_later};

/// Snapshot the root and plan with the profile named or at the path, and
/// the flags' options.
pub(crate) fn make_plan(
    root: &Root,
    profile: &str,
    flags: &PlanFlags,
) -> anyhow::Result<(Plan, HostSnapshot)> {
    let profile = super::profile::load(profile)?;
    crate::ops::plan::make_plan(root, &profile, options(flags)?)
}

/// `--root` and `--state-dir`, shared by apply, rollback, verify and history.
#[derive(Debug, clap::Args)]
pub struct JournalArgs {
    /// Directory standing for `/` (a fixture copy in tests).
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Journal directory (default /var/lib/nettune under the root).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl JournalArgs {
    /// Open the root and its state directory (`--state-dir`, else
    /// `/var/lib/nettune` under the root).
    pub fn open(&self) -> anyhow::Result<(Root, StateDir)> {
        crate::ops::journal::open(&self.root, self.state_dir.as_deref())
    }
}

/// Read a plan file: a regular file (a FIFO would block, a device never end)
/// of at most `MAX_PLAN_BYTES`, with a schema version this build understands.
pub(crate) fn read_plan(path: &Path) -> anyhow::Result<Plan> {
    let shown = path.display();
    let bytes = host::files::read_bounded(path, MAX_PLAN_BYTES).map_err(|e| match e {
        host::HostError::TooLarge { .. } => {
            anyhow::anyhow!("{shown}: larger than {MAX_PLAN_BYTES} bytes, not a nettune plan")
        }
        e => anyhow::anyhow!(e),
    })?;
    Plan::from_json_slice(&bytes).map_err(|e| anyhow::anyhow!("{shown}: {e}"))
}
