//! NIC settings through ethtool: channel count, ring sizes and interrupt
//! coalescing, on the interfaces whose driver reports them.

use model::experiment::{Knob, Level};
use model::plan::{EthtoolGroup, Phase, Target};
use model::snapshot::{HostSnapshot, Probe};

use super::{change, devices, na, Effect, KnobKind, NotApplicable};

/// `ethtool -L combined`, `ethtool -G rx/tx` and `ethtool -C
/// rx-usecs/tx-usecs/adaptive-rx`.
#[derive(Debug, Clone, Copy)]
pub struct EthtoolKnob;

fn probe_reason<T>(p: &Probe<T>) -> String {
    match p {
        Probe::Ok { .. } => "reported".into(),
        Probe::Unsupported { reason } => format!("unsupported ({reason})"),
        Probe::Error { message } => format!("unreadable ({message})"),
        Probe::Absent => "not read".into(),
    }
}

impl KnobKind for EthtoolKnob {
    fn handles(&self, knob: Knob) -> bool {
        matches!(
            knob,
            Knob::Channels
                | Knob::RxRing
                | Knob::TxRing
                | Knob::CoalesceRxUsecs
                | Knob::CoalesceTxUsecs
                | Knob::AdaptiveRx
        )
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let text = format!("{}={level}", knob.name());
        let mut out = Vec::new();
        let mut why = Vec::new();
        for iface in devices(snap) {
            let e = &iface.ethtool;
            match (knob, level) {
                (Knob::Channels, Level::Int(n)) => {
                    let Some(ch) = e.channels.value() else {
                        why.push(format!(
                            "{}: channels {}",
                            iface.name,
                            probe_reason(&e.channels)
                        ));
                        continue;
                    };
                    // Combined channels, or separate rx and tx ones (veth).
                    let attrs: Vec<(&str, u32, u32)> = match (ch.combined, ch.combined_max) {
                        (Some(cur), Some(max)) => vec![("combined", cur, max)],
                        _ => [("rx", ch.rx, ch.rx_max), ("tx", ch.tx, ch.tx_max)]
                            .into_iter()
                            .filter_map(|(a, c, m)| Some((a, c?, m?)))
                            .collect(),
                    };
                    if attrs.is_empty() {
                        why.push(format!("{}: no channel counts", iface.name));
                        continue;
                    }
                    for (attr, cur, max) in attrs {
                        if *n > i64::from(max) {
                            return Err(na(
                                knob,
                                level,
                                format!("{} has at most {max} {attr} channels", iface.name),
                            ));
                        }
                        out.push(change(
                            Phase::Channels,
                            attr,
                            Target::Ethtool {
                                iface: iface.name.clone(),
                                group: EthtoolGroup::Channels,
                                attr: attr.into(),
                            },
                            Some(cur.to_string()),
                            n.to_string(),
                            &text,
                        ));
                    }
                }
                (Knob::RxRing | Knob::TxRing, Level::Int(n)) => {
                    let Some(r) = e.rings.value() else {
                        why.push(format!("{}: rings {}", iface.name, probe_reason(&e.rings)));
                        continue;
                    };
                    let (attr, cur, max) = if knob == Knob::RxRing {
                        ("rx", r.rx, r.rx_max)
                    } else {
                        ("tx", r.tx, r.tx_max)
                    };
                    let (Some(cur), Some(max)) = (cur, max) else {
                        why.push(format!("{}: no {attr} ring size or maximum", iface.name));
                        continue;
                    };
                    if *n > i64::from(max) {
                        return Err(na(
                            knob,
                            level,
                            format!("{} has at most {max} {attr} ring descriptors", iface.name),
                        ));
                    }
                    // The phase of the planner's own ring changes (rules/rings.rs).
                    out.push(change(
                        Phase::Coalescing,
                        attr,
                        Target::Ethtool {
                            iface: iface.name.clone(),
                            group: EthtoolGroup::Rings,
                            attr: attr.into(),
                        },
                        Some(cur.to_string()),
                        n.to_string(),
                        &text,
                    ));
                }
                (Knob::CoalesceRxUsecs | Knob::CoalesceTxUsecs | Knob::AdaptiveRx, _) => {
                    let attr = match knob {
                        Knob::CoalesceRxUsecs => "rx-usecs",
                        Knob::CoalesceTxUsecs => "tx-usecs",
                        _ => "adaptive-rx",
                    };
                    let Some(co) = e.coalesce.value() else {
                        why.push(format!(
                            "{}: coalescing {}",
                            iface.name,
                            probe_reason(&e.coalesce)
                        ));
                        continue;
                    };
                    let Some(cur) = co.get(attr) else {
                        why.push(format!("{}: no {attr}", iface.name));
                        continue;
                    };
                    let after = match level {
                        Level::Int(v) => v.to_string(),
                        Level::Bool(b) => u8::from(*b).to_string(),
                        _ => return Err(na(knob, level, "level of the wrong type".into())),
                    };
                    out.push(change(
                        Phase::Coalescing,
                        attr,
                        Target::Ethtool {
                            iface: iface.name.clone(),
                            group: EthtoolGroup::Coalesce,
                            attr: attr.into(),
                        },
                        Some(cur.to_string()),
                        after,
                        &text,
                    ));
                }
                _ => return Err(na(knob, level, "level of the wrong type".into())),
            }
        }
        if out.is_empty() {
            let reason = if why.is_empty() {
                "no interface but loopback on this host".to_string()
            } else {
                why.join("; ")
            };
            return Err(na(knob, level, reason));
        }
        Ok(Effect::Changes(out))
    }
}
