//! Per-device NAPI knobs under `/sys/class/net/IF/`: `gro_flush_timeout`,
//! `napi_defer_hard_irqs` and `threaded`.

use model::experiment::{Knob, Level};
use model::plan::{Phase, Target, ValueFormat};
use model::snapshot::{HostSnapshot, Interface};

use super::{change, devices, na, Effect, KnobKind, NotApplicable};

/// GRO flush timeout, deferred hard IRQs and threaded NAPI.
#[derive(Debug, Clone, Copy)]
pub struct NapiKnob;

fn file(knob: Knob) -> Option<&'static str> {
    Some(match knob {
        Knob::GroFlushTimeout => "gro_flush_timeout",
        Knob::NapiDeferHardIrqs => "napi_defer_hard_irqs",
        Knob::ThreadedNapi => "threaded",
        _ => return None,
    })
}

fn current(iface: &Interface, knob: Knob) -> Option<String> {
    match knob {
        Knob::GroFlushTimeout => iface.gro_flush_timeout.map(|v| v.to_string()),
        Knob::NapiDeferHardIrqs => iface.napi_defer_hard_irqs.map(|v| v.to_string()),
        Knob::ThreadedNapi => iface.threaded.map(|v| v.to_string()),
        _ => None,
    }
}

impl KnobKind for NapiKnob {
    fn handles(&self, knob: Knob) -> bool {
        file(knob).is_some()
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let Some(name) = file(knob) else {
            return Err(na(knob, level, "not a NAPI knob".into()));
        };
        let after = match level {
            Level::Int(v) => v.to_string(),
            Level::Bool(b) => u8::from(*b).to_string(),
            _ => return Err(na(knob, level, "level of the wrong type".into())),
        };
        let text = format!("{}={level}", knob.name());
        let mut out = Vec::new();
        let mut lacking = Vec::new();
        for iface in devices(snap) {
            match current(iface, knob) {
                Some(before) => out.push(change(
                    Phase::Steering,
                    name,
                    Target::File {
                        path: format!("/sys/class/net/{}/{name}", iface.name),
                        format: ValueFormat::Text,
                    },
                    Some(before),
                    after.clone(),
                    &text,
                )),
                None => lacking.push(iface.name.clone()),
            }
        }
        if out.is_empty() {
            let why = if lacking.is_empty() {
                "no interface but loopback on this host".to_string()
            } else {
                format!("no {name} file on {}", lacking.join(", "))
            };
            return Err(na(knob, level, why));
        }
        Ok(Effect::Changes(out))
    }
}
