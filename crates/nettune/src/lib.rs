//! The `nettune` command line: parses arguments and hands each subcommand to
//! its module under [`cmd`]. No measurement or decision logic lives here.

pub mod cmd;
pub mod diagnose;
pub mod ops;
pub mod rates;
pub mod top;

/// The argument definitions, in the command tree they dispatch to.
pub use cmd::cli;

/// Exit codes shared by every command (docs/exit-codes.md lists them per command).
pub mod exit {
    /// Success; for `verify`, no drift.
    pub const OK: u8 = 0;
    /// An error (message on stderr), a refused or declined apply, a failed check.
    pub const ERROR: u8 = 1;
    /// Usage error: clap rejected the arguments (clap's own code).
    pub const USAGE: u8 = 2;
    /// `verify`: the host drifted from the last applied plan.
    pub const DRIFT: u8 = 3;
    /// `apply`: a knob the plan writes is absent on this host (no such
    /// sysctl, `/sys` or `/proc/irq` file); what was written is rolled back.
    pub const KNOB_ABSENT: u8 = host::apply::EXIT_KNOB_ABSENT;
    /// `apply`: a write was refused for want of privileges (EACCES/EPERM
    /// on a knob or the journal: not root, most often).
    pub const NOT_ROOT: u8 = host::apply::EXIT_NOT_ROOT;
    /// Interrupted by Ctrl-C (SIGINT), as shells report 128 + 2.
    pub const INTERRUPTED: u8 = 130;

    /// What a failed `apply` exits with: [`KNOB_ABSENT`] or [`NOT_ROOT`]
    /// when its error says so (read from the typed errors of the chain,
    /// never from their words), else [`ERROR`].
    pub fn of_apply(e: &anyhow::Error) -> u8 {
        let apply = || {
            e.chain()
                .filter_map(|c| c.downcast_ref::<host::apply::ApplyError>())
        };
        if apply().any(host::apply::ApplyError::knob_absent) {
            KNOB_ABSENT
        } else if apply().any(host::apply::ApplyError::refused_for_privileges)
            || super::refused_for_privileges(e)
        {
            NOT_ROOT
        } else {
            ERROR
        }
    }
}

use clap::Parser;

/// Parse arguments, run, and map errors to a one-line message and exit code
/// [`exit::ERROR`] (clap exits [`exit::USAGE`] on bad arguments). A reader
/// that closed the pipe (`nettune inspect | head`) ends the command quietly
/// with [`exit::OK`], as it does `nettune stat`: see [`broken_pipe`].
pub fn main_exit() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    let writes = match &cli.command {
        cli::Command::Apply(_) => Some("apply"),
        cli::Command::Rollback(_) => Some("rollback"),
        _ => None,
    };
    broken_pipe::quiet_print_panics();
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cmd::dispatch(cli)));
    match run {
        Ok(Ok(code)) => code,
        Ok(Err(e)) if broken_pipe::is_broken_pipe(&e) && host::files::stdout_closed() => {
            std::process::ExitCode::from(exit::OK)
        }
        Ok(Err(e)) => {
            // Errors name files, interfaces and values the host supplied.
            eprintln!("nettune: {}", model::text::printable_lines(&chain_text(&e)));
            if let Some(hint) = writes.and_then(|w| root_hint(w, &e)) {
                eprintln!("nettune: {hint}");
            }
            std::process::ExitCode::from(match writes {
                Some("apply") => exit::of_apply(&e),
                _ => exit::ERROR,
            })
        }
        Err(p) if broken_pipe::is_print_panic(p.as_ref()) => std::process::ExitCode::from(exit::OK),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// The error and its causes joined by `: ` (as `{e:#}` prints them), each
/// cause left out when the text so far already says it: many errors quote
/// their source in their own message, and the chain would say it twice.
fn chain_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// What to do when `apply` or `rollback` was refused a write without root
/// (the bare "Permission denied (os error 13)" names a file, not the cause).
fn root_hint(what: &str, e: &anyhow::Error) -> Option<String> {
    (refused_for_privileges(e) && !lab::is_root()).then(|| {
        format!(
            "{what} needs root: it writes the host's knobs (/proc/sys, /sys, /proc/irq) and its journal (/var/lib/nettune). Run it with sudo, or give --root DIR --state-dir DIR to work on a copy."
        )
    })
}

/// Whether the OS refused a write of `e`'s chain to the journal or the
/// state directory for want of privileges (EACCES/EPERM).
fn refused_for_privileges(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied)
            || matches!(
                c.downcast_ref::<host::HostError>(),
                Some(host::HostError::PermissionDenied { .. })
            )
            || c.downcast_ref::<host::journal::JournalError>()
                .is_some_and(|j| j.permission_denied())
            || c.downcast_ref::<host::apply::ApplyError>()
                .is_some_and(|a| a.permission_denied())
            || c.downcast_ref::<host::apply::RollbackError>()
                .is_some_and(|r| r.permission_denied())
    })
}

/// A closed stdout (EPIPE), handled once for every command. SIGPIPE stays
/// ignored (Rust's default), so a server's or client's socket write to a
/// vanished peer is an error, never a kill; a write to a closed stdout is
/// either an `io::Error` of kind `BrokenPipe` reaching [`main_exit`] or,
/// from `print!`/`println!`, std's panic "failed printing to stdout", which
/// [`broken_pipe::quiet_print_panics`] keeps silent and [`main_exit`] turns into exit 0.
pub mod broken_pipe {
    use std::any::Any;
    use std::io::ErrorKind;

    /// Whether `e` (or an error it wraps) is a write to a closed pipe; a
    /// quiet end only when stdout is that pipe (`host::files::stdout_closed`),
    /// not a peer's socket that vanished under `bench`.
    pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
        e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == ErrorKind::BrokenPipe)
                || c.downcast_ref::<serde_json::Error>()
                    .is_some_and(|j| j.io_error_kind() == Some(ErrorKind::BrokenPipe))
        })
    }

    /// Whether a panic payload is std's `print!` failing on a closed stdout.
    pub fn is_print_panic(payload: &(dyn Any + Send)) -> bool {
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        let epipe = std::io::Error::from_raw_os_error(32).to_string(); // EPIPE on Linux
        msg.is_some_and(|m| m.starts_with("failed printing to stdout") && m.ends_with(&epipe))
    }

    /// Install a panic hook that prints nothing for a [`is_print_panic`]
    /// panic and defers to the previous hook for every other.
    pub fn quiet_print_panics() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !is_print_panic(info.payload()) {
                prev(info);
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_the_message_already_quotes_is_said_once() {
        // GuestError::Io says "{path}: {source}" and has the source too
        let e = anyhow::Error::new(guest::GuestError::Io {
            path: "/run/g/lock".into(),
            source: std::io::Error::from_raw_os_error(13),
        })
        .context("guest up");
        assert_eq!(
            super::chain_text(&e),
            "guest up: /run/g/lock: Permission denied (os error 13)"
        );
        // a cause the message does not quote is kept, as `{:#}` has it
        let e = anyhow::Error::new(std::io::Error::from_raw_os_error(2)).context("/x");
        assert_eq!(super::chain_text(&e), format!("{e:#}"));
    }
}
