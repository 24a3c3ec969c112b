//! `nettune man --out DIR` (hidden): man pages generated from the clap
//! definitions: `nettune.1` and one page per subcommand (`nettune-plan.1`,
//! `nettune-profile-show.1`, ...). Used to build the Debian package.

use anyhow::Context;
use clap::CommandFactory;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune man --out target/man && man -l target/man/nettune.1
  nettune man --out /usr/local/share/man/man1 && mandb -q";

/// Flags of `nettune man`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory to write the pages into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Run `nettune man`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let pages = generate(&args.out)?;
    println!(
        "{} man page(s) written to {}",
        pages.len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Write every page into `dir`; returns their paths, `nettune.1` first.
pub fn generate(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = crate::cli::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    page(cmd, dir, &mut out)?;
    Ok(out)
}

fn page(cmd: clap::Command, dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let path = clap_mangen::Man::new(cmd)
        .generate_to(dir)
        .with_context(|| format!("writing a man page into {}", dir.display()))?;
    out.push(path);
    for s in subs {
        page(s, dir, out)?;
    }
    Ok(())
}
