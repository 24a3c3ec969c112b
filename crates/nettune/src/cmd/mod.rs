//! One module per subcommand; each exposes `Args` and `run`.

pub mod agent;
pub mod agent_watchdog;
pub mod apply;
pub mod autotune;
pub mod bench;
pub mod capture;
pub mod cli;
pub mod completions;
pub mod doctor;
pub mod drops;
pub mod experiment;
pub mod fleet;
pub mod guest;
pub mod history;
pub mod inspect;
pub mod lab;
pub mod man;
pub mod plan;
pub mod present;
pub mod profile;
pub mod report;
pub mod rollback;
pub mod serve;
pub mod stat;
pub mod top;
pub mod verify;

use cli::{Cli, Command};
use std::process::ExitCode;

pub use crate::ops::JSON_SCHEMA_VERSION;

pub use crate::ops::Versioned;

/// Run the parsed command.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Inspect(a) => inspect::run(a),
        Command::Capture(a) => capture::run(a),
        Command::Stat(a) => stat::run(a),
        Command::Drops(a) => drops::run(a),
        Command::Top(a) => top::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Apply(a) => apply::run(a),
        Command::Rollback(a) => rollback::run(a),
        Command::Verify(a) => verify::run(a),
        Command::History(a) => history::run(a),
        Command::Profile(a) => profile::run(a),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => man::run(a),
        Command::Agent(a) => agent::run(a),
        Command::Fleet(a) => fleet::run(a),
        Command::Guest(a) => guest::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Experiment(a) => experiment::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Autotune(a) => autotune::run(a),
        Command::Report(a) => report::run(a),
    }
}
