//! `nettune history [--root DIR] [--state-dir DIR] [--json]`: applies and
//! rollbacks recorded in the journal.

use super::plan::JournalArgs;
use host::journal::Record;
use serde::Serialize;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune history
  nettune history --json

Each generation is one apply: when, which profile, how many knobs it wrote, how it
ended (applied, failed, incomplete = crashed mid-apply) and when it was rolled back.";

/// Flags of `nettune history`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// `--root` and `--state-dir`.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Print JSON: an array of {generation, applied_at, profile, writes, status, rolled_back_at}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Entry {
    generation: u32,
    applied_at: u64,
    profile: String,
    writes: usize,
    status: String,
    rolled_back_at: Option<u64>,
}

/// Run `nettune history`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (_root, state) = args.journal.open()?;
    let mut out = Vec::new();
    for g in state.load_all()? {
        let (at, profile) = g
            .begin()
            .map(|(a, p)| (a, p.to_string()))
            .unwrap_or_default();
        out.push(Entry {
            generation: g.id,
            applied_at: at,
            profile,
            writes: g
                .records
                .iter()
                .filter(|r| matches!(r, Record::Before { .. }))
                .count(),
            status: g.ended().unwrap_or("incomplete").to_string(),
            rolled_back_at: g.records.iter().find_map(|r| match r {
                Record::RolledBack { at } => Some(*at),
                _ => None,
            }),
        });
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    if out.is_empty() {
        println!("No applies recorded in {}.", state.path().display());
        return Ok(ExitCode::SUCCESS);
    }
    println!("GEN  APPLIED (unix)  PROFILE       WRITES  STATUS      ROLLED BACK (unix)");
    for e in &out {
        println!(
            "{:<4} {:<15} {:<13} {:<7} {:<11} {}",
            e.generation,
            e.applied_at,
            e.profile,
            e.writes,
            e.status,
            e.rolled_back_at.map_or("-".to_string(), |t| t.to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}
