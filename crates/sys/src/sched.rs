//! The calling thread's scheduling policy (`sched_setscheduler(0, ...)`,
//! which on Linux sets the calling thread's, not the whole process's).
//! rustix has no wrapper for it.

use std::io;

/// Run the calling thread under `SCHED_FIFO` at `priority` (1..=99). It
/// then preempts every `SCHED_OTHER` thread at once when it wakes. Needs
/// `CAP_SYS_NICE` (or an `RLIMIT_RTPRIO` that allows `priority`): `EPERM`
/// otherwise. The kernel's RT throttling (`sched_rt_runtime_us`, 95 % by
/// default) bounds what a runaway thread can take.
pub fn set_fifo(priority: i32) -> io::Result<()> {
    set(libc::SCHED_FIFO, priority)
}

/// Back to the default policy (`SCHED_OTHER`, priority 0).
pub fn set_normal() -> io::Result<()> {
    set(libc::SCHED_OTHER, 0)
}

/// Whether the calling thread runs under `SCHED_FIFO`.
pub fn is_fifo() -> io::Result<bool> {
    // SAFETY: no pointers; 0 names the calling thread.
    let p = crate::cvt(unsafe { libc::sched_getscheduler(0) })?;
    Ok(p == libc::SCHED_FIFO)
}

fn set(policy: libc::c_int, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a live local for the duration of the call; 0 names
    // the calling thread.
    crate::cvt(unsafe { libc::sched_setscheduler(0, policy, &param) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn fifo_and_back_on_this_thread_only() {
        std::thread::spawn(|| match set_fifo(1) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                eprintln!("skipped: SCHED_FIFO needs CAP_SYS_NICE");
            }
            r => {
                r.unwrap();
                assert!(is_fifo().unwrap());
                set_normal().unwrap();
                assert!(!is_fifo().unwrap());
            }
        })
        .join()
        .unwrap();
        // Another thread's policy is not this one's.
        assert!(!is_fifo().unwrap());
        assert!(set_fifo(0).is_err(), "FIFO priorities start at 1");
    }
}
