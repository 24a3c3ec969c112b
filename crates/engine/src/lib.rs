//! The traffic engine behind `nettune serve` and `nettune bench`.
//!
//! Layers, each importing only those below it:
//! - `proto` (the wire: control frames, data preamble, UDP header), `config`,
//!   `report` (result types and the summary arithmetic), `render`;
//! - `plan`: which workers each end runs, a pure function of (config, end);
//! - `worker` (a worker's counters, histogram and clock), `work` (one poll
//!   driver and the workloads plugged into it), `sock`, `sys` (all unsafe);
//! - `side` (spawning a side's workers from the plan) and `session` (the one
//!   event loop both ends run during a test);
//! - `client` and `server`: handshake, data connections, then `session`.
//!
//! The shape of the protocol and of the `--json` document is in docs/engine.md.

pub(crate) mod agg;
pub mod auth;
/// Capped decoding of a peer's lists and maps (in `model`).
pub use model::bounded;
pub mod client;
pub mod config;
pub(crate) mod cpu;
pub mod diagnosis;
pub mod error;
/// The host facts a result carries (in `model`; `host` reads them).
pub use model::bench_facts as facts;
pub mod interrupt;
pub(crate) mod plan;
pub mod probe;
pub mod proto;
pub mod render;
pub mod report;
pub mod server;
pub(crate) mod session;
pub(crate) mod side;
pub(crate) mod sock;
mod sys;
pub(crate) mod work;
pub(crate) mod worker;

pub use client::{run as run_client, run_with_probe, ClientOpts};
pub use config::{Direction, Family, FlowDir, Limits, TestConfig, TestKind};
pub use error::EngineError;
pub use probe::{ProbeKind, ProbeReport, ProbeSpec};
pub use report::BenchResult;
pub use server::{Server, ServerConfig};
pub use sock::Source;

pub use work::buffer_bytes;
