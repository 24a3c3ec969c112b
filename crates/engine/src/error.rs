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
    /// A token that is empty or only whitespace.
    #[error("the token is blank (empty or whitespace only): give a real token, or none")]
    BlankToken,
    /// This client has a token, but the server did not ask for one, so it
    /// cannot prove it holds the same token.
    #[error("{addr} does not ask for a token, so it cannot prove it holds yours: refusing to run (give the server the same --token-file or NETTUNE_TOKEN, or run bench without one)")]
    ServerWithoutToken {
        /// Server address.
        addr: String,
    },
    /// The test needs more buffer memory on this host than allowed.
    #[error("this test needs {need} of buffer memory on this host, above the limit of {limit} per test (--max-memory; {hint})")]
    Memory {
        /// Bytes needed, for people.
        need: String,
        /// The limit, for people.
        limit: String,
        /// Which flags to lower.
        hint: &'static str,
    },
    /// The server refused or failed the test.
    #[error("server refused the test ({code}): {message}")]
    Server {
        /// Code.
        code: String,
        /// Message.
        message: String,
    },
    /// The user interrupted the run before anything was measured.
    #[error("interrupted {0}")]
    Interrupted(&'static str),
    /// A `--probe` this test cannot bound.
    #[error(transparent)]
    Probe(#[from] ProbeCheckError),
    /// A configuration that cannot run.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A data-path or local failure.
    #[error("{0}")]
    Run(String),
}

pub use model::bench::result::probe::ProbeCheckError;
