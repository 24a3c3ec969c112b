//! `nettune completions SHELL`: a completion script generated from the clap
//! definitions, printed on stdout.

use clap::CommandFactory;
use clap_complete::Shell;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  nettune completions bash > /etc/bash_completion.d/nettune
  nettune completions zsh > \"${fpath[1]}/_nettune\"
  nettune completions fish > ~/.config/fish/completions/nettune.fish
  source <(nettune completions bash)          this shell only

The Debian package installs all three in the standard places
(/usr/share/bash-completion/completions, /usr/share/zsh/vendor-completions,
/usr/share/fish/vendor_completions.d).";

/// Flags of `nettune completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The shell: bash, zsh, fish (elvish and powershell work too).
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Run `nettune completions`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    write(args.shell, &mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// Write the completion script for `shell` to `w`.
pub fn write(shell: Shell, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut cmd = crate::cli::Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "nettune", &mut buf);
    w.write_all(&buf)?;
    w.flush()
}
