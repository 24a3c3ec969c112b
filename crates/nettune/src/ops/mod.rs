//! What a command and the agent's request both run, with typed options:
//! each command parses its flags into these and prints what comes back; the
//! agent does the same with its request. Nothing here prints.

pub mod doctor;
pub mod journal;
pub mod plan;
pub mod profile;
pub mod token;

use serde::Serialize;

/// The version of every `--json` document (`schema_version`), bumped on
/// incompatible changes.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// A JSON document: `{"schema_version": 1, ...the fields of T}`.
#[derive(Debug, Serialize)]
pub struct Versioned<T> {
    /// [`JSON_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The document's own fields, flattened after `schema_version`.
    #[serde(flatten)]
    pub body: T,
}

impl<T: Serialize> Versioned<T> {
    /// Wrap `body` with the current schema version.
    pub fn new(body: T) -> Self {
        Versioned {
            schema_version: JSON_SCHEMA_VERSION,
            body,
        }
    }
}
