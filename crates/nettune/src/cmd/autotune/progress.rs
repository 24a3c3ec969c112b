//! The text of a run's progress (shown by the one progress UI,
//! `present::Ui`).

use std::time::Duration;

use runner::autotune as at;
use tune::autotune::Search;

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
