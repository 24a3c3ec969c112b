//! Errors of the engine, each naming the address or step involved.

use crate::proto::ProtoError;
use thiserror::Error;

/// Why a test or a server could not run.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The host name did not resolve.
    #[error("cannot resolve `{host}`: {reason}")]
    Resolve {
        /// Host as given.
        host: String,
        /// Resolver message.
        reason: String,
    },
    /// The control connection could not be made.
    #[error("cannot reach {addr} (is `nettune serve` running there?)")]
    Connect {
        /// Address.
        addr: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// The server's listening socket could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// Address.
        addr: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// The peer broke the protocol.
    #[error("{addr}")]
    Proto {
        /// Peer address.
        addr: String,
        /// What went wrong.
        #[source]
        source: ProtoError,
    },
    /// Client and server speak different protocol versions.
    #[error("protocol version mismatch: {addr} speaks v{theirs}, this nettune {version} speaks v{ours}; run the same nettune version on both hosts")]
    Version {
        /// Peer address.
        addr: String,
        /// Their version.
        theirs: u16,
        /// Ours.
        ours: u16,
        /// Our crate version.
        version: String,
    },
    /// Token problems.
    #[error("{0}")]
    Auth(String),
    /// The server refused or failed the test.
    #[error("server refused the test ({code}): {message}")]
    Server {
        /// Code.
        code: String,
        /// Message.
        message: String,
    },
    /// A data-path or local failure.
    #[error("{0}")]
    Run(String),
}
