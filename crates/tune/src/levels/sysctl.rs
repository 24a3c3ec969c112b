//! Per-namespace sysctls: socket buffer limits, congestion control,
//! TIME_WAIT reuse and the local port range.

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
        Knob::CongestionControl => "net.ipv4.tcp_congestion_control",
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
            (Knob::CongestionControl, Level::Name(n)) => {
                let avail = snap
                    .sysctls
                    .get("net.ipv4.tcp_available_congestion_control")
                    .map(String::as_str)
                    .unwrap_or("");
                if !avail.split_whitespace().any(|a| a == n) {
                    return Err(na(
                        knob,
                        level,
                        format!("not in tcp_available_congestion_control ({avail})"),
                    ));
                }
                n.clone()
            }
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
