//! `rps-off`: as the snapshot sees it (`inspect`), fewer RX queue IRQs than
//! online CPUs and RPS off on every queue; doctor builds on that finding:
//! fewer RX queues than usable cores, a warning when the window shows the
//! NIC receiving. One name for one condition.

use super::{host_findings, DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use crate::snapshot::{At, Scope};
use model::snapshot::QueueKind;
use tune::RuleId;

/// Packets per second received by one NIC above which `rps-off` is a warning.
pub const RPS_OFF_BUSY_PPS: f64 = 10_000.0;

/// Fewer RX queues than cores and no RPS.
#[derive(Debug)]
pub struct RpsOff;

impl DoctorRule for RpsOff {
    fn id(&self) -> FindingId {
        FindingId::RpsOff
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn title(&self) -> &'static str {
        "fewer RX queues than cores and RPS off"
    }
    fn rationale(&self) -> &'static str {
        "with fewer RX queues than cores and no RPS, protocol processing is limited to the CPUs taking the queue IRQs while the other cores cannot help"
    }
    fn source(&self) -> &'static str {
        "\"1 Aerospike Server X 1 Amazon EC2 Instance = 1 Million TPS for Just $1.68/hour\" (highscalability.com, 2014) (RPS and more ENIs on EC2); Red Hat Enterprise Linux 7 Performance Tuning Guide, \"Configuring Receive-Side Scaling (RSS)\" (https://access.redhat.com/documentation/en-US/Red_Hat_Enterprise_Linux/7/html/Performance_Tuning_Guide/); Documentation/networking/scaling.rst (RPS)"
    }
    fn advises(&self) -> (&'static [RuleId], &'static str) {
        (&[RuleId::Rps], "RPS: a hop to another CPU adds latency")
    }
    fn scope(&self) -> Option<Scope> {
        Some(Scope::Interface)
    }
    fn observe(&self, at: At<'_>, out: &mut Vec<Finding>) {
        let At::Interface(cx) = at else { return };
        let rxq = cx
            .qirqs
            .iter()
            .filter(|q| q.queue.is_some_and(|r| r.kind != QueueKind::Tx))
            .count();
        let rps_any = cx
            .iface
            .rx_queues
            .iter()
            .any(|q| q.rps_cpus.as_ref().is_some_and(|r| !r.is_empty()));
        let online = cx.host.s.cpu.online.len();
        if rxq == 0 || rxq >= online || rps_any {
            return;
        }
        let name = cx.name();
        out.push(cx.finding(
            self,
            format!(
            "{name}: {rxq} RX queue IRQ(s) for {online} online CPUs and RPS is off on every queue: at most {rxq} CPU(s) do receive processing"
            ),
        ));
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        for hf in host_findings(cx, FindingId::RpsOff) {
            let name = hf.subject.as_str();
            let Some(iface) = cx.snap().interface(name) else {
                continue;
            };
            // The snapshot finding compares with online CPUs; RPS helps only
            // with fewer queues than usable physical cores.
            let cores = cx.iface_cores(iface);
            if iface.rx_queues.len() >= cores {
                continue;
            }
            let pps = cx
                .window
                .as_ref()
                .and_then(|w| w.iface(name))
                .map(|d| d.rx_pps);
            let mut f = crate::finding::from_rule(
                self,
                name,
                format!(
                    "{name}: {} for {cores} usable physical cores of its node, RPS off",
                    super::plural(iface.rx_queues.len(), "RX queue")
                ),
            )
            .evidence(
                "layout",
                hf.title.clone(),
                "/proc/interrupts, /sys/class/net/*/queues",
            )
            .evidence(
                "rps_cpus of every RX queue",
                "0 (off)",
                format!("/sys/class/net/{name}/queues/rx-*/rps_cpus"),
            );
            if let Some(pps) = pps {
                f = f.evidence(
                    format!("{name} received"),
                    format!("{pps:.0} packets/s"),
                    "/proc/net/dev",
                );
                if pps >= RPS_OFF_BUSY_PPS {
                    f = f.severity(Severity::Warning);
                }
            }
            let fix = cx.plan_fix(
                &[RuleId::Rps, RuleId::Rfs],
                Some(name),
                "Turn RPS on: each RX queue's rps_cpus to the physical cores of the NIC's node (and RFS to keep flows on their application's CPU).",
                &format!("Write a mask of the NIC node's physical cores to /sys/class/net/{name}/queues/rx-N/rps_cpus."),
            );
            out.push(f.fix(fix));
        }
        Ok(())
    }
}
