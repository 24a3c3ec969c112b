//! The `nettune` command line: parses arguments and hands each subcommand to
//! its module under [`cmd`]. No measurement or decision logic lives here.

pub mod cli;
pub mod cmd;
pub mod top;

use clap::Parser;

/// Parse arguments, run, and map errors to a one-line message and exit code 1.
pub fn main_exit() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nettune: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
