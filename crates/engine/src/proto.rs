//! The control protocol: one TCP connection per test.
//!
//! Both sides first send a 6-byte preamble, `NTUN` and a big-endian u16
//! protocol version, so a version mismatch or a non-nettune peer is caught
//! before any message is parsed. Then every message is a big-endian u32 length
//! followed by that many bytes of JSON ([`Msg`]). See docs/engine.md.

use crate::config::catalogue::{self, CATALOGUE};
use crate::config::TestConfig;
use crate::report::{IntervalReport, SideReport};
use model::text::printable_capped;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Preamble magic.
pub const MAGIC: &[u8; 4] = b"NTUN";
/// Control protocol version; bumped on any incompatible change.
pub const PROTO_VERSION: u16 = 1;
/// Default control port of `nettune serve`.
pub const DEFAULT_PORT: u16 = 5290;
/// Largest message a server accepts from a client.
pub const MAX_CLIENT_FRAME: usize = 256 * 1024;
/// Largest message a client accepts from a server (reports carry histograms).
pub const MAX_SERVER_FRAME: usize = 64 << 20;
/// Largest message a client accepts from a server before the test runs
/// (`hello`, `auth_ok`, `ready`, `go`, `error`): none of them carries more
/// than a few hundred bytes.
pub const MAX_SERVER_HANDSHAKE_FRAME: usize = 256 * 1024;
/// Magic of the 16-byte preamble on every TCP data connection.
pub const DATA_MAGIC: &[u8; 4] = b"NTD1";
/// Capabilities beyond the test kinds (which come first, from the catalogue).
const OTHER_CAPS: &[&str] = &[
    "reverse",
    "bidir",
    "udp-gso",
    "udp-gro",
    "zerocopy",
    "busy-poll",
    "auth-hmac-sha256",
    "stop",
    "congestion",
    "tos",
    "mss",
    crate::diagnosis::CAP,
    CAP_START_AT,
];
/// The server takes a scheduled start: `time` exchanges, then
/// `connected_at` instead of `connected` (`bench --start-at`).
pub const CAP_START_AT: &str = "start-at";
/// Most `time` exchanges a server answers per test.
pub const MAX_TIME_QUERIES: u32 = 32;
/// Capabilities this build offers: every test kind's name, then the options.
pub const CAPS: &[&str] = &caps::<{ CATALOGUE.len() + OTHER_CAPS.len() }>();

const fn caps<const N: usize>() -> [&'static str; N] {
    let names = catalogue::names();
    let mut out = [""; N];
    let mut i = 0;
    while i < names.len() {
        out[i] = names[i];
        i += 1;
    }
    let mut j = 0;
    while j < OTHER_CAPS.len() {
        out[i + j] = OTHER_CAPS[j];
        j += 1;
    }
    out
}

/// A control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Msg {
    /// Server → client first: version, capabilities, and a challenge when a token is required.
    Hello {
        /// nettune version.
        version: String,
        /// Capabilities.
        caps: Vec<String>,
        /// Hex nonce to answer with [`Msg::Auth`], when the server requires a token.
        challenge: Option<String>,
    },
    /// Client → server: proof of the token.
    Auth {
        /// Client's nonce, hex.
        nonce: String,
        /// HMAC proof, hex.
        proof: String,
    },
    /// Server → client: the server's proof, so the client knows the server holds the token too.
    AuthOk {
        /// HMAC proof, hex.
        proof: String,
    },
    /// Client → server: the test to run.
    Setup {
        /// Configuration.
        config: TestConfig,
        /// Run the doctor rules over the window and send their report with
        /// the final report (only to a server offering the `doctor`
        /// capability; absent means false).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        doctor: bool,
    },
    /// Server → client: data sockets are listening.
    Ready {
        /// Test id (in every data connection's preamble and every UDP header).
        test_id: u64,
        /// Data port.
        port: u16,
    },
    /// Client → server: all data flows are connected.
    Connected,
    /// Server → client: start now (both sides time from this message), or,
    /// after [`Msg::ConnectedAt`], at the instant it named.
    Go,
    /// Client → server (to a server offering [`CAP_START_AT`]), before
    /// `connected_at`: what is your CLOCK_REALTIME?
    Time,
    /// Server → client: its CLOCK_REALTIME, ns since the epoch.
    TimeIs {
        /// The server's clock while it answered.
        realtime_ns: u64,
    },
    /// Client → server, instead of [`Msg::Connected`] (to a server offering
    /// [`CAP_START_AT`]): all data flows are open; both sides start their
    /// workers by themselves at this instant, no round trip at it.
    ConnectedAt {
        /// The start on the server's CLOCK_REALTIME, ns since the epoch.
        start_at_unix_ns: u64,
    },
    /// Server → client: one measured interval.
    Interval {
        /// The interval.
        report: IntervalReport,
    },
    /// Client → server: the client's active workers finished.
    ClientDone,
    /// Client → server: the user interrupted the test (Ctrl-C); stop every
    /// worker now and send the report of what was measured so far.
    Stop,
    /// Server → client: the server's report; the test is over.
    Report {
        /// The report.
        report: Box<SideReport>,
    },
    /// Either way: a fatal problem, one line.
    Error {
        /// Machine-readable code (`version`, `auth`, `limit`, `config`, `busy`, `internal`).
        code: String,
        /// Human message.
        message: String,
    },
}

impl Msg {
    /// The message's `type`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "hello",
            Msg::Auth { .. } => "auth",
            Msg::AuthOk { .. } => "auth_ok",
            Msg::Setup { .. } => "setup",
            Msg::Ready { .. } => "ready",
            Msg::Connected => "connected",
            Msg::Go => "go",
            Msg::Time => "time",
            Msg::TimeIs { .. } => "time_is",
            Msg::ConnectedAt { .. } => "connected_at",
            Msg::Interval { .. } => "interval",
            Msg::ClientDone => "client_done",
            Msg::Stop => "stop",
            Msg::Report { .. } => "report",
            Msg::Error { .. } => "error",
        }
    }
}

/// Control-protocol failure.
#[derive(Debug, Error)]
pub enum ProtoError {
    /// Socket error.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A total deadline passed before the peer finished a step.
    #[error("timed out after {} waiting for {what}", secs(*after))]
    TimedOut {
        /// What was awaited ("the server's hello", "the client's setup").
        what: &'static str,
        /// The deadline's length.
        after: Duration,
    },
    /// The peer closed the connection.
    #[error("connection closed by peer")]
    Closed,
    /// The peer does not speak nettune.
    #[error("peer is not a nettune endpoint (bad preamble)")]
    NotNettune,
    /// A message longer than allowed.
    #[error("message of {0} bytes exceeds the limit")]
    TooLarge(usize),
    /// A message that is not valid JSON of a known type.
    #[error("malformed message: {0}")]
    Malformed(String),
}

/// A duration for messages: `5 s`, `0.5 s`.
pub fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

impl ProtoError {
    /// Turn a socket timeout into [`ProtoError::TimedOut`] naming what was
    /// awaited and the deadline's length; other errors pass through.
    pub fn timed_out(self, what: &'static str, after: Duration) -> ProtoError {
        match self {
            ProtoError::Io(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                ProtoError::TimedOut { what, after }
            }
            other => other,
        }
    }
}

/// A reader over a TCP stream with a total deadline: before each `read` the
/// socket's timeout is set to the time left, so a peer that sends one byte at
/// a time cannot stretch a step past the deadline. Past it, reads fail with
/// `TimedOut`.
#[derive(Debug)]
pub struct DeadlineReader<'a> {
    stream: &'a TcpStream,
    deadline: Instant,
}

impl<'a> DeadlineReader<'a> {
    /// Reads on `stream` until `deadline`.
    pub fn new(stream: &'a TcpStream, deadline: Instant) -> DeadlineReader<'a> {
        DeadlineReader { stream, deadline }
    }
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        // A zero timeout would mean "block for ever": never pass one.
        self.stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        let mut s = self.stream;
        match s.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }
}

/// Send the preamble.
pub fn write_preamble(w: &mut impl Write) -> io::Result<()> {
    let mut b = [0u8; 6];
    b[..4].copy_from_slice(MAGIC);
    b[4..].copy_from_slice(&PROTO_VERSION.to_be_bytes());
    w.write_all(&b)?;
    w.flush()
}

fn read_exact_or_closed(r: &mut impl Read, buf: &mut [u8]) -> Result<(), ProtoError> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ProtoError::Closed
        } else {
            ProtoError::Io(e)
        }
    })
}

/// Read the peer's preamble; returns its protocol version.
pub fn read_preamble(r: &mut impl Read) -> Result<u16, ProtoError> {
    let mut b = [0u8; 6];
    read_exact_or_closed(r, &mut b)?;
    if &b[..4] != MAGIC {
        return Err(ProtoError::NotNettune);
    }
    Ok(u16::from_be_bytes([b[4], b[5]]))
}

/// Send one message.
pub fn write_msg(w: &mut impl Write, m: &Msg) -> io::Result<()> {
    let body = serde_json::to_vec(m).map_err(io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&body);
    w.write_all(&out)?;
    w.flush()
}

/// The first allocation for a frame body; it grows (doubling, never past the
/// announced length) only as bytes arrive, so a length prefix alone costs
/// at most this much.
pub const FIRST_CHUNK: usize = 64 * 1024;

/// Read one frame's body of at most `max` bytes into `body` (cleared first).
///
/// `body`'s capacity never exceeds `max`, nor twice the bytes that actually
/// arrived (or [`FIRST_CHUNK`]): a huge length prefix is refused before any
/// allocation, and a peer that announces a long frame but sends little makes
/// the reader allocate little.
pub fn read_frame_into(
    r: &mut impl Read,
    max: usize,
    body: &mut Vec<u8>,
) -> Result<(), ProtoError> {
    body.clear();
    let mut lb = [0u8; 4];
    read_exact_or_closed(r, &mut lb)?;
    let len = usize::try_from(u32::from_be_bytes(lb)).unwrap_or(usize::MAX);
    if len > max {
        return Err(ProtoError::TooLarge(len));
    }
    while body.len() < len {
        if body.len() == body.capacity() {
            let want = body.capacity().saturating_mul(2).max(FIRST_CHUNK).min(len);
            body.reserve_exact(want - body.len());
        }
        // Zero at most one chunk ahead of the data, so slow reads stay linear.
        let room = body.capacity().min(len).min(body.len() + FIRST_CHUNK);
        let start = body.len();
        body.resize(room, 0);
        match r.read(&mut body[start..]) {
            Ok(0) => {
                body.truncate(start);
                return Err(ProtoError::Closed);
            }
            Ok(n) => body.truncate(start + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => body.truncate(start),
            Err(e) => {
                body.truncate(start);
                return Err(ProtoError::Io(e));
            }
        }
    }
    Ok(())
}

/// Decode a frame's body.
///
/// The derived decoder of an internally tagged enum such as [`Msg`] first
/// buffers the whole object in a generic tree (about 20 bytes of memory per
/// byte of tiny JSON values), so a hostile peer's 64 MiB frame would cost
/// over a gigabyte. Here the `type` is read first (everything else skipped
/// without allocating), then the body is decoded straight into that
/// variant's fields, and unknown fields are skipped, never stored.
pub fn decode(body: &[u8]) -> Result<Msg, ProtoError> {
    use std::borrow::Cow;
    fn de<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ProtoError> {
        serde_json::from_slice(body)
            .map_err(|e| ProtoError::Malformed(printable_capped(&e.to_string(), 200)))
    }
    #[derive(Deserialize)]
    struct Tag<'a> {
        #[serde(rename = "type", borrow)]
        ty: Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct Hello {
        version: String,
        caps: Vec<String>,
        challenge: Option<String>,
    }
    #[derive(Deserialize)]
    struct Auth {
        nonce: String,
        proof: String,
    }
    #[derive(Deserialize)]
    struct AuthOk {
        proof: String,
    }
    #[derive(Deserialize)]
    struct Setup {
        config: TestConfig,
        #[serde(default)]
        doctor: bool,
    }
    #[derive(Deserialize)]
    struct Ready {
        test_id: u64,
        port: u16,
    }
    #[derive(Deserialize)]
    struct TimeIs {
        realtime_ns: u64,
    }
    #[derive(Deserialize)]
    struct ConnectedAt {
        start_at_unix_ns: u64,
    }
    #[derive(Deserialize)]
    struct Interval {
        report: IntervalReport,
    }
    #[derive(Deserialize)]
    struct Report {
        report: Box<SideReport>,
    }
    #[derive(Deserialize)]
    struct Error {
        code: String,
        message: String,
    }
    let tag: Tag<'_> = de(body)?;
    Ok(match &*tag.ty {
        "hello" => {
            let Hello {
                version,
                caps,
                challenge,
            } = de(body)?;
            Msg::Hello {
                version,
                caps,
                challenge,
            }
        }
        "auth" => {
            let Auth { nonce, proof } = de(body)?;
            Msg::Auth { nonce, proof }
        }
        "auth_ok" => {
            let AuthOk { proof } = de(body)?;
            Msg::AuthOk { proof }
        }
        "setup" => {
            let Setup { config, doctor } = de(body)?;
            Msg::Setup { config, doctor }
        }
        "ready" => {
            let Ready { test_id, port } = de(body)?;
            Msg::Ready { test_id, port }
        }
        "connected" => Msg::Connected,
        "go" => Msg::Go,
        "time" => Msg::Time,
        "time_is" => Msg::TimeIs {
            realtime_ns: de::<TimeIs>(body)?.realtime_ns,
        },
        "connected_at" => Msg::ConnectedAt {
            start_at_unix_ns: de::<ConnectedAt>(body)?.start_at_unix_ns,
        },
        "interval" => Msg::Interval {
            report: de::<Interval>(body)?.report,
        },
        "client_done" => Msg::ClientDone,
        "stop" => Msg::Stop,
        "report" => Msg::Report {
            report: de::<Report>(body)?.report,
        },
        "error" => {
            let Error { code, message } = de(body)?;
            Msg::Error { code, message }
        }
        other => {
            return Err(ProtoError::Malformed(format!(
                "unknown message type `{}`",
                printable_capped(other, 40)
            )))
        }
    })
}

/// Read one message of at most `max` bytes.
pub fn read_msg(r: &mut impl Read, max: usize) -> Result<Msg, ProtoError> {
    let mut body = Vec::new();
    read_frame_into(r, max, &mut body)?;
    decode(&body)
}

/// The 16-byte preamble of a TCP data connection.
pub fn data_preamble(test_id: u64, flow: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(DATA_MAGIC);
    b[4..8].copy_from_slice(&flow.to_le_bytes());
    b[8..].copy_from_slice(&test_id.to_le_bytes());
    b
}

/// Parse a data preamble: `(test_id, flow)`.
pub fn parse_data_preamble(b: &[u8; 16]) -> Option<(u64, u32)> {
    if &b[..4] != DATA_MAGIC {
        return None;
    }
    let flow = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    let mut id = [0u8; 8];
    id.copy_from_slice(&b[8..]);
    Some((u64::from_le_bytes(id), flow))
}

/// The tag UDP datagrams of a test carry (low 32 bits of the test id, never 0).
pub fn udp_tag(test_id: u64) -> u32 {
    (test_id as u32) | 1
}

pub use crate::config::UDP_HEADER;

/// Sequence number of the registration datagrams a client sends before the
/// start (so the server learns each flow's address); never data.
pub const REGISTRATION_SEQ: u64 = u64::MAX;

/// The header of one UDP data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    /// The test's tag ([`udp_tag`]).
    pub tag: u32,
    /// Flow index.
    pub flow: u32,
    /// Sequence number within the flow ([`REGISTRATION_SEQ`] for registrations).
    pub seq: u64,
}

impl UdpHeader {
    /// Write the header into the first [`UDP_HEADER`] bytes of `b`; a shorter
    /// `b` is left alone (the callers' buffers are never shorter).
    #[inline]
    pub fn put(self, b: &mut [u8]) {
        if let Some(h) = b.get_mut(..UDP_HEADER) {
            h[..4].copy_from_slice(&self.tag.to_le_bytes());
            h[4..8].copy_from_slice(&self.flow.to_le_bytes());
            h[8..16].copy_from_slice(&self.seq.to_le_bytes());
        }
    }

    /// Read the header of a datagram; `None` when it is too short.
    #[inline]
    pub fn get(b: &[u8]) -> Option<UdpHeader> {
        let h: &[u8; UDP_HEADER] = b.get(..UDP_HEADER)?.try_into().ok()?;
        let [t0, t1, t2, t3, f0, f1, f2, f3, s @ ..] = *h;
        Some(UdpHeader {
            tag: u32::from_le_bytes([t0, t1, t2, t3]),
            flow: u32::from_le_bytes([f0, f1, f2, f3]),
            seq: u64::from_le_bytes(s),
        })
    }

    /// The registration datagram of `flow`.
    pub fn registration(tag: u32, flow: u32) -> [u8; UDP_HEADER] {
        let mut b = [0u8; UDP_HEADER];
        UdpHeader {
            tag,
            flow,
            seq: REGISTRATION_SEQ,
        }
        .put(&mut b);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        write_preamble(&mut buf).unwrap();
        let m = Msg::Ready {
            test_id: 7,
            port: 9,
        };
        write_msg(&mut buf, &m).unwrap();
        let mut r = &buf[..];
        assert_eq!(read_preamble(&mut r).unwrap(), PROTO_VERSION);
        assert_eq!(read_msg(&mut r, 1024).unwrap(), m);
        assert!(matches!(read_msg(&mut r, 1024), Err(ProtoError::Closed)));
    }

    #[test]
    fn an_older_server_reads_a_setup_asking_for_doctor() {
        // `setup` as servers before `--doctor` decoded it.
        #[derive(Deserialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Old {
            Setup {
                #[allow(dead_code)]
                config: TestConfig,
            },
        }
        let new = Msg::Setup {
            config: TestConfig::default(),
            doctor: true,
        };
        let body = serde_json::to_vec(&new).unwrap();
        assert!(String::from_utf8_lossy(&body).contains("\"doctor\":true"));
        assert!(serde_json::from_slice::<Old>(&body).is_ok());
        // And without it the field is left out, as before.
        let plain = Msg::Setup {
            config: TestConfig::default(),
            doctor: false,
        };
        let body = serde_json::to_vec(&plain).unwrap();
        assert!(!String::from_utf8_lossy(&body).contains("doctor"));
        assert_eq!(decode(&body).unwrap(), plain);
    }

    #[test]
    fn every_message_decodes_as_it_was_written() {
        let all = [
            Msg::Hello {
                version: "1".into(),
                caps: vec!["a".into()],
                challenge: Some("c".into()),
            },
            Msg::Auth {
                nonce: "n".into(),
                proof: "p".into(),
            },
            Msg::AuthOk { proof: "p".into() },
            Msg::Setup {
                config: TestConfig::default(),
                doctor: true,
            },
            Msg::Ready {
                test_id: 3,
                port: 4,
            },
            Msg::Connected,
            Msg::Go,
            Msg::Time,
            Msg::TimeIs { realtime_ns: 5 },
            Msg::ConnectedAt {
                start_at_unix_ns: 6,
            },
            Msg::Interval {
                report: IntervalReport::default(),
            },
            Msg::ClientDone,
            Msg::Stop,
            Msg::Report {
                report: Box::default(),
            },
            Msg::Error {
                code: "c".into(),
                message: "m".into(),
            },
        ];
        for m in all {
            let body = serde_json::to_vec(&m).unwrap();
            assert_eq!(decode(&body).unwrap(), m, "{}", m.name());
            // Unknown fields are skipped, as the derived decoder did.
            let mut extra = body.clone();
            extra.pop();
            extra.extend_from_slice(b",\"later\":[[],{}]}");
            assert_eq!(decode(&extra).unwrap(), m, "{}", m.name());
        }
        assert!(matches!(
            decode(br#"{"type":"\u001bnope"}"#),
            Err(ProtoError::Malformed(e)) if e.contains("\\x1bnope") && !e.contains('\u{1b}')
        ));
    }

    #[test]
    fn garbage_is_rejected() {
        let mut r: &[u8] = b"GET / HTTP/1.1\r\n";
        assert!(matches!(read_preamble(&mut r), Err(ProtoError::NotNettune)));
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1, 2];
        assert!(matches!(
            read_msg(&mut r, 1024),
            Err(ProtoError::TooLarge(_))
        ));
        let mut r: &[u8] = &[0, 0, 0, 3, b'{', b'x', b'}'];
        assert!(matches!(
            read_msg(&mut r, 1024),
            Err(ProtoError::Malformed(_))
        ));
    }

    #[test]
    fn udp_header_round_trip() {
        let h = UdpHeader {
            tag: 0x0102_0304,
            flow: 7,
            seq: 0x1122_3344_5566_7788,
        };
        let mut b = [0u8; 20];
        h.put(&mut b);
        assert_eq!(&b[..4], &[4, 3, 2, 1]);
        assert_eq!(UdpHeader::get(&b), Some(h));
        assert_eq!(UdpHeader::get(&b[..15]), None);
        let r = UdpHeader::registration(5, 2);
        assert_eq!(
            UdpHeader::get(&r),
            Some(UdpHeader {
                tag: 5,
                flow: 2,
                seq: REGISTRATION_SEQ
            })
        );
        // A short buffer is not written (and does not panic).
        let mut short = [0u8; 8];
        h.put(&mut short);
        assert_eq!(short, [0u8; 8]);
    }

    #[test]
    fn data_preamble_round_trip() {
        let p = data_preamble(0xdead_beef_1234, 3);
        assert_eq!(parse_data_preamble(&p), Some((0xdead_beef_1234, 3)));
        let mut q = p;
        q[0] = b'X';
        assert_eq!(parse_data_preamble(&q), None);
    }
}
