//! The one presenter of `nettune lab`, `nettune experiment` and `nettune
//! autotune` on the terminal: the progress UI ([`Ui`]), the start and end
//! of a lab run, the results tables ([`lab_table`], [`experiment_table`])
//! and autotune's outcome ([`search_outcome`], [`recheck_outcome`]), whose numbers
//! come from the one formatter the report's Markdown and HTML use
//! (`model::metric`).

mod autotune;
mod table;
pub use autotune::{recheck_outcome, search_outcome};
pub use table::{experiment_table, lab_table};

use anyhow::Context;
use model::results::RESULTS_FILE;
use model::results::{CellStatus, ExperimentResults};
use runner::{Outcome, RunError};
use runner::{Progress, ProgressEvent};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Progress on stderr, the one progress UI of lab, experiment and
/// autotune: a bar on a terminal, plain lines otherwise (none when hidden).
#[derive(Debug, Clone)]
pub struct Ui {
    bar: Option<indicatif::ProgressBar>,
    started: u64,
    /// Lines on stderr when there is no bar.
    lines: bool,
}

impl Ui {
    /// A UI for about `total_runs` bench runs; the bar only when stderr is a
    /// terminal and `bar` is asked for.
    pub fn new(total_runs: u64, bar: bool) -> Ui {
        let bar = (bar && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(total_runs);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs  {msg}",
            ) {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Ui {
            bar,
            started: 0,
            lines: true,
        }
    }

    /// [`Ui::new`] with a bar when `shown`, and nothing at all otherwise
    /// (autotune's `--json`).
    pub fn shown_if(total_runs: u64, shown: bool) -> Ui {
        Ui {
            lines: shown,
            ..Ui::new(total_runs, shown)
        }
    }

    /// Add `runs` to the bar's length (work that became known mid-run).
    pub fn add_total(&self, runs: u64) {
        if let Some(b) = &self.bar {
            b.inc_length(runs);
        }
    }

    /// Set the bar's length (a budget that grows as the runs go).
    pub fn set_total(&self, runs: u64) {
        if let Some(b) = &self.bar {
            b.set_length(runs);
        }
    }

    /// `pos` runs done, and what runs now: the bar's position and message,
    /// or a line.
    pub fn progress(&self, pos: u64, what: &str) {
        match &self.bar {
            Some(b) => {
                b.set_position(pos);
                b.set_message(what.to_string());
            }
            None if self.lines => eprintln!("{what}"),
            None => {}
        }
    }

    /// One line above the bar (or on stderr).
    pub fn line(&self, s: &str) {
        match &self.bar {
            Some(b) => b.println(s),
            None if self.lines => eprintln!("{s}"),
            None => {}
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Progress for Ui {
    fn event(&mut self, ev: &ProgressEvent) {
        match ev {
            ProgressEvent::Run {
                cell_pos,
                cells,
                label,
                workload,
                repeat,
                warmup,
                eta,
            } => {
                let what = format!(
                    "cell {cell_pos}/{cells} {label}: {workload} run {}{} (about {} s left)",
                    repeat.saturating_add(1),
                    if *warmup { " (warm-up)" } else { "" },
                    eta.as_secs()
                );
                self.progress(self.started, &what);
                self.started = self.started.saturating_add(1);
            }
            ProgressEvent::NotApplicable { label, reason } => {
                self.line(&format!("cell {label}: n/a: {reason}"));
            }
            ProgressEvent::CellEnd { label, status } => {
                if let Some(b) = &self.bar {
                    b.set_position(self.started);
                }
                self.line(&format!("cell {label}: {}", status_text(status)));
            }
            ProgressEvent::Overhead { workload, repeat } => {
                self.line(&format!(
                    "{workload} over loopback, run {}",
                    repeat.saturating_add(1)
                ));
            }
        }
    }
}

/// `--min-effect PCT`: the practical threshold, above 0 and below 100 % of
/// the baseline (at 0 no interval could ever show "no change").
pub(crate) fn parse_min_effect(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 100.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not a percentage above 0 and below 100 (the smallest change worth a name, e.g. 2)"
        )),
    }
}

pub(crate) fn status_text(s: &CellStatus) -> String {
    match s {
        CellStatus::Done => "done".into(),
        CellStatus::Failed { error } => format!("failed: {error}"),
        CellStatus::Interrupted => "interrupted".into(),
        CellStatus::NotApplicable { reason } => format!("n/a: {reason}"),
        CellStatus::Pending => "not run".into(),
    }
}

/// Build the lab of `spec` (its servers from the binary `exe`), saying so
/// and naming the labs of killed runs it removed first.
pub fn start_lab(
    spec: &lab::LabSpec,
    exe: &std::path::Path,
    ui: &Ui,
) -> anyhow::Result<lab::LabSession> {
    ui.line(&format!(
        "building the lab: {} namespaces, {} queue(s) per veth{}",
        spec.hosts,
        spec.queues,
        spec.rate
            .map(|r| format!(", {}", model::metric::fmt_bits(r as f64)))
            .unwrap_or_default()
    ));
    let session = lab::LabSession::start(spec.clone(), exe, lab::DEFAULT_LISTEN_TIMEOUT)?;
    for r in session.reaped() {
        ui.line(&format!(
            "removed the lab {} of a killed run (pid {}): {} namespace(s), {} process(es)",
            r.lab,
            r.owner_pid,
            r.netns.len(),
            r.killed.len()
        ));
    }
    Ok(session)
}

/// How a lab run ends on the terminal.
#[derive(Debug, Clone, Copy)]
pub struct End<'a> {
    /// The results directory.
    pub out: &'a Path,
    /// Print results.json instead of the table.
    pub json: bool,
    /// The line's start after Ctrl-C.
    pub cancelled: &'a str,
    /// What finished (`lab`).
    pub what: &'a str,
}

impl End<'_> {
    /// After the runs: results.json, and on Ctrl-C the report of what was
    /// measured (exit 130), else the table (or JSON) and the report.
    pub fn finish(
        &self,
        results: &ExperimentResults,
        outcome: Result<Outcome, RunError>,
        ui: &Ui,
        t0: Instant,
    ) -> anyhow::Result<ExitCode> {
        ui.finish();
        let file = self.out.join(RESULTS_FILE);
        let text = serde_json::to_vec_pretty(results)?;
        let saved = runner::write_atomic(&file, &text);
        let outcome = outcome?;
        saved?;
        if outcome == Outcome::Cancelled {
            // What was measured, marked interrupted, in all three files.
            match report::write_dir(self.out) {
                Ok((html, md)) => eprintln!(
                    "nettune lab: report of the runs so far in {} and {}",
                    html.display(),
                    md.display()
                ),
                Err(e) => eprintln!(
                    "nettune lab: writing the report into {}: {e}",
                    self.out.display()
                ),
            }
            eprintln!("{}; results so far in {}", self.cancelled, file.display());
            return Ok(ExitCode::from(crate::exit::INTERRUPTED));
        }
        if self.json {
            println!("{}", serde_json::to_string_pretty(results)?);
        } else {
            print!("{}", model::text::printable_lines(&lab_table(results)));
        }
        let (html, md) = report::write_dir(self.out)
            .with_context(|| format!("writing the report into {}", self.out.display()))?;
        eprintln!(
            "{} finished in {:.0} s; results in {}, report in {} and {}",
            self.what,
            t0.elapsed().as_secs_f64(),
            file.display(),
            html.display(),
            md.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}

#[cfg(test)]
mod tests {
    use super::Ui;

    /// The one progress UI serves autotune too: hidden under `--json`
    /// (no bar, no lines), while lab and experiment keep their lines.
    #[test]
    fn autotune_json_hides_the_progress_and_the_lab_keeps_its_lines() {
        let hidden = Ui::shown_if(4, false);
        assert!(hidden.bar.is_none() && !hidden.lines);
        let lab = Ui::new(4, false);
        assert!(lab.bar.is_none() && lab.lines);
        hidden.progress(1, "not shown");
        hidden.set_total(5);
        hidden.finish();
    }
}
