//! The userspace delay line, for kernels without netem (as mahimahi does):
//! two TUN devices, one in each of two lab namespaces, and a forwarder
//! thread in this process that holds every packet read from one until its
//! due time (arrival + delay ± jitter, from a seeded RNG), drops it with
//! probability `loss` or when the queue is over its limit, and then writes it
//! to the other.
//!
//! The forwarder is batched: one wake-up reads every packet that is waiting
//! on either device (up to [`BATCH`] per device before it looks at the clock
//! again) and writes every packet that is due; it does not call poll while a
//! device still has packets waiting. Packet buffers come from a pool that
//! grows to the most packets held at once and is then reused, so the steady
//! state allocates nothing per packet. (A TUN fd reads and writes one packet
//! per syscall; there is no batched read on it without a vnet header.)
//!
//! The TUN fds stay with this process while the interfaces live in the
//! namespaces; nothing is configured in the root namespace (the devices are
//! moved out right after creation) and the kernel removes both devices when
//! the fds close on drop.

use crate::{run, End, LabError, Netns};
use model::stats::SplitMix64;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest packet read from a TUN device (IFF_NO_PI, no offloads: ≤ MTU).
const MAX_PACKET: usize = 65_536;
/// Most packets read from one device, or written to one, before the
/// forwarder looks at the clock and the other direction again.
pub const BATCH: usize = 64;
/// Longest poll wait, so the stop flag is seen promptly.
const MAX_WAIT: Duration = Duration::from_millis(20);
/// Packets the kernel queues on each TUN device for the forwarder to read
/// (`txqueuelen`; the kernel default of 500 overflows while the forwarder
/// thread is descheduled for a few ms on a loaded machine).
pub const TUN_TXQUEUELEN: u32 = 4096;
/// Address of the A end (the B end is `.2`) of the /30 between the two ends.
pub const ADDR_A: &str = "198.18.255.1";
/// Address of the B end.
pub const ADDR_B: &str = "198.18.255.2";
/// Rate assumed for the default queue limit when the link has no rate
/// limit: above what one forwarder thread carries (see bench/RESULTS.md).
pub const UNLIMITED_RATE_BITS: u64 = 1_000_000_000;

/// Time the default queue limit adds to the delay for the forwarder being
/// late (descheduled on a loaded machine): packets keep arriving meanwhile,
/// and dropping them would be loss nobody asked for.
pub const STALL_MARGIN: Duration = Duration::from_millis(100);

static SEQ: AtomicU32 = AtomicU32::new(0);

/// What the delay line does to each packet, in each direction.
#[derive(Debug, Clone, PartialEq)]
pub struct DelaySpec {
    /// One-way delay, added in each direction (the round trip grows by
    /// twice this).
    pub delay: Duration,
    /// Uniform jitter: the delay of each packet is drawn in delay ± jitter
    /// (clamped at 0); packets may then be reordered, as with netem.
    pub jitter: Duration,
    /// Probability in 0..=1 that a packet is dropped.
    pub loss: f64,
    /// Most packets held per direction; more are dropped (tail drop).
    pub limit_packets: usize,
    /// Most bytes held per direction; more are dropped (tail drop).
    pub limit_bytes: usize,
    /// Seed of the loss and jitter draws.
    pub seed: u64,
    /// Nice value of the forwarder thread (its own, not the process's);
    /// 0 (the default, [`FORWARDER_NICE`]) leaves it as it is. Below 0 asks
    /// to be scheduled ahead of the hosts' programs sharing the CPUs.
    pub nice: i32,
}

/// Default [`DelaySpec::nice`]: 0, left as it is. Nice -10 was measured
/// against 0 under a 300 Mbit/s stream on the loaded 2-CPU machine and did
/// not shorten the RTT tail (bench/RESULTS.md, the delay line section).
pub const FORWARDER_NICE: i32 = 0;

impl Default for DelaySpec {
    fn default() -> Self {
        DelaySpec {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            limit_packets: 10_000,
            limit_bytes: 64 << 20,
            seed: 1,
            nice: FORWARDER_NICE,
        }
    }
}

impl DelaySpec {
    /// Queue limits for a direction of `one_way` delay (± `jitter`) at
    /// `rate_bits` per second (`None`: [`UNLIMITED_RATE_BITS`]): twice the
    /// bytes that arrive in (delay + jitter + [`STALL_MARGIN`]), at least
    /// 1 MiB and at most 256 MiB, and one packet per 500 of those bytes,
    /// 1000 to 200 000 packets. A 100 Mbit/s link with 50 ms each way holds
    /// 625 000 bytes one way and gets a 3 750 000-byte, 7500-packet queue.
    pub fn limits_for(
        one_way: Duration,
        jitter: Duration,
        rate_bits: Option<u64>,
    ) -> (usize, usize) {
        let rate = rate_bits.unwrap_or(UNLIMITED_RATE_BITS) as u128;
        let held = one_way
            .saturating_add(jitter)
            .saturating_add(STALL_MARGIN)
            .as_nanos();
        let in_flight = rate
            .saturating_mul(held)
            .checked_div(8 * 1_000_000_000)
            .unwrap_or(0);
        let bytes = in_flight.saturating_mul(2).clamp(1 << 20, 256 << 20) as usize;
        let packets = (bytes / 500).clamp(1000, 200_000);
        (packets, bytes)
    }
}

/// Counters of one direction of the delay line.
#[derive(Debug, Default)]
pub struct DirStats {
    /// Packets written to the far end.
    pub forwarded: AtomicU64,
    /// Packets dropped by the loss draw.
    pub lost: AtomicU64,
    /// Packets dropped because the queue was full.
    pub overflow: AtomicU64,
    /// Packets dropped because writing them to the far device failed.
    pub write_errors: AtomicU64,
    /// Most packets held at once.
    pub held_max: AtomicU64,
    /// Packets written more than 1 ms after their due time (the forwarder
    /// woke late: descheduled, or busy with the other direction).
    pub late_1ms: AtomicU64,
    /// Largest lateness of a written packet, in µs.
    pub late_max_us: AtomicU64,
}

/// Counters of both directions (`a_to_b`, `b_to_a`) and of the forwarder.
#[derive(Debug, Default)]
pub struct DelayStats {
    /// Packets from the A end to the B end.
    pub a_to_b: DirStats,
    /// Packets from the B end to the A end.
    pub b_to_a: DirStats,
    /// Times the forwarder called poll (it skips poll while packets wait).
    pub polls: AtomicU64,
    /// Packet buffers the pool allocated (the rest were reused).
    pub buffers: AtomicU64,
    /// Whether the forwarder runs at [`DelaySpec::nice`] (setting a
    /// negative nice needs CAP_SYS_NICE).
    pub niced: AtomicBool,
}

/// A running forwarder between two TUN fds; stopped and joined on drop,
/// which closes the fds and so removes both devices.
#[derive(Debug)]
pub(crate) struct Forwarder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<DelayStats>,
    spec: DelaySpec,
}

impl Forwarder {
    pub(crate) fn stats(&self) -> &DelayStats {
        &self.stats
    }

    pub(crate) fn spec(&self) -> &DelaySpec {
        &self.spec
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn err(what: String, source: std::io::Error) -> LabError {
    LabError::DelayLine { what, source }
}

fn check(spec: &DelaySpec) -> Result<(), LabError> {
    if !(0.0..=1.0).contains(&spec.loss) {
        return Err(LabError::Spec {
            field: "loss",
            value: spec.loss.to_string(),
            allowed: "0..=1",
        });
    }
    if spec.limit_packets == 0 || spec.limit_bytes == 0 {
        return Err(LabError::Spec {
            field: "delay line queue limit",
            value: format!("{} packets, {} bytes", spec.limit_packets, spec.limit_bytes),
            allowed: "at least 1 packet and 1 byte",
        });
    }
    Ok(())
}

/// Join `a` and `b` through the delay line: a TUN device named `a_if` in
/// `a` addressed `a_addr`/30 and `b_if` in `b` addressed `b_addr`/30 (both
/// in one /30), up, with [`TUN_TXQUEUELEN`], and the forwarder started.
pub(crate) fn tun_link(
    a: &Netns,
    a_if: &str,
    a_addr: Ipv4Addr,
    b: &Netns,
    b_if: &str,
    b_addr: Ipv4Addr,
    spec: DelaySpec,
) -> Result<(End, End, Forwarder), LabError> {
    check(&spec)?;
    let n = SEQ.fetch_add(1, Ordering::Relaxed) % 10_000;
    let tag = std::process::id() % 100_000;
    // Unique in the root namespace for the moment they live there.
    let tmp = [format!("ntdl{tag}x{n}a"), format!("ntdl{tag}x{n}b")];
    let mut fds = Vec::with_capacity(2);
    for ((dev, ns), name) in tmp.iter().zip([a, b]).zip([a_if, b_if]) {
        let fd = sys::tun::open_tun(dev).map_err(|e| err(format!("open TUN {dev}"), e))?;
        // Moved out of the root namespace at once; if the move fails the fd
        // drops here and the kernel removes the device.
        run(Command::new("ip").args(["link", "set", dev, "netns", ns.name()]))?;
        fds.push(fd);
        if name != dev {
            ns.ip(&["link", "set", "dev", dev, "name", name])?;
        }
    }
    for (ns, name, addr) in [(a, a_if, a_addr), (b, b_if, b_addr)] {
        ns.ip(&["addr", "add", &format!("{addr}/30"), "dev", name])?;
        ns.ip(&[
            "link",
            "set",
            "dev",
            name,
            "txqueuelen",
            &TUN_TXQUEUELEN.to_string(),
            "up",
        ])?;
    }
    let fd_b = fds.pop();
    let fd_a = fds.pop();
    let (Some(fd_a), Some(fd_b)) = (fd_a, fd_b) else {
        return Err(err(
            "TUN fds".into(),
            std::io::Error::other("missing TUN fd"),
        ));
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(DelayStats::default());
    let thread = {
        let stop = stop.clone();
        let stats = stats.clone();
        let spec = spec.clone();
        std::thread::Builder::new()
            .name("delayline".into())
            .spawn(move || forward(fd_a, fd_b, spec, &stop, &stats))
            .map_err(|e| err("spawn forwarder".into(), e))?
    };
    let end = |iface: &str, addr| End {
        iface: iface.into(),
        addr,
    };
    Ok((
        end(a_if, a_addr),
        end(b_if, b_addr),
        Forwarder {
            stop,
            thread: Some(thread),
            stats,
            spec,
        },
    ))
}

/// Two namespaces joined by the userspace delay line; namespaces, devices
/// and the forwarder are removed on drop.
#[derive(Debug)]
pub struct DelayLine {
    // Dropped first: joins the thread, which owns the fds.
    fwd: Forwarder,
    a: Netns,
    b: Netns,
    devs: [String; 2],
}

impl DelayLine {
    /// Create two namespaces `PREFIX-PID-SEQ` joined by TUN devices through
    /// the forwarder, addressed [`ADDR_A`]/30 and [`ADDR_B`]/30.
    pub fn create(prefix: &str, spec: DelaySpec) -> Result<DelayLine, LabError> {
        check(&spec)?;
        let a = Netns::create(prefix)?;
        let b = Netns::create(prefix)?;
        let n = SEQ.fetch_add(1, Ordering::Relaxed) % 10_000;
        let tag = std::process::id() % 100_000;
        let devs = [format!("ntdl{tag}y{n}a"), format!("ntdl{tag}y{n}b")];
        let addr = |s: &str| {
            s.parse::<Ipv4Addr>()
                .map_err(|e| err(format!("address {s}"), std::io::Error::other(e)))
        };
        let (_, _, fwd) = tun_link(
            &a,
            &devs[0],
            addr(ADDR_A)?,
            &b,
            &devs[1],
            addr(ADDR_B)?,
            spec,
        )?;
        Ok(DelayLine { fwd, a, b, devs })
    }

    /// The A namespace (address [`ADDR_A`]).
    pub fn a(&self) -> &Netns {
        &self.a
    }

    /// The B namespace (address [`ADDR_B`]).
    pub fn b(&self) -> &Netns {
        &self.b
    }

    /// The TUN device names (A end, B end).
    pub fn devices(&self) -> &[String; 2] {
        &self.devs
    }

    /// The forwarder's counters.
    pub fn stats(&self) -> &DelayStats {
        self.fwd.stats()
    }

    /// What the line does to each packet (with its queue limits).
    pub fn spec(&self) -> &DelaySpec {
        self.fwd.spec()
    }
}

/// A held packet, ordered by (due time, arrival sequence) only.
struct Held {
    due: Instant,
    seq: u64,
    packet: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// Packet buffers, reused: a buffer comes back when its packet has been
/// written, so the pool grows to the most packets held at once and then
/// stops allocating.
struct Pool {
    free: Vec<Vec<u8>>,
}

impl Pool {
    fn get(&mut self, st: &DelayStats) -> Vec<u8> {
        self.free.pop().unwrap_or_else(|| {
            st.buffers.fetch_add(1, Ordering::Relaxed);
            Vec::with_capacity(2048)
        })
    }

    fn put(&mut self, mut b: Vec<u8>) {
        b.clear();
        self.free.push(b);
    }
}

/// One direction's time-ordered queue (a min-heap on due time, ties in
/// arrival order, so with no jitter packets leave in the order they came).
struct Queue {
    heap: BinaryHeap<Reverse<Held>>,
    bytes: usize,
    next: u64,
}

impl Queue {
    fn new() -> Queue {
        Queue {
            heap: BinaryHeap::new(),
            bytes: 0,
            next: 0,
        }
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn push(&mut self, due: Instant, packet: Vec<u8>) {
        self.bytes = self.bytes.saturating_add(packet.len());
        let seq = self.next;
        self.next = self.next.wrapping_add(1);
        self.heap.push(Reverse(Held { due, seq, packet }));
    }

    fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(h)| h.due)
    }

    fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next_due()? > now {
            return None;
        }
        let Reverse(h) = self.heap.pop()?;
        self.bytes = self.bytes.saturating_sub(h.packet.len());
        Some(h.packet)
    }
}

/// The due time of a packet arriving `now`: `delay` plus a uniform draw in
/// `[-jitter, +jitter]` (whole nanoseconds), clamped at `now`. The draw is
/// SplitMix64's, so a seed gives the same jitter in every nettune version.
fn due(now: Instant, spec: &DelaySpec, rng: &mut SplitMix64) -> Instant {
    if spec.jitter.is_zero() {
        return now + spec.delay;
    }
    // At most (2^64 - 2) / 2, so the span 2j + 1 fits a u64.
    let j = spec.jitter.as_nanos().min(u128::from(u64::MAX / 2)) as u64;
    let d = spec.delay.as_nanos().min(u64::MAX as u128) as i128;
    let offset = i128::from(rng.below_u64(2 * j + 1)) - i128::from(j);
    let ns = (d + offset).max(0);
    now + Duration::from_nanos(ns.min(u64::MAX as i128) as u64)
}

/// What one [`ingest`] pass did.
#[derive(Debug, PartialEq, Eq)]
enum Drained {
    /// The device had no more packets (read returned EAGAIN or an error).
    Empty,
    /// [`BATCH`] packets were read; more may wait.
    More,
}

/// The state of one direction: its queue and counters.
struct Dir<'a> {
    q: Queue,
    st: &'a DirStats,
}

/// Read up to [`BATCH`] packets from `from` into `d`, applying loss and
/// limits; the scratch buffer `buf` takes each read, and kept packets are
/// copied into pooled buffers.
fn ingest(
    from: &OwnedFd,
    d: &mut Dir<'_>,
    buf: &mut [u8],
    pool: &mut Pool,
    spec: &DelaySpec,
    rng: &mut SplitMix64,
    st: &DelayStats,
) -> Drained {
    for _ in 0..BATCH {
        let n = match rustix::io::read(from, &mut *buf) {
            Ok(n) if n > 0 => n,
            _ => return Drained::Empty,
        };
        let now = Instant::now();
        if spec.loss > 0.0 && rng.chance(spec.loss) {
            d.st.lost.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if d.q.len() >= spec.limit_packets || d.q.bytes.saturating_add(n) > spec.limit_bytes {
            d.st.overflow.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let t = due(now, spec, rng);
        let mut p = pool.get(st);
        p.extend_from_slice(&buf[..n]);
        d.q.push(t, p);
        let held = d.q.len() as u64;
        if held > d.st.held_max.load(Ordering::Relaxed) {
            d.st.held_max.store(held, Ordering::Relaxed);
        }
    }
    Drained::More
}

/// Write the packets of `d` due by `now` to `to`, at most [`BATCH`];
/// whether packets due by `now` remain.
fn flush(to: &OwnedFd, d: &mut Dir<'_>, pool: &mut Pool, now: Instant) -> bool {
    for _ in 0..BATCH {
        let due = d.q.next_due();
        let Some(p) = d.q.pop_due(now) else {
            return false;
        };
        if let Some(due) = due {
            let late = now.saturating_duration_since(due);
            if late > Duration::from_millis(1) {
                d.st.late_1ms.fetch_add(1, Ordering::Relaxed);
            }
            let us = late.as_micros().min(u64::MAX as u128) as u64;
            if us > d.st.late_max_us.load(Ordering::Relaxed) {
                d.st.late_max_us.store(us, Ordering::Relaxed);
            }
        }
        // A failed write (device down, no memory) drops the packet, as a
        // full link would.
        if rustix::io::write(to, &p).is_ok() {
            d.st.forwarded.fetch_add(1, Ordering::Relaxed);
        } else {
            d.st.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        pool.put(p);
    }
    d.q.next_due().is_some_and(|t| t <= now)
}

fn forward(a: OwnedFd, b: OwnedFd, spec: DelaySpec, stop: &AtomicBool, st: &DelayStats) {
    use rustix::event::{poll, PollFd, PollFlags};
    if spec.nice != 0 {
        // This thread only (a tid names one thread for setpriority).
        let me = rustix::thread::gettid();
        if rustix::process::setpriority_process(Some(me), spec.nice).is_ok() {
            st.niced.store(true, Ordering::Relaxed);
        }
    }
    let mut rng = SplitMix64::new(spec.seed);
    let mut buf = vec![0u8; MAX_PACKET];
    let mut pool = Pool { free: Vec::new() };
    let mut ab = Dir {
        q: Queue::new(),
        st: &st.a_to_b,
    };
    let mut ba = Dir {
        q: Queue::new(),
        st: &st.b_to_a,
    };
    // Whether a device may still hold packets (its last pass read a full
    // batch): then the forwarder reads again without polling first.
    let (mut more_a, mut more_b) = (true, true);
    while !stop.load(Ordering::Relaxed) {
        // While either device may hold more, try both without polling.
        let (mut ra, mut rb) = (true, true);
        if !more_a && !more_b {
            let now = Instant::now();
            let wait = [ab.q.next_due(), ba.q.next_due()]
                .into_iter()
                .flatten()
                .min()
                .map_or(MAX_WAIT, |t| t.saturating_duration_since(now).min(MAX_WAIT));
            if !wait.is_zero() {
                let ts = rustix::time::Timespec {
                    tv_sec: wait.as_secs() as _,
                    tv_nsec: wait.subsec_nanos() as _,
                };
                let mut fds = [
                    PollFd::new(&a, PollFlags::IN),
                    PollFd::new(&b, PollFlags::IN),
                ];
                st.polls.fetch_add(1, Ordering::Relaxed);
                if poll(&mut fds, Some(&ts)).is_err() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                ra = fds[0].revents().contains(PollFlags::IN);
                rb = fds[1].revents().contains(PollFlags::IN);
            }
        }
        more_a =
            ra && ingest(&a, &mut ab, &mut buf, &mut pool, &spec, &mut rng, st) == Drained::More;
        more_b =
            rb && ingest(&b, &mut ba, &mut buf, &mut pool, &spec, &mut rng, st) == Drained::More;
        // Write everything due now, a batch per direction in turn.
        let now = Instant::now();
        loop {
            let left_ab = flush(&b, &mut ab, &mut pool, now);
            let left_ba = flush(&a, &mut ba, &mut pool, now);
            if !(left_ab || left_ba) || stop.load(Ordering::Relaxed) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests;
