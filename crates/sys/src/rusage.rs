//! Per-thread and per-process CPU time (`getrusage`).

use std::mem::zeroed;

/// User and system CPU time in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User time, µs.
    pub user_us: u64,
    /// System time, µs.
    pub sys_us: u64,
}

fn rusage(who: libc::c_int) -> Rusage {
    // SAFETY: rusage is plain old data; zero is valid.
    let mut ru: libc::rusage = unsafe { zeroed() };
    // SAFETY: `ru` is valid for writes during the call.
    let r = unsafe { libc::getrusage(who, &mut ru) };
    if r != 0 {
        return Rusage::default();
    }
    let us = |t: libc::timeval| (t.tv_sec as u64) * 1_000_000 + t.tv_usec as u64;
    Rusage {
        user_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
    }
}

/// `getrusage(RUSAGE_THREAD)` of the calling thread.
pub fn thread_rusage() -> Rusage {
    rusage(libc::RUSAGE_THREAD)
}

/// `getrusage(RUSAGE_SELF)` of the process.
pub fn process_rusage() -> Rusage {
    rusage(libc::RUSAGE_SELF)
}
