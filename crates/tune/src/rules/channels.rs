//! `channels`: one combined channel per usable physical core of the NIC's node.

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use model::plan::{EthtoolGroup, Phase, Target};

/// Raises combined channels (IRQs are re-read and re-placed after apply).
#[derive(Debug)]
pub struct Channels;

impl Rule for Channels {
    fn id(&self) -> RuleId {
        RuleId::Channels
    }

    fn rationale(&self) -> &'static str {
        "one RX/TX channel per usable physical core of the NIC's node lets RSS spread flows in hardware"
    }

    fn source(&self) -> &'static str {
        "Documentation/networking/scaling.rst (RSS); ethtool(8) -L"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let Some(ch) = nic.iface.ethtool.channels.value() else {
            return;
        };
        let (Some(cur), Some(max)) = (ch.combined, ch.combined_max) else {
            return;
        };
        let name = nic.name;
        let cores = nic.scope_cores.len();
        let want = max.min(u32::try_from(cores).unwrap_or(u32::MAX)).max(1);
        if want <= cur {
            return;
        }
        cx.push(
            Phase::Channels,
            self.id(),
            "combined",
            Target::Ethtool {
                iface: name.into(),
                group: EthtoolGroup::Channels,
                attr: "combined".into(),
            },
            Some(cur.to_string()),
            want.to_string(),
            format!(
                "{name}: {cur} combined channels for {cores} usable physical cores{} (max {max}); IRQs are re-read and placed after this",
                nic.node.map(|n| format!(" of node {n}")).unwrap_or_default()
            ),
            false,
        );
    }
}
