//! `syn-queue-overflow`: listeners' SYN queues full, so connection requests
//! are dropped (`TcpExt.TCPReqQFullDrop`) or answered with SYN cookies
//! (`TcpExt.TCPReqQFullDoCookies`) over the window.

use super::{sysctl, DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Rate (per second) above which it fires (netdata's warning: > 1/s).
pub const WARN_PER_S: f64 = 1.0;
/// Rate above which it is critical (netdata's critical: > 5/s).
pub const CRIT_PER_S: f64 = 5.0;

/// SYN queues overflowing.
#[derive(Debug)]
pub struct SynQueueOverflow;

impl DoctorRule for SynQueueOverflow {
    fn id(&self) -> FindingId {
        FindingId::SynQueueOverflow
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "SYN queues full: connection requests dropped or answered with SYN cookies"
    }
    fn rationale(&self) -> &'static str {
        "a listener's SYN queue (half-open connections, bounded by its listen backlog) was full: without SYN cookies the SYN is dropped and the client waits a retransmit timeout (1 s, then 3 s); with them the connection loses options the cookie cannot carry. A SYN flood or a backlog too small for the connection rate"
    }
    fn source(&self) -> &'static str {
        "netdata src/health/health.d/tcp_listen.conf (1m_tcp_syn_queue_drops, 1m_tcp_syn_queue_cookies: warning > 1/s, critical > 5/s); Documentation/networking/ip-sysctl.rst (tcp_max_syn_backlog, tcp_syncookies, somaxconn); listen(2)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        let (drop, cookies) = (
            w.counter("TcpExt.TCPReqQFullDrop"),
            w.counter("TcpExt.TCPReqQFullDoCookies"),
        );
        if drop.is_none() && cookies.is_none() {
            return Err(Skip::because(
                "TcpExt.TCPReqQFullDrop/TCPReqQFullDoCookies: not in the samples (/proc/net/netstat)",
            ));
        }
        let (drop, cookies) = (drop.unwrap_or(0), cookies.unwrap_or(0));
        let rate = |v: u64| v as f64 / w.seconds;
        let worst = rate(drop).max(rate(cookies));
        if worst <= WARN_PER_S {
            return Ok(());
        }
        let syncookies = sysctl(cx, "net.ipv4.tcp_syncookies");
        let somaxconn = sysctl(cx, "net.core.somaxconn");
        let syn_backlog = sysctl(cx, "net.ipv4.tcp_max_syn_backlog");
        let mut f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "TCP: SYN queues full, {drop} connection requests dropped and {cookies} answered with SYN cookies in {:.1} s",
                w.seconds
            ),
        )
        .evidence(
            "TcpExt.TCPReqQFullDrop",
            format!("{drop} ({:.1}/s)", rate(drop)),
            "/proc/net/netstat TcpExt.TCPReqQFullDrop",
        )
        .evidence(
            "TcpExt.TCPReqQFullDoCookies",
            format!("{cookies} ({:.1}/s)", rate(cookies)),
            "/proc/net/netstat TcpExt.TCPReqQFullDoCookies",
        )
        .evidence(
            "net.core.somaxconn",
            somaxconn.clone(),
            "/proc/sys/net/core/somaxconn",
        )
        .evidence(
            "net.ipv4.tcp_max_syn_backlog",
            syn_backlog,
            "/proc/sys/net/ipv4/tcp_max_syn_backlog",
        )
        .evidence(
            "net.ipv4.tcp_syncookies",
            syncookies.clone(),
            "/proc/sys/net/ipv4/tcp_syncookies",
        );
        if worst > CRIT_PER_S {
            f = f.severity(Severity::Critical);
        }
        let cookies_off = syncookies.trim() == "0";
        let want = somaxconn
            .trim()
            .parse::<u64>()
            .ok()
            .map_or(4096, |v| v.saturating_mul(2).max(4096));
        let mut text = format!(
            "A listener's SYN queue holds as many half-open connections as its accept backlog, min(listen()'s argument, net.core.somaxconn): raise both (`sysctl -w net.core.somaxconn={want}`, and the application's listen backlog), and net.ipv4.tcp_max_syn_backlog with them (`sysctl -w net.ipv4.tcp_max_syn_backlog={want}`), persisted in /etc/sysctl.d. `ss -ltn` shows each listener's backlog. If the SYNs come from a flood (many sources, handshakes never completed), filter them upstream instead."
        );
        if cookies_off && drop > 0 {
            text.push_str(" SYN cookies are off here (net.ipv4.tcp_syncookies=0): with 1, the default, a full queue answers with cookies instead of dropping.");
        }
        out.push(f.fix(Fix {
            text,
            app: Some(format!(
                "listen(fd, {want}) with net.core.somaxconn >= {want}"
            )),
            ..Fix::default()
        }));
        Ok(())
    }
}
