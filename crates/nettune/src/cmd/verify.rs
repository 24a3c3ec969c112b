//! `nettune verify [--root DIR] [--state-dir DIR] [--json]`: drift between
//! the last applied generation and the host now, knob by knob.

use super::plan::JournalArgs;
pub use crate::ops::journal::{exit_code, report, Report};
use host::apply::DriftStatus;
use model::text::printable;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune verify            # exit 0: no drift; exit 3: something changed
  nettune verify --json
  nettune verify --root /tmp/c4 || echo \"drift or error: $?\"

Exit codes: 0 no drift, 1 error (e.g. no applied plan), 2 usage error, 3 drift.

Each knob the last apply wrote is read again: ok, DRIFT (current vs intended),
n/a (the knob no longer exists) or unchangeable (managed IRQ). Foreign writers
(irqbalance, tuned) that may undo the plan are named.";

/// Flags of `nettune verify`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// `--root` and `--state-dir`.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Print JSON: {generation, profile, drift, items[], foreign_writers[]}.
    #[arg(long)]
    pub json: bool,
}

/// Run `nettune verify`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rep = match args
        .journal
        .open()
        .and_then(|(root, state)| report(&root, &state))
    {
        Ok(r) => r,
        Err(e) if args.json => {
            // A script reading stdout gets JSON either way
            // (docs/schema/error.json); stderr and exit 1 as always.
            let doc = serde_json::json!({"schema_version": 1, "error": format!("{e:#}")});
            println!("{}", serde_json::to_string_pretty(&doc)?);
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let drift = rep.drift;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&super::Versioned::new(&rep))?
        );
    } else {
        println!(
            "Generation {} (profile {}): {} knob(s), {} drifted",
            rep.generation,
            printable(&rep.profile),
            rep.items.len(),
            drift
        );
        for i in &rep.items {
            let st = match i.status {
                DriftStatus::Ok => "ok",
                DriftStatus::Drift => "DRIFT",
                DriftStatus::NotAvailable => "n/a",
                DriftStatus::Unchangeable => "unchangeable",
            };
            match i.status {
                DriftStatus::Drift => println!(
                    "  {st:<12} {}: now {}, intended {}",
                    printable(&i.target),
                    printable(i.current.as_deref().unwrap_or("-")),
                    printable(&i.intended)
                ),
                _ => println!(
                    "  {st:<12} {} = {}",
                    printable(&i.target),
                    printable(&i.intended)
                ),
            }
        }
        for f in &rep.foreign_writers {
            println!("  foreign writer: {}", printable(f));
        }
    }
    Ok(ExitCode::from(exit_code(&rep)))
}
