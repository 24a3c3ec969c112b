//! The TUN device of the lab's userspace delay line.

use crate::cvt;
use std::io;
use std::os::fd::AsRawFd;

/// `TUNSETIFF`: `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// The part of `struct ifreq` that `TUNSETIFF` reads and writes: the name
/// and the flags (`ifr_flags`), padded to the kernel's 40-byte `ifreq`.
#[repr(C)]
struct IfreqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    pad: [u8; 22],
}

/// Open a layer-3 TUN device (`IFF_TUN | IFF_NO_PI`) named `name`
/// (created if absent; at most 15 bytes), non-blocking and close-on-exec.
/// The device lives as long as the returned fd (it is not persistent): the
/// kernel removes it when the fd closes, in whatever namespace it was moved to.
pub fn open_tun(name: &str) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("TUN name {name:?}: 1..15 bytes, no NUL"),
        ));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")?;
    let mut req = IfreqFlags {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        pad: [0; 22],
    };
    for (d, s) in req.name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: `file` is an open fd for the whole call; `req` is a live,
    // NUL-terminated (zeroed tail) ifreq-sized struct that TUNSETIFF reads
    // and may write back (the final name) within its 40 bytes.
    cvt(unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            TUNSETIFF as _,
            &mut req as *mut IfreqFlags,
        )
    })?;
    Ok(file.into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn open_tun_refuses_bad_names_before_any_syscall() {
        for bad in ["", "sixteen-bytes-xx", "a\0b"] {
            let e = super::open_tun(bad).expect_err(bad);
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }
}
