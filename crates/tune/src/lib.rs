//! Pure tuning decisions: profiles turn a `HostSnapshot` into a `Plan`.
//!
//! * [`profile`]: built-in and user profiles (TOML), the rule catalogue.
//! * [`planner`]: `plan(snapshot, extras, profile, options) -> Plan`.
//! * [`render`]: the human diff and the reviewable shell script of a plan.

pub mod planner;
pub mod profile;
pub mod render;

pub use planner::{plan, PlanError};
pub use profile::{Profile, ProfileError};
