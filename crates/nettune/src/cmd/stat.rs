//! `nettune stat` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune stat`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune stat`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune stat` is not built yet")
}
