//! `nettune capture` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune capture`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune capture`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune capture` is not built yet")
}
