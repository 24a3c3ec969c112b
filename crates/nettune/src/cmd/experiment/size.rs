//! The design's size: the runs it takes, the time they take, and the
//! confirmation asked above an hour.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use model::experiment::Experiment;
use runner::exec::HostId;
use runner::{self, experiment as rx};

use super::CONFIRM_ABOVE;
use crate::exit;

/// Print the design's size (runs, estimated wall time) and, above
/// [`CONFIRM_ABOVE`], ask on a terminal or require `--yes` without one.
/// `Err` holds the exit code of a refusal.
pub(super) fn confirm(exp: &Experiment, until_ci: Option<f64>, yes: bool) -> Result<(), ExitCode> {
    // Hosts do not change the count: any ids give the same schedule size.
    let schedule = rx::schedule(exp, HostId(1), HostId(0), until_ci);
    let cells = exp.cell_count();
    let est = runner::estimate(&schedule, cells);
    let upto = if schedule.until_ci.is_some() {
        "at most "
    } else {
        ""
    };
    eprintln!(
        "nettune: experiment {}: {cells} cell(s) × {} workload(s), {upto}{} bench runs, estimated {upto}{}",
        exp.name,
        schedule.workloads.len(),
        est.runs,
        long_duration(est.wall)
    );
    if est.wall <= CONFIRM_ABOVE || yes {
        return Ok(());
    }
    if std::io::stdin().is_terminal() {
        eprint!("nettune: that is more than an hour; start it? [y/N] ");
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        if matches!(answer.trim(), "y" | "Y" | "yes") {
            return Ok(());
        }
        eprintln!("nettune: not started");
        return Err(ExitCode::from(exit::USAGE));
    }
    eprintln!(
        "nettune: not started: estimated above one hour and stdin is not a terminal; pass --yes to start it anyway"
    );
    Err(ExitCode::from(exit::USAGE))
}

/// A long duration for reading: `5y 137d`, `3d 04h`, `2h05m`, `4m10s`.
fn long_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (y, d_) = (s / (365 * 86400), (s / 86400) % 365);
    if y > 0 {
        format!("{y}y {d_}d")
    } else if s >= 86400 {
        format!("{}d {:02}h", s / 86400, (s % 86400) / 3600)
    } else {
        eta_text(d)
    }
}

/// About how many bench runs the design takes (the progress bar's length):
/// warm-up and measured runs of every workload in every cell.
pub(super) fn schedule_runs(exp: &Experiment, cells: usize) -> u64 {
    let per_cell = u64::from(exp.warmup).saturating_add(u64::from(exp.repeats));
    (cells as u64)
        .saturating_mul(exp.workloads.len() as u64)
        .saturating_mul(per_cell)
}

fn eta_text(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}
