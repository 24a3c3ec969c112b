//! The runner's CLI-style arguments read into agent requests' fields.

use runner::exec::ExecError;

/// The value of `--flag V` in `args` (the runner's CLI-style arguments).
pub(super) fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i.saturating_add(1)))
}

/// `args` with only the flags in `known` (each taking a value), or the
/// first one the agent's request cannot carry.
pub(super) fn only<'a>(args: &'a [String], known: &[&str]) -> Result<(), &'a str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if !known.contains(&a.as_str()) {
            return Err(a);
        }
        it.next();
    }
    Ok(())
}

pub(super) fn unsupported(what: &str, host: &str, arg: &str) -> ExecError {
    ExecError::Failed {
        what: format!("{what} on {host}"),
        code: None,
        stderr: format!("{arg}: not a {what} flag an agent request carries"),
    }
}
