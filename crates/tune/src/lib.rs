//! Pure tuning decisions: profiles turn a `HostSnapshot` into a `Plan`.
//!
//! * [`profile`]: built-in and user profiles (TOML).
//! * [`rules`]: the rules, one file each, and their catalogue.
//! * [`planner`]: `plan(snapshot, extras, profile, options) -> Plan`.
//! * [`context`]: what the rules share while planning.
//! * [`placement`]: which physical core takes each queue IRQ.
//! * [`render`]: the human diff and the reviewable shell script of a plan.
//! * [`autotune`]: the search core of `nettune autotune` (pure, simulated).
//! * [`risk`]: which changes can cut the controller off (applied with a confirm deadline).

pub mod autotune;
pub mod coalesce_family;
pub mod context;
pub mod drivers;
pub mod levels;
pub mod placement;
pub mod planner;
pub mod profile;
pub mod render;
pub mod risk;
pub mod rules;

pub use planner::{plan, PlanError};
pub use profile::{Profile, ProfileError};
pub use rules::{Rule, RuleId};
