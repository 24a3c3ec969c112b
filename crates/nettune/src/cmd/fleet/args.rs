//! The flags of `nettune fleet`.

use clap::builder::TypedValueParser;
use clap::Subcommand;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  nettune fleet inspect --inventory hosts.toml --json
  nettune fleet doctor --inventory hosts.ini --limit 'servers:!db' --sample 2
  nettune fleet verify --inventory hosts.yml --parallel 64 --timeout 30
  nettune fleet apply --inventory hosts.toml --profile throughput --dry-run
  nettune fleet apply --inventory hosts.toml --plan plan.json --limit web* --yes
  nettune fleet rollback --inventory hosts.toml --to 3
  # the tests: each host's --root and --state-dir from a template
  nettune fleet apply --inventory lab.toml --plan p.json --yes \\
      --root-template /tmp/f/{host}/root --state-dir-template /tmp/f/{host}/state

An inventory, hosts.toml (Ansible's INI and YAML inventories are read too):
  [defaults]
  user = \"ops\"
  [[host]]
  name = \"srv1\"              # ssh by default; address defaults to the name
  address = \"10.0.0.5\"
  roles = [\"server\"]
  [[host]]
  name = \"cli01\"
  roles = [\"clients\"]
  [[host]]
  name = \"ns-blue\"           # a network namespace on this machine
  transport = \"netns\"

Each host runs `nettune agent --stdio` through its transport (ssh, kubectl,
ip netns exec, local); at most --parallel hosts at once, each within --timeout.
An ssh host whose nettune is missing or another version gets a copy of this
one (~/.cache/nettune/nettune-VERSION) unless --no-copy. `apply` first shows
each host's changes against its current values (writing nothing), asks (or
takes --yes), then applies that plan on each host through its own journal; a
host whose apply fails is rolled back and named, the others keep what they
applied.

Exit codes: 0 every host ok; 4 some host failed (each named on stderr, the
others finished); 3 verify: no host failed and some drifted; doctor: the worst
finding's 0, 1 or 2 when no host failed; 1 error (inventory, --limit, --plan);
2 usage error. /usr/share/doc/nettune/docs/fleet.md, \"Commands\".";

const INSPECT_EXAMPLES: &str = "\
Examples:
  nettune fleet inspect --inventory hosts.toml --json > snapshots.json
  nettune fleet inspect --inventory hosts.ini --limit web* --parallel 32

Exit codes: 0 every host ok, 4 some host failed (named on stderr), 3 drift
(verify), doctor's worst 0/1/2, 1 error, 2 usage error.";

const DOCTOR_EXAMPLES: &str = "\
Examples:
  nettune fleet doctor --inventory hosts.toml --sample 2
  nettune fleet doctor --inventory hosts.yml --profile throughput --json

Exit codes: 0 every host ok, 4 some host failed (named on stderr), 3 drift
(verify), doctor's worst 0/1/2, 1 error, 2 usage error.";

const PLAN_EXAMPLES: &str = "\
Examples:
  nettune fleet plan --inventory hosts.toml --profile throughput --json

Exit codes: 0 every host ok, 4 some host failed (named on stderr), 3 drift
(verify), doctor's worst 0/1/2, 1 error, 2 usage error.";

const APPLY_EXAMPLES: &str = "\
Examples:
  nettune fleet apply --inventory hosts.toml --profile throughput --dry-run
  nettune fleet apply --inventory hosts.toml --profile throughput
  nettune fleet apply --inventory hosts.toml --plan plan.json --limit 'servers:!db' --yes

Each host's changes are shown first (`KNOB TARGET: NOW -> AFTER`, read on
that host; `(already)` where it holds the value), then the apply asks
\"Apply on N host(s)? [y/N]\"; --yes skips the question and is required when
stdin is not a terminal. A host that fails that first pass is not applied.

Exit codes: 0 every host applied (or, with --dry-run, shown); 4 some host
failed (named on stderr); 1 error, or the question answered no; 2 usage
error.";

const ROLLBACK_EXAMPLES: &str = "\
Examples:
  nettune fleet rollback --inventory hosts.toml
  nettune fleet rollback --inventory hosts.toml --to 3 --limit srv1

Exit codes: 0 every host ok, 4 some host failed (named on stderr), 3 drift
(verify), doctor's worst 0/1/2, 1 error, 2 usage error.";

const VERIFY_EXAMPLES: &str = "\
Examples:
  nettune fleet verify --inventory hosts.toml   # 3 on drift, 4 when a host failed

Exit codes: 0 every host ok, 4 some host failed (named on stderr), 3 drift
(verify), doctor's worst 0/1/2, 1 error, 2 usage error.";

const HISTORY_EXAMPLES: &str = "\
Examples:
  nettune fleet history --inventory hosts.toml --json

Exit codes: 0 every host ok, 4 some host failed (named on stderr), 3 drift
(verify), doctor's worst 0/1/2, 1 error, 2 usage error.";

/// Flags of `nettune fleet`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The command to run on every host.
    #[command(subcommand)]
    pub command: Sub,
}

/// The fleet commands.
#[derive(Debug, Subcommand)]
pub enum Sub {
    /// Each host's snapshot (inspect --json).
    #[command(after_help = INSPECT_EXAMPLES)]
    Inspect(Common),
    /// Diagnose every host: findings by severity.
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor(DoctorArgs),
    /// The plan a profile makes on each host.
    #[command(after_help = PLAN_EXAMPLES)]
    Plan(PlanArgs),
    /// Apply on each host through its journal; a host whose apply fails is rolled back.
    #[command(after_help = APPLY_EXAMPLES)]
    Apply(ApplyArgs),
    /// Roll each host back (newest generation, or down to --to).
    #[command(after_help = ROLLBACK_EXAMPLES)]
    Rollback(RollbackArgs),
    /// Drift on each host since its last apply.
    #[command(after_help = VERIFY_EXAMPLES)]
    Verify(Common),
    /// Each host's journal.
    #[command(after_help = HISTORY_EXAMPLES)]
    History(Common),
    /// N clients against one server, their flows started together (skew,
    /// per-host and aggregate results).
    Bench(super::bench::BenchArgs),
}

/// Flags every fleet command takes.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// The inventory: nettune TOML (.toml), Ansible INI (.ini, .cfg, none) or YAML (.yml).
    #[arg(long, value_name = "FILE")]
    pub inventory: PathBuf,
    /// Ansible-style host pattern: `servers:!db`, `web*:&eu`, `a,b`.
    #[arg(long, value_name = "PATTERN")]
    pub limit: Option<String>,
    /// Hosts served at once.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    pub parallel: usize,
    /// Seconds each host may take (connecting, copying nettune, every request).
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0, value_parser = parse_timeout)]
    pub timeout: f64,
    /// Print one JSON document: {schema_version, command, hosts[], failed[]}.
    #[arg(long)]
    pub json: bool,
    /// Never copy this nettune to an ssh host; fail one of another version, naming both.
    #[arg(long)]
    pub no_copy: bool,
    /// Each host's --root: `{host}` is replaced by its inventory name
    /// (default: the host's `root` label, else its real /).
    #[arg(long, value_name = "TEMPLATE")]
    pub root_template: Option<String>,
    /// Each host's --state-dir, `{host}` as in --root-template (default: its
    /// `state_dir` label, else the agent's own).
    #[arg(long, value_name = "TEMPLATE")]
    pub state_dir_template: Option<String>,
}

/// `fleet doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The common flags.
    #[command(flatten)]
    pub common: Common,
    /// Seconds of counters sampled on each live host (not with a root).
    #[arg(long, value_name = "SECONDS")]
    pub sample: Option<f64>,
    /// The profile the findings are judged against.
    #[arg(long)]
    pub profile: Option<String>,
    /// RATE,RTT of the path (e.g. 10gbit,40ms).
    #[arg(long)]
    pub bdp: Option<String>,
}

/// `fleet plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The common flags.
    #[command(flatten)]
    pub common: Common,
    /// The profile (a built-in name, or a path on each host).
    #[arg(long)]
    pub profile: String,
    /// RATE,RTT of the path.
    #[arg(long)]
    pub bdp: Option<String>,
}

/// `fleet apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// The common flags.
    #[command(flatten)]
    pub common: Common,
    /// Plan this profile on each host, then apply that plan.
    #[arg(long, conflicts_with = "plan", required_unless_present = "plan")]
    pub profile: Option<String>,
    /// Apply this `plan --json` file on every host, exactly as written.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// RATE,RTT of the path (with --profile).
    #[arg(long, requires = "profile")]
    pub bdp: Option<String>,
    /// Apply a plan made for another host, or over an unfinished apply.
    #[arg(long)]
    pub force: bool,
    /// Show each host's changes against its current values, then stop:
    /// nothing is written.
    #[arg(long)]
    pub dry_run: bool,
    /// Apply without asking after the changes are shown (required when
    /// stdin is not a terminal).
    #[arg(long, short)]
    pub yes: bool,
    /// Seconds a host waits for this controller's confirm (sent over a fresh
    /// connection) after a plan that can cut the path (channels, rings, module
    /// parameters; over ssh or kubectl also moderation, IRQs and steering of the
    /// interfaces it touches) before rolling it back by itself, as `commit
    /// confirmed` does; 0: no deadline.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub confirm_timeout: u32,
    /// Reload a module after writing its parameter snippet (and again after
    /// a rollback), under the confirm deadline: every port of that driver
    /// drops its link meanwhile. Needed too for a plan file that says so.
    #[arg(long)]
    pub allow_reload: bool,
}

/// `fleet rollback`.
#[derive(Debug, clap::Args)]
pub struct RollbackArgs {
    /// The common flags.
    #[command(flatten)]
    pub common: Common,
    /// Roll back to this generation (it and every newer one); the newest by default.
    #[arg(long, value_name = "GEN")]
    pub to: Option<u32>,
    /// Close the generation even when some knobs cannot be restored.
    #[arg(long)]
    pub force: bool,
}

pub(crate) fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("{s:?}: seconds, more than 0 and at most 86400")),
    }
}
