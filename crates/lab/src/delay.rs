//! The userspace delay line, for kernels without netem (as mahimahi does):
//! two TUN devices, one moved into each of two lab namespaces, and a
//! forwarder thread in this process that holds every packet read from one
//! until its due time (arrival + delay ± jitter, from a seeded RNG), drops
//! it with probability `loss` or when the queue is over its limit, and then
//! writes it to the other.
//!
//! The TUN fds stay with this process while the interfaces live in the
//! namespaces; nothing is configured in the root namespace (the devices are
//! moved out right after creation) and the kernel removes both devices when
//! the fds close on drop.

use crate::{run, LabError, Netns};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest packet read from a TUN device (IFF_NO_PI, no offloads: ≤ MTU).
const MAX_PACKET: usize = 65_536;
/// Most packets read from one device, or written, per wakeup.
const BATCH: usize = 64;
/// Longest poll wait, so the stop flag is seen promptly.
const MAX_WAIT: Duration = Duration::from_millis(20);
/// Address of the A end (the B end is `.2`) of the /30 between the two ends.
pub const ADDR_A: &str = "198.18.255.1";
/// Address of the B end.
pub const ADDR_B: &str = "198.18.255.2";

static SEQ: AtomicU32 = AtomicU32::new(0);

/// What the delay line does to each packet, in each direction.
#[derive(Debug, Clone, PartialEq)]
pub struct DelaySpec {
    /// One-way delay.
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
}

impl Default for DelaySpec {
    fn default() -> Self {
        DelaySpec {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            limit_packets: 10_000,
            limit_bytes: 64 << 20,
            seed: 1,
        }
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
}

/// Counters of both directions (`a_to_b`, `b_to_a`).
#[derive(Debug, Default)]
pub struct DelayStats {
    /// Packets from the A end to the B end.
    pub a_to_b: DirStats,
    /// Packets from the B end to the A end.
    pub b_to_a: DirStats,
}

/// Two namespaces joined by the userspace delay line; namespaces, devices
/// and the forwarder are removed on drop.
#[derive(Debug)]
pub struct DelayLine {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<DelayStats>,
    // Dropped after the thread is joined (the thread owns the fds).
    a: Netns,
    b: Netns,
    devs: [String; 2],
}

fn err(what: String, source: std::io::Error) -> LabError {
    LabError::DelayLine { what, source }
}

impl DelayLine {
    /// Create two namespaces `PREFIX-PID-SEQ` joined by TUN devices through
    /// the forwarder, addressed [`ADDR_A`]/30 and [`ADDR_B`]/30.
    pub fn create(prefix: &str, spec: DelaySpec) -> Result<DelayLine, LabError> {
        if !(0.0..=1.0).contains(&spec.loss) {
            return Err(LabError::Spec {
                field: "loss",
                value: spec.loss.to_string(),
                allowed: "0..=1",
            });
        }
        let a = Netns::create(prefix)?;
        let b = Netns::create(prefix)?;
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let tag = std::process::id() % 100_000;
        let devs = [format!("ntdl{tag}x{n}a"), format!("ntdl{tag}x{n}b")];
        let mut fds = Vec::with_capacity(2);
        for (dev, ns) in devs.iter().zip([&a, &b]) {
            let fd = engine::open_tun(dev).map_err(|e| err(format!("open TUN {dev}"), e))?;
            // Moved out of the root namespace at once; if the move fails the
            // fd drops here and the kernel removes the device.
            run(Command::new("ip").args(["link", "set", dev, "netns", ns.name()]))?;
            fds.push(fd);
        }
        for (i, (dev, ns)) in devs.iter().zip([&a, &b]).enumerate() {
            let (me, peer) = if i == 0 {
                (ADDR_A, ADDR_B)
            } else {
                (ADDR_B, ADDR_A)
            };
            ns.ip(&["addr", "add", me, "peer", &format!("{peer}/30"), "dev", dev])?;
            ns.ip(&["link", "set", dev, "up"])?;
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
            std::thread::Builder::new()
                .name("delayline".into())
                .spawn(move || forward(fd_a, fd_b, spec, &stop, &stats))
                .map_err(|e| err("spawn forwarder".into(), e))?
        };
        Ok(DelayLine {
            stop,
            thread: Some(thread),
            stats,
            a,
            b,
            devs,
        })
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
        &self.stats
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
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

fn due(now: Instant, spec: &DelaySpec, rng: &mut StdRng) -> Instant {
    if spec.jitter.is_zero() {
        return now + spec.delay;
    }
    let j = spec.jitter.as_nanos().min(u64::MAX as u128) as i128;
    let d = spec.delay.as_nanos().min(u64::MAX as u128) as i128;
    let ns = (d + rng.gen_range(-j..=j)).max(0);
    now + Duration::from_nanos(ns.min(u64::MAX as i128) as u64)
}

/// Read up to [`BATCH`] packets from `from` into `q`, applying loss and limits.
fn ingest(
    from: &OwnedFd,
    q: &mut Queue,
    buf: &mut [u8],
    spec: &DelaySpec,
    rng: &mut StdRng,
    st: &DirStats,
) {
    for _ in 0..BATCH {
        let n = match rustix::io::read(from, &mut *buf) {
            Ok(n) if n > 0 => n,
            _ => return,
        };
        let now = Instant::now();
        if spec.loss > 0.0 && rng.gen_bool(spec.loss) {
            st.lost.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if q.len() >= spec.limit_packets || q.bytes.saturating_add(n) > spec.limit_bytes {
            st.overflow.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let t = due(now, spec, rng);
        q.push(t, buf[..n].to_vec());
    }
}

/// Write the due packets of `q` to `to`, at most [`BATCH`] per call.
fn flush(to: &OwnedFd, q: &mut Queue, st: &DirStats) {
    let now = Instant::now();
    for _ in 0..BATCH {
        let Some(p) = q.pop_due(now) else { return };
        // A failed write (device down, EAGAIN) drops the packet, as a full
        // link would.
        if rustix::io::write(to, &p).is_ok() {
            st.forwarded.fetch_add(1, Ordering::Relaxed);
        } else {
            st.write_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn forward(a: OwnedFd, b: OwnedFd, spec: DelaySpec, stop: &AtomicBool, st: &DelayStats) {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let mut buf = vec![0u8; MAX_PACKET];
    let mut ab = Queue::new();
    let mut ba = Queue::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let wait = [ab.next_due(), ba.next_due()]
            .into_iter()
            .flatten()
            .min()
            .map_or(MAX_WAIT, |t| t.saturating_duration_since(now).min(MAX_WAIT));
        let ts = rustix::time::Timespec {
            tv_sec: wait.as_secs() as _,
            tv_nsec: wait.subsec_nanos() as _,
        };
        let mut fds = [
            PollFd::new(&a, PollFlags::IN),
            PollFd::new(&b, PollFlags::IN),
        ];
        if poll(&mut fds, Some(&ts)).is_err() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let (ra, rb) = (
            fds[0].revents().contains(PollFlags::IN),
            fds[1].revents().contains(PollFlags::IN),
        );
        if ra {
            ingest(&a, &mut ab, &mut buf, &spec, &mut rng, &st.a_to_b);
        }
        if rb {
            ingest(&b, &mut ba, &mut buf, &spec, &mut rng, &st.b_to_a);
        }
        // Drain everything due (a burst may exceed one batch).
        while ab.next_due().is_some_and(|t| t <= Instant::now()) {
            flush(&b, &mut ab, &st.a_to_b);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        while ba.next_due().is_some_and(|t| t <= Instant::now()) {
            flush(&a, &mut ba, &st.b_to_a);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_releases_in_due_order_and_ties_in_arrival_order() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut q = Queue::new();
        q.push(t0 + ms(5), vec![1]);
        q.push(t0 + ms(5), vec![2, 2]);
        q.push(t0 + ms(1), vec![3]);
        assert_eq!(q.bytes, 4);
        assert_eq!(q.pop_due(t0), None, "nothing due yet");
        assert_eq!(q.pop_due(t0 + ms(1)), Some(vec![3]));
        assert_eq!(q.pop_due(t0 + ms(4)), None);
        assert_eq!(q.pop_due(t0 + ms(5)), Some(vec![1]));
        assert_eq!(q.pop_due(t0 + ms(5)), Some(vec![2, 2]));
        assert_eq!((q.len(), q.bytes), (0, 0));
    }

    #[test]
    fn jittered_due_times_stay_in_the_band_and_clamp_at_zero() {
        let now = Instant::now();
        let mut rng = StdRng::seed_from_u64(7);
        let spec = DelaySpec {
            delay: Duration::from_millis(10),
            jitter: Duration::from_millis(4),
            ..DelaySpec::default()
        };
        let mut spread = (Duration::MAX, Duration::ZERO);
        for _ in 0..1000 {
            let d = due(now, &spec, &mut rng) - now;
            assert!(
                d >= Duration::from_millis(6) && d <= Duration::from_millis(14),
                "{d:?}"
            );
            spread = (spread.0.min(d), spread.1.max(d));
        }
        assert!(
            spread.1 - spread.0 > Duration::from_millis(6),
            "jitter is drawn: {spread:?}"
        );
        let wide = DelaySpec {
            delay: Duration::from_millis(1),
            jitter: Duration::from_millis(5),
            ..DelaySpec::default()
        };
        for _ in 0..1000 {
            assert!(due(now, &wide, &mut rng) >= now);
        }
    }

    #[test]
    fn ingest_applies_the_queue_limits() {
        // A non-blocking datagram socket stands in for the TUN fd (one
        // packet per read, EAGAIN when empty).
        let (r, w) = std::os::unix::net::UnixDatagram::pair().expect("socketpair");
        r.set_nonblocking(true).expect("nonblocking");
        let r = OwnedFd::from(r);
        let spec = DelaySpec {
            delay: Duration::from_secs(1),
            limit_packets: 2,
            ..DelaySpec::default()
        };
        let st = DirStats::default();
        let mut q = Queue::new();
        let mut rng = StdRng::seed_from_u64(1);
        let mut buf = vec![0u8; 16];
        for _ in 0..3 {
            w.send(&[9u8; 16]).expect("send");
            ingest(&r, &mut q, &mut buf, &spec, &mut rng, &st);
        }
        assert_eq!(q.len(), 2);
        assert_eq!(st.overflow.load(Ordering::Relaxed), 1);
    }
}
