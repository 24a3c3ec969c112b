//! What one benchmark is and what it measured: the test configuration and
//! its catalogue of test kinds ([`config`]), the result document `nettune
//! bench --json` prints ([`result`]), and the doctor reports it carries
//! ([`peer_doctor`]). Pure types, so the runner, fleet and report read a
//! bench without linking the traffic engine.

pub mod config;
pub mod peer_doctor;
pub mod result;
