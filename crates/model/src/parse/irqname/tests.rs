//! Unit tests of the IRQ name parser.

use super::*;

fn check(name: &str, dev: Option<&str>, kind: Option<QueueKind>, idx: Option<u32>) {
    let p = parse_irq_name(name);
    assert_eq!(p.device.as_deref(), dev, "{name}");
    assert_eq!(p.queue.map(|q| q.kind), kind, "{name}");
    assert_eq!(p.queue.and_then(|q| q.index), idx, "{name}");
}

#[test]
fn driver_conventions() {
    use QueueKind::*;
    check("eth0-TxRx-3", Some("eth0"), Some(Combined), Some(3));
    check("ens5-Tx-Rx-0", Some("ens5"), Some(Combined), Some(0));
    check(
        "i40e-ens1f0-TxRx-12",
        Some("ens1f0"),
        Some(Combined),
        Some(12),
    );
    check("ice-eth0-TxRx-0", Some("eth0"), Some(Combined), Some(0));
    check("iavf-eth0-TxRx-1", Some("eth0"), Some(Combined), Some(1));
    check("eth1-rx-1", Some("eth1"), Some(Rx), Some(1));
    check("eth1-tx-0", Some("eth1"), Some(Tx), Some(0));
    check("eth0-fp-7", Some("eth0"), Some(Combined), Some(7));
    check("sp-0-3b:00.00", Some("qed"), Some(Other), None);
    check("sp-1-81:00.01", Some("qed"), Some(Other), None);
    // An interface that happens to be called `sp-...` is not qed's.
    check("sp-lan-rx-0", Some("sp-lan"), Some(Rx), Some(0));
    check("virtio2-input.0", Some("virtio2"), Some(Rx), Some(0));
    check("virtio2-output.3", Some("virtio2"), Some(Tx), Some(3));
    check("virtio2-config", Some("virtio2"), Some(Other), None);
    check("virtio2-control", Some("virtio2"), Some(Other), None);
    check(
        "virtio2-virtqueues",
        Some("virtio2"),
        Some(Combined),
        Some(0),
    );
    check(
        "mlx5_comp3@pci:0000:00:06.0",
        Some("mlx5"),
        Some(Combined),
        Some(3),
    );
    check(
        "mlx5_async0@pci:0000:00:06.0",
        Some("mlx5"),
        Some(Other),
        None,
    );
    check(
        "mlx5_pages_eq@pci:0000:00:06.0",
        Some("mlx5"),
        Some(Other),
        None,
    );
    check("mlx4-1@0000:04:00.0", Some("mlx4"), Some(Combined), Some(0));
    check(
        "mlx4-async@pci:0000:04:00.0",
        Some("mlx4"),
        Some(Other),
        None,
    );
    check(
        "gve-ntfy-blk2@pci:0000:00:04.0",
        Some("gve"),
        Some(Combined),
        Some(2),
    );
    check("gve-mgmnt@pci:0000:00:04.0", Some("gve"), Some(Other), None);
    check("ena-mgmnt@pci:0000:00:05.0", Some("ena"), Some(Other), None);
    check("eth0-txrx-1", Some("eth0"), Some(Combined), Some(1));
    check("ens192-rxtx-0", Some("ens192"), Some(Combined), Some(0));
    check("ens192-event-4", Some("ens192"), Some(Other), None);
    check("eth0-q2", Some("eth0"), Some(Combined), Some(2));
    check("eth1-3", Some("eth1"), Some(Combined), Some(3));
    check("eth1-ptp", Some("eth1"), Some(Other), None);
    check("eth1-xdp-0", Some("eth1"), Some(Other), None);
    check(
        "hns3-0000:7d:00.0-TxRx-0",
        Some("0000:7d:00.0"),
        Some(Combined),
        Some(0),
    );
    check("hclge-misc-0000:7d:00.0", Some("hclge"), Some(Other), None);
    check(
        "i40e-0000:81:00.0:misc",
        Some("0000:81:00.0"),
        Some(Other),
        None,
    );
    check(
        "iavf-0000:00:05.0:mbx",
        Some("0000:00:05.0"),
        Some(Other),
        None,
    );
    check("eth0", Some("eth0"), None, None);
    check("eth0, ehci_hcd:usb1", Some("eth0"), None, None);
    check("ACPI:Ged", None, None, None);
    check("", None, None, None);
    assert_eq!(
        parse_irq_name("mlx5_comp3@pci:0000:00:06.0").pci.as_deref(),
        Some("0000:00:06.0")
    );
    assert_eq!(parse_irq_name("eth1-3").shape, NameShape::Numbered);
    assert_eq!(parse_irq_name("eth0").shape, NameShape::Bare);
}

fn owned<'a>(list: &[(u32, &'a str)], msi: bool) -> Vec<OwnedIrq<'a>> {
    list.iter()
        .map(|&(number, name)| OwnedIrq {
            number,
            name,
            msi,
            legacy: !msi,
        })
        .collect()
}

fn queues(m: &[MappedIrq]) -> Vec<Option<(QueueKind, Option<u32>)>> {
    m.iter()
        .map(|x| x.queue.map(|q| (q.kind, q.index)))
        .collect()
}

#[test]
fn sfc_numbered_vectors_are_queues() {
    let irqs = owned(&[(40, "eth1-0"), (41, "eth1-1"), (42, "eth1-ptp")], true);
    let (m, how) = map_queues(&irqs, Some("sfc"), 2);
    use QueueKind::*;
    assert_eq!(
        queues(&m),
        vec![
            Some((Combined, Some(0))),
            Some((Combined, Some(1))),
            Some((Other, None))
        ]
    );
    assert_eq!(how, Some(IrqMapping::Name));
    assert!(m.iter().all(|x| x.source == Some(QueueSource::Name)));
}

#[test]
fn tg3_vector_zero_is_link_and_rings_start_at_vector_one() {
    let irqs = owned(
        &[(50, "eth0-0"), (51, "eth0-txrx-1"), (52, "eth0-rx-2")],
        true,
    );
    let (m, _) = map_queues(&irqs, Some("tg3"), 2);
    use QueueKind::*;
    assert_eq!(
        queues(&m),
        vec![
            Some((Other, None)),
            Some((Combined, Some(0))),
            Some((Rx, Some(1)))
        ]
    );
}

/// Issue 17: sideband vectors named like queues are not queues.
#[test]
fn flow_director_and_control_vectors_are_not_queues() {
    use QueueKind::*;
    check(
        "i40e-0000:01:00.0:fdir-TxRx-0",
        Some("0000:01:00.0"),
        Some(Other),
        None,
    );
    check(
        "ice-0000:65:00.0:ctrl-TxRx-0",
        Some("0000:65:00.0"),
        Some(Other),
        None,
    );
    check("eth0-fdir-TxRx-0", Some("eth0"), Some(Other), None);
    // A down i40e port keeps its misc and flow-director vectors only:
    // no queue, so nothing to pin and no "1 RX queue" finding.
    let irqs = owned(
        &[
            (40, "i40e-0000:01:00.0:misc"),
            (41, "i40e-0000:01:00.0:fdir-TxRx-0"),
        ],
        true,
    );
    let (m, how) = map_queues(&irqs, Some("i40e"), 4);
    assert_eq!(queues(&m), vec![Some((Other, None)), Some((Other, None))]);
    assert_eq!(how, Some(IrqMapping::NoQueueIrqs));
}

/// Issue 17: ice >= 1.16 (out of tree) names vectors `ice-IF-TxRx-A-B`.
#[test]
fn ice_paired_txrx_names_are_queues() {
    use QueueKind::*;
    check("ice-eth0-TxRx-3-3", Some("eth0"), Some(Combined), Some(3));
    check(
        "ice-ens1f0-TxRx-0-0",
        Some("ens1f0"),
        Some(Combined),
        Some(0),
    );
    assert_eq!(parse_irq_name("ice-eth0-TxRx-3-3").shape, NameShape::Queue);
    assert_eq!(parse_irq_name("ice-eth0-TxRx-3-3").last, None);
}

/// Issue 17: `TxRx-A-B` is a range. Real names from
/// https://github.com/intel/ethernet-linux-ice/issues/16 (ice 1.16.3, 64
/// queue pairs on 32 vectors: `ice-ens2f1-TxRx-0-1`, `ice-ens2f1-TxRx-2-3`,
/// ...); the driver writes `"%s-%s-%u-%u", basename, "TxRx", rx_irq_idx,
/// rx_irq_idx + num_ring_rx - 1`, so each vector serves two queues.
#[test]
fn ice_txrx_ranges_serve_every_queue_of_the_range() {
    use QueueKind::*;
    let p = parse_irq_name("ice-ens2f1-TxRx-2-3");
    assert_eq!(p.device.as_deref(), Some("ens2f1"));
    assert_eq!(
        p.queue.map(|q| (q.kind, q.index)),
        Some((Combined, Some(2)))
    );
    assert_eq!(p.last, Some(3));
    let irqs = owned(
        &[
            (100, "ice-0000:3b:00.1:misc"),
            (101, "ice-ens2f1-TxRx-0-1"),
            (102, "ice-ens2f1-TxRx-2-3"),
        ],
        true,
    );
    let (mut m, _) = map_queues(&irqs, Some("ice"), 4);
    let ranges: Vec<_> = m
        .iter()
        .map(|x| (x.queue.and_then(|q| q.index), x.last))
        .collect();
    assert_eq!(
        ranges,
        vec![(None, None), (Some(0), Some(1)), (Some(2), Some(3))]
    );
    // After `ethtool -L combined 3` the second vector's range ends at 2.
    retain_existing(&mut m, 3, 3);
    let ranges: Vec<_> = m
        .iter()
        .map(|x| (x.queue.and_then(|q| q.index), x.last))
        .collect();
    assert_eq!(
        ranges,
        vec![(None, None), (Some(0), Some(1)), (Some(2), None)]
    );
}

/// Issue 17: tg3 with RSS on and TSS off: vector 0 carries TX ring 0
/// (`eth0-tx-0`), vectors 1..4 carry RX rings 0..3 (`eth0-rx-1..4`).
#[test]
fn tg3_tss_off_rx_vectors_serve_ring_minus_one() {
    let irqs = owned(
        &[
            (60, "eth0-tx-0"),
            (61, "eth0-rx-1"),
            (62, "eth0-rx-2"),
            (63, "eth0-rx-3"),
            (64, "eth0-rx-4"),
        ],
        true,
    );
    let (m, _) = map_queues(&irqs, Some("tg3"), 4);
    use QueueKind::*;
    assert_eq!(
        queues(&m),
        vec![
            Some((Tx, Some(0))),
            Some((Rx, Some(0))),
            Some((Rx, Some(1))),
            Some((Rx, Some(2))),
            Some((Rx, Some(3)))
        ]
    );
}

#[test]
fn gve_notify_blocks_split_into_tx_then_rx() {
    let irqs = owned(
        &[
            (60, "gve-ntfy-blk0@pci:0000:00:04.0"),
            (61, "gve-ntfy-blk1@pci:0000:00:04.0"),
            (62, "gve-ntfy-blk2@pci:0000:00:04.0"),
            (63, "gve-ntfy-blk3@pci:0000:00:04.0"),
            (64, "gve-mgmnt@pci:0000:00:04.0"),
        ],
        true,
    );
    let (m, _) = map_queues(&irqs, Some("gve"), 2);
    use QueueKind::*;
    assert_eq!(
        queues(&m),
        vec![
            Some((Tx, Some(0))),
            Some((Tx, Some(1))),
            Some((Rx, Some(0))),
            Some((Rx, Some(1))),
            Some((Other, None))
        ]
    );
}

#[test]
fn bare_name_beside_named_queues_is_the_other_vector() {
    let irqs = owned(&[(30, "eth0-rx-0"), (31, "eth0-tx-0"), (32, "eth0")], true);
    let (m, how) = map_queues(&irqs, Some("e1000e"), 1);
    use QueueKind::*;
    assert_eq!(
        queues(&m),
        vec![
            Some((Rx, Some(0))),
            Some((Tx, Some(0))),
            Some((Other, None))
        ]
    );
    assert_eq!(how, Some(IrqMapping::Name));
}

#[test]
fn legacy_single_interrupt_is_queue_zero_inferred() {
    let irqs = owned(&[(19, "eth0")], false);
    let (m, how) = map_queues(&irqs, Some("e1000"), 1);
    assert_eq!(queues(&m), vec![Some((QueueKind::Combined, Some(0)))]);
    assert_eq!(m[0].source, Some(QueueSource::LegacyIrq));
    assert_eq!(how, Some(IrqMapping::LegacyIrq));
}

#[test]
fn unnamed_msi_vectors_map_in_order_unless_too_many() {
    let irqs = owned(&[(70, "foo0"), (71, "foo0"), (72, "foo0:misc")], true);
    let (m, how) = map_queues(&irqs, Some("foo"), 2);
    use QueueKind::*;
    assert_eq!(
        queues(&m),
        vec![
            Some((Combined, Some(0))),
            Some((Combined, Some(1))),
            Some((Other, None))
        ]
    );
    assert_eq!(m[0].source, Some(QueueSource::MsiOrder));
    assert_eq!(how, Some(IrqMapping::MsiOrder));
    let (m, how) = map_queues(&irqs, Some("foo"), 1);
    assert_eq!(queues(&m), vec![None, None, Some((Other, None))]);
    assert_eq!(how, Some(IrqMapping::Ambiguous));
}

#[test]
fn no_irqs_with_a_driver_says_so() {
    let (m, how) = map_queues(&[], Some("hv_netvsc"), 4);
    assert!(m.is_empty());
    assert_eq!(how, Some(IrqMapping::NoQueueIrqs));
    let (_, how) = map_queues(&[], None, 1);
    assert_eq!(how, None);
}

/// Issue 17: after `ethtool -L combined 4` mlx5 keeps `mlx5_comp4..`; gve
/// keeps every notify block. Vectors of queues the interface no longer has
/// serve none of them.
#[test]
fn retain_existing_drops_vectors_of_queues_cut_by_ethtool_l() {
    use QueueKind::*;
    let irqs = owned(
        &[
            (98, "mlx5_async0@pci:0000:01:00.0"),
            (99, "mlx5_comp0@pci:0000:01:00.0"),
            (100, "mlx5_comp1@pci:0000:01:00.0"),
            (101, "mlx5_comp2@pci:0000:01:00.0"),
        ],
        true,
    );
    let (mut m, _) = map_queues(&irqs, Some("mlx5_core"), 4);
    let before = m.clone();
    retain_existing(&mut m, 0, 0);
    assert_eq!(m, before, "unknown counts change nothing");
    retain_existing(&mut m, 2, 2);
    assert_eq!(
        queues(&m),
        vec![
            Some((Other, None)),
            Some((Combined, Some(0))),
            Some((Combined, Some(1))),
            Some((Other, None))
        ]
    );
    // gve with 4 notify blocks but 1 RX and 1 TX queue configured: blocks
    // 0-1 are TX 0-1, blocks 2-3 RX 0-1; TX 1 and RX 1 do not exist.
    let irqs = owned(
        &[
            (60, "gve-ntfy-blk0@pci:0000:00:04.0"),
            (61, "gve-ntfy-blk1@pci:0000:00:04.0"),
            (62, "gve-ntfy-blk2@pci:0000:00:04.0"),
            (63, "gve-ntfy-blk3@pci:0000:00:04.0"),
        ],
        true,
    );
    let (mut m, _) = map_queues(&irqs, Some("gve"), 1);
    retain_existing(&mut m, 1, 1);
    assert_eq!(
        queues(&m),
        vec![
            Some((Tx, Some(0))),
            Some((Other, None)),
            Some((Rx, Some(0))),
            Some((Other, None))
        ]
    );
    // Split RX/TX counts: a combined vector stays while either side has it.
    let irqs = owned(&[(1, "eth0-TxRx-0"), (2, "eth0-rx-1")], true);
    let (mut m, _) = map_queues(&irqs, Some("igb"), 2);
    retain_existing(&mut m, 2, 1);
    assert_eq!(
        queues(&m),
        vec![Some((Combined, Some(0))), Some((Rx, Some(1)))]
    );
}

/// Issue 17, real dumps: mana names its queue vectors `mana_q<N>` and its
/// hardware-channel vector `mana_hwc`; nicvf has refill and error vectors
/// beside `rxtx`; an interface may carry `_<digit>` in its name.
#[test]
fn mana_nicvf_and_underscore_names() {
    use QueueKind::*;
    check(
        "mana_q3@pci:7870:00:00.0",
        Some("mana"),
        Some(Combined),
        Some(3),
    );
    check("mana_hwc@pci:7870:00:00.0", Some("mana"), Some(Other), None);
    check("enp5s0f1-rxtx-0", Some("enp5s0f1"), Some(Combined), Some(0));
    check("enp5s0f1-rbdr-0", Some("enp5s0f1"), Some(Other), None);
    check("enp5s0f1-qset-err-0", Some("enp5s0f1"), Some(Other), None);
    check("em1_1", Some("em1_1"), None, None);
    check("em1_1-fp-2", Some("em1_1"), Some(Combined), Some(2));
    assert_eq!(parse_irq_name("em1_1").shape, NameShape::Bare);
    // The hardware-channel vector is no queue, so the queue vectors keep
    // their numbers instead of being counted in MSI order.
    let irqs = owned(
        &[
            (24, "mana_hwc@pci:7870:00:00.0"),
            (25, "mana_q0@pci:7870:00:00.0"),
            (26, "mana_q1@pci:7870:00:00.0"),
        ],
        true,
    );
    let (m, how) = map_queues(&irqs, Some("mana"), 2);
    assert_eq!(
        queues(&m),
        vec![
            Some((Other, None)),
            Some((Combined, Some(0))),
            Some((Combined, Some(1)))
        ]
    );
    assert_eq!(how, Some(IrqMapping::Name));
}

/// Issue 17: hns3 counts each TX/RX vector twice when naming it, so its
/// vectors are `TxRx-0`, `TxRx-2`, `TxRx-4`, ... and `TxRx-2k` serves queue
/// k (hns3_nic_init_irq, hns3_nic_init_vector_data).
#[test]
fn hns3_txrx_names_count_vectors_twice() {
    use QueueKind::*;
    let irqs = owned(
        &[
            (199, "hns3-0000:7d:00.0-TxRx-0"),
            (200, "hns3-0000:7d:00.0-TxRx-2"),
            (201, "hns3-0000:7d:00.0-TxRx-4"),
        ],
        true,
    );
    let (m, _) = map_queues(&irqs, Some("hns3"), 3);
    assert_eq!(
        queues(&m),
        vec![
            Some((Combined, Some(0))),
            Some((Combined, Some(1))),
            Some((Combined, Some(2)))
        ]
    );
}

/// A list numbered once (`TxRx-0..3`, as no upstream hns3 names it) keeps
/// its numbers rather than folding two vectors onto one queue.
#[test]
fn hns3_names_counted_once_keep_their_numbers() {
    let irqs = owned(
        &[
            (201, "hns3-0000:7d:00.0-TxRx-0"),
            (202, "hns3-0000:7d:00.0-TxRx-1"),
        ],
        true,
    );
    let (m, _) = map_queues(&irqs, Some("hns3"), 2);
    let ix: Vec<_> = m.iter().map(|x| x.queue.and_then(|q| q.index)).collect();
    assert_eq!(ix, vec![Some(0), Some(1)]);
}

/// bnxt before v6.12 cut `enp4s0f0np0-TxRx-0` to `enp4s0f0np0-TxRx-` (the
/// example in the patch that fixed it); every queue vector of an
/// 11-character interface has that name, and they serve queues in order.
#[test]
fn bnxt_names_cut_before_the_number_map_in_order() {
    use QueueKind::*;
    let p = parse_irq_name("enp4s0f0np0-TxRx-");
    assert_eq!(p.device.as_deref(), Some("enp4s0f0np0"));
    assert_eq!(p.shape, NameShape::Queue);
    assert_eq!(p.queue.map(|q| (q.kind, q.index)), Some((Combined, None)));
    // A 12-character name loses the dash too.
    let p = parse_irq_name("enp65s0f0np0-TxRx");
    assert_eq!(p.device.as_deref(), Some("enp65s0f0np0"));
    assert_eq!(p.queue.map(|q| (q.kind, q.index)), Some((Combined, None)));
    let irqs = owned(
        &[
            (150, "enp4s0f0np0-TxRx-"),
            (151, "enp4s0f0np0-TxRx-"),
            (152, "enp4s0f0np0-TxRx-"),
        ],
        true,
    );
    let (m, how) = map_queues(&irqs, Some("bnxt_en"), 3);
    assert_eq!(
        queues(&m),
        vec![
            Some((Combined, Some(0))),
            Some((Combined, Some(1))),
            Some((Combined, Some(2)))
        ]
    );
    assert!(m.iter().all(|x| x.source == Some(QueueSource::MsiOrder)));
    assert_eq!(how, Some(IrqMapping::Name));
    // Sideband words before the cut queue word still make a non-queue.
    assert_ne!(parse_irq_name("eth0-fdir-TxRx").shape, NameShape::Queue);
}
