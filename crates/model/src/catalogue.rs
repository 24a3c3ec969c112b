//! The catalogue of test kinds: one entry per kind (its name, transport,
//! stream or request/response, default size, what each end runs, its units
//! and the options it takes). Everything kind-specific elsewhere (parsing,
//! `proto::CAPS`, the plan of workers, the transport of the data sockets,
//! units in results and text) is read from here, so adding a test kind is
//! one entry here (and its `TestKind` variant); a new workload is also one
//! `Work` variant here, its file in `work/` and its row in `work::entry`.
//!
//! Everything here is read once per test (at setup or when rendering),
//! never in a worker's loop.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// The workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Bulk TCP: bytes/s.
    TcpStream,
    /// Bulk UDP: datagrams/s, loss, reordering, duplicates.
    UdpStream,
    /// TCP request/response: transactions/s and latency.
    TcpRr,
    /// UDP request/response: transactions/s and latency.
    UdpRr,
    /// TCP connect/request/response/close: connections/s and latency.
    TcpCrr,
}

/// What a worker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Stream sender.
    Send,
    /// Stream receiver (measures).
    Recv,
    /// RR/CRR client (measures).
    Request,
    /// RR/CRR server.
    Respond,
}

impl Role {
    /// Whether this role's counts are the measurement.
    pub fn measures(self) -> bool {
        matches!(self, Role::Recv | Role::Request)
    }

    /// The role as in JSON (`send`, `recv`, `request`, `respond`).
    pub fn name(self) -> &'static str {
        match self {
            Role::Send => "send",
            Role::Recv => "recv",
            Role::Request => "request",
            Role::Respond => "respond",
        }
    }
}

/// How the data sockets of a test are made (client and server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One TCP connection per flow (with the data preamble), accepted on
    /// one listener.
    Tcp,
    /// A TCP connection per transaction: the client connects anew, the
    /// server accepts on one SO_REUSEPORT listener per thread.
    TcpPerTransaction,
    /// One connected UDP socket per flow on the client; the server's
    /// SO_REUSEPORT UDP sockets (one per thread) take the client's datagrams.
    Udp,
}

/// What one worker runs (its workload), before its sockets exist; each
/// has its file in `work/` and its row in `work::entry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// tcp-stream sender.
    TcpSend,
    /// tcp-stream receiver.
    TcpRecv,
    /// udp-stream sender.
    UdpSend,
    /// udp-stream receiver.
    UdpRecv,
    /// tcp-rr client.
    TcpRrClient,
    /// tcp-rr server.
    TcpRrServer,
    /// udp-rr client.
    UdpRrClient,
    /// udp-rr server, on one of the shared SO_REUSEPORT sockets.
    UdpRrServer,
    /// tcp-crr client (connects anew per transaction).
    CrrClient,
    /// tcp-crr server, on one of the SO_REUSEPORT listeners.
    CrrServer,
}

/// How an end's flows of one direction are split into workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// Flows spread round-robin over at most `threads` workers.
    Spread,
    /// One worker per flow.
    PerFlow,
    /// One worker per shared socket of the data port (`threads` of them).
    Shared,
}

/// The workers an end runs for the flows of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runs {
    /// Role (and so whether it measures, and which stop flag it obeys).
    pub role: Role,
    /// Workload.
    pub work: Work,
    /// How flows are split into workers.
    pub grouping: Grouping,
}

const fn runs(role: Role, work: Work, grouping: Grouping) -> Runs {
    Runs {
        role,
        work,
        grouping,
    }
}

const TCP_SEND: Runs = runs(Role::Send, Work::TcpSend, Grouping::Spread);
const TCP_RECV: Runs = runs(Role::Recv, Work::TcpRecv, Grouping::Spread);
const UDP_SEND: Runs = runs(Role::Send, Work::UdpSend, Grouping::Spread);
const UDP_RECV: Runs = runs(Role::Recv, Work::UdpRecv, Grouping::Spread);
const TCP_RR_CLIENT: Runs = runs(Role::Request, Work::TcpRrClient, Grouping::Spread);
const TCP_RR_SERVER: Runs = runs(Role::Respond, Work::TcpRrServer, Grouping::Spread);
const UDP_RR_CLIENT: Runs = runs(Role::Request, Work::UdpRrClient, Grouping::Spread);
const UDP_RR_SERVER: Runs = runs(Role::Respond, Work::UdpRrServer, Grouping::Shared);
const CRR_CLIENT: Runs = runs(Role::Request, Work::CrrClient, Grouping::PerFlow);
const CRR_SERVER: Runs = runs(Role::Respond, Work::CrrServer, Grouping::Shared);

/// One test kind.
#[derive(Debug, Clone, Copy)]
pub struct KindSpec {
    /// The kind.
    pub kind: TestKind,
    /// Its CLI, wire and JSON name (`tcp-stream`), also its capability.
    pub name: &'static str,
    /// How its data sockets are made.
    pub transport: Transport,
    /// Bulk (stream) test: the receiver measures, `--reverse` and `--bidir`
    /// apply; otherwise request/response, measured by the client.
    pub stream: bool,
    /// Default `--size`.
    pub default_size: u32,
    /// What one unit of work is, in results (`bytes`, `transactions`).
    pub unit: &'static str,
    /// The unit of the rate column of the text output, as
    /// `metric::Scale` scales it (`pps`: datagrams, `tps`:
    /// transactions, `cps`: connections; docs/engine.md, "Units"); `None`:
    /// the kind counts bytes only (no message count, no rate column).
    pub rate_unit: Option<&'static str>,
    /// Each transaction is one datagram each way (udp-rr): the text output
    /// shows that packet rate beside the transaction rate.
    pub datagram_per_transaction: bool,
    /// What a lost unit is called in the text output.
    pub lost: &'static str,
    /// Datagrams carry sequence numbers: the receiver estimates loss and
    /// reordering, each flow registers its socket with the server, and UDP
    /// GSO/GRO apply.
    pub sequenced: bool,
    /// `--rate` applies (open loop).
    pub open_loop: bool,
    /// `--outstanding` applies.
    pub outstanding: bool,
    /// `--zerocopy` applies.
    pub zerocopy: bool,
    /// Which flags drive the buffer memory, for messages.
    pub memory_hint: &'static str,
    /// What the client runs for forward and reverse flows.
    pub client: [Runs; 2],
    /// What the server runs for forward and reverse flows.
    pub server: [Runs; 2],
}

const TIMED_OUT: &str = "requests timed out";
const LOWER_ANY: &str = "lower --size, --flows or --threads";

/// Every test kind, in display order.
pub const CATALOGUE: [KindSpec; 5] = [
    KindSpec {
        kind: TestKind::TcpStream,
        name: "tcp-stream",
        transport: Transport::Tcp,
        stream: true,
        default_size: 128 * 1024,
        unit: "bytes",
        rate_unit: None,
        datagram_per_transaction: false,
        lost: TIMED_OUT,
        sequenced: false,
        open_loop: true,
        outstanding: false,
        zerocopy: true,
        memory_hint: LOWER_ANY,
        client: [TCP_SEND, TCP_RECV],
        server: [TCP_RECV, TCP_SEND],
    },
    KindSpec {
        kind: TestKind::UdpStream,
        name: "udp-stream",
        transport: Transport::Udp,
        stream: true,
        default_size: 1472,
        unit: "datagrams",
        rate_unit: Some(crate::units::PACKETS_PER_SEC),
        datagram_per_transaction: false,
        lost: TIMED_OUT,
        sequenced: true,
        open_loop: true,
        outstanding: false,
        zerocopy: false,
        memory_hint: LOWER_ANY,
        client: [UDP_SEND, UDP_RECV],
        server: [UDP_RECV, UDP_SEND],
    },
    KindSpec {
        kind: TestKind::TcpRr,
        name: "tcp-rr",
        transport: Transport::Tcp,
        stream: false,
        default_size: 1,
        unit: "transactions",
        rate_unit: Some(crate::units::TRANSACTIONS_PER_SEC),
        datagram_per_transaction: false,
        lost: TIMED_OUT,
        sequenced: false,
        open_loop: true,
        outstanding: true,
        zerocopy: false,
        memory_hint: "tcp-rr buffers --size × --outstanding per worker; lower them",
        client: [TCP_RR_CLIENT, TCP_RR_CLIENT],
        server: [TCP_RR_SERVER, TCP_RR_SERVER],
    },
    KindSpec {
        kind: TestKind::UdpRr,
        name: "udp-rr",
        transport: Transport::Udp,
        stream: false,
        default_size: 1,
        unit: "transactions",
        rate_unit: Some(crate::units::TRANSACTIONS_PER_SEC),
        datagram_per_transaction: true,
        lost: TIMED_OUT,
        sequenced: false,
        open_loop: true,
        outstanding: true,
        zerocopy: false,
        memory_hint: LOWER_ANY,
        client: [UDP_RR_CLIENT, UDP_RECV],
        server: [UDP_RR_SERVER, UDP_RR_SERVER],
    },
    KindSpec {
        kind: TestKind::TcpCrr,
        name: "tcp-crr",
        transport: Transport::TcpPerTransaction,
        stream: false,
        default_size: 1,
        unit: "connections",
        rate_unit: Some(crate::units::CONNECTIONS_PER_SEC),
        datagram_per_transaction: false,
        lost: "failed connections",
        sequenced: false,
        open_loop: false,
        outstanding: false,
        zerocopy: false,
        memory_hint: "tcp-crr buffers --size per flow; lower --size or --flows",
        client: [CRR_CLIENT, CRR_CLIENT],
        server: [CRR_SERVER, CRR_SERVER],
    },
];

/// Every kind, in catalogue order.
pub const fn all_kinds() -> [TestKind; CATALOGUE.len()] {
    let mut out = [TestKind::TcpStream; CATALOGUE.len()];
    let mut i = 0;
    while i < CATALOGUE.len() {
        out[i] = CATALOGUE[i].kind;
        i += 1;
    }
    out
}

/// Every kind's name, in catalogue order.
pub const fn names() -> [&'static str; CATALOGUE.len()] {
    let mut out = [""; CATALOGUE.len()];
    let mut i = 0;
    while i < CATALOGUE.len() {
        out[i] = CATALOGUE[i].name;
        i += 1;
    }
    out
}

/// [`names_list`] as a constant, for messages that need a `'static` text
/// (a test holds it equal to the catalogue).
pub const NAMES: &str = "tcp-stream, udp-stream, tcp-rr, udp-rr or tcp-crr";

/// The names as a list for messages: `a, b or c`.
pub fn names_list() -> String {
    names_or(|_| true)
}

// The entries are in `TestKind` order, so a kind's entry is at its index.
const _: () = {
    let mut i = 0;
    while i < CATALOGUE.len() {
        assert!(
            CATALOGUE[i].kind as usize == i,
            "CATALOGUE is not in TestKind order"
        );
        i += 1;
    }
};

/// The names of the kinds `f` holds for, as alternatives: `a`, `a or b`,
/// `a, b or c`.
pub fn names_or(f: impl Fn(&KindSpec) -> bool) -> String {
    joined(f, "or")
}

/// The names of the kinds `f` holds for, for messages: `a`, `a and b`.
pub fn names_where(f: impl Fn(&KindSpec) -> bool) -> String {
    joined(f, "and")
}

/// The names of the kinds `f` holds for, the last two joined by `word`.
fn joined(f: impl Fn(&KindSpec) -> bool, word: &str) -> String {
    let n: Vec<&str> = CATALOGUE.iter().filter(|k| f(k)).map(|k| k.name).collect();
    match n.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} {word} {last}", rest.join(", ")),
        Some((last, _)) => (*last).to_string(),
        None => String::new(),
    }
}

/// The entry of `kind`.
pub fn spec(kind: TestKind) -> &'static KindSpec {
    // Every variant has its entry (the catalogue test checks it), so the
    // fallback is never taken.
    CATALOGUE.get(kind as usize).unwrap_or(&CATALOGUE[0])
}

impl KindSpec {
    /// UDP data path.
    pub fn is_udp(&self) -> bool {
        self.transport == Transport::Udp
    }
}

impl TestKind {
    /// All kinds, in display order (the catalogue's).
    pub const ALL: [TestKind; CATALOGUE.len()] = all_kinds();

    /// Its catalogue entry.
    pub fn spec(self) -> &'static KindSpec {
        spec(self)
    }

    /// The CLI name (`tcp-stream`).
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// UDP workload.
    pub fn is_udp(self) -> bool {
        self.spec().is_udp()
    }

    /// Bulk (stream) workload.
    pub fn is_stream(self) -> bool {
        self.spec().stream
    }

    /// Default message size for the workload.
    pub fn default_size(self) -> u32 {
        self.spec().default_size
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TestKind {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        TestKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| ParseError::UnknownTest(s.into()))
    }
}

/// A command-line value that does not parse; each names the text given.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    /// Not a test kind.
    #[error("unknown test `{0}` (expected {list})", list = names_list())]
    UnknownTest(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_the_last_two_with_the_word_asked_for() {
        let udp = names_or(|k| k.is_udp());
        assert!(udp.contains(" or ") && !udp.contains(" and "), "{udp}");
        let udp = names_where(|k| k.is_udp());
        assert!(udp.contains(" and ") && !udp.contains(" or "), "{udp}");
        assert_eq!(names_or(|k| k.kind == TestKind::TcpStream), "tcp-stream");
        assert_eq!(names_where(|_| false), "");
    }

    #[test]
    fn the_constant_list_of_names_is_the_catalogues() {
        assert_eq!(super::NAMES, super::names_list());
    }
    use crate::bench::config::{measured_by, End, FlowDir};

    #[test]
    fn each_end_runs_what_the_kind_says() {
        for k in CATALOGUE {
            for dir in [FlowDir::Forward, FlowDir::Reverse] {
                let c = k.runs(End::Client, dir);
                let s = k.runs(End::Server, dir);
                // The end that measures a direction runs a measuring role.
                let (m, o) = match measured_by(k.kind, dir) {
                    End::Client => (c, s),
                    End::Server => (s, c),
                };
                if k.stream || dir == FlowDir::Forward {
                    assert!(m.role.measures(), "{} {dir:?}", k.name);
                    assert!(!o.role.measures(), "{} {dir:?}", k.name);
                }
                // Only a server shares the data port's sockets.
                assert_ne!(c.grouping, Grouping::Shared, "{}", k.name);
            }
            let c = k.runs(End::Client, FlowDir::Forward);
            let s = k.runs(End::Server, FlowDir::Forward);
            if k.stream {
                // One end sends, the other receives (which is the kind's).
                let mut roles = [c.role, s.role];
                roles.sort_by_key(|r| r.measures());
                assert_eq!(roles, [Role::Send, Role::Recv], "{}", k.name);
            } else {
                assert_eq!(
                    (c.role, s.role),
                    (Role::Request, Role::Respond),
                    "{}",
                    k.name
                );
            }
        }
    }
}
