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
