//! A BPF program that counts hits of a raw tracepoint or of a kernel
//! function's entry (fentry) by the value of one of its arguments, per
//! CPU, in a mmap'd array: exact counts by drop reason at a few
//! nanoseconds a hit, where a perf event on the same tracepoint makes the
//! kernel build a trace record for every hit (`perf_trace_*` then
//! `perf_tp_event`).
//!
//! The program is 21 instructions, assembled here (no compiler, no object
//! file):
//!
//! ```text
//!  0: r6 = *(u64 *)(r1 + 8 * ARG)      the argument (ctx is u64 args[])
//!  1: w6 = w6                          its low 32 bits (an enum's upper
//!                                      register half is not defined at
//!                                      fentry)
//!  2: if r6 < SKIP goto 19             not a drop (SKB_CONSUMED...)
//!  3: if r6 < OVERFLOW goto 5
//!  4: r6 = OVERFLOW                    out of range: the last slot
//!  5: call bpf_get_smp_processor_id
//!  6: if r0 >= CPUS goto 19            a CPU id beyond the map: not counted
//!  7: r0 *= STRIDE
//!  8: r0 += r6                         the key: cpu * STRIDE + slot
//!  9: *(u32 *)(r10 - 4) = r0
//! 10: r2 = r10
//! 11: r2 += -4
//! 12: r1 = MAP (ld_imm64, BPF_PSEUDO_MAP_FD)
//! 14: call bpf_map_lookup_elem
//! 15: if r0 == 0 goto 19
//! 16: r1 = *(u64 *)(r0 + 0)
//! 17: r1 += 1
//! 18: *(u64 *)(r0 + 0) = r1           no lock: the slot is this CPU's, and
//! 19: r0 = 0                          the program runs with migration off
//! 20: exit                            (a nested run on the same CPU is
//!                                      skipped by the kernel, not raced)
//! ```
//!
//! Each CPU's slots start `STRIDE` (a multiple of 8) values apart, so two
//! CPUs never write the same cache line. The map is a plain
//! `BPF_MAP_TYPE_ARRAY` created `BPF_F_MMAPABLE` (Linux 5.5), read by user
//! space through a shared mapping without a syscall.
//!
//! Attach ([`Hook`]): `BPF_RAW_TRACEPOINT_OPEN` (Linux 4.17) with the
//! tracepoint's name, or, for an fentry program (`BPF_PROG_TYPE_TRACING`,
//! `BPF_TRACE_FENTRY`, the function's BTF id at load, Linux 5.5), with no
//! name. The kernel refuses (`EINVAL`) a program that reads an argument
//! the tracepoint or function does not have, so on a kernel whose
//! `kfree_skb` has no `reason` (before 5.17) this fails rather than
//! counting garbage. Needs `CAP_BPF` and `CAP_PERFMON` (Linux 5.8) or
//! `CAP_SYS_ADMIN`; kernels before 5.11 also charge the map to
//! `RLIMIT_MEMLOCK`. Closing the value detaches it.

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
fn program(map_fd: i32, arg: u32, skip: u32, slots: u32, cpus: u32, stride: u32) -> Vec<Insn> {
    let overflow = (slots - 1) as i32;
    // callers bound arg < 16, skip < slots, slots <= MAX_SLOTS,
    // cpus <= MAX_CPUS
    let arg_off = (arg * 8) as i16;
    vec![
        insn(0x79, 6, 1, arg_off, 0),      // ldx dw r6 = [r1 + arg]
        insn(0xbc, 6, 6, 0, 0),            // mov32 r6, r6 (the enum's 32 bits)
        insn(0xa5, 6, 0, 16, skip as i32), // jlt r6, SKIP, +16 (not a drop)
        insn(0xa5, 6, 0, 1, overflow),     // jlt r6, OVERFLOW, +1
        insn(0xb7, 6, 0, 0, overflow),     // mov r6, OVERFLOW
        insn(0x85, 0, 0, 0, HELPER_GET_SMP_PROCESSOR_ID), // call
        insn(0x35, 0, 0, 12, cpus as i32), // jge r0, CPUS, +12
        insn(0x27, 0, 0, 0, stride as i32), // mul r0, STRIDE
        insn(0x0f, 0, 6, 0, 0),            // add r0, r6
        insn(0x63, 10, 0, -4, 0),          // stx w [r10 - 4] = r0
        insn(0xbf, 2, 10, 0, 0),           // mov r2, r10
        insn(0x07, 2, 0, 0, -4),           // add r2, -4
        insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map_fd), // ld_imm64 r1 = map
        insn(0x00, 0, 0, 0, 0),            //   (second half)
        insn(0x85, 0, 0, 0, HELPER_MAP_LOOKUP_ELEM), // call
        insn(0x15, 0, 0, 3, 0),            // jeq r0, 0, +3
        insn(0x79, 1, 0, 0, 0),            // ldx dw r1 = [r0]
        insn(0x07, 1, 0, 0, 1),            // add r1, 1
        insn(0x7b, 0, 1, 0, 0),            // stx dw [r0] = r1
        insn(0xb7, 0, 0, 0, 0),            // mov r0, 0
        insn(0x95, 0, 0, 0, 0),            // exit
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

/// `union bpf_attr` for `BPF_PROG_LOAD` (up to `core_relo_cnt`; the
/// kernel takes a larger attribute than it knows when the rest is zero).
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
    prog_btf_fd: u32,
    func_info_rec_size: u32,
    func_info: u64,
    func_info_cnt: u32,
    line_info_rec_size: u32,
    line_info: u64,
    line_info_cnt: u32,
    /// The traced function's BTF type id (fentry, Linux 5.5).
    attach_btf_id: u32,
    /// 0: `attach_btf_id` is vmlinux's.
    attach_btf_obj_fd: u32,
    core_relo_cnt: u32,
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

/// Where a program attaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook<'a> {
    /// A raw tracepoint by its name in `TRACE_EVENT` (e.g. `kfree_skb`);
    /// the context is the tracepoint's `TP_PROTO` arguments as `u64`s.
    RawTracepoint(&'a str),
    /// fentry of the kernel function whose vmlinux BTF type id
    /// (`BTF_KIND_FUNC`) this is ([`crate::btf::Btf::function`]); the
    /// context is the function's arguments as `u64`s. Linux 5.5, x86-64
    /// or arm64 with a BPF JIT and ftrace's direct calls.
    Fentry {
        /// The function's BTF type id.
        btf_id: u32,
    },
}

const BPF_PROG_TYPE_TRACING: u32 = 26;
const BPF_TRACE_FENTRY: u32 = 24;

/// Load `insns` for `hook` and attach it: (program, link).
fn load_and_attach(hook: Hook<'_>, insns: &[Insn], name: &str) -> io::Result<(OwnedFd, OwnedFd)> {
    let license = c"GPL";
    let mut load = ProgLoad {
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        prog_name: name16(name),
        ..ProgLoad::default()
    };
    match hook {
        Hook::RawTracepoint(_) => load.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
        Hook::Fentry { btf_id } => {
            load.prog_type = BPF_PROG_TYPE_TRACING;
            load.expected_attach_type = BPF_TRACE_FENTRY;
            load.attach_btf_id = btf_id;
        }
    }
    // SAFETY: `insns` and `license` live through the call.
    let prog = match unsafe { bpf(BPF_PROG_LOAD, &load) } {
        Ok(p) => p,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EACCES | libc::EINVAL | libc::EPERM)
            ) =>
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
    // fentry: no name; the program's attach_btf_id says where
    let name = match hook {
        Hook::RawTracepoint(tp) => Some(
            std::ffi::CString::new(tp).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
        ),
        Hook::Fentry { .. } => None,
    };
    let open = RawTpOpen {
        name: name.as_ref().map_or(0, |n| n.as_ptr() as u64),
        prog_fd: prog.as_raw_fd() as u32,
        pad: 0,
    };
    // SAFETY: `name` (when there is one) lives through the call.
    let link = unsafe { bpf(BPF_RAW_TRACEPOINT_OPEN, &open) }?;
    Ok((prog, link))
}

impl ArgCounter {
    /// [`ArgCounter::attach_to`] on raw tracepoint `tracepoint`, counting
    /// every value.
    pub fn attach(tracepoint: &str, arg: u32, slots: u32, cpus: u32) -> io::Result<ArgCounter> {
        ArgCounter::attach_to(Hook::RawTracepoint(tracepoint), arg, 0, slots, cpus)
    }

    /// Load and attach the counter on `hook`, counting hits by the low 32
    /// bits of argument `arg` (0-based, in the tracepoint's `TP_PROTO` or
    /// the function's order) in `slots` slots: values `0..slots-1` each
    /// their own, every larger value in the last; values below `skip` are
    /// not counted. `cpus`: CPU ids counted (`0..cpus`, the highest
    /// possible id plus one); a hit on a higher id is not counted.
    pub fn attach_to(
        hook: Hook<'_>,
        arg: u32,
        skip: u32,
        slots: u32,
        cpus: u32,
    ) -> io::Result<ArgCounter> {
        let einval = || io::Error::from_raw_os_error(libc::EINVAL);
        if arg >= 16
            || !(2..=MAX_SLOTS).contains(&slots)
            || skip >= slots
            || !(1..=MAX_CPUS).contains(&cpus)
        {
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
        let insns = program(map.as_raw_fd(), arg, skip, slots, cpus, stride);
        let (prog, link) = load_and_attach(hook, &insns, "nettune_drops")?;
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
        EmptyProgram::attach_to(Hook::RawTracepoint(tracepoint))
    }

    /// Load `r0 = 0; exit` and attach it on `hook`.
    pub fn attach_to(hook: Hook<'_>) -> io::Result<EmptyProgram> {
        let insns = [insn(0xb7, 0, 0, 0, 0), insn(0x95, 0, 0, 0, 0)];
        let (prog, link) = load_and_attach(hook, &insns, "nettune_empty")?;
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
        assert_eq!(std::mem::size_of::<ProgLoad>(), 120);
        assert_eq!(std::mem::size_of::<RawTpOpen>(), 16);
    }

    #[test]
    fn jumps_land_on_the_exit_block() {
        let p = program(3, 2, 2, 130, 2, 136);
        assert_eq!(p.len(), 21);
        // every jump's target is inside the program and is insn 5 or 19
        for (pc, i) in p.iter().enumerate() {
            if matches!(i.code, 0xa5 | 0x35 | 0x15) {
                let to = pc as i64 + 1 + i64::from(i.off);
                assert!(to == 5 || to == 19, "insn {pc} jumps to {to}");
            }
        }
        assert_eq!(p[19].code, 0xb7);
        assert_eq!(p[20].code, 0x95);
        assert_eq!(p[2].imm, 2, "values below 2 are not drops");
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

    /// Whether a refusal may skip a live test: not as root in CI.
    fn may_skip(e: &io::Error) -> bool {
        let ci = std::env::var("CI").as_deref() == Ok("true");
        // SAFETY: geteuid takes no arguments and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        assert!(!(ci && root), "refused as root: {e}");
        eprintln!("skipped: the program was refused (not root?): {e}");
        true
    }

    /// 100 UDP datagrams to a closed loopback port: each a NO_SOCKET drop.
    fn send_to_a_closed_port() {
        // a port that was free a moment ago: nothing listens there
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.local_addr())
            .expect("bind")
            .port();
        let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        for _ in 0..100 {
            let _ = s.send_to(b"x", ("127.0.0.1", port));
        }
    }

    fn cpus() -> u32 {
        std::fs::read_to_string("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|t| possible_cpus(&t))
            .expect("possible CPUs")
    }

    /// On the live kernel when allowed (root, 5.17+): UDP datagrams to a
    /// closed loopback port are each a drop (NO_SOCKET), counted.
    #[test]
    fn counts_drops_to_a_closed_loopback_port() {
        let c = match ArgCounter::attach("kfree_skb", 2, 600, cpus()) {
            Ok(c) => c,
            Err(e) if may_skip(&e) => return,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(c.slots(), 600);
        let before: u64 = c.counts().iter().sum();
        send_to_a_closed_port();
        let after: u64 = c.counts().iter().sum();
        assert!(after - before >= 100, "{before} then {after}");
        assert_eq!(c.counts().len(), 600);
    }

    /// The same at fentry of the drop function (BTF), in the reason's
    /// own slot, and nothing in the skipped (not-a-drop) slots.
    #[test]
    fn counts_drops_at_fentry_of_the_drop_function() {
        let Ok(data) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let btf = crate::btf::Btf::parse(&data).expect("BTF");
        let f = crate::btf::drop_function(&btf).expect("drop function");
        let no_socket = btf
            .enum_value("skb_drop_reason", "SKB_DROP_REASON_NO_SOCKET")
            .and_then(|v| usize::try_from(v).ok())
            .expect("NO_SOCKET");
        let hook = Hook::Fentry { btf_id: f.btf_id };
        let c = match ArgCounter::attach_to(hook, f.reason_arg, f.skip, 600, cpus()) {
            Ok(c) => c,
            // as root: a kernel policy, not a permission (6.18-fc here
            // refuses every fentry/fexit load, before the verifier)
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                eprintln!("skipped: this kernel refuses fentry programs: {e}");
                return;
            }
            Err(e) if may_skip(&e) => return,
            Err(e) => panic!("{e}"),
        };
        let before = c.counts()[no_socket];
        send_to_a_closed_port();
        let counts = c.counts();
        assert!(
            counts[no_socket] - before >= 100,
            "{before} then {counts:?}"
        );
        assert!(
            counts[..f.skip as usize].iter().all(|&n| n == 0),
            "{counts:?}"
        );
    }
}
