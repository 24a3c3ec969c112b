//! `poll`/`ppoll` over caller-owned `pollfd` arrays (rustix's `poll` takes
//! `PollFd`s that borrow each socket, which the engine's workloads, owning
//! their sockets and a `pollfd` array side by side, cannot hold without
//! rebuilding the array on every wait).

use std::io;

/// `poll(2)` over `(fd, events)`; returns the revents in place.
#[inline]
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: the slice is valid for reads and writes of `len` pollfds.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// `ppoll(2)` with a nanosecond timeout.
#[inline]
pub fn ppoll(fds: &mut [libc::pollfd], timeout: std::time::Duration) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: the slice is valid for `len` pollfds; `ts` lives across the
    // call; a null sigmask leaves the mask unchanged.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}
