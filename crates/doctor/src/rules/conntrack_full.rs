//! `conntrack-full`: the connection tracking table near `nf_conntrack_max`,
//! or its drop counters (`drop`, `early_drop`, `insert_failed`) non-zero.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Fill above which the table is "near full" (warning).
pub const CONNTRACK_NEAR: f64 = 0.90;
/// Fill above which new connections are about to be dropped (critical).
pub const CONNTRACK_FULL: f64 = 0.98;

/// Conntrack table full or dropping.
#[derive(Debug)]
pub struct ConntrackFull;

impl DoctorRule for ConntrackFull {
    fn id(&self) -> FindingId {
        FindingId::ConntrackFull
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "connection tracking table near its maximum or dropping"
    }
    fn rationale(&self) -> &'static str {
        "when nf_conntrack holds nf_conntrack_max entries the kernel drops the first packet of every new flow (\"nf_conntrack: table full, dropping packet\"); early_drop evicts live entries and insert_failed loses races"
    }
    fn source(&self) -> &'static str {
        "Documentation/networking/nf_conntrack-sysctl.rst; netdata src/health/health.d/netfilter.conf (netfilter_conntrack_full)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let ct = cx.input.facts.conntrack.get()?;
        let fill = if ct.max > 0 {
            ct.count as f64 / ct.max as f64
        } else {
            0.0
        };
        let counter = |k: &str| ct.stat.as_ref().and_then(|s| s.total(k)).unwrap_or(0);
        let drops = [
            ("drop", counter("drop")),
            ("early_drop", counter("early_drop")),
            ("insert_failed", counter("insert_failed")),
        ];
        let dropped = drops.iter().any(|(_, v)| *v > 0);
        if fill < CONNTRACK_NEAR && !dropped {
            return Ok(());
        }
        let severity = if fill >= CONNTRACK_FULL {
            Severity::Critical
        } else if fill >= CONNTRACK_NEAR {
            Severity::Warning
        } else {
            Severity::Info
        };
        let mut f = crate::finding::from_rule(
            self,
            "nf_conntrack",
            format!(
                "conntrack table at {} of {} entries ({:.1} %)",
                ct.count,
                ct.max,
                fill * 100.0
            ),
        )
        .severity(severity)
        .evidence(
            "nf_conntrack_count",
            ct.count.to_string(),
            "/proc/sys/net/netfilter/nf_conntrack_count",
        )
        .evidence(
            "nf_conntrack_max",
            ct.max.to_string(),
            "/proc/sys/net/netfilter/nf_conntrack_max",
        );
        for (k, v) in drops.iter().filter(|(_, v)| *v > 0) {
            f = f.evidence(
                format!("{k} since boot, all CPUs"),
                v.to_string(),
                "/proc/net/stat/nf_conntrack",
            );
        }
        let want = ct.max.saturating_mul(2).max(ct.count.saturating_mul(2));
        out.push(f.fix(Fix {
            text: format!(
                "Raise the table: `sysctl -w net.netfilter.nf_conntrack_max={want}` (and nf_conntrack_buckets to a quarter of it), persisted in /etc/sysctl.d; or exempt high-rate flows from tracking with a raw-table NOTRACK rule (`iptables -t raw -A PREROUTING -p udp --dport PORT -j NOTRACK`)."
            ),
            ..Fix::default()
        }));
        Ok(())
    }
}
