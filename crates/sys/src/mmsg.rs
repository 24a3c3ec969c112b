//! `recvmmsg`/`sendmmsg` batches over preallocated, reused headers (rustix
//! 1.1 has `sendmmsg` but no `recvmmsg`, and its `MMsgHdr` borrows its
//! buffers per call, so these stay on libc: no allocation per batch).

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, BorrowedFd};

/// Most datagrams one batch holds.
pub const MAX_BATCH: usize = 256;

/// Preallocated buffers and headers for `recvmmsg`/`sendmmsg` batches.
///
/// Slot `i` is `bufs[i*slot .. (i+1)*slot]`; after a receive, `len(i)` is the
/// datagram's length and `addr(i)` its source. Nothing allocates per call.
pub struct Mmsg {
    slot: usize,
    bufs: Vec<u8>,
    iov: Vec<libc::iovec>,
    hdr: Vec<libc::mmsghdr>,
    addr: Vec<libc::sockaddr_storage>,
    namelen: Vec<libc::socklen_t>,
}

impl std::fmt::Debug for Mmsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mmsg")
            .field("slots", &self.hdr.len())
            .field("slot", &self.slot)
            .finish()
    }
}

impl Mmsg {
    /// `n` slots of `slot` bytes each.
    pub fn new(n: usize, slot: usize) -> Mmsg {
        let n = n.clamp(1, MAX_BATCH);
        Mmsg {
            slot,
            bufs: vec![0u8; n * slot],
            // SAFETY: iovec/mmsghdr/sockaddr_storage are plain old data and
            // all-zero (null pointers, zero lengths) is a valid value for each.
            iov: (0..n).map(|_| unsafe { zeroed() }).collect(),
            hdr: (0..n).map(|_| unsafe { zeroed() }).collect(),
            addr: (0..n).map(|_| unsafe { zeroed() }).collect(),
            namelen: vec![0; n],
        }
    }

    /// Number of slots.
    #[inline]
    pub fn slots(&self) -> usize {
        self.hdr.len()
    }

    /// The writable bytes of slot `i`.
    #[inline]
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i * self.slot..(i + 1) * self.slot]
    }

    /// Received datagram `i` (valid after [`Mmsg::recv`]).
    #[inline]
    pub fn msg(&self, i: usize) -> &[u8] {
        let len = (self.hdr[i].msg_len as usize).min(self.slot);
        &self.bufs[i * self.slot..i * self.slot + len]
    }

    /// Length of received datagram `i`.
    #[inline]
    pub fn len(&self, i: usize) -> usize {
        self.hdr[i].msg_len as usize
    }

    fn prep(&mut self, n: usize, len: impl Fn(usize) -> usize, names: bool) {
        let base = self.bufs.as_mut_ptr();
        for i in 0..n {
            let l = len(i).min(self.slot);
            // SAFETY: i*slot + l <= bufs.len(), so the pointer stays in bounds.
            self.iov[i].iov_base = unsafe { base.add(i * self.slot) }.cast();
            self.iov[i].iov_len = l;
            // SAFETY: msghdr is plain old data; zero is valid.
            let mut h: libc::msghdr = unsafe { zeroed() };
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
            if names {
                h.msg_name = (&mut self.addr[i] as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = self.namelen[i];
            }
            self.hdr[i].msg_hdr = h;
            self.hdr[i].msg_len = 0;
        }
    }

    /// `recvmmsg` up to `n` datagrams (all slots if `n` is larger).
    /// With `dontwait`, returns `WouldBlock` when nothing is queued.
    pub fn recv(&mut self, fd: BorrowedFd<'_>, n: usize, dontwait: bool) -> io::Result<usize> {
        let n = n.min(self.slots());
        for l in self.namelen.iter_mut().take(n) {
            *l = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        let slot = self.slot;
        self.prep(n, |_| slot, true);
        let flags = if dontwait {
            libc::MSG_DONTWAIT
        } else {
            libc::MSG_WAITFORONE
        };
        // SAFETY: hdr[..n] point at iov/bufs/addr owned by self, all valid
        // for writes of the lengths given; no timeout pointer.
        let r = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.hdr.as_mut_ptr(),
                n as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let r = r as usize;
        for i in 0..r {
            self.namelen[i] = self.hdr[i].msg_hdr.msg_namelen;
        }
        Ok(r)
    }

    fn sendmmsg(
        &mut self,
        fd: BorrowedFd<'_>,
        from: usize,
        n: usize,
        flags: i32,
    ) -> io::Result<usize> {
        // SAFETY: hdr[from..from+n] were prepared by `prep` and point into
        // buffers owned by self.
        let r = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                self.hdr.as_mut_ptr().add(from),
                n as libc::c_uint,
                flags,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// `sendmmsg` of the first `n` slots, `len` bytes each, on a connected
    /// socket. Returns how many were sent (fewer on `dontwait` back-pressure).
    pub fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        n: usize,
        len: usize,
        flags: i32,
    ) -> io::Result<usize> {
        let n = n.min(self.slots());
        self.prep(n, |_| len, false);
        let mut done = 0;
        while done < n {
            match self.sendmmsg(fd, done, n - done, flags) {
                Ok(0) => break,
                Ok(k) => done += k,
                Err(e) if done > 0 && e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// Send the `n` datagrams just received back to their sources.
    pub fn echo(&mut self, fd: BorrowedFd<'_>, n: usize) -> io::Result<usize> {
        let m = n.min(self.slots());
        let mut lens = [0usize; MAX_BATCH];
        for (i, l) in lens.iter_mut().enumerate().take(m) {
            *l = self.hdr[i].msg_len as usize;
        }
        self.prep(m, |i| lens[i], true);
        let mut done = 0;
        while done < m {
            match self.sendmmsg(fd, done, m - done, 0) {
                Ok(0) => break,
                Ok(k) => done += k,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}
