//! `nettune rollback` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune rollback`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune rollback`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune rollback` is not built yet")
}
