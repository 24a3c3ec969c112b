//! Pure types and parsers for nettune: no I/O happens in this crate, but for
//! [`inventory::load`], which reads one inventory file (size-capped).
//!
//! Every parser takes kernel text (`&str`) and returns typed values or a
//! [`ParseError`] that names what was wrong; callers attach the file path.

pub mod bench;
pub mod bench_facts;
pub mod bottom;
pub mod bounded;
pub mod busy;
pub mod catalogue;
pub mod clock;
pub mod cpuset;
pub mod doctor_facts;
pub mod drops;
pub mod error;
pub mod experiment;
pub mod finding_id;
pub mod findings;
pub mod inventory;
pub mod irqbalance_env;
pub mod knobpath;
pub mod metric;
pub mod moderation;
pub mod note;
pub mod parse;
pub mod plan;
pub mod results;
pub mod sample;
pub mod snapshot;
pub mod stats;
pub mod text;
pub mod time;
pub mod units;
pub mod winshare;

pub use cpuset::CpuSet;
pub use error::ParseError;
pub use units::{Bits, Bytes, CpuId, IrqNumber, Nanos, NodeId, Packets};
