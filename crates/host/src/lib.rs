//! OS access for nettune: everything read from or written to the kernel goes
//! through a [`Root`], so a recorded tree of a real machine can stand in for `/`.

pub mod apply;
pub mod error;
pub mod journal;
pub mod persist;
pub mod root;

pub use error::HostError;
pub use root::Root;
