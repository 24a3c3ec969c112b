//! `nettune apply (--profile P | --plan FILE [--replan]) [--root DIR]
//! [--state-dir DIR] [--dry-run] [--yes] [--force] [--persist]
//! [--allow-reload]`: apply a plan through the rollback journal.

mod print;

use super::plan::{make_plan, read_plan, replan_later, JournalArgs, PlanFlags};
use host::apply::{ApplyOptions, ApplyReport, Knobs};
use host::journal::StateDir;
use host::Root;
use model::plan::{Change, Plan};
use print::{print_report, stopped_message};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  # See what would be written, without writing
  nettune apply --profile throughput --dry-run

  # Apply, journaling every original value (asks for confirmation on a terminal)
  nettune apply --profile throughput

  # Apply a reviewed plan exactly as written (refused if it was made for another
  # host, unless --force). If it raises channels, IRQs renumber and the rest of the
  # plan is stale: apply stops after the channel change and says so; plan again, or
  nettune plan --profile latency --json > plan.json
  nettune apply --plan plan.json --yes
  # ... re-plan the later phases from the plan's profile after a channel change
  nettune apply --plan plan.json --replan --yes

  # Re-apply at boot: writes /etc/nettune/plan.json and enables nettune.service
  nettune apply --profile throughput --persist --yes

  # Inside a network namespace: only that namespace's knobs are planned
  ip netns exec NS nettune apply --profile throughput --iface veth1 --yes

Then: `nettune verify` (drift), `nettune history`, `nettune rollback` (undo).
The journal lives in --state-dir (default /var/lib/nettune, under --root when given).
An apply or rollback locks the state directory; a second one fails at once and names
the pid holding the lock.
Module parameters (InterruptThrottleRate) are written as modprobe.d snippets in
STATE/modprobe.d for you to review; nettune loads them only with --allow-reload,
which reloads the module (`modprobe -r M; modprobe M P=V`) after the write and
again after a rollback: every port of that driver drops its link meanwhile.

Exit codes: 0 applied (or nothing to change, or --dry-run), 1 error (declined,
refused, a write failed; rolled back), 2 usage error, 5 a knob the plan writes
is absent on this host (rolled back), 6 a write refused for want of privileges
(not root).";

/// Flags of `nettune apply`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["profile", "plan"])))]
pub struct Args {
    /// Profile to plan and apply: latency, throughput, balanced or a TOML file.
    #[arg(long, short)]
    pub profile: Option<String>,
    /// A plan file from `nettune plan --json`, applied exactly as written.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// With --plan: after a channel change, re-plan the later phases from the
    /// plan's profile instead of stopping (e.g. `apply --plan plan.json --replan`).
    #[arg(long, requires = "plan")]
    pub replan: bool,
    /// `--root` and `--state-dir`.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Show what would be written and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(long, short)]
    pub yes: bool,
    /// Apply a plan made for another host, or over an unfinished apply.
    #[arg(long)]
    pub force: bool,
    /// Also re-apply the plan at boot: write it to /etc/nettune/plan.json and
    /// enable nettune.service (the packaged unit; written only when absent).
    #[arg(long)]
    pub persist: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Reload a module after writing its parameter snippet, so the value
    /// takes effect, and again after a rollback (every port of that driver
    /// drops its link meanwhile). Needed too for a plan that says so.
    #[arg(long)]
    pub allow_reload: bool,
    /// Planner options (with --profile).
    #[command(flatten)]
    pub flags: PlanFlags,
}

/// Run `nettune apply`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (root, state) = args.journal.open()?;
    let plan = source_plan(&args, &root)?;
    let to_apply = with_persist(&args, &root, &plan)?;
    if to_apply.changes.is_empty() {
        println!(
            "Nothing to change: the host already matches profile {}.",
            model::text::Printable(&plan.profile)
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        println!(
            "Dry run: {} change(s) would be written under {} (journal in {}):",
            to_apply.changes.len(),
            root.dir().display(),
            state.path().display()
        );
        print!("{}", tune::render::script(&to_apply));
        if to_apply.options.reload_modules {
            println!(
                "# then each module above is reloaded (--allow-reload), and again on rollback"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes && !confirm(&root, &to_apply)? {
        println!("Not applied.");
        return Ok(ExitCode::FAILURE);
    }
    // A plan file is applied exactly as reviewed: re-planning after a channel
    // change only for --profile, or when asked with --replan.
    let replan = args.plan.is_none() || args.replan;
    let report = execute(&root, &state, &plan, &to_apply, args.force, replan)?;
    let stopped = report
        .stopped
        .as_ref()
        .map(|s| stopped_message(&args, &plan, s));
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&super::Versioned::new(&report))?
        );
    } else {
        print_report(&args, &state, &to_apply, &report);
    }
    if let Some(m) = stopped {
        eprintln!("nettune: {m}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan: made now with `--profile`, or read from `--plan FILE` (refused
/// when it names created files, or was made for another host without --force).
fn source_plan(args: &Args, root: &Root) -> anyhow::Result<Plan> {
    let f = match (&args.profile, &args.plan) {
        (Some(p), _) => return Ok(make_plan(root, p, &args.flags)?.0),
        (None, Some(f)) => f,
        (None, None) => anyhow::bail!("give --profile P or --plan FILE"),
    };
    let plan = read_plan(f)?;
    host::apply::check_plan(&plan, &f.display().to_string(), root, args.force)?;
    Ok(plan)
}

/// The plan plus, with --persist, the boot unit and its files (after the
/// plan's own changes).
fn with_persist(args: &Args, root: &Root, plan: &Plan) -> anyhow::Result<Plan> {
    let mut to_apply = plan.clone();
    to_apply.options.reload_modules = reload_modules(plan, args.allow_reload)?;
    if args.persist {
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "/usr/local/bin/nettune".into());
        let live_state = args
            .journal
            .state_dir
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "/var/lib/nettune".into());
        let json = serde_json::to_string_pretty(plan)?;
        to_apply.changes.extend(host::persist::persist_changes(
            root,
            &json,
            &exe,
            &live_state,
        )?);
    }
    Ok(to_apply)
}

/// Whether the apply reloads modules: with `--allow-reload` when the plan
/// sets a module parameter. A plan that asks for reloads (an experiment
/// cell's) is refused without the flag, which is the operator's consent.
pub(crate) fn reload_modules(plan: &Plan, allow_reload: bool) -> anyhow::Result<bool> {
    let modules: Vec<&str> = plan
        .changes
        .iter()
        .filter_map(|c| match &c.target {
            model::plan::Target::ModuleParam { module, .. } => Some(module.as_str()),
            _ => None,
        })
        .collect();
    if plan.options.reload_modules && !allow_reload && !modules.is_empty() {
        anyhow::bail!(
            "the plan reloads module(s) {} after writing their parameters (its options.reload_modules), which drops the link of every port they drive: pass --allow-reload to do so",
            model::text::printable(&modules.join(", "))
        );
    }
    Ok(allow_reload && !modules.is_empty())
}

/// Show the plan and ask on the terminal; refused when stdin is not one.
fn confirm(root: &Root, to_apply: &Plan) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "refusing to apply {} change(s) without --yes: stdin is not a terminal (review with --dry-run, then pass --yes)",
            to_apply.changes.len()
        );
    }
    print!("{}", tune::render::human(to_apply));
    print!(
        "\nApply {} change(s) to {}? [y/N] ",
        to_apply.changes.len(),
        root.dir().display()
    );
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

/// Apply through the journal. After a channel change host pauses; here the
/// later phases are re-planned from the host as it now is and the same
/// generation goes on (--profile, or --plan with --replan), or it stops.
fn execute(
    root: &Root,
    state: &StateDir,
    plan: &Plan,
    to_apply: &Plan,
    force: bool,
    replan: bool,
) -> anyhow::Result<ApplyReport> {
    let k = Knobs::open(root, state);
    let mut again = || -> Result<Vec<Change>, host::apply::ReplanError> {
        let mut later = replan_later(root, plan)?;
        // What --persist added is not the planner's: it stays.
        later.extend(to_apply.changes[plan.changes.len()..].iter().cloned());
        Ok(later)
    };
    Ok(host::apply::apply_replanning(
        &k,
        state,
        to_apply,
        ApplyOptions::from_env(force),
        replan.then_some(&mut again as host::apply::Replan<'_>),
    )?)
}

/// `s` as one POSIX shell word: as is when it needs no quoting, else in
/// single quotes (a `'` inside becomes `'\''`).
pub(crate) fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,=:@%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}
