//! The traffic engine behind `nettune serve` and `nettune bench`: workers
//! (one thread each, owning sockets, counters and an HDR histogram),
//! workloads (tcp-stream, udp-stream, tcp-rr, udp-rr, tcp-crr), the control
//! protocol with HMAC authentication, CPU accounting and the result document.
//!
//! The shape of the protocol and of the `--json` document is in docs/engine.md.

pub mod agg;
pub mod auth;
pub mod client;
pub mod config;
pub mod cpu;
pub mod error;
pub mod facts;
pub mod jobs;
pub mod proto;
pub mod render;
pub mod report;
pub mod server;
pub mod side;
pub mod sys;
pub mod worker;

pub use client::{run as run_client, ClientOpts};
pub use config::{Direction, FlowDir, Limits, TestConfig, TestKind};
pub use error::EngineError;
pub use report::BenchResult;
pub use server::{Server, ServerConfig};
