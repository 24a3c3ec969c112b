//! `nettune history [--root DIR] [--state-dir DIR] [--json]`: applies and
//! rollbacks recorded in the journal.

use super::plan::JournalArgs;
pub use crate::ops::journal::{entries, history_document as document, Entry};
use model::text::printable;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune history
  nettune history --json

Each generation is one apply: when (UTC), which profile, how many knobs it wrote, how
it ended (applied; stopped = stopped after a channel change, what it wrote is in force;
failed; incomplete = crashed mid-apply) and when it was rolled back (forced = closed by
`rollback --force` with knobs it could not restore).";

/// Flags of `nettune history`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// `--root` and `--state-dir`.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Print JSON: {schema_version, generations: [{generation, applied_at,
    /// applied_at_utc, profile, writes, status, rolled_back_at, rolled_back_at_utc,
    /// unrestored}]}; times in Unix seconds and as UTC text
    /// (/usr/share/doc/nettune/docs/schema/history.json).
    #[arg(long)]
    pub json: bool,
}

/// Run `nettune history`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (_root, state) = args.journal.open()?;
    let out = entries(&state)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&document(&out))?);
        return Ok(ExitCode::SUCCESS);
    }
    if out.is_empty() {
        println!("No applies recorded in {}.", state.path().display());
        return Ok(ExitCode::SUCCESS);
    }
    println!("GEN   APPLIED (UTC)         PROFILE        WRITES  STATUS       ROLLED BACK (UTC)");
    for e in &out {
        let rolled = match (&e.rolled_back_at_utc, e.unrestored.len()) {
            (None, _) => "-".to_string(),
            (Some(t), 0) => t.clone(),
            (Some(t), n) => format!("{t} (forced, {n} not restored)"),
        };
        let rolled = match &e.rolled_back_reason {
            Some(why) => format!("{rolled} ({})", printable(why)),
            None => rolled,
        };
        println!(
            "{:<5} {:<20}  {:<13}  {:<6}  {:<11}  {}",
            e.generation,
            e.applied_at_utc,
            printable(&e.profile),
            e.writes,
            e.status.name(),
            rolled
        );
    }
    Ok(ExitCode::SUCCESS)
}
