//! nettune's audited `unsafe` code, all of it: thin wrappers over the Linux
//! syscalls that `socket2`/`rustix` do not cover.
//!
//! - [`ethtool`]: the `SIOCETHTOOL` ioctls that read a NIC driver's
//!   statistics (`ETHTOOL_GSSET_INFO`, `ETHTOOL_GSTRINGS`, `ETHTOOL_GSTATS`,
//!   as `ethtool -S` issues them), for `host`;
//! - [`sock`] (integer socket options, `TCP_INFO`), [`mmsg`]
//!   (`recvmmsg`/`sendmmsg` batches), [`poll`], [`rusage`] and [`sched`]
//!   (a scheduled start's real-time wake), for `engine`;
//! - [`tun`]: the TUN device of `lab`'s delay line;
//! - [`perf`]: `perf_event_open` on a tracepoint (`skb:kfree_skb`), its
//!   count and its sampled raw records in a mmap'd ring, for `host`'s drop
//!   watcher;
//! - [`bpf`]: a hand-assembled BPF program on a raw tracepoint (or at
//!   fentry of a kernel function) counting its hits by one argument (the
//!   drop reason of `kfree_skb`) in a mmap'd per-CPU array, for the same
//!   watcher; [`btf`]: a bounded reader of the kernel's BTF that finds the
//!   function's type id for fentry (no `unsafe` in it).
//!
//! Why a crate of its own: `engine` depends on `host` and `lab` should not
//! depend on `engine` for a syscall; this crate depends on nothing but
//! `libc`, `getrandom` and `thiserror`, so every crate above can use it and
//! `unsafe` stays denied everywhere else.
//!
//! Audit rule: every `unsafe` block passes pointers to memory owned by `self`
//! or by a live borrow for the duration of the call, and lengths that match
//! those buffers. One more for the ethtool ioctl:
//! older kernels' `ETHTOOL_GSTRINGS` and `ETHTOOL_GSTATS` ignore the length
//! user space passes and write the driver's *current* count (see
//! `ethtool_get_strings` and `ethtool_get_stats` in `net/ethtool/ioctl.c`),
//! which can grow between the count query and the read (`ethtool -L` adds
//! channels). Recent kernels (seen on 6.18) answer a count of 0 and copy
//! nothing when the length passed is not the current one. So their
//! buffers are a [`ethtool::Guarded`] mapping whose end is followed by a `PROT_NONE`
//! page: a longer answer runs into the guard, the kernel's `copy_to_user`
//! stops there and the ioctl fails with `EFAULT` instead of writing past
//! the buffer.
#![allow(unsafe_code)]

pub mod bpf;
pub mod btf;
pub mod mmsg;
pub mod perf;
pub mod poll;
pub mod random;
pub mod rusage;
pub mod sched;
pub mod sock;
pub mod tun;

/// The page size (4096 when sysconf answers nonsense).
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf takes no pointers.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

/// A libc return value as an `io::Result` (negative: `errno`).
#[inline]
pub(crate) fn cvt(r: libc::c_int) -> std::io::Result<libc::c_int> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

pub mod ethtool {
    //! The driver statistics ioctls. Run in the calling thread's network
    //! namespace, like ethtool(8).

    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// The errno values these calls fail with, for callers without `libc`.
    pub mod errno {
        pub use libc::{EACCES, EAFNOSUPPORT, EFAULT, ENODEV, ENOSYS, ENOTTY, EOPNOTSUPP, EPERM};
    }

    /// `SIOCETHTOOL` (`<linux/sockios.h>`).
    const SIOCETHTOOL: u32 = 0x8946;
    /// `ETHTOOL_GSTRINGS`.
    const ETHTOOL_GSTRINGS: u32 = 0x1b;
    /// `ETHTOOL_GSTATS`.
    const ETHTOOL_GSTATS: u32 = 0x1d;
    /// `ETHTOOL_GSSET_INFO`.
    const ETHTOOL_GSSET_INFO: u32 = 0x37;
    /// `ETH_SS_STATS`: the driver's statistics string set.
    pub const ETH_SS_STATS: u32 = 1;
    /// `ETH_GSTRING_LEN`: bytes per name, NUL-padded (not always NUL-ended).
    pub const ETH_GSTRING_LEN: usize = 32;
    /// `IFNAMSIZ`.
    const IFNAMSIZ: usize = 16;
    /// Bytes before the names in `struct ethtool_gstrings` (cmd, string_set, len).
    pub const GSTRINGS_HEADER: usize = 12;
    /// Bytes before the values in `struct ethtool_stats` (cmd, n_stats).
    pub const GSTATS_HEADER: usize = 8;

    /// `struct ifreq` with `ifr_data`: the name, the pointer, and padding to
    /// at least the kernel's `sizeof(struct ifreq)` (40 bytes on 64-bit).
    #[repr(C)]
    struct IfreqData {
        name: [u8; IFNAMSIZ],
        data: *mut libc::c_void,
        _pad: [u8; 24],
    }

    use crate::page_size;

    /// A zeroed, page-aligned, read-write buffer followed by a `PROT_NONE`
    /// guard page, so nothing the kernel copies into it can run past its end.
    #[derive(Debug)]
    pub struct Guarded {
        ptr: *mut u8,
        /// Usable bytes (a whole number of pages).
        len: usize,
        /// Usable bytes plus the guard page.
        map_len: usize,
    }

    // SAFETY: `Guarded` owns its mapping exclusively (like a `Box<[u8]>`);
    // nothing else holds the pointer, so moving it to another thread is fine.
    unsafe impl Send for Guarded {}

    impl Guarded {
        /// At least `bytes` usable bytes (rounded up to pages, at least one).
        pub fn new(bytes: usize) -> io::Result<Guarded> {
            let page = page_size();
            let len = bytes
                .max(1)
                .checked_next_multiple_of(page)
                .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
            let map_len = len
                .checked_add(page)
                .ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
            // SAFETY: an anonymous private mapping at an address the kernel
            // picks; no existing memory is touched.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    map_len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let g = Guarded {
                ptr: p.cast(),
                len,
                map_len,
            };
            // SAFETY: `len < map_len`, so the guard page `[len, map_len)` is
            // inside the mapping just made and owned by `g`.
            let r =
                unsafe { libc::mprotect(p.cast::<u8>().add(len).cast(), page, libc::PROT_NONE) };
            if r != 0 {
                return Err(io::Error::last_os_error()); // `g` unmaps on drop
            }
            Ok(g)
        }

        /// Usable bytes.
        pub fn len(&self) -> usize {
            self.len
        }

        /// Never empty (at least one page); here for clippy's `len` rule.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        /// The usable bytes.
        pub fn bytes(&self) -> &[u8] {
            // SAFETY: `[ptr, ptr + len)` is mapped read-write, initialized
            // (zero-filled by mmap, then only written as bytes), and owned by
            // `self`, which this borrow keeps alive and unaliased-mutably.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }

        fn bytes_mut(&mut self) -> &mut [u8] {
            // SAFETY: as in `bytes`, with the exclusive borrow of `self`.
            unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
        }
    }

    impl Drop for Guarded {
        fn drop(&mut self) {
            // SAFETY: `ptr`/`map_len` are exactly the mapping made in `new`,
            // unmapped once, here; no borrow of it outlives `self`.
            unsafe {
                libc::munmap(self.ptr.cast(), self.map_len);
            }
        }
    }

    /// A datagram socket to issue `SIOCETHTOOL` on (as ethtool(8): `AF_INET`,
    /// else `AF_UNIX` on a kernel without IPv4).
    #[derive(Debug)]
    pub struct EthtoolSocket {
        fd: OwnedFd,
    }

    fn u32_at(b: &[u8], off: usize) -> u32 {
        let mut w = [0u8; 4];
        if let Some(s) = b.get(off..off + 4) {
            w.copy_from_slice(s);
        }
        u32::from_ne_bytes(w)
    }

    fn put_u32(b: &mut [u8], off: usize, v: u32) {
        if let Some(s) = b.get_mut(off..off + 4) {
            s.copy_from_slice(&v.to_ne_bytes());
        }
    }

    /// `count` items of `size` bytes after a `header` fit in `buf`.
    fn fits(buf: &Guarded, header: usize, count: u32, size: usize) -> io::Result<()> {
        let need = usize::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(size))
            .and_then(|n| n.checked_add(header));
        match need {
            Some(n) if n <= buf.len() => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{count} items do not fit in a {} byte buffer", buf.len()),
            )),
        }
    }

    impl EthtoolSocket {
        /// Open the socket (close-on-exec).
        pub fn open() -> io::Result<EthtoolSocket> {
            for domain in [libc::AF_INET, libc::AF_UNIX] {
                // SAFETY: socket takes no pointers.
                let fd = unsafe { libc::socket(domain, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
                if fd >= 0 {
                    // SAFETY: `fd` was just returned by socket and is owned
                    // by nothing else.
                    return Ok(EthtoolSocket {
                        fd: unsafe { OwnedFd::from_raw_fd(fd) },
                    });
                }
            }
            Err(io::Error::last_os_error())
        }

        /// `SIOCETHTOOL` on `iface` with `data` as `ifr_data`.
        ///
        /// # Safety
        /// `data` must point to a writable buffer the command's answer fits
        /// in (or that is followed by an unmapped page), live for the call.
        unsafe fn ioctl(&self, iface: &str, data: *mut u8) -> io::Result<()> {
            let b = iface.as_bytes();
            if b.is_empty() || b.len() >= IFNAMSIZ || b.contains(&0) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("bad interface name {iface:?}"),
                ));
            }
            let mut req = IfreqData {
                name: [0; IFNAMSIZ],
                data: data.cast(),
                _pad: [0; 24],
            };
            req.name[..b.len()].copy_from_slice(b);
            // SAFETY: `req` lives across the call and is at least the
            // kernel's `struct ifreq`; `ifr_data` is the caller's buffer
            // (this function's contract).
            let r = unsafe {
                libc::ioctl(
                    self.fd.as_raw_fd(),
                    SIOCETHTOOL as _,
                    &mut req as *mut IfreqData,
                )
            };
            if r < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        }

        /// Size of string set `sset` of `iface` (`ETHTOOL_GSSET_INFO`);
        /// `None` when the driver does not have that set.
        pub fn sset_len(&self, iface: &str, sset: u32) -> io::Result<Option<u32>> {
            if sset >= 64 {
                return Err(io::Error::from(io::ErrorKind::InvalidInput));
            }
            // cmd u32, reserved u32, sset_mask u64, data[popcount(mask)] u32.
            let mut buf = [0u8; 32];
            put_u32(&mut buf, 0, ETHTOOL_GSSET_INFO);
            buf[8..16].copy_from_slice(&(1u64 << sset).to_ne_bytes());
            // SAFETY: the kernel writes the 16-byte header and one u32 per
            // bit of the mask it was given (one here): 20 of `buf`'s 32 bytes.
            // `buf` is a live local.
            unsafe { self.ioctl(iface, buf.as_mut_ptr())? };
            let mut m = [0u8; 8];
            m.copy_from_slice(&buf[8..16]);
            if u64::from_ne_bytes(m) & (1u64 << sset) == 0 {
                return Ok(None);
            }
            Ok(Some(u32_at(&buf, 16)))
        }

        /// `ETHTOOL_GSTRINGS` of set `sset` (expecting `count` names) into
        /// `buf`; returns the count the kernel wrote in the header (0 on a
        /// recent kernel when `count` is no longer the set's size; not
        /// checked against `buf`: see `gstrings_names` in `host`). Fails
        /// with `EFAULT` when the answer is longer than `buf`, and with
        /// `InvalidInput` when `count` names do not fit in it.
        pub fn gstrings(
            &self,
            iface: &str,
            sset: u32,
            count: u32,
            buf: &mut Guarded,
        ) -> io::Result<u32> {
            fits(buf, GSTRINGS_HEADER, count, ETH_GSTRING_LEN)?;
            let b = buf.bytes_mut();
            b[..GSTRINGS_HEADER].fill(0);
            put_u32(b, 0, ETHTOOL_GSTRINGS);
            put_u32(b, 4, sset);
            put_u32(b, 8, count);
            // SAFETY: `buf` is a `Guarded` mapping borrowed mutably for the
            // call: whatever count the kernel writes, it stops at the guard page.
            unsafe { self.ioctl(iface, buf.ptr)? };
            Ok(u32_at(buf.bytes(), 8))
        }

        /// `ETHTOOL_GSTATS` (expecting `count` values) into `buf`; returns
        /// the count the kernel wrote in the header (0 on a recent kernel
        /// when `count` is stale). The values are `u64`s in native order
        /// from byte [`GSTATS_HEADER`] on. Fails with `EFAULT` when the
        /// answer is longer than `buf`, `InvalidInput` when `count` values
        /// do not fit in it.
        pub fn gstats(&self, iface: &str, count: u32, buf: &mut Guarded) -> io::Result<u32> {
            fits(buf, GSTATS_HEADER, count, 8)?;
            let b = buf.bytes_mut();
            b[..GSTATS_HEADER].fill(0);
            put_u32(b, 0, ETHTOOL_GSTATS);
            put_u32(b, 4, count);
            // SAFETY: as in `gstrings`: a mutably borrowed `Guarded` mapping.
            unsafe { self.ioctl(iface, buf.ptr)? };
            Ok(u32_at(buf.bytes(), 4))
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn guard_page_stops_an_overlong_kernel_write() {
            // read(2) into a Guarded buffer from /dev/zero asking for more
            // than it holds: the kernel's copy stops at the guard (EFAULT or
            // a short count), never past it.
            let g = Guarded::new(100).unwrap();
            assert_eq!(g.len(), page_size());
            assert!(g.bytes().iter().all(|&b| b == 0));
            let f = std::fs::File::open("/dev/zero").unwrap();
            // SAFETY (test): asks for 2 pages into a 1-page buffer followed
            // by the guard page: what the audit relies on.
            let r = unsafe { libc::read(f.as_raw_fd(), g.ptr.cast(), 2 * g.len()) };
            assert!(
                r == -1 || usize::try_from(r).unwrap() <= g.len(),
                "read {r} bytes into {}",
                g.len()
            );
        }

        #[test]
        fn bad_names_and_missing_interfaces() {
            let s = EthtoolSocket::open().unwrap();
            assert_eq!(
                s.sset_len("a-very-long-interface-name", ETH_SS_STATS)
                    .unwrap_err()
                    .kind(),
                io::ErrorKind::InvalidInput
            );
            let e = s.sset_len("nt-no-such-if0", ETH_SS_STATS).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENODEV), "{e}");
        }
    }
}
