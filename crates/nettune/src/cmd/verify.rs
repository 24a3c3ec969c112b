//! `nettune verify` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune verify`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune verify`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune verify` is not built yet")
}
