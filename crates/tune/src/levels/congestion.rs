//! Congestion control as a level: per socket (`nettune bench --congestion`,
//! TCP_CONGESTION on both ends), not the namespace default.
//!
//! A child network namespace may set its default
//! (`net.ipv4.tcp_congestion_control`) only to an algorithm in
//! `tcp_allowed_congestion_control` (`reno bbr` in a fresh namespace on 6.18:
//! writing `cubic` fails with EPERM, measured 2026-11-24), while a socket
//! of a process with CAP_NET_ADMIN may use any available one. So a level is
//! checked against `tcp_available_congestion_control` and set per socket.

use model::experiment::{Knob, Level};
use model::snapshot::HostSnapshot;

use super::{na, Effect, KnobKind, NotApplicable};

/// `congestion_control = "bbr"` → `--congestion bbr`.
#[derive(Debug, Clone, Copy)]
pub struct CongestionKnob;

impl KnobKind for CongestionKnob {
    fn handles(&self, knob: Knob) -> bool {
        knob == Knob::CongestionControl
    }

    fn effect(
        &self,
        snap: &HostSnapshot,
        knob: Knob,
        level: &Level,
    ) -> Result<Effect, NotApplicable> {
        let Level::Name(name) = level else {
            return Err(na(knob, level, "level of the wrong type".into()));
        };
        let Some(avail) = snap
            .sysctls
            .get("net.ipv4.tcp_available_congestion_control")
        else {
            return Err(na(
                knob,
                level,
                "tcp_available_congestion_control is absent on this host".into(),
            ));
        };
        if !avail.split_whitespace().any(|a| a == name) {
            return Err(na(
                knob,
                level,
                format!("not in tcp_available_congestion_control ({avail})"),
            ));
        }
        Ok(Effect::BenchArgs(vec!["--congestion".into(), name.clone()]))
    }
}
