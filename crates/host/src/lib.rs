//! OS access for nettune: everything read from or written to the kernel goes
//! through a [`Root`], so a recorded tree of a real machine can stand in for `/`.

pub mod apply;
pub mod bench_path;
pub mod capture;
pub mod confirm;
pub mod doctor_facts;
pub mod drops;
pub mod drops_run;
pub mod error;
pub mod ethtool;
pub mod extras;
pub mod files;
pub mod iface;
pub mod journal;
pub mod netlink;
pub mod nldump;
pub mod others;
pub mod owners;
pub mod persist;
mod readctx;
pub mod root;
pub mod rtt;
pub mod sampler;
pub mod snapshot;
pub mod sockstat;

pub use error::HostError;
pub use root::Root;
pub use snapshot::{read_owners, read_snapshot, read_snapshot_with};
