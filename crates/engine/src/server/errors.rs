//! Why a session, its data flows or its running test ended early.

use super::CONNECT_TIMEOUT;
use crate::proto::ProtoError;
use thiserror::Error;

/// Why a session ended early.
#[derive(Debug, Error)]
pub(super) enum SessionError {
    /// The control connection failed or timed out.
    #[error(transparent)]
    Proto(#[from] ProtoError),
    /// A socket option could not be set.
    #[error("control socket: {0}")]
    Io(#[from] std::io::Error),
    /// We refused the client (and told it so).
    #[error("refused ({code}): {message}")]
    Refused {
        /// Error code sent.
        code: &'static str,
        /// Message sent.
        message: String,
    },
    /// The data sockets could not be opened.
    #[error("cannot open data sockets: {0}")]
    DataSockets(#[source] std::io::Error),
    /// The test's data flows did not all arrive.
    #[error("{0}")]
    Flows(#[from] FlowError),
    /// A worker thread could not start.
    #[error("cannot start a worker: {0}")]
    Worker(#[source] std::io::Error),
    /// The client left (or broke the protocol) before the start.
    #[error("client left before the start: {0}")]
    LeftEarly(#[source] ProtoError),
    /// The test ended early.
    #[error("{0}")]
    Aborted(#[from] Abort),
    /// The report could not be sent.
    #[error("sending the report: {0}")]
    Report(#[source] std::io::Error),
    /// A thread panicked holding a lock.
    #[error("lock poisoned")]
    Poisoned,
}

/// Why the data flows of a test could not be set up.
#[derive(Debug, Error)]
pub(super) enum FlowError {
    /// Too few TCP connections in time.
    #[error("only {have} of {want} data connections arrived within {} s", CONNECT_TIMEOUT.as_secs())]
    TcpShort {
        /// Arrived.
        have: usize,
        /// Expected.
        want: usize,
    },
    /// Too few UDP registrations in time.
    #[error("only {have} of {want} UDP flows registered")]
    UdpShort {
        /// Registered.
        have: usize,
        /// Expected.
        want: usize,
    },
    /// A socket operation failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Why a running test ended early.
#[derive(Debug, Error)]
pub(super) enum Abort {
    /// Past the deadline.
    #[error("test overran its deadline")]
    Overran,
    /// A message that has no place mid-test.
    #[error("unexpected {0} mid-test")]
    Unexpected(&'static str),
    /// The control connection closed.
    #[error("client vanished mid-test ({0})")]
    Vanished(String),
}
