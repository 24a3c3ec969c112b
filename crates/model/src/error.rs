//! Parse errors shared by every parser in this crate.

use thiserror::Error;

/// A parser rejected its input. The caller adds the file path (see `host`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// The input was empty where content was required.
    #[error("empty input")]
    Empty,
    /// A token could not be read as the expected kind of value.
    #[error("line {line}: invalid {what}: {token:?}")]
    Invalid {
        /// 1-based line number within the parsed text (1 for one-line files).
        line: usize,
        /// What was expected, e.g. "cpu number" or "hex mask group".
        what: &'static str,
        /// The offending token (truncated to 64 characters).
        token: String,
    },
    /// The input's structure did not match the expected layout.
    #[error("line {line}: {msg}")]
    Format {
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        msg: String,
    },
}

impl ParseError {
    /// Build an [`ParseError::Invalid`], truncating long tokens.
    pub fn invalid(line: usize, what: &'static str, token: &str) -> Self {
        let token: String = token.chars().take(64).collect();
        ParseError::Invalid { line, what, token }
    }

    /// Build a [`ParseError::Format`].
    pub fn format(line: usize, msg: impl Into<String>) -> Self {
        ParseError::Format {
            line,
            msg: msg.into(),
        }
    }
}
