//! `nettune plan --profile P [--root DIR] [--iface IF...] [--cpus LIST]
//! [--exclude-cpus LIST] [--bdp RATE,RTT|RATE,HOST] [--json | --script]`: compute a
//! tuning plan from a snapshot and show it as a diff with reasons.
//!
//! Also holds the helpers `apply`, `rollback`, `verify` and `history` share.

use host::journal::StateDir;
use host::Root;
use model::plan::{Bdp, BdpSpec, NetnsScope, Plan, PlanOptions, RttMeasured, MAX_PLAN_BYTES};
use model::snapshot::HostSnapshot;
use model::CpuSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

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

fn cpus(flag: &str, s: &Option<String>) -> anyhow::Result<Option<CpuSet>> {
    s.as_deref()
        .map(|s| CpuSet::parse_arg(s).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
        .transpose()
}

/// ICMP probes for `--bdp RATE,HOST` without a nettune server, and their total deadline.
const ICMP_PROBES: u32 = 5;
const ICMP_DEADLINE: Duration = Duration::from_secs(2);
/// The tcp-rr run against a nettune server: connect timeout and measured time.
const RR_CONNECT: Duration = Duration::from_secs(1);
const RR_MS: u64 = 300;

/// `--bdp`: as given, or with the RTT measured to HOST (and how).
fn bdp_option(s: &str) -> anyhow::Result<(Bdp, Option<RttMeasured>)> {
    match BdpSpec::parse(s).map_err(|e| anyhow::anyhow!("--bdp: {e}"))? {
        BdpSpec::Given(b) => Ok((b, None)),
        BdpSpec::Measure { rate_bps, host } => {
            let m = measure_rtt(&host)?;
            let bdp = Bdp {
                rate_bps,
                rtt_us: m.median_us,
            };
            bdp.validate()
                .map_err(|e| anyhow::anyhow!("--bdp: measured to {host}: {e}"))?;
            Ok((bdp, Some(m)))
        }
    }
}

/// The RTT to `host`: the p50 of a short tcp-rr against `nettune serve` on
/// it (the engine's client), else the median of ICMP echoes.
fn measure_rtt(host: &str) -> anyhow::Result<RttMeasured> {
    let port = engine::proto::DEFAULT_PORT;
    let addrs = host::rtt::resolve(host, port).map_err(|e| anyhow::anyhow!("--bdp: {e}"))?;
    let Some(addr) = addrs.first().copied() else {
        anyhow::bail!("--bdp: {host} resolves to no address");
    };
    let server = match rr_p50(addr) {
        Ok(us) => {
            return Ok(RttMeasured {
                host: host.to_string(),
                address: addr.ip().to_string(),
                method: "nettune".into(),
                samples: us.1,
                median_us: us.0,
            })
        }
        Err(e) => format!("{e:#}"),
    };
    match host::rtt::icmp_echo(addr.ip(), ICMP_PROBES, ICMP_DEADLINE) {
        Ok(e) => Ok(RttMeasured {
            host: host.to_string(),
            address: e.addr.to_string(),
            method: "icmp".into(),
            samples: e.rtts.len() as u64,
            median_us: e.median_us().unwrap_or(1),
        }),
        Err(icmp) => anyhow::bail!(
            "--bdp: cannot measure the RTT to {host} ({}): no nettune server on port {port} ({server}), and {icmp}; give it instead, e.g. --bdp RATE,20ms",
            addr.ip()
        ),
    }
}

/// p50 (µs, at least 1) and count of 1-byte transactions against `nettune serve`.
fn rr_p50(addr: std::net::SocketAddr) -> anyhow::Result<(u64, u64)> {
    let mut o = engine::ClientOpts::new(addr.ip().to_string(), addr.port());
    o.connect_timeout = RR_CONNECT;
    o.token = super::serve::load_token(None)?;
    let cfg = engine::TestConfig {
        test: engine::TestKind::TcpRr,
        size: 1,
        duration_ms: RR_MS,
        warmup_ms: 0,
        interval_ms: RR_MS,
        nodelay: true,
        ..Default::default()
    };
    let r = engine::run_client(&o, &cfg, &mut |_| {})?;
    let lat = r
        .results
        .iter()
        .find_map(|d| d.latency.as_ref())
        .filter(|l| l.count > 0)
        .ok_or_else(|| anyhow::anyhow!("the server answered no transaction"))?;
    Ok(((lat.p50_ns.0 / 1000).max(1), lat.count))
}

/// Planner options from the flags.
pub(crate) fn options(flags: &PlanFlags) -> anyhow::Result<PlanOptions> {
    let (bdp, rtt_measured) = match flags.bdp.as_deref().map(bdp_option).transpose()? {
        Some((b, m)) => (Some(b), m),
        None => (None, None),
    };
    Ok(PlanOptions {
        ifaces: flags.iface.clone(),
        cpus: cpus("--cpus", &flags.cpus)?,
        exclude_cpus: cpus("--exclude-cpus", &flags.exclude_cpus)?.unwrap_or_default(),
        bdp,
        rtt_measured,
        netns: match flags.netns_scope {
            ScopeArg::Auto => None,
            ScopeArg::Init => Some(NetnsScope::Init),
            ScopeArg::Child => Some(NetnsScope::Child),
        },
        // Only `apply --allow-reload` (or an experiment factor) reloads.
        reload_modules: false,
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
    let shown = path.display();
    let bytes = host::files::read_bounded(path, MAX_PLAN_BYTES).map_err(|e| match e {
        host::HostError::TooLarge { .. } => {
            anyhow::anyhow!("{shown}: larger than {MAX_PLAN_BYTES} bytes, not a nettune plan")
        }
        e => anyhow::anyhow!(e),
    })?;
    Plan::from_json_slice(&bytes).map_err(|e| anyhow::anyhow!("{shown}: {e}"))
}
