//! What a schedule costs before it starts, and the time left while it runs.

use super::*;

/// What a schedule will cost before it starts: bench runs and expected
/// wall time, for `cells` cells, at most (with `until_ci` every workload is
/// counted at its `max_repeats`). Saturates instead of overflowing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    /// Bench runs, warm-ups and overhead runs included.
    pub runs: u64,
    /// Expected wall time of those runs.
    pub wall: Duration,
}

/// The [`Estimate`] of running `schedule` over `cells` cells.
pub fn estimate(schedule: &Schedule, cells: usize) -> Estimate {
    let repeats = match &schedule.until_ci {
        Some(r) => u64::try_from(r.max_repeats).unwrap_or(u64::MAX),
        None => u64::from(schedule.repeats),
    }
    .max(u64::from(schedule.repeats));
    let per_workload = u64::from(schedule.warmup)
        .saturating_add(repeats)
        .saturating_mul(u64::try_from(cells).unwrap_or(u64::MAX));
    let overhead = u64::from(schedule.overhead_repeats);
    let mut runs = 0u64;
    let mut secs = 0f64;
    for w in &schedule.workloads {
        let n = per_workload.saturating_add(overhead);
        runs = runs.saturating_add(n);
        secs += w.expected.as_secs_f64() * n as f64;
    }
    // Far beyond any sane run: capped (Duration::from_secs_f64 panics on overflow).
    let wall = Duration::from_secs_f64(secs.clamp(0.0, 1e15));
    Estimate { runs, wall }
}

/// Estimated time left: expected seconds per run, corrected by the measured
/// ratio of wall time to expected time.
#[derive(Debug)]
pub(super) struct Eta {
    per_cell: Duration,
    cells_left: usize,
    started: Instant,
    expected_done: Duration,
    cell_started_expected: Duration,
    in_cell: Duration,
}

impl Eta {
    pub(super) fn new(s: &Schedule, cells: usize) -> Eta {
        let runs = s.warmup.saturating_add(s.repeats);
        let per_cell = s
            .workloads
            .iter()
            .map(|w| w.expected.saturating_mul(runs))
            .sum();
        Eta {
            per_cell,
            cells_left: cells,
            started: Instant::now(),
            expected_done: Duration::ZERO,
            cell_started_expected: Duration::ZERO,
            in_cell: Duration::ZERO,
        }
    }

    pub(super) fn run_done(&mut self, expected: Duration) {
        self.expected_done = self.expected_done.saturating_add(expected);
        self.in_cell = self.in_cell.saturating_add(expected);
    }

    pub(super) fn cell_done(&mut self) {
        self.cells_left = self.cells_left.saturating_sub(1);
        self.cell_started_expected = self.expected_done;
        self.in_cell = Duration::ZERO;
    }

    pub(super) fn left(&self) -> Duration {
        let remaining = self
            .per_cell
            .saturating_mul(u32::try_from(self.cells_left).unwrap_or(u32::MAX))
            .saturating_sub(self.in_cell.min(self.per_cell));
        let done = self.expected_done.as_secs_f64();
        let ratio = if done > 0.0 {
            (self.started.elapsed().as_secs_f64() / done).clamp(0.5, 10.0)
        } else {
            1.2
        };
        Duration::from_secs_f64((remaining.as_secs_f64() * ratio).min(1e7))
    }
}
