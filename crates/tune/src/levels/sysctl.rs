//! Per-namespace sysctls: socket buffer limits, TIME_WAIT reuse and the
//! local port range (congestion control is per socket: `congestion.rs`).

use model::experiment::{Knob, Level};
use model::knobpath::sysctl_path;
use model::plan::{Phase, Target, ValueFormat};
use model::snapshot::HostSnapshot;

use super::{change, na, Effect, KnobKind, NotApplicable};

/// A `/proc/sys/net/...` knob.
#[derive(Debug, Clone, Copy)]
pub struct SysctlKnob;

fn key(knob: Knob) -> Option<&'static str> {
    Some(match knob {
        Knob::RmemMax => "net.core.rmem_max",
        Knob::WmemMax => "net.core.wmem_max",
        Knob::TcpRmem => "net.ipv4.tcp_rmem",
        Knob::TcpWmem => "net.ipv4.tcp_wmem",
        Knob::TcpTwReuse => "net.ipv4.tcp_tw_reuse",
        Knob::IpLocalPortRange => "net.ipv4.ip_local_port_range",
        _ => return None,
    })
}

impl KnobKind for SysctlKnob {
    fn handles(&self, knob: Knob) -> bool {
        key(knob).is_some()
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let Some(key) = key(knob) else {
            return Err(na(knob, level, "not a sysctl".into()));
        };
        let Some(before) = snap.sysctls.get(key) else {
            return Err(na(knob, level, format!("{key} is absent on this host")));
        };
        let after = match (knob, level) {
            (_, Level::Int(v)) => v.to_string(),
            (_, Level::Triple([a, b, c])) => format!("{a}\t{b}\t{c}"),
            (_, Level::Range([a, b])) => format!("{a}\t{b}"),
            _ => return Err(na(knob, level, "level of the wrong type".into())),
        };
        Ok(Effect::Changes(vec![change(
            Phase::Sysctls,
            key,
            Target::File {
                path: sysctl_path(key),
                format: ValueFormat::Text,
            },
            Some(before.clone()),
            after,
            &format!("{}={level}", knob.name()),
        )]))
    }
}
