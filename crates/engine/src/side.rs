//! What both ends share: socket setup, spawning the workers of one side,
//! the start gate, the stop flags and CPU marks around the window.

use crate::agg::Aggregator;
use crate::config::{FlowDir, TestConfig};
use crate::cpu::{self, CpuMark};
use crate::report::{CpuReport, Role, WorkerReport};
use crate::worker::{self, Event, Gate, Job, Params, Spec, Timing};
use host::Root;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// A TCP listener with SO_REUSEADDR and SO_REUSEPORT.
pub fn reuseport_listener(addr: SocketAddr, backlog: i32) -> std::io::Result<TcpListener> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(backlog)?;
    Ok(s.into())
}

/// A UDP socket bound with SO_REUSEPORT.
pub fn reuseport_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::DGRAM,
        None,
    )?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// A UDP socket bound with SO_REUSEPORT that receives only datagrams from
/// `peer`: a socket filter, attached before the bind, drops all others in
/// the kernel, so a spoofed source can neither register a flow nor get an
/// echo (no reflection to third parties).
pub fn reuseport_udp_from(addr: SocketAddr, peer: IpAddr) -> std::io::Result<UdpSocket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::DGRAM,
        None,
    )?;
    s.attach_filter(&crate::sys::source_filter(peer))?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Flows `0..n` of direction `dir` spread round-robin over `threads` workers.
pub fn spread<T>(items: Vec<T>, threads: u32) -> Vec<Vec<T>> {
    let t = (threads.max(1) as usize).min(items.len().max(1));
    let mut out: Vec<Vec<T>> = (0..t).map(|_| Vec::new()).collect();
    for (i, x) in items.into_iter().enumerate() {
        out[i % t].push(x);
    }
    out.retain(|v| !v.is_empty());
    out
}

/// The workers of one side of one test.
#[derive(Debug)]
pub struct SideRun {
    handles: Vec<(Role, FlowDir, JoinHandle<WorkerReport>)>,
    gate: Arc<Gate>,
    /// Stops passive workers (receivers, responders).
    pub stop_passive: Arc<AtomicBool>,
    /// Stops everything (peer vanished).
    pub abort: Arc<AtomicBool>,
    /// Events from workers (and the control reader).
    pub rx: Receiver<Event>,
    /// Sender for the control reader.
    pub tx: Sender<Event>,
    params: Arc<Params>,
    next_cpu: usize,
    done: Vec<bool>,
}

impl SideRun {
    /// An empty side.
    pub fn new(params: Params) -> SideRun {
        let (tx, rx) = channel();
        SideRun {
            handles: Vec::new(),
            gate: Gate::new(),
            stop_passive: Arc::new(AtomicBool::new(false)),
            abort: Arc::new(AtomicBool::new(false)),
            rx,
            tx,
            params: Arc::new(params),
            next_cpu: 0,
            done: Vec::new(),
        }
    }

    /// Spawn a worker (it waits for [`SideRun::start`]).
    pub fn add(&mut self, role: Role, dir: FlowDir, job: Job) -> std::io::Result<()> {
        let cpus = &self.params.cfg.cpus;
        let cpu = (!cpus.is_empty()).then(|| cpus[self.next_cpu % cpus.len()]);
        self.next_cpu += 1;
        let stop = match role {
            Role::Recv | Role::Respond => self.stop_passive.clone(),
            Role::Send | Role::Request => self.abort.clone(),
        };
        let idx = self.handles.len();
        let spec = Spec {
            worker: idx as u32,
            role,
            dir,
            cpu,
            job,
        };
        let h = worker::spawn(
            spec,
            self.params.clone(),
            self.gate.clone(),
            stop,
            self.tx.clone(),
            idx,
        )?;
        self.handles.push((role, dir, h));
        self.done.push(false);
        Ok(())
    }

    /// Measuring workers per direction (for the aggregator).
    pub fn aggregator(&self, cfg: &TestConfig) -> Aggregator {
        let mut v: Vec<(FlowDir, usize)> = Vec::new();
        for d in cfg.dirs() {
            let n = self.measuring_in(d);
            if n > 0 {
                v.push((d, n));
            }
        }
        Aggregator::new(cfg, v)
    }

    fn measuring_in(&self, d: FlowDir) -> usize {
        self.handles
            .iter()
            .filter(|(r, dir, _)| *dir == d && r.measures())
            .count()
    }

    /// Open the gate: workers start timing from `start`.
    pub fn start(&self, start: Instant) -> Timing {
        self.gate.open(start);
        Timing::new(&self.params.cfg, start)
    }

    /// Mark worker `i` done; returns whether all active workers (senders,
    /// requesters) are done now.
    pub fn worker_done(&mut self, i: usize) -> bool {
        if let Some(d) = self.done.get_mut(i) {
            *d = true;
        }
        self.active_done()
    }

    /// Whether every active worker has ended.
    pub fn active_done(&self) -> bool {
        self.handles
            .iter()
            .zip(&self.done)
            .all(|((r, _, _), d)| *d || matches!(r, Role::Recv | Role::Respond))
    }

    /// Whether every worker has ended.
    pub fn all_done(&self) -> bool {
        self.done.iter().all(|d| *d)
    }

    /// Stop everything now.
    pub fn abort_all(&self) {
        self.abort.store(true, Ordering::Relaxed);
        self.stop_passive.store(true, Ordering::Relaxed);
        self.gate.abort();
    }

    /// Join all workers.
    pub fn join(self) -> Vec<WorkerReport> {
        self.gate.abort();
        self.handles
            .into_iter()
            .map(|(role, _, h)| {
                h.join().unwrap_or_else(|_| WorkerReport {
                    role: Some(role),
                    error: Some("worker thread panicked".into()),
                    ..WorkerReport::default()
                })
            })
            .collect()
    }
}

/// CPU marks at the window's edges.
#[derive(Debug)]
pub struct CpuWindow {
    sampler: host::sampler::Sampler,
    start: Option<CpuMark>,
    end: Option<CpuMark>,
}

impl CpuWindow {
    /// Not yet started.
    pub fn new(root: Root) -> CpuWindow {
        CpuWindow {
            sampler: host::sampler::Sampler::new(root),
            start: None,
            end: None,
        }
    }
    /// Take the marks that are due at `now`; returns the next due instant.
    pub fn poll(&mut self, t: &Timing, now: Instant) -> Option<Instant> {
        if self.start.is_none() {
            if now >= t.win_start() {
                self.start = Some(cpu::mark(&mut self.sampler));
            } else {
                return Some(t.win_start());
            }
        }
        if self.end.is_none() {
            if now >= t.win_end() {
                self.end = Some(cpu::mark(&mut self.sampler));
            } else {
                return Some(t.win_end());
            }
        }
        None
    }
    /// The report (marks missing ones now).
    pub fn report(mut self) -> CpuReport {
        let a = self
            .start
            .take()
            .unwrap_or_else(|| cpu::mark(&mut self.sampler));
        let b = self
            .end
            .take()
            .unwrap_or_else(|| cpu::mark(&mut self.sampler));
        cpu::report(&a, &b)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

    fn delivered(rx: &UdpSocket, from: SocketAddr) -> bool {
        let tx = UdpSocket::bind(from).unwrap();
        tx.send_to(b"0123456789abcdef", rx.local_addr().unwrap())
            .unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 64];
        rx.recv(&mut b).is_ok()
    }

    #[test]
    fn udp_sockets_take_only_the_peers_datagrams() {
        let rx = reuseport_udp_from("127.0.0.1:0".parse().unwrap(), "127.0.0.1".parse().unwrap())
            .unwrap();
        assert!(!delivered(&rx, "127.0.0.2:0".parse().unwrap()));
        assert!(delivered(&rx, "127.0.0.1:0".parse().unwrap()));
        // An IPv4-mapped peer is matched as IPv4.
        let rx = reuseport_udp_from(
            "127.0.0.1:0".parse().unwrap(),
            "::ffff:127.0.0.2".parse().unwrap(),
        )
        .unwrap();
        assert!(delivered(&rx, "127.0.0.2:0".parse().unwrap()));
        assert!(!delivered(&rx, "127.0.0.1:0".parse().unwrap()));
    }

    #[test]
    fn ipv6_filter_compares_all_four_words() {
        let Ok(probe) = UdpSocket::bind("[::1]:0") else {
            eprintln!("skipped: no IPv6 loopback");
            return;
        };
        drop(probe);
        let any: SocketAddr = "[::1]:0".parse().unwrap();
        let rx = reuseport_udp_from(any, "::1".parse().unwrap()).unwrap();
        assert!(delivered(&rx, any));
        // One address differing in each 32-bit word in turn.
        for other in ["1::1", "0:0:1::1", "::1:0:0:1", "::2"] {
            let rx = reuseport_udp_from(any, other.parse().unwrap()).unwrap();
            assert!(!delivered(&rx, any), "{other}");
        }
    }
}
