//! Interrupt coalescing in the space: autotune reads a device's current
//! `rx-usecs` from its `ethtool -c` (the snapshot), so min-p99 races ITR 0
//! and `--candidate coalesce_rx_usecs=0` is taken; a driver that reports no
//! coalescing (e1000 on the 82540EM, `e1000_get_coalesce`: `-EOPNOTSUPP`
//! below the 82545) leaves the knob out saying so.

use std::collections::BTreeMap;

use model::experiment::{Knob, Level};
use model::plan::NetnsScope;
use model::snapshot::{DriverInfo, HostSnapshot, PciId, Probe};
use tune::autotune::Objective;

use super::{keys, snap};
use crate::autotune::space::{add_candidates, build, ASKED};
use crate::exec::HostId;

/// The veth fixture's devices as e1000 ports of PCI id 8086:`device`,
/// whose `ethtool -c` reads `coalesce`.
fn e1000(device: u16, coalesce: Probe<BTreeMap<String, u64>>) -> Vec<(HostId, HostSnapshot)> {
    let mut s = snap();
    for i in s.interfaces.iter_mut().filter(|i| i.name != "lo") {
        i.ethtool.driver = Probe::Ok {
            value: DriverInfo {
                driver: Some("e1000".into()),
                ..DriverInfo::default()
            },
        };
        i.pci_id = Some(PciId {
            vendor: 0x8086,
            device,
        });
        i.ethtool.coalesce = coalesce.clone();
    }
    vec![(HostId(1), s.clone()), (HostId(0), s)]
}

/// `ethtool -c` of an e1000 in dynamic conservative mode (its default, 3).
fn reported() -> Probe<BTreeMap<String, u64>> {
    Probe::Ok {
        value: BTreeMap::from([("rx-usecs".to_string(), 3)]),
    }
}

/// 82545EM (QEMU's `e1000-82545em`): its `set_coalesce` takes 0.
const E82545EM: u16 = 0x100f;
/// 82540EM (QEMU's default `e1000`): coalescing refused.
const E82540EM: u16 = 0x100e;
/// 82547EI: Intel's e1000 README says it may hang with ITR 0.
const E82547EI: u16 = 0x1019;

#[test]
fn min_p99_races_itr_0_from_the_current_rx_usecs() {
    let hosts = e1000(E82545EM, reported());
    let b = build(Objective::MinP99, &hosts, NetnsScope::Child);
    let f = b
        .factors
        .iter()
        .find(|f| f.knob == Knob::CoalesceRxUsecs)
        .unwrap_or_else(|| panic!("no coalesce_rx_usecs in {:?}: {:?}", keys(&b), b.excluded));
    assert_eq!(f.levels, [Level::Int(3), Level::Int(0)]);
}

#[test]
fn a_candidate_itr_0_is_planted_next_to_the_current_rx_usecs() {
    let hosts = e1000(E82545EM, reported());
    let mut b = build(Objective::MaxCps, &hosts, NetnsScope::Child);
    add_candidates(
        &mut b,
        &hosts,
        NetnsScope::Child,
        &[(Knob::CoalesceRxUsecs, Level::Int(0))],
    );
    assert_eq!(keys(&b)[0], "coalesce_rx_usecs", "{:?}", b.excluded);
    assert_eq!(b.factors[0].levels, [Level::Int(3), Level::Int(0)]);
    assert!(b.sources.contains(&(Knob::CoalesceRxUsecs, ASKED)));
}

#[test]
fn a_driver_without_coalescing_leaves_the_knob_out_saying_why() {
    let refused = Probe::Unsupported {
        reason: "veth0: the driver does not report coalescing (EOPNOTSUPP)".into(),
    };
    let hosts = e1000(E82540EM, refused);
    let mut b = build(Objective::MinP99, &hosts, NetnsScope::Child);
    assert!(!keys(&b).contains(&"coalesce_rx_usecs"));
    let out = b
        .excluded
        .iter()
        .find(|e| e.knob == Knob::CoalesceRxUsecs)
        .unwrap()
        .to_string();
    assert!(
        out.contains("rx-usecs") && out.contains("EOPNOTSUPP"),
        "{out}"
    );
    add_candidates(
        &mut b,
        &hosts,
        NetnsScope::Child,
        &[(Knob::CoalesceRxUsecs, Level::Int(0))],
    );
    let asked = b
        .excluded
        .iter()
        .map(ToString::to_string)
        .find(|e| e.starts_with("coalesce_rx_usecs=0: --candidate:"))
        .unwrap();
    assert!(
        asked.contains("veth0: rx-usecs not readable: unsupported") && asked.contains("EOPNOTSUPP"),
        "{asked}"
    );
    assert!(!asked.contains("does not read this knob"), "{asked}");
}

#[test]
fn itr_0_is_not_raced_on_an_e1000_that_may_hang_with_it() {
    let hosts = e1000(E82547EI, reported());
    let b = build(Objective::MinP99, &hosts, NetnsScope::Child);
    assert!(!keys(&b).contains(&"coalesce_rx_usecs"));
    let out = b
        .excluded
        .iter()
        .find(|e| e.knob == Knob::CoalesceRxUsecs && e.level.is_some())
        .unwrap()
        .to_string();
    assert!(
        out.contains("8086:1019 may be an 82547") && out.ends_with("on h1"),
        "{out}"
    );
}
