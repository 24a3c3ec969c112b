//! The progress of the runs on stderr.

use std::io::IsTerminal;
use std::time::Duration;

use runner::autotune as at;
use tune::autotune::Search;

/// The run's progress on stderr: a bar on a terminal, a line per run
/// otherwise (none with --json).
pub(super) struct Bar {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
}

impl Bar {
    pub(super) fn new(total: u64, shown: bool) -> Bar {
        let bar = (shown && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(total);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs  {msg}",
            ) {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Bar { bar, lines: shown }
    }

    pub(super) fn set_total(&self, total: u64) {
        if let Some(b) = &self.bar {
            b.set_length(total);
        }
    }

    pub(super) fn progress(&self, pos: u64, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.set_position(pos);
                b.set_message(msg.to_string());
            }
            None if self.lines => eprintln!("{msg}"),
            None => {}
        }
    }

    pub(super) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// One progress line: the run, its arm and value, what Ctrl-C would keep
/// now (the best proven gain), the time used and the most left.
pub(super) fn progress_line(
    used: usize,
    budget: usize,
    r: &at::RunTrace,
    key: &str,
    search: &Search,
    elapsed: Duration,
    left: Duration,
) -> String {
    let best = search
        .outcome_so_far()
        .ok()
        .and_then(|o| o.proven_text())
        .unwrap_or_else(|| "none yet".to_string());
    format!(
        "run {used}/{budget} {}: {key} = {:.4e}; best proven: {best} ({} s elapsed, at most {} s left)",
        r.arm,
        r.value,
        elapsed.as_secs(),
        left.as_secs()
    )
}
