//! `nettune apply` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune apply`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune apply`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune apply` is not built yet")
}
