//! `nettune rollback [ID] [--root DIR] [--state-dir DIR] [--force]`: restore
//! original values from the journal, newest generation first.

use super::plan::JournalArgs;
use host::apply::{Knobs, RollbackReport};
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  # Undo the last apply
  nettune rollback

  # Undo generation 3 and everything applied after it
  nettune rollback 3

  # After a crash in the middle of an apply: the journal is the truth
  nettune rollback

  # A knob is gone for good (NIC removed, IRQ renumbered): restore the rest and
  # close the generation anyway, listing what could not be restored
  nettune rollback --force

Rolling back twice is harmless: generations already rolled back are skipped.
Every knob that can be restored is; without --force a generation with knobs that
could not be restored stays in force (exit 1, each knob named).
A corrupt or edited journal (a target outside the kernel's knobs or the root) is
refused before anything is touched. The state directory is locked while a
rollback runs; a concurrent apply or rollback fails at once, naming the pid.
--json prints one document, also when the rollback fails
(/usr/share/doc/nettune/docs/schema/rollback.json).";

/// Flags of `nettune rollback`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Generation to roll back to (it and every newer one); default: the newest.
    pub id: Option<u32>,
    /// `--root` and `--state-dir`.
    #[command(flatten)]
    pub journal: JournalArgs,
    /// Close the generation even when some knobs cannot be restored (they are
    /// listed), e.g. `nettune rollback --force` after a NIC was removed.
    #[arg(long)]
    pub force: bool,
    // `[generation]` is help text (clap), not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Print JSON: {schema_version, rolled_back: [generation], restored,
    /// unrestored: [{generation, knob, target, error}], error}; also printed when
    /// the rollback fails (exit 1, `error` set).
    #[arg(long)]
    pub json: bool,
}

pub(crate) use crate::ops::journal::rollback_document as document;

/// Run `nettune rollback`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (root, state) = args.journal.open()?;
    let k = Knobs::open(&root, &state);
    let res = host::apply::rollback(&k, &state, args.id, args.force);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&document(&res))?);
    }
    let rep = res?;
    if args.json {
        return Ok(ExitCode::SUCCESS);
    }
    print_human(&rep, &state);
    Ok(ExitCode::SUCCESS)
}

fn print_human(rep: &RollbackReport, state: &host::journal::StateDir) {
    if rep.rolled_back.is_empty() {
        println!(
            "Nothing to roll back (no active generation in {}).",
            state.path().display()
        );
    } else {
        let ids: Vec<String> = rep.rolled_back.iter().map(|i| i.to_string()).collect();
        println!(
            "Rolled back generation(s) {}: {} original value(s) restored.",
            ids.join(", "),
            rep.restored
        );
    }
    if !rep.unrestored.is_empty() {
        println!(
            "Closed with --force; {} knob(s) not restored:",
            rep.unrestored.len()
        );
        for u in &rep.unrestored {
            println!(
                "  generation {}: {}",
                u.generation,
                model::text::printable(&u.to_string())
            );
        }
    }
}
