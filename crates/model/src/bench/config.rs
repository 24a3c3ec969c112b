//! What a test runs: the configuration both ends agree on.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Bytes of the header a UDP data datagram starts with: the test's tag and
/// the flow (u32 little-endian each), then the sequence number (u64 LE);
/// the smallest datagram that carries one.
pub const UDP_HEADER: usize = 16;
/// Largest UDP payload over IPv4 (65535 − 20-byte IP header − 8-byte UDP header).
pub const UDP_MAX: u32 = 65507;
/// Largest UDP payload over IPv6 (65535 payload length − 8-byte UDP header;
/// no jumbograms).
pub const UDP_MAX_V6: u32 = 65527;
/// Longest `--congestion` name (the kernel's TCP_CA_NAME_MAX is 16, NUL included).
pub const CONGESTION_NAME_MAX: usize = 15;
/// Smallest and largest `--mss` the kernel accepts (TCP_MIN_MSS, MAX_TCP_WINDOW).
pub const MSS_RANGE: (u32, u32) = (88, 32767);
/// Largest message size accepted for TCP tests (16 MiB).
pub const TCP_MAX: u32 = 16 << 20;
/// Longest warm-up, duration or interval any test may ask for (7 days), so
/// every instant the workers compute stays far from overflow.
pub const MAX_TEST_MS: u64 = 7 * 86_400_000;
/// Most flows per direction any test may ask for.
pub const MAX_FLOWS: u32 = 65_536;
/// Longest `--busy-poll` spin, µs.
pub const MAX_BUSY_POLL_US: u32 = 1_000_000;

pub use crate::catalogue;
pub mod rate;

pub use catalogue::{ParseError, Role, TestKind, Transport};

/// An IP address family (`-4` / `-6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
}

impl Family {
    /// The family of an address (IPv4-mapped IPv6 counts as IPv4).
    pub fn of(ip: std::net::IpAddr) -> Family {
        if ip.to_canonical().is_ipv4() {
            Family::Ipv4
        } else {
            Family::Ipv6
        }
    }

    /// `IPv4` or `IPv6`, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Family::Ipv4 => "IPv4",
            Family::Ipv6 => "IPv6",
        }
    }
}

/// Which way the data of a stream test flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Client sends, server receives (and measures).
    #[default]
    Forward,
    /// Server sends, client receives (and measures).
    Reverse,
    /// Both at once, on separate flows.
    Bidir,
}

/// One flow's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowDir {
    /// Client → server.
    Forward,
    /// Server → client.
    Reverse,
}

/// Everything that defines a test; sent by the client to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestConfig {
    /// Workload.
    pub test: TestKind,
    /// Flows (connections or UDP sockets) per direction.
    pub flows: u32,
    /// Worker threads per direction on each side; flows are spread over them.
    pub threads: u32,
    /// CPUs the workers are pinned to, round-robin (empty: not pinned).
    pub cpus: Vec<u32>,
    /// CPUs the server's workers are pinned to instead, round-robin
    /// (`--server-cpus`, netperf's `-T lcpu,rcpu`; None: `cpus` on both
    /// ends; empty: the server's are not pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<Vec<u32>>,
    /// Message, request or datagram size in bytes.
    pub size: u32,
    /// Measured time in milliseconds.
    pub duration_ms: u64,
    /// Unmeasured time before it, in milliseconds.
    pub warmup_ms: u64,
    /// Interval report period in milliseconds.
    pub interval_ms: u64,
    /// Stream direction.
    pub direction: Direction,
    /// Open-loop rate: bits/s for streams, transactions/s for RR, the total
    /// over the flows of one direction, whatever the threads (each flow is
    /// paced at [`TestConfig::flow_rate`]; bounds in [`rate`]).
    pub rate: Option<f64>,
    /// Requests in flight per RR flow.
    pub outstanding: u32,
    /// TCP_NODELAY on data sockets.
    pub nodelay: bool,
    /// SO_BUSY_POLL µs, and workers spin that long before sleeping (0: off).
    pub busy_poll_us: u32,
    /// MSG_ZEROCOPY sends for TCP streams.
    pub zerocopy: bool,
    /// UDP GSO (UDP_SEGMENT) on senders.
    pub udp_gso: bool,
    /// UDP GRO on receivers.
    pub udp_gro: bool,
    /// SO_SNDBUF for data sockets (bytes).
    pub sndbuf: Option<u32>,
    /// SO_RCVBUF for data sockets (bytes).
    pub rcvbuf: Option<u32>,
    /// TCP_CONGESTION of data connections, on both ends (None: the
    /// namespace's default).
    #[serde(default)]
    pub congestion: Option<String>,
    /// IP_TOS / IPV6_TCLASS byte of data sockets, on both ends.
    #[serde(default)]
    pub tos: Option<u8>,
    /// TCP_MAXSEG of data connections, on both ends.
    #[serde(default)]
    pub mss: Option<u32>,
    /// `--force-buffers`: set `sndbuf`/`rcvbuf` with SO_SNDBUFFORCE and
    /// SO_RCVBUFFORCE, past `net.core.{w,r}mem_max` (CAP_NET_ADMIN; a server
    /// forces only for a client with its token). Without it both ends use
    /// SO_SNDBUF/SO_RCVBUF as an application would.
    #[serde(default)]
    pub force_buffers: bool,
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            test: TestKind::TcpStream,
            flows: 1,
            threads: 1,
            cpus: Vec::new(),
            server_cpus: None,
            size: TestKind::TcpStream.default_size(),
            duration_ms: 10_000,
            warmup_ms: 1_000,
            interval_ms: 1_000,
            direction: Direction::Forward,
            rate: None,
            outstanding: 1,
            nodelay: false,
            busy_poll_us: 0,
            zerocopy: false,
            udp_gso: false,
            udp_gro: false,
            sndbuf: None,
            rcvbuf: None,
            congestion: None,
            tos: None,
            mss: None,
            force_buffers: false,
        }
    }
}

/// Which end of a test (`client` or `server` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum End {
    /// `nettune bench`.
    Client,
    /// `nettune serve`.
    Server,
}

impl End {
    /// The end as in JSON (`client`, `server`).
    pub fn name(self) -> &'static str {
        match self {
            End::Client => "client",
            End::Server => "server",
        }
    }
}

/// A configuration that cannot run; the message is one line for the user.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Limits a server enforces per test and per peer (and which clients see in
/// errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Most flows in one test.
    pub max_flows: u32,
    /// Most threads per direction in one test.
    pub max_threads: u32,
    /// Longest warmup + duration, ms.
    pub max_duration_ms: u64,
    /// Most concurrent tests from one client address.
    pub max_tests_per_client: u32,
    /// Most buffer memory the workers of one test may allocate, bytes
    /// (see `engine::work::buffer_bytes`).
    pub max_test_memory: u64,
    /// Largest `SO_SNDBUF`/`SO_RCVBUF` a test may ask for, bytes (the server
    /// runs as root, where `SO_RCVBUFFORCE` passes `rmem_max`).
    pub max_socket_buffer: u32,
    /// Most connections, over all addresses, that have not finished the
    /// handshake (authentication and setup).
    pub max_unauthenticated: u32,
    /// Most such connections from one source prefix (IPv4 /24, IPv6 /64);
    /// beyond it the prefix's oldest one is closed.
    #[serde(alias = "max_unauthenticated_per_ip")]
    pub max_unauthenticated_per_prefix: u32,
    /// Most buffer memory all running tests together may hold, bytes
    /// (`--max-total-memory`); a test that would pass it is refused.
    pub max_total_memory: u64,
    /// Most concurrent tests from one source prefix (IPv4 /24, IPv6 /64).
    pub max_tests_per_prefix: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_flows: 1024,
            max_threads: 64,
            max_duration_ms: 3_600_000,
            max_tests_per_client: 4,
            max_test_memory: 256 << 20,
            max_socket_buffer: 256 << 20,
            max_unauthenticated: 128,
            max_unauthenticated_per_prefix: 8,
            max_total_memory: 1 << 30,
            max_tests_per_prefix: 8,
        }
    }
}

/// Bytes in binary units for messages: `512 B`, `64 KiB`, `1.5 GiB`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    let t = format!("{v:.1}");
    format!("{} {}", t.strip_suffix(".0").unwrap_or(&t), UNITS[u])
}

impl TestConfig {
    /// The CPUs `end`'s workers are pinned to, round-robin (empty: not
    /// pinned).
    pub fn cpus_for(&self, end: End) -> &[u32] {
        match (end, &self.server_cpus) {
            (End::Server, Some(c)) => c,
            _ => &self.cpus,
        }
    }

    /// Check flag combinations and the bounds of each flow's share of
    /// `--rate`; the error is one line naming the flags.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_flags()?;
        self.check_rate().map_err(|e| ConfigError(e.to_string()))
    }

    /// Everything [`TestConfig::validate`] checks but the rate's bounds
    /// ([`TestConfig::check_rate`], a typed error for callers that tell it
    /// apart).
    pub fn check_flags(&self) -> Result<(), ConfigError> {
        let err = |s: String| Err(ConfigError(s));
        let t = self.test;
        if self.size == 0 {
            return err("--size must be at least 1 byte".into());
        }
        if t.is_udp() && self.size > UDP_MAX_V6 {
            return err(format!(
                "--size {} is above the largest UDP datagram ({UDP_MAX_V6} bytes over IPv6, {UDP_MAX} over IPv4: 64 KiB minus headers)",
                self.size
            ));
        }
        let k = t.spec();
        if k.sequenced && (self.size as usize) < UDP_HEADER {
            return err(format!(
                "--size {} is below {UDP_HEADER} bytes, the sequence header {t} needs for loss and reordering",
                self.size
            ));
        }
        if k.is_udp() && k.outstanding && (self.size as usize) < UDP_HEADER && self.outstanding > 1
        {
            return err(format!(
                "{t} with --outstanding above 1 needs --size of at least {UDP_HEADER} bytes (a sequence header)"
            ));
        }
        if !t.is_udp() && self.size > TCP_MAX {
            return err(format!("--size {} is above 16 MiB", self.size));
        }
        if self.flows == 0 {
            return err("--flows must be at least 1".into());
        }
        if self.flows > MAX_FLOWS {
            return err(format!("--flows must be at most {MAX_FLOWS}"));
        }
        if self.threads == 0 {
            return err("--threads must be at least 1".into());
        }
        if self.duration_ms == 0 {
            return err("--duration must be above 0".into());
        }
        if self.interval_ms < 10 {
            return err("--interval must be at least 0.01 s".into());
        }
        for (v, flag) in [
            (self.duration_ms, "--duration"),
            (self.warmup_ms, "--warmup"),
            (self.interval_ms, "--interval"),
        ] {
            if v > MAX_TEST_MS {
                return err(format!(
                    "{flag} must be at most {} s (7 days)",
                    MAX_TEST_MS / 1000
                ));
            }
        }
        if self.busy_poll_us > MAX_BUSY_POLL_US {
            return err(format!(
                "--busy-poll must be at most {MAX_BUSY_POLL_US} µs (1 s)"
            ));
        }
        for (v, flag) in [(self.sndbuf, "--sndbuf"), (self.rcvbuf, "--rcvbuf")] {
            if let Some(b) = v {
                if b == 0 || b > i32::MAX as u32 {
                    return err(format!("{flag} must be between 1 byte and 2 GiB"));
                }
            }
        }
        if self.outstanding == 0 {
            return err("--outstanding must be at least 1".into());
        }
        if self.outstanding > 4096 {
            return err("--outstanding must be at most 4096".into());
        }
        if self.rate.is_some() && !k.open_loop {
            return err(format!(
                "--rate does not apply to {t}, a closed-loop test (use --flows to add load)"
            ));
        }
        if !t.is_stream() && self.direction != Direction::Forward {
            return err(format!(
                "--reverse and --bidir apply to stream tests, not {t} (requests always go client → server)"
            ));
        }
        if !k.outstanding && self.outstanding != 1 {
            return err(format!(
                "--outstanding applies to {}, not {t}",
                catalogue::names_where(|k| k.outstanding)
            ));
        }
        if self.zerocopy && !k.zerocopy {
            return err(format!(
                "--zerocopy applies to {} only",
                catalogue::names_where(|k| k.zerocopy)
            ));
        }
        if (self.udp_gso || self.udp_gro) && !k.sequenced {
            return err(format!(
                "--udp-gso and --udp-gro apply to {} only",
                catalogue::names_where(|k| k.sequenced)
            ));
        }
        if self.nodelay && t.is_udp() {
            return err("--nodelay applies to TCP tests only".into());
        }
        if self.udp_gso && (self.size as usize) * 2 > UDP_MAX as usize {
            return err("--udp-gso needs --size of at most half of 64 KiB".into());
        }
        if let Some(c) = &self.congestion {
            let ok = !c.is_empty()
                && c.len() <= CONGESTION_NAME_MAX
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return err(format!(
                    "--congestion `{}` is not an algorithm name (letters, digits, _ and -, at most {CONGESTION_NAME_MAX})",
                    crate::text::printable_capped(c, 40)
                ));
            }
            if t.is_udp() {
                return err("--congestion applies to TCP tests only".into());
            }
        }
        if let Some(m) = self.mss {
            if t.is_udp() {
                return err("--mss applies to TCP tests only".into());
            }
            if m < MSS_RANGE.0 || m > MSS_RANGE.1 {
                return err(format!(
                    "--mss {m} is outside {}..={} bytes",
                    MSS_RANGE.0, MSS_RANGE.1
                ));
            }
        }
        Ok(())
    }

    /// Check what depends on the address family of the data path: the
    /// largest UDP datagram is 65507 bytes over IPv4 and 65527 over IPv6.
    pub fn check_family(&self, ipv6: bool) -> Result<(), ConfigError> {
        if self.test.is_udp() && !ipv6 && self.size > UDP_MAX {
            return Err(ConfigError(format!(
                "--size {} is above the largest UDP datagram over IPv4 ({UDP_MAX} bytes; IPv6 carries up to {UDP_MAX_V6}, try -6)",
                self.size
            )));
        }
        Ok(())
    }

    /// Check the configuration against a server's limits. Every sum is
    /// checked: numbers come from the peer. The buffer-memory budget is
    /// checked by `work::check_memory` (it knows what the workloads allocate).
    pub fn check_limits(&self, l: &Limits) -> Result<(), ConfigError> {
        let flows = self.total_flows();
        if flows > l.max_flows {
            return Err(ConfigError(format!(
                "{flows} flows exceed this server's limit of {}",
                l.max_flows
            )));
        }
        if self.threads > l.max_threads {
            return Err(ConfigError(format!(
                "{} threads exceed this server's limit of {}",
                self.threads, l.max_threads
            )));
        }
        match self.warmup_ms.checked_add(self.duration_ms) {
            Some(total) if total <= l.max_duration_ms => {}
            total => {
                return Err(ConfigError(format!(
                    "warmup + duration of {} s exceed this server's limit of {} s",
                    total.map_or_else(|| "over 2^64 ms".into(), |t| (t / 1000).to_string()),
                    l.max_duration_ms / 1000
                )))
            }
        }
        for (v, flag) in [(self.sndbuf, "--sndbuf"), (self.rcvbuf, "--rcvbuf")] {
            if let Some(b) = v {
                if b > l.max_socket_buffer {
                    return Err(ConfigError(format!(
                        "{flag} {} exceeds this server's limit of {} per socket",
                        human_bytes(u64::from(b)),
                        human_bytes(u64::from(l.max_socket_buffer))
                    )));
                }
            }
        }
        Ok(())
    }

    /// Which flags drive this test's buffer memory, for messages.
    pub fn memory_hint(&self) -> &'static str {
        self.test.spec().memory_hint
    }

    /// Flows over all directions (bidir doubles them; saturating, so a
    /// peer's number cannot wrap).
    pub fn total_flows(&self) -> u32 {
        if self.direction == Direction::Bidir {
            self.flows.saturating_mul(2)
        } else {
            self.flows
        }
    }

    /// Direction of flow `i` (bidir: the first `flows` forward, the rest reverse).
    pub fn flow_dir(&self, i: u32) -> FlowDir {
        match self.direction {
            Direction::Forward => FlowDir::Forward,
            Direction::Reverse => FlowDir::Reverse,
            Direction::Bidir => {
                if i < self.flows {
                    FlowDir::Forward
                } else {
                    FlowDir::Reverse
                }
            }
        }
    }

    /// Directions in use.
    pub fn dirs(&self) -> Vec<FlowDir> {
        match self.direction {
            Direction::Forward => vec![FlowDir::Forward],
            Direction::Reverse => vec![FlowDir::Reverse],
            Direction::Bidir => vec![FlowDir::Forward, FlowDir::Reverse],
        }
    }

    /// Number of measured intervals.
    pub fn intervals(&self) -> u64 {
        self.duration_ms.div_ceil(self.interval_ms).max(1)
    }
}

/// Which end measures `dir`: the one whose workers of that direction the
/// catalogue gives a measuring role (the receiver of a stream, the client
/// of a request/response test).
pub fn measured_by(test: TestKind, dir: FlowDir) -> End {
    if test.spec().runs(End::Server, dir).role.measures() {
        End::Server
    } else {
        End::Client
    }
}

impl catalogue::KindSpec {
    /// What `end` runs for flows of `dir`.
    pub fn runs(&self, end: End, dir: FlowDir) -> catalogue::Runs {
        let v = match end {
            End::Client => &self.client,
            End::Server => &self.server,
        };
        match dir {
            FlowDir::Forward => v[0],
            FlowDir::Reverse => v[1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(test: TestKind) -> TestConfig {
        TestConfig {
            test,
            size: test.default_size(),
            ..TestConfig::default()
        }
    }

    #[test]
    fn defaults_validate() {
        for t in TestKind::ALL {
            cfg(t).validate().unwrap();
        }
    }

    #[test]
    fn bad_combinations() {
        let mut c = cfg(TestKind::TcpCrr);
        c.rate = Some(1000.0);
        assert!(c.validate().unwrap_err().0.contains("closed-loop"));
        let mut c = cfg(TestKind::TcpStream);
        c.size = 0;
        assert!(c.validate().is_err());
        let mut c = cfg(TestKind::UdpStream);
        c.size = 65536;
        assert!(c.validate().unwrap_err().0.contains("64 KiB"));
        let mut c = cfg(TestKind::TcpRr);
        c.direction = Direction::Reverse;
        assert!(c.validate().is_err());
        let mut c = cfg(TestKind::TcpStream);
        c.udp_gso = true;
        assert!(c.validate().is_err());
        let mut c = cfg(TestKind::UdpRr);
        c.outstanding = 4;
        assert!(c.validate().is_err());
        c.size = 16;
        c.validate().unwrap();
    }

    #[test]
    fn bytes_for_people() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(1536 << 10), "1.5 MiB");
        assert_eq!(human_bytes(128 << 30), "128 GiB");
        assert_eq!(human_bytes(u64::MAX), "16384 PiB");
    }

    #[test]
    fn limits_refuse_wrapping_durations() {
        let l = Limits {
            max_duration_ms: 10_000,
            ..Limits::default()
        };
        for (w, d) in [
            (u64::MAX - 999, 2000),
            (1000, u64::MAX),
            (u64::MAX, u64::MAX),
        ] {
            let c = TestConfig {
                warmup_ms: w,
                duration_ms: d,
                ..TestConfig::default()
            };
            assert!(c.check_limits(&l).is_err(), "{w} + {d}");
            assert!(c.validate().is_err(), "{w} + {d}");
        }
        let mut c = TestConfig {
            flows: u32::MAX / 2 + 2,
            direction: Direction::Bidir,
            ..TestConfig::default()
        };
        assert_eq!(c.total_flows(), u32::MAX);
        assert!(c.check_limits(&l).is_err());
        c.interval_ms = u64::MAX;
        assert!(c.validate().is_err());
    }

    #[test]
    fn socket_buffers_are_bounded() {
        let l = Limits::default();
        let mut c = cfg(TestKind::TcpStream);
        c.rcvbuf = Some(l.max_socket_buffer + 1);
        assert!(c.check_limits(&l).unwrap_err().0.contains("--rcvbuf"));
        c.rcvbuf = Some(u32::MAX);
        assert!(c.validate().is_err());
    }

    #[test]
    fn unknown_test_is_named() {
        assert!("udp-x"
            .parse::<TestKind>()
            .unwrap_err()
            .to_string()
            .contains("unknown test `udp-x`"));
    }

    #[test]
    fn kinds_round_trip() {
        for t in TestKind::ALL {
            assert_eq!(t.name().parse::<TestKind>().unwrap(), t);
            let j = serde_json::to_string(&t).unwrap();
            assert_eq!(j, format!("\"{}\"", t.name()));
        }
    }

    /// `--server-cpus` pins the server's workers apart from the client's;
    /// without it both ends use `cpus`, and the config a server receives
    /// from an older client (no such field) reads as that.
    #[test]
    fn the_server_may_be_pinned_apart_from_the_client() {
        let mut c = cfg(TestKind::UdpStream);
        c.cpus = vec![1];
        assert_eq!(c.cpus_for(End::Client), [1]);
        assert_eq!(c.cpus_for(End::Server), [1]);
        let j = serde_json::to_value(&c).unwrap();
        assert!(j.get("server_cpus").is_none(), "{j}");
        c.server_cpus = Some(vec![0]);
        assert_eq!(c.cpus_for(End::Client), [1]);
        assert_eq!(c.cpus_for(End::Server), [0]);
        let back: TestConfig = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        let old: TestConfig = serde_json::from_value(j).unwrap();
        assert_eq!(old.server_cpus, None);
    }
}
