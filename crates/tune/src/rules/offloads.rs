//! `offloads`: turn receive checksum, GRO, TSO and GSO back on where the
//! driver supports them (not `[fixed]`) and they are off, so that the plan
//! does not leave standing what doctor's `offload-off` flags.

use super::{Rule, RuleId};
use crate::context::{Ctx, Nic};
use model::knobpath::ETHTOOL_FEATURES;
use model::plan::{EthtoolGroup, Phase, Target};

/// Sets offloads (`ethtool -K`).
#[derive(Debug)]
pub struct Offloads;

impl Rule for Offloads {
    fn id(&self) -> RuleId {
        RuleId::Offloads
    }

    fn rationale(&self) -> &'static str {
        "without receive checksum offload the CPU checksums every packet; without GRO, TSO or GSO the stack handles each MTU-sized packet alone instead of batches of up to 64 KB"
    }

    fn source(&self) -> &'static str {
        "Documentation/networking/segmentation-offloads.rst and checksum-offloads.rst (kernel); ethtool(8) -K"
    }

    fn plan_iface(&self, cx: &mut Ctx<'_>, nic: &mut Nic<'_>) {
        let name = nic.name;
        let Some(feats) = nic.iface.ethtool.features.value() else {
            return;
        };
        for (feature, kw) in ETHTOOL_FEATURES {
            let Some(f) = feats.get(feature) else {
                continue;
            };
            if f.active || f.fixed {
                continue;
            }
            cx.push(
                Phase::Coalescing,
                self.id(),
                feature,
                Target::Ethtool {
                    iface: name.into(),
                    group: EthtoolGroup::Features,
                    attr: feature.into(),
                },
                Some("0".into()),
                "1".into(),
                format!("{name}: {feature} is off although the driver supports it (`ethtool -K {name} {kw} on`)"),
                false,
            );
        }
    }
}
