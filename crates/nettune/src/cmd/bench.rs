//! `nettune bench` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune bench`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune bench` is not built yet")
}
