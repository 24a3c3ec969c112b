//! What a command and the agent's request both run, with typed options:
//! each command parses its flags into these and prints what comes back; the
//! agent does the same with its request. Nothing here prints.

pub mod doctor;
pub mod plan;
pub mod profile;
