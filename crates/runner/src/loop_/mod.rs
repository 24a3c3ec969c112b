//! The loop of `nettune lab`, as typed stages (docs/architecture.md, "The
//! loop"):
//!
//! 1. **Diagnose** ([`diagnose`]): `nettune doctor --json` on each host of
//!    the suite under load, read into the typed [`model::findings::Report`], a
//!    host's windows merged into one report.
//! 2. **Candidates** ([`candidates`]): each finding becomes a
//!    [`candidates::Candidate`]: plan changes for its host, a
//!    [`bench_fix::BenchFix`] (the finding's own `Fix::bench`, an
//!    application option), or advice the lab cannot apply with a
//!    [`candidates::NotApplied`] reason; then one [`units::FixUnit`] per
//!    finding with a fix, measured in its own cell.
//! 3. **Apply / Rollback** ([`setup`]): each fix's changes through the
//!    journals of the hosts that found it (`nettune apply`/`rollback` inside
//!    their namespaces), as a [`crate::CellSetup`] beside the
//!    experiment's.
//! 4. **Measure** ([`suite`]): the suite's runs, through
//!    [`crate::run`].
//! 5. **Compare**: the runner's statistics (`model::stats`): medians, the
//!    bootstrap interval of the change and its verdict, per workload and
//!    metric; warnings (`model::busy`); the bottom line (`model::bottom`).

pub mod bench_fix;
pub mod candidates;
pub mod diagnose;
pub mod setup;
pub mod suite;
pub mod units;

/// Label of the baseline cell.
pub const BASELINE: &str = "baseline";
/// Seconds of each doctor window (both hosts, while the load runs).
pub const DOCTOR_SAMPLE_S: f64 = 2.0;
