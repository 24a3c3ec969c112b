//! The traffic engine behind `nettune serve` and `nettune bench`.
//!
//! Layers, each module importing only modules of the layers above it in
//! this list (or earlier in its own line), never a later one; the
//! `module_layers_have_no_cycle` test checks it:
//! - `config` and `report` are the model's bench types (`model::bench`:
//!   what a test runs, the catalogue of test kinds, the result types and the
//!   summary arithmetic), re-exported under their old paths;
//!   `diagnosis` (the doctor hook; the peer report's capped reading is the
//!   model's);
//! - `proto` (the wire: control frames, data preamble, UDP header), `error`,
//!   `auth`, `agg`, `sys` (the syscalls: `nettune-sys` holds the unsafe
//!   ones), `sock`, `cpu`, `plan` (which workers each end runs, a pure
//!   function of (config, end));
//! - `probe` (the latency probe), `worker` (a worker's counters, histogram
//!   and clock), `work` (one poll driver, the per-flow bookkeeping and the
//!   workloads plugged into it);
//! - `side` (spawning a side's workers from the plan), then `session` (the
//!   one event loop both ends run during a test);
//! - `client` and `server` (handshake, data connections, then `session`),
//!   `render` (the human text of a result), `interrupt`.
//!
//! Host facts are read by `host` (`host::snapshot::read_bench_facts`), the
//! doctor rules run behind the caller's [`diagnosis::DoctorHook`].
//!
//! The shape of the protocol and of the `--json` document is in docs/engine.md.

pub(crate) mod agg;
pub mod auth;
/// Capped decoding of a peer's lists and maps (in `model`).
pub use model::bounded;
pub mod client;
pub use model::bench::config;
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
pub use model::bench::result as report;
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
pub use probe::{ProbeCheckError, ProbeKind, ProbeReport, ProbeSpec};
pub use report::BenchResult;
pub use server::{Server, ServerConfig};
pub use sock::Source;

pub use work::buffer_bytes;
