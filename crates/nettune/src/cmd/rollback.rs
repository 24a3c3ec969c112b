//! `nettune rollback [ID] [--root DIR] [--state-dir DIR]`: restore original
//! values from the journal, newest generation first.

use super::plan::{backends, knobs, JournalArgs};
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  # Undo the last apply
  nettune rollback

  # Undo generation 3 and everything applied after it
  nettune rollback 3

  # After a crash in the middle of an apply: the journal is the truth
  nettune rollback

Rolling back twice is harmless: generations already rolled back are skipped.
A corrupt journal is refused before anything is touched.";

/// Flags of `nettune rollback`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Generation to roll back to (it and every newer one); default: the newest.
    pub id: Option<u32>,
    /// `--root` and `--state-dir`.
    #[command(flatten)]
    pub journal: JournalArgs,
}

/// Run `nettune rollback`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (root, state) = args.journal.open()?;
    let (eth, svc) = backends(&root);
    let k = knobs(&root, &state, eth.as_ref(), svc.as_ref());
    let rep = host::apply::rollback(&k, &state, args.id)?;
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
    Ok(ExitCode::SUCCESS)
}
