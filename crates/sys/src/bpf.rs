//! A BPF program on a raw tracepoint that counts hits by the value of one of
//! the tracepoint's arguments, per CPU, in a mmap'd array: exact counts by
//! drop reason at a few nanoseconds a hit, where a perf event on the same
//! tracepoint makes the kernel build a trace record for every hit
//! (`perf_trace_*` then `perf_tp_event`).
//!
//! The program is 19 instructions, assembled here (no compiler, no BTF, no
//! object file):
//!
//! ```text
//!  0: r6 = *(u64 *)(r1 + 8 * ARG)      the argument (ctx is u64 args[])
//!  1: if r6 < OVERFLOW goto 3
//!  2: r6 = OVERFLOW                    out of range: the last slot
//!  3: call bpf_get_smp_processor_id
//!  4: if r0 >= CPUS goto 17            a CPU id beyond the map: not counted
//!  5: r0 *= STRIDE
//!  6: r0 += r6                         the key: cpu * STRIDE + slot
//!  7: *(u32 *)(r10 - 4) = r0
//!  8: r2 = r10
//!  9: r2 += -4
//! 10: r1 = MAP (ld_imm64, BPF_PSEUDO_MAP_FD)
//! 12: call bpf_map_lookup_elem
//! 13: if r0 == 0 goto 17
//! 14: r1 = *(u64 *)(r0 + 0)
//! 15: r1 += 1
//! 16: *(u64 *)(r0 + 0) = r1           no lock: the slot is this CPU's, and
//! 17: r0 = 0                          a tracepoint runs with preemption off
//! 18: exit                            (a nested run on the same CPU is
//!                                      skipped by the kernel, not raced)
//! ```
//!
//! Each CPU's slots start `STRIDE` (a multiple of 8) values apart, so two
//! CPUs never write the same cache line. The map is a plain
//! `BPF_MAP_TYPE_ARRAY` created `BPF_F_MMAPABLE` (Linux 5.5), read by user
//! space through a shared mapping without a syscall.
//!
//! Attach: `BPF_RAW_TRACEPOINT_OPEN` (Linux 4.17); the kernel refuses it
//! (`EINVAL`) when the program reads an argument the tracepoint does not
//! have, so on a kernel whose `kfree_skb` has no `reason` (before 5.17)
//! this fails rather than counting garbage. Needs `CAP_BPF` and
//! `CAP_PERFMON` (Linux 5.8) or `CAP_SYS_ADMIN`; kernels before 5.11 also
//! charge the map to `RLIMIT_MEMLOCK`. Closing the value detaches it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_PROG_TYPE_RAW_TRACEPOINT: u32 = 17;
const BPF_F_MMAPABLE: u32 = 1 << 10;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const HELPER_MAP_LOOKUP_ELEM: i32 = 1;
const HELPER_GET_SMP_PROCESSOR_ID: i32 = 8;
/// Most slots per CPU and most CPUs: keeps the map under 64 MiB.
pub const MAX_SLOTS: u32 = 4096;
/// See [`MAX_SLOTS`].
pub const MAX_CPUS: u32 = 2048;

/// `struct bpf_insn`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    /// `dst_reg:4, src_reg:4` in the bit order of the target.
    regs: u8,
    off: i16,
    imm: i32,
}

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    let regs = if cfg!(target_endian = "little") {
        (src << 4) | (dst & 0xf)
    } else {
        (dst << 4) | (src & 0xf)
    };
    Insn {
        code,
        regs,
        off,
        imm,
    }
}

/// The counting program (see the module's listing).
fn program(map_fd: i32, arg: u32, slots: u32, cpus: u32, stride: u32) -> Vec<Insn> {
    let overflow = (slots - 1) as i32;
    // callers bound arg < 16, slots <= MAX_SLOTS, cpus <= MAX_CPUS
    let arg_off = (arg * 8) as i16;
    vec![
        insn(0x79, 6, 1, arg_off, 0),  // ldx dw r6 = [r1 + arg]
        insn(0xa5, 6, 0, 1, overflow), // jlt r6, OVERFLOW, +1
        insn(0xb7, 6, 0, 0, overflow), // mov r6, OVERFLOW
        insn(0x85, 0, 0, 0, HELPER_GET_SMP_PROCESSOR_ID), // call
        insn(0x35, 0, 0, 12, cpus as i32), // jge r0, CPUS, +12
        insn(0x27, 0, 0, 0, stride as i32), // mul r0, STRIDE
        insn(0x0f, 0, 6, 0, 0),        // add r0, r6
        insn(0x63, 10, 0, -4, 0),      // stx w [r10 - 4] = r0
        insn(0xbf, 2, 10, 0, 0),       // mov r2, r10
        insn(0x07, 2, 0, 0, -4),       // add r2, -4
        insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map_fd), // ld_imm64 r1 = map
        insn(0x00, 0, 0, 0, 0),        //   (second half)
        insn(0x85, 0, 0, 0, HELPER_MAP_LOOKUP_ELEM), // call
        insn(0x15, 0, 0, 3, 0),        // jeq r0, 0, +3
        insn(0x79, 1, 0, 0, 0),        // ldx dw r1 = [r0]
        insn(0x07, 1, 0, 0, 1),        // add r1, 1
        insn(0x7b, 0, 1, 0, 0),        // stx dw [r0] = r1
        insn(0xb7, 0, 0, 0, 0),        // mov r0, 0
        insn(0x95, 0, 0, 0, 0),        // exit
    ]
}

/// `union bpf_attr` for `BPF_MAP_CREATE` (up to `map_ifindex`).
#[repr(C)]
#[derive(Default)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
    map_ifindex: u32,
}

/// `union bpf_attr` for `BPF_PROG_LOAD` (up to `expected_attach_type`).
#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// `union bpf_attr` for `BPF_RAW_TRACEPOINT_OPEN` (`name`, `prog_fd`).
#[repr(C)]
#[derive(Default)]
struct RawTpOpen {
    name: u64,
    prog_fd: u32,
    pad: u32,
}

fn name16(s: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    for (d, b) in n.iter_mut().zip(s.bytes().take(15)) {
        *d = b;
    }
    n
}

/// `bpf(cmd, attr, size)`: a new descriptor.
///
/// # Safety
/// `attr` must be the `bpf_attr` variant `cmd` expects, and every pointer
/// in it must be valid for the call.
unsafe fn bpf<T>(cmd: libc::c_long, attr: &T) -> io::Result<OwnedFd> {
    // SAFETY: the caller's contract; the size is the struct's own.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *const T,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let raw = libc::c_int::try_from(r).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: the syscall returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Hits of a raw tracepoint counted by one argument's value, per CPU.
#[derive(Debug)]
pub struct ArgCounter {
    /// Holds the attachment; closing it detaches the program.
    _link: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
    map: *mut u8,
    map_len: usize,
    slots: u32,
    cpus: u32,
    stride: u32,
}

// SAFETY: the mapping is owned by this value alone (like a `Box`); the
// kernel's program writes it concurrently, which is why it is only read
// through atomic loads of aligned 8-byte words.
unsafe impl Send for ArgCounter {}

impl ArgCounter {
    /// Load and attach the counter on raw tracepoint `tracepoint` (the
    /// name in `TRACE_EVENT`, e.g. `kfree_skb`), counting hits by the
    /// value of argument `arg` (0-based, in the tracepoint's `TP_PROTO`
    /// order) in `slots` slots: values `0..slots-1` each their own, every
    /// larger value in the last. `cpus`: CPU ids counted (`0..cpus`, the
    /// highest possible id plus one); a hit on a higher id is not counted.
    pub fn attach(tracepoint: &str, arg: u32, slots: u32, cpus: u32) -> io::Result<ArgCounter> {
        let einval = || io::Error::from_raw_os_error(libc::EINVAL);
        if arg >= 16 || !(2..=MAX_SLOTS).contains(&slots) || !(1..=MAX_CPUS).contains(&cpus) {
            return Err(einval());
        }
        let stride = slots.next_multiple_of(8);
        let entries = stride * cpus;
        let create = MapCreate {
            map_type: BPF_MAP_TYPE_ARRAY,
            key_size: 4,
            value_size: 8,
            max_entries: entries,
            map_flags: BPF_F_MMAPABLE,
            map_name: name16("nettune_drops"),
            ..MapCreate::default()
        };
        // SAFETY: a MAP_CREATE attribute without pointers.
        let map = unsafe { bpf(BPF_MAP_CREATE, &create) }?;
        let insns = program(map.as_raw_fd(), arg, slots, cpus, stride);
        let license = c"GPL";
        let mut load = ProgLoad {
            prog_type: BPF_PROG_TYPE_RAW_TRACEPOINT,
            insn_cnt: insns.len() as u32,
            insns: insns.as_ptr() as u64,
            license: license.as_ptr() as u64,
            prog_name: name16("nettune_drops"),
            ..ProgLoad::default()
        };
        // SAFETY: `insns` and `license` live through the call.
        let prog = match unsafe { bpf(BPF_PROG_LOAD, &load) } {
            Ok(p) => p,
            Err(e)
                if e.raw_os_error() == Some(libc::EACCES)
                    || e.raw_os_error() == Some(libc::EINVAL) =>
            {
                // the verifier said no: load again for its log, to say why
                let mut log = vec![0u8; 1 << 16];
                load.log_level = 1;
                load.log_size = log.len() as u32;
                load.log_buf = log.as_mut_ptr() as u64;
                // SAFETY: as above, and `log` is `log_size` writable bytes.
                let _ = unsafe { bpf(BPF_PROG_LOAD, &load) };
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let text = String::from_utf8_lossy(&log[..end]);
                let last = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                return Err(io::Error::new(e.kind(), format!("{e}; verifier: {last}")));
            }
            Err(e) => return Err(e),
        };
        let name = std::ffi::CString::new(tracepoint).map_err(|_| einval())?;
        let open = RawTpOpen {
            name: name.as_ptr() as u64,
            prog_fd: prog.as_raw_fd() as u32,
            pad: 0,
        };
        // SAFETY: `name` lives through the call.
        let link = unsafe { bpf(BPF_RAW_TRACEPOINT_OPEN, &open) }?;
        let page = crate::page_size();
        let map_len = (entries as usize * 8).next_multiple_of(page);
        // SAFETY: a new shared read-only mapping of the map's values at an
        // address the kernel picks; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                map.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(ArgCounter {
            _link: link,
            _prog: prog,
            _map: map,
            map: p.cast(),
            map_len,
            slots,
            cpus,
            stride,
        })
    }

    /// The counts by slot, summed over CPUs, since the attach.
    pub fn counts(&self) -> Vec<u64> {
        let mut out = vec![0u64; self.slots as usize];
        for cpu in 0..self.cpus as usize {
            for (slot, v) in out.iter_mut().enumerate() {
                let i = cpu * self.stride as usize + slot;
                // SAFETY: i < stride * cpus = the map's entries, whose
                // `8 * entries` bytes are mapped; 8-aligned (page-aligned
                // start); the program writes these words whole.
                let w = unsafe { &*(self.map.add(i * 8) as *const AtomicU64) };
                *v = v.wrapping_add(w.load(Ordering::Relaxed));
            }
        }
        out
    }

    /// The number of slots (the last counts every larger value).
    pub fn slots(&self) -> u32 {
        self.slots
    }
}

impl Drop for ArgCounter {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `attach` with this length and is
        // unmapped once; no reference into it outlives `self`.
        unsafe {
            libc::munmap(self.map.cast(), self.map_len);
        }
    }
}

/// A program that does nothing (`r0 = 0; exit`) attached to a raw
/// tracepoint: the floor any BPF probe on it costs (the tracepoint's call
/// into BPF), for benchmarks. Dropping it detaches the program.
#[derive(Debug)]
pub struct EmptyProgram {
    _link: OwnedFd,
    _prog: OwnedFd,
}

impl EmptyProgram {
    /// Load `r0 = 0; exit` and attach it on raw tracepoint `tracepoint`.
    pub fn attach(tracepoint: &str) -> io::Result<EmptyProgram> {
        let insns = [insn(0xb7, 0, 0, 0, 0), insn(0x95, 0, 0, 0, 0)];
        let license = c"GPL";
        let load = ProgLoad {
            prog_type: BPF_PROG_TYPE_RAW_TRACEPOINT,
            insn_cnt: insns.len() as u32,
            insns: insns.as_ptr() as u64,
            license: license.as_ptr() as u64,
            prog_name: name16("nettune_empty"),
            ..ProgLoad::default()
        };
        // SAFETY: `insns` and `license` live through the call.
        let prog = unsafe { bpf(BPF_PROG_LOAD, &load) }?;
        let name = std::ffi::CString::new(tracepoint)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let open = RawTpOpen {
            name: name.as_ptr() as u64,
            prog_fd: prog.as_raw_fd() as u32,
            pad: 0,
        };
        // SAFETY: `name` lives through the call.
        let link = unsafe { bpf(BPF_RAW_TRACEPOINT_OPEN, &open) }?;
        Ok(EmptyProgram {
            _link: link,
            _prog: prog,
        })
    }
}

/// The highest possible CPU id plus one, from
/// `/sys/devices/system/cpu/possible` (`0-3`, `0,2-5`): the CPU ids a
/// program can run on, for [`ArgCounter::attach`].
pub fn possible_cpus(list: &str) -> Option<u32> {
    let mut max = None;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let hi = part.rsplit('-').next()?.trim().parse::<u32>().ok()?;
        max = max.max(Some(hi));
    }
    max.and_then(|m| m.checked_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<Insn>(), 8);
        assert_eq!(std::mem::size_of::<MapCreate>(), 48);
        assert_eq!(std::mem::size_of::<ProgLoad>(), 72);
        assert_eq!(std::mem::size_of::<RawTpOpen>(), 16);
    }

    #[test]
    fn jumps_land_on_the_exit_block() {
        let p = program(3, 2, 130, 2, 136);
        assert_eq!(p.len(), 19);
        // every jump's target is inside the program and is insn 3 or 17
        for (pc, i) in p.iter().enumerate() {
            if matches!(i.code, 0xa5 | 0x35 | 0x15) {
                let to = pc as i64 + 1 + i64::from(i.off);
                assert!(to == 3 || to == 17, "insn {pc} jumps to {to}");
            }
        }
        assert_eq!(p[18].code, 0x95);
        assert_eq!(p[0].off, 16, "reason is args[2]");
    }

    #[test]
    fn possible_cpu_lists() {
        assert_eq!(possible_cpus("0-1\n"), Some(2));
        assert_eq!(possible_cpus("0,2-5"), Some(6));
        assert_eq!(possible_cpus("0"), Some(1));
        assert_eq!(possible_cpus(""), None);
        assert_eq!(possible_cpus("x"), None);
    }

    /// On the live kernel when allowed (root, 5.17+): UDP datagrams to a
    /// closed loopback port are each a drop (NO_SOCKET), counted.
    #[test]
    fn counts_drops_to_a_closed_loopback_port() {
        let cpus = std::fs::read_to_string("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|t| possible_cpus(&t))
            .expect("possible CPUs");
        let c = match ArgCounter::attach("kfree_skb", 2, 600, cpus) {
            Ok(c) => c,
            Err(e) => {
                let ci = std::env::var("CI").as_deref() == Ok("true");
                // SAFETY: geteuid takes no arguments and cannot fail.
                let root = unsafe { libc::geteuid() } == 0;
                assert!(!(ci && root), "refused as root: {e}");
                eprintln!("skipped: the raw tracepoint was refused (not root?): {e}");
                return;
            }
        };
        assert_eq!(c.slots(), 600);
        let before: u64 = c.counts().iter().sum();
        // a port that was free a moment ago: nothing listens there
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("bind")
            .port();
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        for _ in 0..100 {
            let _ = s.send_to(b"x", ("127.0.0.1", port));
        }
        let after: u64 = c.counts().iter().sum();
        assert!(after - before >= 100, "{before} then {after}");
        assert_eq!(c.counts().len(), 600);
    }
}
