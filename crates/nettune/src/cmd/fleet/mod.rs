//! `nettune fleet <inspect|doctor|plan|apply|rollback|verify|history>
//! --inventory FILE`: one command on many hosts through their agents
//! (docs/fleet.md, "Commands"); `fleet bench` is [`bench`]. This module parses and prints; the fan-out,
//! the per-host outcomes and `apply`'s rollback are `fleet::ops`.

mod args;
mod bench;
pub(crate) mod jobs;

pub(crate) use args::parse_timeout;
pub use args::{Args, Common, Sub};

use fleet::ops::{HostReport, Op, PlanFrom};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Exit status when at least one host failed (named on stderr).
pub const HOSTS_FAILED: u8 = 4;
/// Largest `--plan` file read.
const MAX_PLAN_BYTES: u64 = 16 << 20;

/// Run `nettune fleet ...`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (name, common, op) = match args.command {
        Sub::Inspect(c) => ("inspect", c, Op::Inspect),
        Sub::Doctor(a) => (
            "doctor",
            a.common,
            Op::Doctor {
                seconds: a.sample,
                profile: a.profile,
                bdp: a.bdp,
            },
        ),
        Sub::Plan(a) => (
            "plan",
            a.common,
            Op::Plan {
                profile: a.profile,
                bdp: a.bdp,
            },
        ),
        Sub::Apply(a) => return apply(a),
        Sub::Rollback(a) => (
            "rollback",
            a.common,
            Op::Rollback {
                to: a.to,
                force: a.force,
            },
        ),
        Sub::Verify(c) => ("verify", c, Op::Verify),
        Sub::History(c) => ("history", c, Op::History),
        Sub::Bench(a) => return bench::run(a),
    };
    let jobs = jobs::jobs(&common)?;
    let opts = options(&common)?;
    let reports = fleet::ops::run(&jobs, &op, &opts);
    print(name, &reports, common.json)?;
    Ok(ExitCode::from(exit_status(name, &reports)))
}

/// The fan-out options of `common`.
fn options(common: &Common) -> anyhow::Result<fleet::fanout::Options> {
    Ok(fleet::fanout::Options {
        parallel: common.parallel,
        deadline: std::time::Duration::from_secs_f64(common.timeout),
        copy: !common.no_copy,
        version: env!("CARGO_PKG_VERSION").to_string(),
        exe: std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("fleet: this nettune's path: {e}"))?,
    })
}

/// `fleet apply`: every host's changes against its current values first
/// (nothing written), then the question (or `--yes`), then the apply.
fn apply(a: args::ApplyArgs) -> anyhow::Result<ExitCode> {
    let plan = match (a.profile, a.plan) {
        (Some(profile), None) => PlanFrom::Profile {
            profile,
            bdp: a.bdp,
        },
        (None, Some(file)) => {
            let doc = read_plan(&file)?;
            // Refused here, naming the target, before any host is reached.
            fleet::checked_changes(&doc)
                .map_err(|e| anyhow::anyhow!("fleet apply: {}: {e}", file.display()))?;
            if let Ok(p) = model::plan::Plan::from_json_slice(&serde_json::to_vec(&doc)?) {
                crate::cmd::apply::reload_modules(&p, a.allow_reload)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            }
            PlanFrom::Document(doc)
        }
        _ => anyhow::bail!("fleet apply: give --profile NAME or --plan FILE"),
    };
    let how = fleet::ApplyHow {
        force: a.force,
        confirm_within: (a.confirm_timeout > 0).then_some(a.confirm_timeout),
        allow_reload: a.allow_reload,
    };
    let jobs = jobs::jobs(&a.common)?;
    // After every input is read and checked, before any host is reached.
    if !a.dry_run && !a.yes && !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "fleet apply: refusing without --yes: stdin is not a terminal (review with --dry-run, then pass --yes)"
        );
    }
    let opts = options(&a.common)?;
    let (json, dry_run, yes) = (a.common.json, a.dry_run, a.yes);
    let mut declined = false;
    let reports = fleet::ops::apply_all(&jobs, &plan, how, &opts, |first| {
        let shown = fleet::summary::changes(first);
        // stdout stays one JSON document with --json.
        if json {
            eprint!("{shown}");
        } else {
            print!("{shown}");
        }
        if dry_run {
            return false;
        }
        let pending = first
            .iter()
            .filter(|r| {
                r.changes
                    .as_ref()
                    .is_some_and(|c| c.iter().any(|l| !fleet::is_already(l)))
            })
            .count();
        if yes || pending == 0 {
            return true;
        }
        declined = !ask(pending);
        !declined
    });
    print("apply", &reports, json)?;
    if declined {
        eprintln!("nettune: fleet apply: not applied (the question was answered no)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::from(exit_status("apply", &reports)))
}

/// "Apply on N host(s)? [y/N]" on the terminal; false on anything but yes.
fn ask(hosts: usize) -> bool {
    use std::io::{BufRead, Write};
    eprint!("\nApply on {hosts} host(s)? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes")
}

/// `fleet --json`'s fields after `schema_version` (docs/schema/fleet.json).
#[derive(Debug, serde::Serialize)]
struct Document<'a> {
    command: &'a str,
    hosts: &'a [HostReport],
    failed: &'a [String],
}

/// Print the JSON document or the table; name each failed host on stderr.
fn print(name: &str, reports: &[HostReport], json: bool) -> anyhow::Result<()> {
    let v = fleet::summary::verdict(reports);
    if json {
        let doc = super::Versioned::new(Document {
            command: name,
            hosts: reports,
            failed: &v.failed,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", fleet::summary::table(reports));
    }
    for r in reports.iter().filter(|r| r.outcome.failed()) {
        eprintln!("nettune: fleet {name}: {}", r.failure_line());
    }
    Ok(())
}

/// [`HOSTS_FAILED`] when a host failed; otherwise `verify`'s 3 on drift,
/// `doctor`'s worst 0/1/2, or 0.
fn exit_status(name: &str, reports: &[HostReport]) -> u8 {
    let v = fleet::summary::verdict(reports);
    if !v.failed.is_empty() {
        HOSTS_FAILED
    } else if v.drift {
        crate::exit::DRIFT
    } else if name == "doctor" {
        v.worst_code
    } else {
        crate::exit::OK
    }
}

fn read_plan(file: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    // A regular file only: a FIFO or device is refused at once, not read.
    let bytes = host::files::read_bounded(file, MAX_PLAN_BYTES)
        .map_err(|e| anyhow::anyhow!("fleet apply: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        anyhow::anyhow!(
            "fleet apply: {}: not a plan --json document: {e}",
            file.display()
        )
    })
}
