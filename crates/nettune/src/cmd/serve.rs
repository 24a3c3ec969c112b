//! `nettune serve` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune serve`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune serve` is not built yet")
}
