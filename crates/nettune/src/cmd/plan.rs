//! `nettune plan` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune plan`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune plan`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune plan` is not built yet")
}
