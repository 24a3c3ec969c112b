//! `bufferbloat`: a transmit queue served by `pfifo_fast` (a plain FIFO
//! as deep as `tx_queue_len`) where `fq_codel` or `fq` is available; a
//! warning when that queue holds a backlog or has dropped, with its byte
//! queue limits as evidence (a limit of 0 means the driver does not use BQL
//! and its ring is one more deep FIFO).

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;
use model::doctor_facts::Qdisc;

/// Deep FIFO qdiscs.
const FIFO_KINDS: &[&str] = &["pfifo_fast", "pfifo", "bfifo"];

/// A deep FIFO where an AQM is available.
#[derive(Debug)]
pub struct Bufferbloat;

impl DoctorRule for Bufferbloat {
    fn id(&self) -> FindingId {
        FindingId::Bufferbloat
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "a deep FIFO qdisc where fq_codel or fq is available"
    }
    fn rationale(&self) -> &'static str {
        "a FIFO of tx_queue_len packets fills under bulk traffic and every packet behind it waits (bufferbloat): latency rises for all flows; fq_codel and fq keep the standing queue short and flows apart, and BQL keeps the driver ring from becoming one more FIFO"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (bufferbloat, http://www.bufferbloat.net/projects/bloat/wiki/Introduction); tc-fq_codel(8); Documentation/networking/scaling.rst (BQL)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let facts = &cx.input.facts;
        let qdiscs = facts.qdiscs.get()?;
        let avail = facts.available_qdiscs.get()?;
        let better: Vec<&str> = ["fq_codel", "fq"]
            .into_iter()
            .filter(|k| avail.iter().any(|a| a == k))
            .collect();
        let Some(best) = better.first().copied() else {
            return Ok(());
        };
        for iface in cx.snap().interfaces.iter().filter(|i| i.driver.is_some()) {
            let name = iface.name.as_str();
            let serving: Vec<&Qdisc> = qdiscs
                .iter()
                .filter(|q| q.interface == name)
                .filter(|q| {
                    (q.root && !matches!(q.kind.as_str(), "mq" | "mqprio")) || q.tx_queue.is_some()
                })
                .collect();
            let fifos: Vec<&Qdisc> = serving
                .iter()
                .copied()
                .filter(|q| FIFO_KINDS.contains(&q.kind.as_str()))
                .collect();
            if fifos.is_empty() {
                continue;
            }
            let busy: Vec<&Qdisc> = fifos
                .iter()
                .copied()
                .filter(|q| q.backlog.unwrap_or(0) > 0 || q.drops.unwrap_or(0) > 0)
                .collect();
            let kind = fifos[0].kind.as_str();
            let queues = if fifos.iter().any(|q| q.tx_queue.is_some()) {
                super::plural(fifos.len(), "TX queue")
            } else {
                "the root".to_string()
            };
            let mut f = crate::finding::from_rule(
                self,
                name,
                format!(
                    "{name}: {kind} on {queues} while {} is available",
                    better.join(" and ")
                ),
            );
            if !busy.is_empty() {
                f = f.severity(Severity::Warning);
            }
            if let Some(l) = iface.tx_queue_len {
                f = f.evidence(
                    "FIFO depth (tx_queue_len)",
                    format!("{l} packets"),
                    format!("/sys/class/net/{name}/tx_queue_len"),
                );
            }
            for q in &busy {
                let at = q.tx_queue.map_or("root".to_string(), |n| format!("tx-{n}"));
                f = f.evidence(
                    format!("{} on {at}: backlog, drops", q.kind),
                    format!(
                        "{} B ({} packets), {} dropped",
                        q.backlog.unwrap_or(0),
                        q.qlen.unwrap_or(0),
                        q.drops.unwrap_or(0)
                    ),
                    "netlink RTM_GETQDISC (tc -s qdisc show)",
                );
            }
            for b in facts.bql.iter().filter(|b| b.interface == name) {
                if b.limit == Some(0) {
                    f = f.evidence(
                        format!("BQL of tx-{}", b.queue),
                        "limit 0: the driver does not use byte queue limits",
                        format!(
                            "/sys/class/net/{name}/queues/tx-{}/byte_queue_limits/limit",
                            b.queue
                        ),
                    );
                }
            }
            f = f.evidence(
                "qdiscs available",
                better.join(", "),
                "/lib/modules/*/modules.{builtin,dep}, /sys/module/sch_*",
            );
            let replace = if fifos.iter().any(|q| q.tx_queue.is_some()) {
                format!("`sysctl -w net.core.default_qdisc={best}` then `tc qdisc replace dev {name} root mq` (mq gives every TX queue the default)")
            } else {
                format!("`tc qdisc replace dev {name} root {best}`")
            };
            out.push(f.fix(Fix {
                text: format!("Replace the FIFO with {best}: {replace}; persist net.core.default_qdisc={best} in /etc/sysctl.d so new devices get it."),
                ..Fix::default()
            }));
        }
        Ok(())
    }
}
