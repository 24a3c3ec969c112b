//! Per-queue packet steering: `rps_cpus`, `rps_flow_cnt` (RX queues) and
//! `xps_cpus` (TX queues) of every interface but loopback.

use model::experiment::{Knob, Level};
use model::knobpath;
use model::plan::{Phase, Target, ValueFormat};
use model::snapshot::HostSnapshot;

use super::{change, devices, na, online_cpus, Effect, KnobKind, NotApplicable};

/// RPS, RFS flow counts and XPS, written per queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueSteering;

impl KnobKind for QueueSteering {
    fn handles(&self, knob: Knob) -> bool {
        matches!(knob, Knob::RpsCpus | Knob::RpsFlowCnt | Knob::XpsCpus)
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let groups = snap.cpu.mask_bits().div_ceil(32);
        let text = format!("{}={level}", knob.name());
        let mut out = Vec::new();
        let mut devs = 0;
        for iface in devices(snap) {
            devs += 1;
            match (knob, level) {
                (Knob::RpsCpus, Level::Cpus(c)) => {
                    let set = online_cpus(snap, knob, level, c)?;
                    for q in &iface.rx_queues {
                        let Some(cur) = &q.rps_cpus else { continue };
                        out.push(change(
                            Phase::Steering,
                            "rps_cpus",
                            Target::File {
                                path: knobpath::rps_cpus_path(&iface.name, q.index),
                                format: ValueFormat::Mask,
                            },
                            Some(cur.to_mask_groups(groups)),
                            set.to_mask_groups(groups),
                            &text,
                        ));
                    }
                }
                (Knob::XpsCpus, Level::Cpus(c)) => {
                    let set = online_cpus(snap, knob, level, c)?;
                    for q in &iface.tx_queues {
                        let Some(cur) = &q.xps_cpus else { continue };
                        out.push(change(
                            Phase::Steering,
                            "xps_cpus",
                            Target::File {
                                path: knobpath::xps_cpus_path(&iface.name, q.index),
                                format: ValueFormat::Mask,
                            },
                            Some(cur.to_mask_groups(groups)),
                            set.to_mask_groups(groups),
                            &text,
                        ));
                    }
                }
                (Knob::RpsFlowCnt, Level::Int(n)) => {
                    for q in &iface.rx_queues {
                        let Some(cur) = q.rps_flow_cnt else { continue };
                        out.push(change(
                            Phase::Steering,
                            "rps_flow_cnt",
                            Target::File {
                                path: knobpath::rps_flow_cnt_path(&iface.name, q.index),
                                format: ValueFormat::Text,
                            },
                            Some(cur.to_string()),
                            n.to_string(),
                            &text,
                        ));
                    }
                }
                _ => return Err(na(knob, level, "level of the wrong type".into())),
            }
        }
        if out.is_empty() {
            let why = if devs == 0 {
                "no interface but loopback on this host".to_string()
            } else {
                format!(
                    "no queue of this host's interfaces has a {} file",
                    knob.name()
                )
            };
            return Err(na(knob, level, why));
        }
        Ok(Effect::Changes(out))
    }
}
