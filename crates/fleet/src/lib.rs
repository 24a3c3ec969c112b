//! The agent protocol and its transports (issue 19).
//!
//! A fleet host is reached by running `nettune agent --stdio` on it through
//! a transport that only provides the pipe: [`transport::Local`] (this
//! host), [`transport::Netns`] (`ip netns exec`: the lab and the tests),
//! [`transport::Ssh`] (the system OpenSSH client) and [`transport::Kubectl`]
//! (`kubectl exec -i`). Authentication is ssh's or the Kubernetes API's;
//! nettune opens no port and runs no daemon. The wire is [`proto`]:
//! a preamble, then length-prefixed JSON frames with the bench protocol's
//! limits. [`serve::serve`] is the agent's loop, [`client::Agent`] the
//! controller's session. Nothing here reads the host: the agent's commands
//! are the CLI's own (crates/nettune/src/cmd/agent.rs).
//!
//! [`install`] copies this nettune to an ssh host whose own is missing or
//! another version.
//!
//! [`fanout`], [`ops`] and [`summary`] are the `nettune fleet` commands:
//! one session per host on a bounded pool of threads, each host's outcome,
//! and the table and verdict. [`bench`](mod@bench) is `nettune fleet bench` (N
//! clients, one server, starts synchronized through [`clock`] offsets).
//! [`executor`] runs `nettune experiment`'s cells on a fleet: the lab's
//! runner over one long-lived agent session per host; with several clients
//! each run is a `fleet bench` whose results [`merged`] adds up.
//!
//! Layers: `proto`, then `transport` and `serve`, then `client` and `install`,
//! then `fanout`, `ops` and `summary`, then `bench`, `merged` and `executor`.

mod apply;
pub use apply::{checked_changes, is_already, How as ApplyHow, PlanCheckError};
pub mod bench;
pub mod client;
pub mod clock;
pub mod executor;
pub mod fanout;
pub mod install;
pub mod merged;
pub mod ops;
mod outcome;
pub mod proto;
pub mod serve;
pub mod summary;
pub mod transport;

pub use client::{Agent, AgentError, PeerInfo};
pub use proto::{ErrorKind, Request, Response};
pub use transport::{Kubectl, Local, Netns, Ssh, Transport};
