//! `udp-sndbuf-errors`: UDP sends failing for want of buffer
//! (`Udp.SndbufErrors` growing over the window).

use super::{sysctl, DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;
use tune::RuleId;

/// Rate (per second) above which it fires (netdata's warning: > 10/s).
pub const WARN_PER_S: f64 = 10.0;

/// UDP sends failing at full buffers.
#[derive(Debug)]
pub struct UdpSndbufErrors;

impl DoctorRule for UdpSndbufErrors {
    fn id(&self) -> FindingId {
        FindingId::UdpSndbufErrors
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "UDP sends failing at full buffers"
    }
    fn rationale(&self) -> &'static str {
        "the kernel counts a UDP send here when the socket's send buffer is full or the queue below it (the qdisc, the device) refused the packet with ENOBUFS: the datagram is lost before it leaves the host, silently unless the application checks sendmsg's error"
    }
    fn source(&self) -> &'static str {
        "netdata src/health/health.d/udp_errors.conf (1m_ipv4_udp_send_buffer_errors: > 10/s); socket(7) (SO_SNDBUF, wmem_default, wmem_max); net/ipv4/udp.c (UDP_MIB_SNDBUFERRORS on ENOBUFS)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        let Some(errs) = w.counter("Udp.SndbufErrors") else {
            return Err(Skip::because(
                "Udp.SndbufErrors: not in the samples (/proc/net/snmp)",
            ));
        };
        let rate = errs as f64 / w.seconds;
        if rate <= WARN_PER_S {
            return Ok(());
        }
        let sent = w.counter("Udp.OutDatagrams").unwrap_or(0);
        let loss = 100.0 * errs as f64 / sent.saturating_add(errs).max(1) as f64;
        let f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "UDP: {errs} sends failed at full buffers ({loss:.2} % of the datagrams sent) in {:.1} s",
                w.seconds
            ),
        )
        .evidence(
            "Udp.SndbufErrors",
            format!("{errs} ({rate:.0}/s)"),
            "/proc/net/snmp Udp.SndbufErrors",
        )
        .evidence(
            "Udp.OutDatagrams",
            format!("{sent} ({:.0}/s)", sent as f64 / w.seconds),
            "/proc/net/snmp Udp.OutDatagrams",
        )
        .evidence(
            "net.core.wmem_default / wmem_max",
            format!(
                "{} / {}",
                sysctl(cx, "net.core.wmem_default"),
                sysctl(cx, "net.core.wmem_max")
            ),
            "/proc/sys/net/core/wmem_default, wmem_max",
        );
        let changes: Vec<_> = cx
            .plan_changes(&[RuleId::SocketBuffers], None)
            .into_iter()
            .filter(|c| c.knob == "net.core.wmem_max")
            .collect();
        let text = "Give the sending sockets a larger buffer: SO_SNDBUF in the application (capped by net.core.wmem_max), or a larger net.core.wmem_default for applications that do not set it. If the buffer is already large the device queue is what is full: `tc -s qdisc show` shows its drops; a longer txqueuelen or pacing the sender (SO_MAX_PACING_RATE with fq) helps.";
        let fix = if changes.is_empty() {
            Fix {
                text: text.into(),
                ..Fix::default()
            }
        } else {
            Fix {
                text: format!(
                    "{text} The {} plan raises net.core.wmem_max.",
                    cx.plan_profile
                ),
                command: Some(cx.plan_command(None)),
                changes,
                app: None,
                bench: None,
            }
        };
        out.push(f.fix(Fix {
            app: Some("setsockopt(SO_SNDBUF, 4194304) on the sending socket; check sendmsg() for ENOBUFS".into()),
            ..fix
        }));
        Ok(())
    }
}
