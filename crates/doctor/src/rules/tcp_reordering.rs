//! `tcp-reordering`: TCP retransmits that are reordering, not loss: SACK
//! reordering and out-of-order queueing rise while nothing is dropped
//! (softnet, the interfaces, the receive queues).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{BenchFix, Finding, Fix, Severity, Workloads};
use crate::input::Cx;

/// Retransmitted segments per second from which retransmits matter.
pub const MIN_RETRANS_PER_S: f64 = 10.0;

/// Reordering mistaken for loss.
#[derive(Debug)]
pub struct TcpReordering;

impl DoctorRule for TcpReordering {
    fn id(&self) -> FindingId {
        FindingId::TcpReordering
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "TCP retransmits from reordering, not loss"
    }
    fn rationale(&self) -> &'static str {
        "segments arriving out of order look like loss to the sender: it retransmits and may cut its rate although nothing was dropped; the cure is keeping a flow's packets in order (one receive CPU per flow) or a congestion control that tolerates reordering, not bigger buffers"
    }
    fn source(&self) -> &'static str {
        "an unpublished field test (2026, a 2-vCPU KVM guest with kernel 6.18, two network namespaces over veth): bbr held one stream near 16 Gbit/s with tens of thousands of retransmits, SACKReorder and the OFO queue rising and softnet drops at 0, while cubic or reno reached 37-68 Gbit/s and steering RX to one CPU removed them; bench/studies/congestion-control.md (cubic, bbr, reno); RFC 4737"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let w = cx.need_window()?;
        let (Some(retrans), Some(reorder)) = (
            w.counter("Tcp.RetransSegs"),
            w.counter("TcpExt.TCPSACKReorder"),
        ) else {
            return Err(Skip::because(
                "Tcp.RetransSegs/TcpExt.TCPSACKReorder: not in the samples (/proc/net/snmp, /proc/net/netstat)",
            ));
        };
        let ofo = w.counter("TcpExt.TCPOFOQueue").unwrap_or(0);
        let retrans_rate = retrans as f64 / w.seconds;
        if retrans_rate < MIN_RETRANS_PER_S || reorder == 0 {
            return Ok(());
        }
        // Loss anywhere on this host rules reordering out as the explanation.
        let drops = super::sat_sum(
            w.total
                .cpus
                .iter()
                .filter_map(|c| c.softnet.map(|s| s.dropped))
                .chain(w.total.ifaces.iter().map(|i| i.rx_drop))
                .chain(w.counter("TcpExt.TCPBacklogDrop"))
                .chain(w.counter("TcpExt.TCPRcvQDrop")),
        );
        if drops > 0 {
            return Ok(());
        }
        let cc = cx
            .snap()
            .sysctls
            .get("net.ipv4.tcp_congestion_control")
            .cloned()
            .unwrap_or_else(|| "?".into());
        let f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "TCP: {retrans} retransmits with {reorder} SACK reorderings and no drops in {:.1} s (congestion control {cc})",
                w.seconds
            ),
        )
        .evidence(
            "Tcp.RetransSegs",
            format!("{retrans} ({retrans_rate:.0}/s)"),
            "/proc/net/snmp Tcp.RetransSegs",
        )
        .evidence(
            "TcpExt.TCPSACKReorder",
            reorder.to_string(),
            "/proc/net/netstat TcpExt.TCPSACKReorder",
        )
        .evidence(
            "TcpExt.TCPOFOQueue",
            ofo.to_string(),
            "/proc/net/netstat TcpExt.TCPOFOQueue",
        )
        .evidence(
            "drops (softnet / interfaces / socket queues)",
            "0 / 0 / 0",
            "/proc/net/softnet_stat, /proc/net/dev, TcpExt.TCPBacklogDrop+TCPRcvQDrop",
        )
        .evidence(
            "net.ipv4.tcp_congestion_control",
            cc.clone(),
            "/proc/sys/net/ipv4/tcp_congestion_control",
        )
        .fix(Fix {
            text: format!(
                "Do not tune for loss (larger rings or backlogs will not help). Keep each flow's receive processing on one CPU (RFS, or one RPS CPU per queue) so its packets stay in order; {}",
                if cc == "bbr" {
                    "bbr reacts to this reordering here, cubic tolerates it: try net.ipv4.tcp_congestion_control=cubic (per namespace) or TCP_CONGESTION per socket."
                } else {
                    "a larger net.ipv4.tcp_reordering lets the sender wait longer before calling a gap a loss."
                }
            ),
            changes: Vec::new(),
            command: None,
            app: Some("setsockopt(IPPROTO_TCP, TCP_CONGESTION, \"cubic\") on the sending socket".into()),
            bench: Some(BenchFix::new(Workloads::Tcp, &["--congestion", "cubic"])),
        });
        out.push(f);
        Ok(())
    }
}
