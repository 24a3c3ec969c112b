//! [`LabSpec`]: what a lab should look like, checked before anything runs,
//! and the choice of delay mechanism (netem or the userspace delay line).

use crate::{DelaySpec, LabError};
use std::time::Duration;

/// Most hosts a lab may have: enough for a fleet bench of 8 clients and a
/// server, or a fleet apply on several hosts plus a controller, while
/// building in a few seconds.
pub const MAX_HOSTS: u32 = 32;

/// What a [`Lab`](super::Lab) should look like.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSpec {
    /// Name prefix: lowercase letters and digits, 1 to 12 of them. Lab
    /// namespaces are named `PREFIX-PID-SEQ-hI`.
    pub prefix: String,
    /// Number of hosts, 2 to 32 (host 0 is the hub; the links to hosts 1 to
    /// 31 are /30 slots 0 to 30 of 198.18.0.0/15, hub interfaces `v1` to
    /// `v31`).
    pub hosts: u32,
    /// RX and TX queues per veth end, 1 to 16. Links on the userspace delay
    /// line are single-queue TUN devices whatever this says.
    pub queues: u32,
    /// Egress rate of every link end in bits/s (tc tbf), 1 kbit/s to 400 Gbit/s.
    pub rate: Option<u64>,
    /// Delay added to the round trip between host 0 and every other host
    /// (half in each direction), at most 10 s. A 100 ms link is
    /// `delay: Some(100 ms)`: ping between the two hosts shows 100 ms more.
    pub delay: Option<Duration>,
    /// Jitter of the round trip: each direction's delay varies uniformly by
    /// ± half of this, at most 10 s.
    pub jitter: Option<Duration>,
    /// Loss of every packet crossing a link, in each direction, in percent
    /// (0 to 100).
    pub loss: Option<f64>,
    /// Which delay mechanism may be used for delay, jitter and loss.
    pub mechanism: MechanismChoice,
}

/// Which mechanism [`Lab::build`](super::Lab::build) may use for delay, jitter and loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MechanismChoice {
    /// netem where the kernel has it, else the userspace delay line.
    #[default]
    Auto,
    /// netem only (an error where the kernel has none).
    Netem,
    /// The userspace delay line even where netem exists (to compare them).
    Userspace,
}

impl LabSpec {
    /// `hosts` hosts with `queues` queues, prefix `ntlab`, no shaping.
    pub fn new(hosts: u32, queues: u32) -> LabSpec {
        LabSpec {
            prefix: "ntlab".into(),
            hosts,
            queues,
            rate: None,
            delay: None,
            jitter: None,
            loss: None,
            mechanism: MechanismChoice::Auto,
        }
    }

    /// Check every field's range, before anything is created.
    pub fn validate(&self) -> Result<(), LabError> {
        let bad = |field, value: String, allowed| {
            Err(LabError::Spec {
                field,
                value,
                allowed,
            })
        };
        if self.prefix.is_empty()
            || self.prefix.len() > 12
            || !self
                .prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return bad(
                "prefix",
                self.prefix.clone(),
                "1 to 12 lowercase letters or digits",
            );
        }
        if !(2..=MAX_HOSTS).contains(&self.hosts) {
            return bad("hosts", self.hosts.to_string(), "2 to 32");
        }
        if !(1..=16).contains(&self.queues) {
            return bad("queues", self.queues.to_string(), "1 to 16");
        }
        if let Some(r) = self.rate {
            if !(1_000..=400_000_000_000).contains(&r) {
                return bad("rate", r.to_string(), "1000 to 400000000000 bit/s");
            }
        }
        for (field, d) in [("delay", self.delay), ("jitter", self.jitter)] {
            if let Some(d) = d {
                if d > Duration::from_secs(10) {
                    return bad(field, format!("{d:?}"), "at most 10 s");
                }
            }
        }
        if let Some(l) = self.loss {
            if !(l.is_finite() && (0.0..=100.0).contains(&l)) {
                return bad("loss", l.to_string(), "0 to 100 %");
            }
        }
        Ok(())
    }

    /// What of delay/jitter/loss is asked for, in words; `None` when nothing.
    pub(super) fn impairment(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(d) = self.delay {
            parts.push(format!("delay {d:?}"));
        }
        if let Some(j) = self.jitter {
            parts.push(format!("jitter {j:?}"));
        }
        if let Some(l) = self.loss {
            parts.push(format!("loss {l} %"));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// What each direction of a userspace delay line does for this spec:
    /// half the round-trip delay and jitter, the loss, and queue limits of
    /// [`DelaySpec::limits_for`] (at least the bytes in flight at `rate`).
    pub fn delay_spec(&self) -> DelaySpec {
        let delay = self.delay.unwrap_or_default() / 2;
        let jitter = self.jitter.unwrap_or_default() / 2;
        let (limit_packets, limit_bytes) = DelaySpec::limits_for(delay, jitter, self.rate);
        DelaySpec {
            delay,
            jitter,
            loss: self.loss.unwrap_or(0.0) / 100.0,
            limit_packets,
            limit_bytes,
            ..DelaySpec::default()
        }
    }
}

/// How a lab adds delay, jitter and loss (displayed as `netem`,
/// `userspace delay line (TUN)` or `none`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DelayMechanism {
    /// The kernel's netem qdisc on every veth end.
    Netem,
    /// nettune's userspace delay line: the links are TUN device pairs with
    /// a forwarder thread each, instead of veth pairs.
    Userspace,
    /// None: nothing was asked, or (from [`probe_netem`](super::probe_netem)) the reason netem
    /// is not available.
    None {
        /// Why there is none (what `tc qdisc add ... netem` said, or that no
        /// delay, jitter or loss was asked).
        reason: String,
    },
}

/// A delay line that could not be set up (its TUN device, its forwarder)
/// is [`LabError::NoDelayMechanism`] when it was the fallback for a kernel
/// without netem; other errors (a failed `ip` command) stay what they are.
pub(super) fn line_failed(asked: Option<&str>, choice: MechanismChoice, e: LabError) -> LabError {
    match e {
        LabError::DelayLine { .. } => LabError::NoDelayMechanism {
            asked: asked.unwrap_or_default().to_string(),
            reason: match choice {
                MechanismChoice::Userspace => format!("the userspace delay line failed: {e}"),
                _ => format!("no netem, and the userspace delay line failed: {e}"),
            },
        },
        e => e,
    }
}

impl DelayMechanism {
    /// Short id for results files: `netem`, `userspace` or `none`.
    pub fn id(&self) -> &'static str {
        match self {
            DelayMechanism::Netem => "netem",
            DelayMechanism::Userspace => "userspace",
            DelayMechanism::None { .. } => "none",
        }
    }
}

impl std::fmt::Display for DelayMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DelayMechanism::Netem => "netem",
            DelayMechanism::Userspace => "userspace delay line (TUN)",
            DelayMechanism::None { .. } => "none",
        })
    }
}

/// The mechanism to use, from what was asked, the choice and the netem
/// probe (run only when it matters). The delay line's own failure surfaces
/// when it is built (see [`line_failed`]).
pub(super) fn choose(
    asked: Option<&str>,
    choice: MechanismChoice,
    probe: impl FnOnce() -> DelayMechanism,
) -> Result<DelayMechanism, LabError> {
    let Some(asked) = asked else {
        return Ok(DelayMechanism::None {
            reason: "no delay, jitter or loss asked".into(),
        });
    };
    match choice {
        MechanismChoice::Userspace => Ok(DelayMechanism::Userspace),
        MechanismChoice::Auto => match probe() {
            DelayMechanism::Netem => Ok(DelayMechanism::Netem),
            _ => Ok(DelayMechanism::Userspace),
        },
        MechanismChoice::Netem => match probe() {
            DelayMechanism::Netem => Ok(DelayMechanism::Netem),
            DelayMechanism::None { reason } => Err(LabError::NoDelayMechanism {
                asked: asked.to_string(),
                reason: format!("netem was required and `tc qdisc add ... netem` failed: {reason}"),
            }),
            DelayMechanism::Userspace => Err(LabError::NoDelayMechanism {
                asked: asked.to_string(),
                reason: "netem was required".into(),
            }),
        },
    }
}

/// What results.json records of a lab of `spec` whose delay line is
/// `mechanism` (`none` when the link has no delay, jitter or loss).
pub fn lab_info(spec: &LabSpec, mechanism: &str) -> model::results::LabInfo {
    model::results::LabInfo {
        hosts: spec.hosts,
        queues: spec.queues,
        rate_mbit: spec.rate.map(|r| r as f64 / 1e6),
        delay_ms: spec.delay.map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        jitter_ms: spec.jitter.map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        loss_pct: spec.loss.unwrap_or(0.0),
        delay_mechanism: if spec.delay.is_some() || spec.loss.is_some() || spec.jitter.is_some() {
            mechanism.into()
        } else {
            "none".into()
        },
        path: "veth".into(),
    }
}

/// `--bdp RATE,RTT` for doctor and the plan of a lab with a rate and a
/// delay: the delay is already the added round trip ([`LabSpec::delay`]).
pub fn bdp_of(spec: &LabSpec) -> Option<String> {
    match (spec.rate, spec.delay) {
        (Some(rate), Some(d)) if !d.is_zero() => {
            Some(format!("{rate}bit,{}us", d.as_micros().max(1)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The BDP doctor and the plan get uses the delay as the RTT, not twice it.
    #[test]
    fn bdp_rtt_is_the_delay() {
        let spec = |rate: Option<u64>, delay_ms: Option<u64>| LabSpec {
            rate,
            delay: delay_ms.map(Duration::from_millis),
            ..LabSpec::new(2, 1)
        };
        let s = spec(Some(100_000_000), Some(20));
        assert_eq!(bdp_of(&s).as_deref(), Some("100000000bit,20000us"));
        assert_eq!(bdp_of(&spec(Some(100_000_000), None)), None);
        assert_eq!(bdp_of(&spec(None, Some(20))), None);
    }
}
