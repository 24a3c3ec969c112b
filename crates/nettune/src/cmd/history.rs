//! `nettune history` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune history`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune history`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune history` is not built yet")
}
