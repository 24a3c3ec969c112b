//! `tcp-resets`: TCP resets sent, connections reset, and connection
//! attempts failing at a high rate over the window (`Tcp.OutRsts`,
//! `Tcp.EstabResets`, `Tcp.AttemptFails`).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Rate (per second) of any of the three above which it fires: netdata's
/// floor of 5/s times its factor of 10 over the usual rate.
pub const WARN_PER_S: f64 = 50.0;

/// The counters, with what each counts.
const COUNTERS: [(&str, &str); 3] = [
    ("Tcp.OutRsts", "resets sent"),
    ("Tcp.EstabResets", "established connections reset"),
    ("Tcp.AttemptFails", "connection attempts failed"),
];

/// Resets and failed connection attempts at a high rate.
#[derive(Debug)]
pub struct TcpResets;

impl DoctorRule for TcpResets {
    fn id(&self) -> FindingId {
        FindingId::TcpResets
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "TCP resets or failed connection attempts at a high rate"
    }
    fn rationale(&self) -> &'static str {
        "each reset ends a connection with an error: resets sent answer SYNs to ports nobody listens on (a crashed service, a scan), close sockets with unread data, or abort orphans over the kernel's limits; failed attempts are connections this host opened that were refused or reset in the handshake (a service it needs is down)"
    }
    fn source(&self) -> &'static str {
        "netdata src/health/health.d/tcp_resets.conf (10s_ip_tcp_resets_sent on OutRsts, 10s_ip_tcp_resets_received on AttemptFails: 10 s rate > 10 x max(5/s, the 1 min rate)); RFC 4022 (tcpOutRsts, tcpEstabResets, tcpAttemptFails); Documentation/networking/snmp_counter.rst (TcpExtTCPAbortOnClose, TcpExtTCPAbortOnMemory)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        let vals: Vec<(&str, &str, u64)> = COUNTERS
            .iter()
            .filter_map(|(k, what)| w.counter(k).map(|v| (*k, *what, v)))
            .collect();
        if vals.is_empty() {
            return Err(Skip::because(
                "Tcp.OutRsts/EstabResets/AttemptFails: not in the samples (/proc/net/snmp)",
            ));
        }
        let rate = |v: u64| v as f64 / w.seconds;
        let high: Vec<_> = vals
            .iter()
            .filter(|(_, _, v)| rate(*v) > WARN_PER_S)
            .collect();
        if high.is_empty() {
            return Ok(());
        }
        let what = high
            .iter()
            .map(|(_, what, v)| format!("{v} {what}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut f =
            crate::finding::from_rule(self, "host", format!("TCP: {what} in {:.1} s", w.seconds));
        for (k, _, v) in &vals {
            f = f.evidence(
                *k,
                format!("{v} ({:.0}/s)", rate(*v)),
                format!("/proc/net/snmp {k}"),
            );
        }
        let on_close = w.counter("TcpExt.TCPAbortOnClose").unwrap_or(0);
        let on_memory = w.counter("TcpExt.TCPAbortOnMemory").unwrap_or(0);
        f = f
            .evidence(
                "TcpExt.TCPAbortOnClose (closed with unread data)",
                on_close.to_string(),
                "/proc/net/netstat TcpExt.TCPAbortOnClose",
            )
            .evidence(
                "TcpExt.TCPAbortOnMemory (orphan or tcp_mem limit)",
                on_memory.to_string(),
                "/proc/net/netstat TcpExt.TCPAbortOnMemory",
            );
        let out_rsts = w.counter("Tcp.OutRsts").unwrap_or(0);
        let mut text = Vec::new();
        if on_memory > 0 {
            text.push(format!("{on_memory} connections were aborted at the kernel's orphan or TCP memory limit: see tcp-memory-pressure (raise net.ipv4.tcp_max_orphans or tcp_mem, or shorten tcp_fin_timeout)."));
        }
        if on_close > 0 {
            text.push(format!("{on_close} resets came from applications closing sockets with unread data: read to the end (or shutdown(SHUT_WR) and drain) before close()."));
        }
        if rate(out_rsts) > WARN_PER_S {
            text.push("Resets not explained above answer segments for no socket, mostly SYNs to a port nobody listens on: a service down or restarting, clients pointed at the wrong port, or a scan (`ss -ltn` lists the listeners; `nstat -az TcpExtTCPAbort*` the other causes).".into());
        }
        if w.counter("Tcp.AttemptFails")
            .is_some_and(|v| rate(v) > WARN_PER_S)
        {
            text.push("Failed attempts are this host's own connects refused or reset during the handshake: a server it connects to is down or its SYN queue is full (see syn-queue-overflow and listen-drops on that server).".into());
        }
        if text.is_empty() {
            text.push("Established connections were reset by their peers: look at the peers' logs and at middleboxes (conntrack timeouts, load balancers) that reset idle flows.".into());
        }
        out.push(f.fix(Fix {
            text: text.join(" "),
            app: Some(
                "close() only after reading what the peer sent; retry connects with backoff".into(),
            ),
            ..Fix::default()
        }));
        Ok(())
    }
}
