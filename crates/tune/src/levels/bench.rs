//! Bench options as levels: they change how the load runs, not the host.

use model::experiment::{Knob, Level};
use model::snapshot::HostSnapshot;

use super::{na, online_cpus, Effect, KnobKind, NotApplicable};

/// `flows`, `busy_poll`, `cpu_pin`, `sndbuf`, `rcvbuf`, `force_buffers`,
/// `udp_gso`, `udp_gro` →
/// `nettune bench` flags.
#[derive(Debug, Clone, Copy)]
pub struct BenchOption;

impl KnobKind for BenchOption {
    fn handles(&self, knob: Knob) -> bool {
        matches!(
            knob,
            Knob::Flows
                | Knob::BusyPoll
                | Knob::CpuPin
                | Knob::Sndbuf
                | Knob::Rcvbuf
                | Knob::ForceBuffers
                | Knob::UdpGso
                | Knob::UdpGro
        )
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let args = match (knob, level) {
            (Knob::Flows, Level::Int(n)) => vec!["--flows".into(), n.to_string()],
            (Knob::BusyPoll, Level::Int(n)) => vec!["--busy-poll".into(), n.to_string()],
            (Knob::CpuPin, Level::Cpus(c)) if c.is_empty() => Vec::new(),
            (Knob::CpuPin, Level::Cpus(c)) => {
                let set = online_cpus(snap, knob, level, c)?;
                vec!["--cpus".into(), set.to_list()]
            }
            // 0: the kernel's default buffer.
            (Knob::Sndbuf | Knob::Rcvbuf, Level::Int(0)) => Vec::new(),
            (Knob::Sndbuf, Level::Int(n)) => vec!["--sndbuf".into(), n.to_string()],
            (Knob::Rcvbuf, Level::Int(n)) => vec!["--rcvbuf".into(), n.to_string()],
            (Knob::ForceBuffers, Level::Bool(true)) => vec!["--force-buffers".into()],
            (Knob::ForceBuffers, Level::Bool(false)) => Vec::new(),
            (Knob::UdpGso, Level::Bool(true)) => vec!["--udp-gso".into()],
            (Knob::UdpGro, Level::Bool(true)) => vec!["--udp-gro".into()],
            (Knob::UdpGso | Knob::UdpGro, Level::Bool(false)) => Vec::new(),
            _ => return Err(na(knob, level, "level of the wrong type".into())),
        };
        if args.is_empty() {
            Ok(Effect::Nothing)
        } else {
            Ok(Effect::BenchArgs(args))
        }
    }
}
