//! Ctrl-C for `nettune bench`: the first SIGINT raises a flag the client
//! polls (it stops the test and prints what was measured); a second one
//! exits at once with status 130, as a shell expects of an interrupted
//! program.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Exit status of a program ended by SIGINT (128 + 2).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Install the SIGINT handlers and return the flag the first signal raises.
pub fn sigint_flag() -> std::io::Result<Arc<AtomicBool>> {
    use signal_hook::consts::SIGINT;
    let flag = Arc::new(AtomicBool::new(false));
    // Registered first, so it sees the flag before the first signal sets it:
    // only a second SIGINT exits.
    signal_hook::flag::register_conditional_shutdown(
        SIGINT,
        i32::from(EXIT_INTERRUPTED),
        flag.clone(),
    )?;
    signal_hook::flag::register(SIGINT, flag.clone())?;
    Ok(flag)
}

/// Install handlers for SIGTERM, SIGHUP and SIGINT that store the signal's
/// number in the returned cell (0 until one arrives), for a program that
/// must undo something before it ends (`nettune top` restores the
/// terminal) and then exit with 128 + that number.
pub fn stop_signals() -> std::io::Result<Arc<std::sync::atomic::AtomicUsize>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let got = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for s in [SIGTERM, SIGHUP, SIGINT] {
        let n = usize::try_from(s).map_err(|_| std::io::Error::other("signal number"))?;
        signal_hook::flag::register_usize(s, got.clone(), n)?;
    }
    Ok(got)
}
