//! `udp-rcvbuf-errors`: UDP datagrams dropped at full socket receive buffers
//! (`Udp.RcvbufErrors` growing over the window).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{BenchFix, Finding, Fix, Severity, Workloads};
use crate::input::Cx;
use tune::RuleId;

/// Share of received datagrams lost at the socket from which it is critical.
pub const CRITICAL_LOSS: f64 = 0.01;

/// UDP socket buffers too small.
#[derive(Debug)]
pub struct UdpRcvbufErrors;

impl DoctorRule for UdpRcvbufErrors {
    fn id(&self) -> FindingId {
        FindingId::UdpRcvbufErrors
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "UDP datagrams dropped at full socket buffers"
    }
    fn rationale(&self) -> &'static str {
        "the kernel received these datagrams and threw them away because the socket's receive buffer was full: the application reads too slowly for its buffer, and a larger SO_RCVBUF absorbs the bursts"
    }
    fn source(&self) -> &'static str {
        "\"2 Million Packets Per Second on a Public Cloud Instance\" (Netflix, 2016, http://techblog.cloudperf.net/2016/05/2-million-packets-per-second-on-public.html) (recvmmsg/sendmmsg at 2 Mpps); an unpublished field test (2026, a 2-vCPU KVM guest with kernel 6.18, two network namespaces over veth): 64-byte UDP loses 1-2.5 % at the socket with the default buffer, 0 with 4 MiB; socket(7) SO_RCVBUF"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = match cx.need_window() {
            Ok(w) => w,
            Err(skip) => return since_boot(self, cx, out).unwrap_or(Err(skip)),
        };
        let Some(errs) = w.counter("Udp.RcvbufErrors") else {
            return Err(Skip::because(
                "Udp.RcvbufErrors: not in the samples (/proc/net/snmp)",
            ));
        };
        if errs == 0 {
            return Ok(());
        }
        let ind = w.counter("Udp.InDatagrams").unwrap_or(0);
        let loss = errs as f64 / (ind.saturating_add(errs)).max(1) as f64;
        let sysctl = |k: &str| {
            cx.snap()
                .sysctls
                .get(k)
                .cloned()
                .unwrap_or_else(|| "?".into())
        };
        let mut f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "UDP: {errs} datagrams dropped at full receive buffers ({:.2} % of those that arrived) in {:.1} s",
                100.0 * loss,
                w.seconds
            ),
        )
        .evidence(
            "Udp.RcvbufErrors",
            format!("{errs} ({:.0}/s)", errs as f64 / w.seconds),
            "/proc/net/snmp Udp.RcvbufErrors",
        )
        .evidence(
            "Udp.InDatagrams",
            format!("{ind} ({:.0}/s)", ind as f64 / w.seconds),
            "/proc/net/snmp Udp.InDatagrams",
        )
        .evidence(
            "net.core.rmem_default / rmem_max",
            format!("{} / {}", sysctl("net.core.rmem_default"), sysctl("net.core.rmem_max")),
            "/proc/sys/net/core/rmem_default, rmem_max",
        );
        if loss >= CRITICAL_LOSS {
            f = f.severity(Severity::Critical);
        }
        let fix = fix(cx);
        out.push(f.fix(fix));
        Ok(())
    }
}

/// Without samples: the totals since boot, at info.
fn since_boot(
    rule: &UdpRcvbufErrors,
    cx: &Cx<'_>,
    out: &mut Vec<Finding>,
) -> Option<Result<(), Skip>> {
    let sb = cx.since_boot()?;
    let errs = sb.counter("Udp.RcvbufErrors")?;
    if errs == 0 {
        return Some(Ok(()));
    }
    let ind = sb.counter("Udp.InDatagrams").unwrap_or(0);
    let f = crate::finding::from_rule(
        rule,
        "host",
        format!(
            "UDP: {errs} datagrams dropped at full receive buffers {} (no samples: not a rate)",
            sb.span()
        ),
    )
    .severity(Severity::Info)
    .evidence(
        "Udp.RcvbufErrors",
        errs.to_string(),
        "/proc/net/snmp Udp.RcvbufErrors",
    )
    .evidence(
        "Udp.InDatagrams",
        ind.to_string(),
        "/proc/net/snmp Udp.InDatagrams",
    );
    out.push(f.fix(fix(cx)));
    Some(Ok(()))
}

/// The receive-buffer fix: the plan's rmem_max, else the sysctl, and SO_RCVBUF.
fn fix(cx: &Cx<'_>) -> Fix {
    let rmem_max = cx
        .snap()
        .sysctls
        .get("net.core.rmem_max")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let fallback = match rmem_max {
        Some(m) if m >= 4 << 20 => {
            format!("net.core.rmem_max ({m}) already lets SO_RCVBUF reach 4 MiB.")
        }
        _ => "sysctl -w net.core.rmem_max=4194304 so SO_RCVBUF can reach 4 MiB.".to_string(),
    };
    // Of the plan's socket-buffer changes only the receive cap matters
    // here (tcp_wmem and friends do not help a UDP receiver).
    let changes: Vec<_> = cx
        .plan_changes(&[RuleId::SocketBuffers], None)
        .into_iter()
        .filter(|c| c.knob == "net.core.rmem_max")
        .collect();
    let text = "Give the receiving sockets a larger buffer: SO_RCVBUF in the application (capped by net.core.rmem_max), or a larger net.core.rmem_default for applications that do not set it.";
    let mut fix = if changes.is_empty() {
        Fix {
            text: format!("{text} {fallback}"),
            ..Fix::default()
        }
    } else {
        Fix {
            text: format!(
                "{text} The {} plan raises net.core.rmem_max.",
                cx.plan_profile
            ),
            command: Some(cx.plan_command(None)),
            changes,
            ..Fix::default()
        }
    };
    fix.app = Some(
        "setsockopt(SO_RCVBUF, 4194304) on the receiving socket; with nettune bench: --rcvbuf 4M"
            .to_string(),
    );
    fix.bench = Some(BenchFix::new(Workloads::Udp, &["--rcvbuf", "4M"]));
    fix
}
