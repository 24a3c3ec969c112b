//! `nettune inspect` (not built yet).

use std::process::ExitCode;

/// Flags of `nettune inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Run `nettune inspect`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`nettune inspect` is not built yet")
}
