//! `ethtool -S` texts of real and synthesized drivers (see
//! `data/ethtool-S/README.md` for which is which) through the parser and
//! the per-queue view: every driver's queues come out with packets and
//! drops under one naming, NIC-wide counters stay NIC-wide.

#![allow(clippy::unwrap_used)]

use nettune_model::parse::ethtool_stats::{parse_ethtool_stats, QueueDir, QueueDir::*};

fn view(text: &str) -> Vec<(QueueDir, u32, Option<u64>, Option<u64>)> {
    parse_ethtool_stats(text)
        .unwrap()
        .queues()
        .iter()
        .map(|q| (q.dir, q.index, q.packets, q.drops))
        .collect()
}

#[test]
fn virtio_net_6_18_recorded() {
    let t = include_str!("data/ethtool-S/virtio_net-6.18.txt");
    let s = parse_ethtool_stats(t).unwrap();
    assert_eq!(s.driver.len(), 20);
    assert!(s.standard.is_empty());
    // 6.18's virtio_net reports per-queue drops and kicks, no packets.
    assert_eq!(view(t), vec![(Rx, 0, None, Some(0)), (Tx, 0, None, None)]);
    let q = &s.queues()[0];
    assert!(q.raw.contains_key("rx0_kicks"), "{:?}", q.raw);
}

#[test]
fn ifb_and_veth_recorded() {
    assert_eq!(
        view(include_str!("data/ethtool-S/ifb-6.18.txt")),
        vec![(Rx, 0, Some(0), None), (Tx, 0, Some(0), None)]
    );
    let t = include_str!("data/ethtool-S/veth-6.18.txt");
    assert_eq!(view(t), vec![(Rx, 0, None, Some(0)), (Tx, 0, None, None)]);
    let s = parse_ethtool_stats(t).unwrap();
    assert_eq!(s.driver["peer_ifindex"], 2);
    assert_eq!(s.queues()[0].raw.len(), 7);
}

#[test]
fn ena_queues_and_allowances() {
    let t = include_str!("data/ethtool-S/ena-synth.txt");
    let s = parse_ethtool_stats(t).unwrap();
    assert_eq!(s.driver["pps_allowance_exceeded"], 1840);
    for k in [
        "bw_in_allowance_exceeded",
        "bw_out_allowance_exceeded",
        "conntrack_allowance_exceeded",
        "linklocal_allowance_exceeded",
    ] {
        assert_eq!(s.driver[k], 0, "{k}");
    }
    assert_eq!(
        view(t),
        vec![
            (Rx, 0, Some(9000), None),
            (Rx, 1, Some(7000), None),
            (Tx, 0, Some(4000), None),
            (Tx, 1, Some(3100), None)
        ]
    );
}

#[test]
fn mlx5_ixgbe_i40e() {
    assert_eq!(
        view(include_str!("data/ethtool-S/mlx5-synth.txt")),
        vec![
            (Rx, 0, Some(18000), None),
            (Rx, 1, Some(12000), None),
            (Tx, 0, Some(11000), Some(0)),
            (Tx, 1, Some(9000), Some(3))
        ]
    );
    assert_eq!(
        view(include_str!("data/ethtool-S/ixgbe-synth.txt")),
        vec![
            (Rx, 0, Some(350), None),
            (Rx, 1, Some(150), None),
            (Tx, 0, Some(300), None),
            (Tx, 1, Some(100), None)
        ]
    );
    let t = include_str!("data/ethtool-S/i40e-synth.txt");
    assert_eq!(
        view(t),
        vec![
            (Rx, 0, Some(500), None),
            (Rx, 1, Some(300), None),
            (Tx, 0, Some(350), None),
            (Tx, 1, Some(250), None)
        ]
    );
    let s = parse_ethtool_stats(t).unwrap();
    assert_eq!(s.standard["eth-mac-FramesReceivedOK"], 800);
    assert_eq!(s.driver["port.rx_dropped"], 4);
}

#[test]
fn truncated_or_mutated_text_never_panics() {
    let t = include_str!("data/ethtool-S/ena-synth.txt");
    for cut in (0..t.len()).step_by(7) {
        if let Ok(s) = parse_ethtool_stats(&t[..cut]) {
            let _ = s.queues();
        }
    }
    let _ = parse_ethtool_stats(&t.replace(": ", ":"));
    let _ = parse_ethtool_stats(&t.replace('0', "\u{0}"));
}

mod prop {
    use nettune_model::parse::ethtool_stats::{
        parse_ethtool_stats, queue_name, queues, MAX_COUNTERS,
    };
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        #[test]
        fn any_text_parses_or_errs_without_panic(t in ".{0,400}") {
            if let Ok(s) = parse_ethtool_stats(&t) {
                prop_assert!(s.driver.len() + s.standard.len() <= MAX_COUNTERS);
                let _ = s.queues();
            }
        }

        #[test]
        fn names_split_into_parts_of_the_name(name in "[a-z_\\[\\]0-9.:\\- ]{0,40}") {
            if let Some(q) = queue_name(&name) {
                prop_assert!(!q.metric.is_empty());
                prop_assert!(name.contains(q.metric));
                prop_assert!(name.contains(&q.index.to_string()));
            }
        }

        #[test]
        fn per_queue_raw_counters_are_the_queue_names(
            m in proptest::collection::btree_map("[a-z_0-9\\-.]{1,24}", any::<u64>(), 0..40)
        ) {
            let m: BTreeMap<String, u64> = m;
            let qs = queues(&m);
            let raw: usize = qs.iter().map(|q| q.raw.len()).sum();
            prop_assert_eq!(raw, m.keys().filter(|k| queue_name(k).is_some()).count());
        }
    }
}
