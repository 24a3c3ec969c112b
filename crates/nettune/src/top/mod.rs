//! `nettune top`: a live terminal view of CPUs, NIC queues, softnet and
//! findings, in the shape of oha and trippy:
//!
//! - [`app`]: the state between frames (the last samples, the findings board,
//!   the frozen copy) with no I/O; the event loop in `cmd::top` feeds it
//!   [`Delta`](host::sampler::Delta)s and keys;
//! - [`keys`]: the view state (sort, NIC, frozen, help) and its key handling;
//! - [`screen`]: the model of one screen, a pure struct built from a snapshot,
//!   a delta, per-queue rates and findings;
//! - [`draw`]: functions that take a [`screen::Screen`] and a ratatui `Frame`;
//! - [`drops`]: the drops pane (drops per second by the kernel's reason);
//! - [`findings`]: where the findings panel gets its rows (a small trait) and
//!   how rows appear and clear.

pub mod app;
pub mod draw;
pub mod drops;
pub mod findings;
pub mod keys;
pub mod screen;

pub use app::App;
pub use keys::{Action, SortKey, View};
pub use screen::Screen;
