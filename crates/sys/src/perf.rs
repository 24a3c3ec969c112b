//! `perf_event_open(2)` on a tracepoint, one event per CPU: its count (read
//! with `read(2)`, exact: every hit adds one whatever the sample period) and
//! its sampled raw records (`PERF_SAMPLE_RAW`) in a mmap'd ring buffer.
//!
//! The record bytes are copied out as they are; parsing them is the model's
//! (`model::drops::record`), so nothing here interprets kernel data beyond
//! the ring's head and tail.
//!
//! Needs `CAP_PERFMON` (or `CAP_SYS_ADMIN`, or `kernel.perf_event_paranoid`
//! at -1) for a system-wide event with raw samples; fails with `EACCES` or
//! `EPERM` otherwise.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// `PERF_TYPE_TRACEPOINT`.
const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `PERF_SAMPLE_RAW`.
const PERF_SAMPLE_RAW: u64 = 1 << 10;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `PERF_EVENT_IOC_ENABLE` (`_IO('$', 0)`).
const IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE` (`_IO('$', 1)`).
const IOC_DISABLE: libc::c_ulong = 0x2401;
/// `PERF_EVENT_IOC_PERIOD` (`_IOW('$', 4, __u64)`).
const IOC_PERIOD: libc::c_ulong = 0x4008_2404;
/// `PERF_EVENT_IOC_SET_FILTER` (`_IOW('$', 6, char *)`).
const IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
/// Offset of `data_head` in `struct perf_event_mmap_page` (after 1 KiB of
/// header and reserved words; stable since Linux 3.x).
const DATA_HEAD: usize = 1024;
/// Offset of `data_tail`.
const DATA_TAIL: usize = 1032;
/// `attr.disabled` bit of the flags word.
const FLAG_DISABLED: u64 = 1;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes), which
/// every kernel since 4.1 accepts; the fields nettune sets are named.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

use crate::page_size;

/// One tracepoint event on one CPU, counting and sampling every
/// `period`-th hit into its own ring buffer.
#[derive(Debug)]
pub struct TracepointEvent {
    fd: OwnedFd,
    /// The mapping: one metadata page, then `data_len` bytes of ring.
    map: *mut u8,
    map_len: usize,
    data_len: usize,
    page: usize,
}

// SAFETY: the mapping is owned by this value alone (like a `Box`); the kernel
// writes the ring concurrently, which is why it is only read through
// volatile copies after an acquire load of `data_head`.
unsafe impl Send for TracepointEvent {}

impl TracepointEvent {
    /// Open tracepoint `id` (its tracefs `id` file) on `cpu` for every
    /// process, sampling one hit in `period` with a ring of `ring_pages`
    /// pages (rounded up to a power of two), and enable it.
    pub fn open(id: u64, cpu: u32, period: u64, ring_pages: usize) -> io::Result<Self> {
        let attr = Attr {
            kind: PERF_TYPE_TRACEPOINT,
            size: std::mem::size_of::<Attr>() as u32,
            config: id,
            sample_period: period.max(1),
            sample_type: PERF_SAMPLE_RAW,
            flags: FLAG_DISABLED,
            // never woken: the ring is drained on a timer
            wakeup_events: 0,
            ..Attr::default()
        };
        let cpu =
            libc::c_int::try_from(cpu).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `attr` is a live, initialised `perf_event_attr` of the size
        // it states; the other arguments are integers.
        let r = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const Attr,
                -1 as libc::pid_t,
                cpu,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let raw =
            libc::c_int::try_from(r).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
        // SAFETY: the syscall returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let page = page_size();
        let pages = ring_pages.clamp(1, 1 << 12).next_power_of_two();
        // at most 4096 pages of at most a few MiB each: no overflow
        let data_len = pages * page;
        let map_len = data_len + page;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a new shared mapping of the event's ring at an address the
        // kernel picks; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ev = TracepointEvent {
            fd,
            map: p.cast(),
            map_len,
            data_len,
            page,
        };
        ev.ioctl(IOC_ENABLE, 0)?;
        Ok(ev)
    }

    fn ioctl(&self, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
        // SAFETY: the descriptor is ours; `arg` is an integer or (PERIOD) a
        // pointer the caller keeps alive for the call.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), req as _, arg) };
        crate::cvt(r).map(|_| ())
    }

    /// The event's count: every hit on this CPU since it was opened.
    pub fn count(&self) -> io::Result<u64> {
        let mut v = [0u8; 8];
        // SAFETY: `v` is 8 writable bytes for the call.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), v.as_mut_ptr().cast(), v.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n != 8 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        Ok(u64::from_ne_bytes(v))
    }

    /// Count and sample again (`PERF_EVENT_IOC_ENABLE`).
    pub fn enable(&self) -> io::Result<()> {
        self.ioctl(IOC_ENABLE, 0)
    }

    /// Stop counting and sampling (`PERF_EVENT_IOC_DISABLE`): the kernel
    /// builds no record for the tracepoint's hits while no event on it is
    /// enabled (other watchers aside).
    pub fn disable(&self) -> io::Result<()> {
        self.ioctl(IOC_DISABLE, 0)
    }

    /// Sample one hit in `period` from now on (`PERF_EVENT_IOC_PERIOD`).
    pub fn set_period(&self, period: u64) -> io::Result<()> {
        let p: u64 = period.max(1);
        self.ioctl(IOC_PERIOD, &p as *const u64 as libc::c_ulong)
    }

    /// Count and sample only the hits that match a tracepoint filter
    /// (`reason == 3 || reason == 6`: the syntax of tracefs' `filter`
    /// files, Documentation/trace/events.rst). The kernel checks it.
    pub fn set_filter(&self, filter: &str) -> io::Result<()> {
        let c = std::ffi::CString::new(filter)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        self.ioctl(IOC_SET_FILTER, c.as_ptr() as libc::c_ulong)
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: `off` is DATA_HEAD or DATA_TAIL, 8-aligned inside the
        // metadata page, which lives as long as `self`; the kernel accesses
        // these words atomically too.
        unsafe { &*(self.map.add(off) as *const AtomicU64) }
    }

    /// Append the ring's unread records to `out` (whole records, in order,
    /// the wrap undone) and mark them read. Returns the bytes appended.
    pub fn drain(&self, out: &mut Vec<u8>) -> usize {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        let avail = usize::try_from(head.wrapping_sub(tail))
            .unwrap_or(usize::MAX)
            .min(self.data_len);
        let size = self.data_len as u64;
        let start = (tail % size) as usize;
        let first = avail.min(self.data_len - start);
        out.reserve(avail);
        // SAFETY: the data area is `data_len` bytes after the first page;
        // `start + first <= data_len` and `avail - first <= start`, so both
        // copies stay inside it. The kernel does not write the unread part
        // between head and tail until data_tail moves past it.
        unsafe {
            let data = self.map.add(self.page);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(data, avail - first));
        }
        self.word(DATA_TAIL)
            .store(tail.wrapping_add(avail as u64), Ordering::Release);
        avail
    }
}

impl Drop for TracepointEvent {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `open` with this length and is
        // unmapped once; no reference into it outlives `self`.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
    }
}

/// `mount -t tracefs nodev TARGET`: tracefs where it is not mounted
/// (needs `CAP_SYS_ADMIN`). Linux 4.1 and later.
pub fn mount_tracefs(target: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let target = std::ffi::CString::new(target.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: three NUL-terminated strings that live through the call and a
    // null data pointer, which tracefs accepts.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    crate::cvt(r).map(|_| ())
}

#[cfg(test)]
mod tests {
    #[test]
    fn attr_is_the_kernels_ver5_size() {
        assert_eq!(std::mem::size_of::<super::Attr>(), 112);
    }
}
