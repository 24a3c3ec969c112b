//! What `nettune autotune` prints on the terminal at its end: the search's
//! outcome with what limited its runs, and a re-check's table with its
//! bottom line. Lines, in the same words as the lab's and the experiment's
//! tables (`note:`, `warning:`), from the one number formatter.

use runner::autotune::{self as at, RecheckReport, RunTrace};
use std::fmt::Write as _;
use tune::autotune::Outcome;

/// A finished search: what was accepted, re-checked and rejected, what
/// limited the runs (each end's busiest bench thread), runs in two states
/// and a busy machine; `unit` is the objective's.
pub fn search_outcome(o: &Outcome, trace: &[RunTrace], unit: &str) -> String {
    let mut out = model::text::printable_lines(&o.render()).into_owned();
    if o.accepted.is_empty() {
        out.push_str("nothing proven: the host stays as it is\n");
    }
    let fmt = |v| model::metric::format_value(unit, v);
    let limits = at::limits_lines(trace, &fmt);
    if !limits.is_empty() {
        out.push_str("what limited the runs (each end's busiest bench thread):\n");
        for l in &limits {
            let _ = writeln!(out, "  {}", model::text::printable_capped(l, 400));
        }
    }
    if let Some(n) = at::two_states_note(trace, &fmt) {
        let _ = writeln!(out, "note: {}", model::text::printable_capped(&n, 600));
    }
    if let Some(n) = at::busy_note(trace) {
        let _ = writeln!(out, "warning: {}", model::text::printable_capped(&n, 600));
    }
    out
}

/// A re-check's table and its bottom line; `repeats` is the runs per arm,
/// for the budget that would measure the changes alone.
pub fn recheck_outcome(report: &RecheckReport, repeats: usize) -> String {
    let mut out = model::text::printable_lines(&report.render()).into_owned();
    let unmeasured = report.rows.iter().filter(|r| r.effect.is_none()).count();
    if !report.all_hold() {
        out.push_str("some accepted changes no longer hold\n");
    } else if unmeasured > 0 {
        let _ = writeln!(
            out,
            "the accepted setting still holds; its {unmeasured} changes were not measured alone (a budget of {} runs would)",
            unmeasured.saturating_add(2).saturating_mul(repeats)
        );
    } else {
        out.push_str("every accepted change still holds\n");
    }
    out
}
