//! The `--script` form of plans that `plan` itself does not produce: ring
//! attributes named like the snapshot's fields, and values from a hand-edited
//! plan file (`apply --plan FILE --dry-run` prints the script).

#![allow(clippy::unwrap_used)]

use model::plan::{
    Change, EthtoolGroup, NetnsScope, Phase, Plan, PlanOptions, Target, PLAN_SCHEMA_VERSION,
};
use nettune_tune as tune;

fn plan_with(changes: Vec<Change>) -> Plan {
    Plan {
        schema_version: PLAN_SCHEMA_VERSION,
        profile: "test".into(),
        profile_toml: None,
        fingerprint: "0".into(),
        hostname: None,
        options: PlanOptions::default(),
        scope: NetnsScope::Init,
        changes,
        notes: vec![],
    }
}

fn ethtool(group: EthtoolGroup, attr: &str, after: &str) -> Change {
    Change {
        phase: Phase::Coalescing,
        knob: attr.into(),
        target: Target::Ethtool {
            iface: "eth0".into(),
            group,
            attr: attr.into(),
        },
        before: None,
        after: after.into(),
        rule: tune::RuleId::Rings.into(),
        reason: "test".into(),
        source: String::new(),
    }
}

/// Snapshots name ring attributes `rx_mini`/`rx_jumbo`; ethtool(8) takes
/// `rx-mini`/`rx-jumbo` (`ethtool --help`), as apply already spelled them.
#[test]
fn script_spells_ethtool_attributes_as_ethtool_takes_them() {
    let s = tune::render::script(&plan_with(vec![
        ethtool(EthtoolGroup::Rings, "rx_mini", "512"),
        ethtool(EthtoolGroup::Rings, "rx_jumbo", "1024"),
        ethtool(EthtoolGroup::Coalesce, "adaptive-rx", "0"),
        ethtool(EthtoolGroup::Coalesce, "rx-usecs", "50"),
        ethtool(EthtoolGroup::Channels, "combined", "4"),
    ]));
    for line in [
        "ethtool -G eth0 rx-mini 512",
        "ethtool -G eth0 rx-jumbo 1024",
        "ethtool -C eth0 adaptive-rx off",
        "ethtool -C eth0 rx-usecs 50",
        "ethtool -L eth0 combined 4",
    ] {
        assert!(s.lines().any(|l| l == line), "{line} not in\n{s}");
    }
}

/// A hand-edited plan's ethtool value went into the script unquoted, so the
/// reviewed script would have run `reboot`.
#[test]
fn script_quotes_ethtool_values() {
    let s = tune::render::script(&plan_with(vec![ethtool(
        EthtoolGroup::Coalesce,
        "rx-usecs",
        "50; reboot",
    )]));
    assert!(
        s.lines()
            .any(|l| l == "ethtool -C eth0 rx-usecs '50; reboot'"),
        "{s}"
    );
}
