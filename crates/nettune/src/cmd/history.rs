//! `nettune history [--root DIR] [--state-dir DIR] [--json]`: applies and
//! rollbacks recorded in the journal.

use super::plan::JournalArgs;
use host::journal::{format_utc, EndStatus, Record, StateDir};
use model::text::printable;
use serde::Serialize;
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

/// `history --json`: `{"schema_version": 1, "generations": [...]}`.
#[derive(Debug, Serialize)]
struct Generations<'a> {
    generations: &'a [Entry],
}

/// One generation of `history` (a row, or an element of `generations`).
#[derive(Debug, Serialize)]
pub struct Entry {
    generation: u32,
    applied_at: u64,
    applied_at_utc: String,
    profile: String,
    writes: usize,
    status: Status,
    rolled_back_at: Option<u64>,
    rolled_back_at_utc: Option<String>,
    /// Knobs `rollback --force` could not restore.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unrestored: Vec<String>,
    /// Why nettune rolled it back by itself (a confirm deadline passed).
    #[serde(skip_serializing_if = "Option::is_none")]
    rolled_back_reason: Option<String>,
}

/// How a generation's apply ended, or `incomplete` (crashed mid-apply).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Applied,
    Stopped,
    Failed,
    Incomplete,
}

impl Status {
    fn of(end: Option<EndStatus>) -> Status {
        match end {
            Some(EndStatus::Applied) => Status::Applied,
            Some(EndStatus::Stopped) => Status::Stopped,
            Some(EndStatus::Failed) => Status::Failed,
            None => Status::Incomplete,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Stopped => "stopped",
            Status::Failed => "failed",
            Status::Incomplete => "incomplete",
        }
    }
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

/// The journal's generations, oldest first.
pub fn entries(state: &StateDir) -> anyhow::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for g in state.load_all()? {
        let (at, profile) = g
            .begin()
            .map(|(a, p)| (a, p.to_string()))
            .unwrap_or_default();
        let (rolled_back_at, unrestored, rolled_back_reason) = g
            .records
            .iter()
            .find_map(|r| match r {
                Record::RolledBack {
                    at,
                    unrestored,
                    reason,
                } => Some((Some(*at), unrestored.clone(), reason.clone())),
                _ => None,
            })
            .unwrap_or_default();
        out.push(Entry {
            generation: g.id,
            applied_at: at,
            applied_at_utc: format_utc(at),
            profile,
            writes: g
                .records
                .iter()
                .filter(|r| matches!(r, Record::Before { .. }))
                .count(),
            status: Status::of(g.ended()),
            rolled_back_at,
            rolled_back_at_utc: rolled_back_at.map(format_utc),
            unrestored,
            rolled_back_reason,
        });
    }
    Ok(out)
}

/// `history --json`'s document: `{"schema_version": 1, "generations": [...]}`
/// (`nettune agent` answers `history` with it).
pub fn document(entries: &[Entry]) -> impl Serialize + '_ {
    super::Versioned::new(Generations {
        generations: entries,
    })
}
