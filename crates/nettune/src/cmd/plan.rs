//! `nettune plan --profile P [--root DIR] [--iface IF...] [--cpus LIST]
//! [--exclude-cpus LIST] [--bdp RATE,RTT] [--json | --script]`: compute a
//! tuning plan from a snapshot and show it as a diff with reasons.
//!
//! Also holds the helpers `apply`, `rollback`, `verify` and `history` share.

use anyhow::Context;
use host::journal::StateDir;
use host::Root;
use model::plan::{Bdp, NetnsScope, Plan, PlanOptions, MAX_PLAN_BYTES};
use model::snapshot::HostSnapshot;
use model::CpuSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  # What would the throughput profile change on this host?
  nettune plan --profile throughput

  # The seed's c4.8xlarge, recorded as a fixture: IRQs on CPU 0 and 9, RPS on the
  # other physical cores of each node (000001fe / 0003fc00)
  nettune plan --profile throughput --root tests/fixtures/c4-8xlarge

  # Keep CPUs 2-3 for the application, size buffers for 10 Gbit/s at 20 ms
  nettune plan --profile throughput --exclude-cpus 2-3 --bdp 10gbit,20ms

  # Your own profile: inherit a built-in, override settings, disable rules
  nettune plan --profile profiles/example.toml

  # A shell script with the same writes, to review or run by hand
  nettune plan --profile latency --script > tune.sh

Profiles: latency (IRQs local, no RPS hop, coalescing off, busy polling, no deep
C-states), throughput (RSS + RPS on the node's other cores, RFS, adaptive
coalescing, larger rings on drops, 1.33 x BDP buffers), balanced. Every change
names its rule; the rules' rationale and source (seed or kernel doc) follow the diff.";

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
    /// (rate 1kbit..2tbit, RTT 1us..10s).
    #[arg(long, value_name = "RATE,RTT", allow_hyphen_values = true)]
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

/// Check and open `--root`.
pub(crate) fn open_root(dir: &Path) -> anyhow::Result<Root> {
    if !dir.is_dir() {
        anyhow::bail!("--root {}: not a directory", dir.display());
    }
    Ok(Root::new(dir))
}

fn cpus(flag: &str, s: &Option<String>) -> anyhow::Result<Option<CpuSet>> {
    s.as_deref()
        .map(|s| CpuSet::parse_arg(s).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
        .transpose()
}

/// Planner options from the flags.
pub(crate) fn options(flags: &PlanFlags) -> anyhow::Result<PlanOptions> {
    Ok(PlanOptions {
        ifaces: flags.iface.clone(),
        cpus: cpus("--cpus", &flags.cpus)?,
        exclude_cpus: cpus("--exclude-cpus", &flags.exclude_cpus)?.unwrap_or_default(),
        bdp: flags
            .bdp
            .as_deref()
            .map(Bdp::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--bdp: {e}"))?,
        netns: match flags.netns_scope {
            ScopeArg::Auto => None,
            ScopeArg::Init => Some(NetnsScope::Init),
            ScopeArg::Child => Some(NetnsScope::Child),
        },
    })
}

/// Facts beyond the snapshot (namespace, softnet totals, PM QoS files),
/// read by host; `apply` re-plans with the same.
pub(crate) use host::extras::read_extras;

/// Snapshot the root and plan with `profile`.
pub(crate) fn make_plan(
    root: &Root,
    profile: &str,
    flags: &PlanFlags,
) -> anyhow::Result<(Plan, HostSnapshot)> {
    let profile = tune::profile::load(profile)?;
    let opts = options(flags)?;
    let snap = host::read_snapshot(root);
    let extras = read_extras(root, &snap);
    let plan = tune::plan(&snap, &extras, &profile, &opts)?;
    Ok((plan, snap))
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
        let root = open_root(&self.root)?;
        let state = StateDir::new(host::apply::default_state_dir(
            &root,
            self.state_dir.as_deref(),
        )?);
        Ok((root, state))
    }
}

/// Read a plan file: a regular file (a FIFO would block, a device never end)
/// of at most `MAX_PLAN_BYTES`, with a schema version this build understands.
pub(crate) fn read_plan(path: &Path) -> anyhow::Result<Plan> {
    use std::io::Read;
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| format!("{shown}"))?;
    if !meta.is_file() {
        anyhow::bail!("{shown}: not a regular file");
    }
    let file = std::fs::File::open(path).with_context(|| format!("{shown}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_PLAN_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{shown}"))?;
    if bytes.len() as u64 > MAX_PLAN_BYTES {
        anyhow::bail!("{shown}: larger than {MAX_PLAN_BYTES} bytes, not a nettune plan");
    }
    Plan::from_json_slice(&bytes).map_err(|e| anyhow::anyhow!("{shown}: {e}"))
}
