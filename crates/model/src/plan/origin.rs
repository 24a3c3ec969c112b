//! What made a [`Change`](super::Change): a planner rule ([`RuleId`]), a
//! finding's fix ([`FindingId`]), an experiment level, the persistence files
//! or `--bdp`. Serialized as the one word plans and journals have always
//! carried in `rule` (`rps`, `timewait-exhaustion`, `experiment`).

use crate::finding_id::{string_ids, FindingId};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

string_ids! {
    /// A planner rule's id; profiles and plans spell it in kebab-case
    /// (`irq-affinity`). The rules are `tune::rules::CATALOGUE`.
    RuleId, "rule", {
    /// Stop irqbalance when the plan places IRQs.
    Irqbalance => "irqbalance",
    /// Combined channel count.
    Channels => "channels",
    /// Queue IRQ affinity.
    IrqAffinity => "irq-affinity",
    /// Receive packet steering.
    Rps => "rps",
    /// Receive flow steering.
    Rfs => "rfs",
    /// Transmit packet steering.
    Xps => "xps",
    /// Interrupt coalescing.
    Coalesce => "coalesce",
    /// Ring sizes.
    Rings => "rings",
    /// Offloads turned back on (`ethtool -K`).
    Offloads => "offloads",
    /// Socket buffer limits.
    SocketBuffers => "socket-buffers",
    /// Backlog and NAPI budget.
    Backlog => "backlog",
    /// Busy polling.
    BusyPoll => "busy-poll",
    /// CPU frequency governor.
    Governor => "governor",
    /// PM QoS resume latency.
    PmQos => "pm-qos",
    /// Driver module parameters.
    ModuleParams => "module-params",
    }
}

/// What made a change; JSON spells it as one word in the change's `rule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A planner rule (`rps`).
    Rule(RuleId),
    /// The fix of a finding (`timewait-exhaustion`).
    Finding(FindingId),
    /// A level of an experiment (`experiment`).
    Experiment,
    /// The files that make a plan persistent (`persist`).
    Persist,
    /// `nettune plan --bdp` (`bdp`).
    Bdp,
}

impl Origin {
    /// The word plans and journals carry.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Rule(r) => r.as_str(),
            Origin::Finding(f) => f.as_str(),
            Origin::Experiment => "experiment",
            Origin::Persist => "persist",
            Origin::Bdp => "bdp",
        }
    }

    /// The origin spelled `s`: a rule id, else a finding id, else one of the
    /// words (no rule or finding id is spelled like another or like a word).
    pub fn parse(s: &str) -> Option<Origin> {
        if let Some(r) = RuleId::parse(s) {
            return Some(Origin::Rule(r));
        }
        if let Some(f) = FindingId::parse(s) {
            return Some(Origin::Finding(f));
        }
        match s {
            "experiment" => Some(Origin::Experiment),
            "persist" => Some(Origin::Persist),
            "bdp" => Some(Origin::Bdp),
            _ => None,
        }
    }

    /// The planner rule, when a rule made the change.
    pub fn rule(self) -> Option<RuleId> {
        match self {
            Origin::Rule(r) => Some(r),
            _ => None,
        }
    }
}

impl From<RuleId> for Origin {
    fn from(r: RuleId) -> Origin {
        Origin::Rule(r)
    }
}

impl From<FindingId> for Origin {
    fn from(f: FindingId) -> Origin {
        Origin::Finding(f)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Origin {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<RuleId> for Origin {
    fn eq(&self, other: &RuleId) -> bool {
        *self == Origin::Rule(*other)
    }
}

impl Serialize for Origin {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Origin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Origin::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown rule `{}` (a planner rule, a finding, experiment, persist or bdp)",
                crate::text::printable_capped(&s, 64)
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling names one origin: rule ids, finding ids and the words
    /// are disjoint, and each round-trips through serde.
    #[test]
    fn spellings_are_disjoint_and_round_trip() {
        let mut all: Vec<Origin> = RuleId::ALL.iter().map(|&r| Origin::Rule(r)).collect();
        all.extend(FindingId::ALL.iter().map(|&f| Origin::Finding(f)));
        all.extend([Origin::Experiment, Origin::Persist, Origin::Bdp]);
        let mut seen = std::collections::BTreeSet::new();
        for o in all {
            assert!(seen.insert(o.as_str()), "{o} spelled twice");
            assert_eq!(Origin::parse(o.as_str()), Some(o));
            let j = serde_json::to_string(&o).unwrap();
            assert_eq!(j, format!("\"{o}\""));
            assert_eq!(serde_json::from_str::<Origin>(&j).unwrap(), o);
        }
        assert!(serde_json::from_str::<Origin>("\"rpss\"").is_err());
        assert!(serde_json::from_str::<RuleId>("\"rpss\"").is_err());
    }
}
