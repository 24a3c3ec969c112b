//! `listen-drops`: connections dropped at full listen queues
//! (`TcpExt.ListenOverflows` / `ListenDrops` growing over the window).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Accept queues overflowing.
#[derive(Debug)]
pub struct ListenDrops;

impl DoctorRule for ListenDrops {
    fn id(&self) -> FindingId {
        FindingId::ListenDrops
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "connections dropped at full listen queues"
    }
    fn rationale(&self) -> &'static str {
        "a SYN or a completed handshake dropped because the accept queue is full costs the client a retransmit timeout (1 s, then 3 s): the backlog (min of listen()'s argument and net.core.somaxconn) is too small or the application accepts too slowly"
    }
    fn source(&self) -> &'static str {
        "listen(2) and Documentation/networking/ip-sysctl.rst (somaxconn, tcp_max_syn_backlog); netdata src/health/health.d/tcp_listen.conf (1m_tcp_accept_queue_overflows, 1m_tcp_accept_queue_drops)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = match cx.need_window() {
            Ok(w) => w,
            Err(skip) => return since_boot(self, cx, out).unwrap_or(Err(skip)),
        };
        let (Some(over), Some(drops)) = (
            w.counter("TcpExt.ListenOverflows"),
            w.counter("TcpExt.ListenDrops"),
        ) else {
            return Err(Skip::because(
                "TcpExt.ListenOverflows/ListenDrops: not in the samples (/proc/net/netstat)",
            ));
        };
        if over == 0 && drops == 0 {
            return Ok(());
        }
        let somaxconn = cx
            .snap()
            .sysctls
            .get("net.core.somaxconn")
            .cloned()
            .unwrap_or_else(|| "?".into());
        let f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "TCP: {drops} connection attempts dropped at listen queues ({over} overflows) in {:.1} s",
                w.seconds
            ),
        )
        .evidence(
            "TcpExt.ListenOverflows",
            format!("{over} ({:.0}/s)", over as f64 / w.seconds),
            "/proc/net/netstat TcpExt.ListenOverflows",
        )
        .evidence(
            "TcpExt.ListenDrops",
            format!("{drops} ({:.0}/s)", drops as f64 / w.seconds),
            "/proc/net/netstat TcpExt.ListenDrops",
        )
        .evidence(
            "net.core.somaxconn",
            somaxconn,
            "/proc/sys/net/core/somaxconn",
        )
        .fix(fix());
        out.push(f);
        Ok(())
    }
}

/// Without samples: the totals since boot, at info.
fn since_boot(rule: &ListenDrops, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Option<Result<(), Skip>> {
    let sb = cx.since_boot()?;
    let (over, drops) = (
        sb.counter("TcpExt.ListenOverflows")?,
        sb.counter("TcpExt.ListenDrops")?,
    );
    if over == 0 && drops == 0 {
        return Some(Ok(()));
    }
    let f = crate::finding::from_rule(
        rule,
        "host",
        format!(
            "TCP: {drops} connection attempts dropped at listen queues ({over} overflows) {} (no samples: not a rate)",
            sb.span()
        ),
    )
    .severity(Severity::Info)
    .evidence("TcpExt.ListenOverflows", over.to_string(), "/proc/net/netstat TcpExt.ListenOverflows")
    .evidence("TcpExt.ListenDrops", drops.to_string(), "/proc/net/netstat TcpExt.ListenDrops")
    .fix(fix());
    out.push(f);
    Some(Ok(()))
}

/// Raise the accept backlog.
fn fix() -> Fix {
    Fix {
        text: "Raise the accept backlog: net.core.somaxconn (per network namespace) and the backlog the application passes to listen(); `ss -ltn` shows each listener's Recv-Q (queued) against Send-Q (its backlog). If the queue is full because accept() lags, add accepting threads (SO_REUSEPORT).".into(),
        changes: Vec::new(),
        command: None,
        app: Some("listen(fd, 4096) with net.core.somaxconn >= 4096: sysctl -w net.core.somaxconn=4096".into()),
        bench: None,
    }
}
