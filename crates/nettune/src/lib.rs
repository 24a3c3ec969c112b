//! The `nettune` command line: parses arguments and hands each subcommand to
//! its module under [`cmd`]. No measurement or decision logic lives here.

pub mod cli;
pub mod cmd;
pub mod top;

/// Exit codes shared by every command (docs/exit-codes.md lists them per command).
pub mod exit {
    /// Success; for `verify`, no drift.
    pub const OK: u8 = 0;
    /// An error (message on stderr), a refused or declined apply, a failed check.
    pub const ERROR: u8 = 1;
    /// Usage error: clap rejected the arguments (clap's own code).
    pub const USAGE: u8 = 2;
    /// `verify`: the host drifted from the last applied plan.
    pub const DRIFT: u8 = 3;
    /// Interrupted by Ctrl-C (SIGINT), as shells report 128 + 2.
    pub const INTERRUPTED: u8 = 130;
}

use clap::Parser;

/// Parse arguments, run, and map errors to a one-line message and exit code
/// [`exit::ERROR`] (clap exits [`exit::USAGE`] on bad arguments).
pub fn main_exit() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nettune: {e:#}");
            std::process::ExitCode::from(exit::ERROR)
        }
    }
}
