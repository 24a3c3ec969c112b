//! Per-queue rates and packets per interrupt.

use super::*;
use crate::parse::interrupts::parse_interrupts;
use crate::parse::netdev::parse_netdev;
use crate::parse::stat::parse_proc_stat;

const NETDEV_HEAD: &str = "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n";

/// A sample at `secs` with IRQ lines `irqs` (`"27: 10 0 ... name"`),
/// `eth0` having received `rx` packets, and driver counters `nic`.
fn sample(secs: u64, irqs: &str, rx: u64, nic: &[(&str, u64)], queues: u32) -> Sample {
    let stat = parse_proc_stat("cpu 1 0 0 0\ncpu0 1 0 0 0\ncpu1 0 0 0 0\n").unwrap();
    let mut n = NicStats::default();
    for (k, v) in nic {
        n.driver.insert((*k).to_string(), *v);
    }
    Sample {
        at: Nanos(secs * 1_000_000_000),
        stat,
        interrupts: Some(parse_interrupts(&format!("  CPU0 CPU1\n{irqs}")).unwrap()),
        netdev: Some(
            parse_netdev(&format!(
                "{NETDEV_HEAD}  eth0: 0 {rx} 0 0 0 0 0 0 0 {rx} 0 0 0 0 0 0\n"
            ))
            .unwrap(),
        ),
        nic: if nic.is_empty() {
            BTreeMap::new()
        } else {
            [("eth0".to_string(), n)].into()
        },
        rx_queue_counts: Arc::new([("eth0".to_string(), queues)].into()),
        ..Sample::default()
    }
}

#[test]
fn packets_per_interrupt_per_queue_ap450() {
    // AP-450's example: 81,000 packets/s at 1,620 interrupts/s is 50
    // packets per interrupt, on queue 1; queue 0 dropped 30 packets.
    let a = sample(
        10,
        " 27: 100 0 PCI-MSI 1-edge eth0-TxRx-0\n 28: 0 5 PCI-MSI 2-edge eth0-TxRx-1\n",
        0,
        &[
            ("rx_queue_0_packets", 1000),
            ("rx_queue_0_drops", 4),
            ("rx_queue_1_packets", 19_000),
            ("tx_queue_1_packets", 7),
            ("rx_missed_errors", 2),
        ],
        2,
    );
    let b = sample(
        12,
        " 27: 300 0 PCI-MSI 1-edge eth0-TxRx-0\n 28: 0 3245 PCI-MSI 2-edge eth0-TxRx-1\n",
        0,
        &[
            ("rx_queue_0_packets", 1600),
            ("rx_queue_0_drops", 34),
            ("rx_queue_1_packets", 181_000),
            ("tx_queue_1_packets", 7),
            ("rx_missed_errors", 2),
        ],
        2,
    );
    let d = b.delta(&a);
    let q: Vec<_> = d
        .queues
        .iter()
        .map(|q| {
            (
                q.dir,
                q.index,
                q.packets,
                q.drops,
                q.irq.map(|i| i.0),
                q.interrupts,
                q.packets_per_interrupt,
            )
        })
        .collect();
    assert_eq!(
        q,
        vec![
            (
                QueueDir::Rx,
                0,
                Some(600),
                Some(30),
                Some(27),
                Some(200),
                Some(3.0)
            ),
            (
                QueueDir::Rx,
                1,
                Some(162_000),
                None,
                Some(28),
                Some(3240),
                Some(50.0)
            ),
            // A TX queue on a combined vector: the vector is the RX side's.
            (QueueDir::Tx, 1, Some(0), None, None, None, None),
        ]
    );
    assert_eq!(d.queues[1].packets_per_s, Some(81_000.0));
    assert_eq!(d.queues[0].drops_per_s, Some(15.0));
    // Only counters that moved.
    assert_eq!(
        d.nic_counters["eth0"],
        [
            ("rx_queue_0_drops".to_string(), 30),
            ("rx_queue_0_packets".to_string(), 600),
            ("rx_queue_1_packets".to_string(), 162_000)
        ]
        .into()
    );
}

#[test]
fn single_queue_nic_uses_the_interface_packets() {
    // e1000 on a legacy line named just `eth0`, no driver counters read.
    let a = sample(1, " 11: 0 0 IO-APIC 11-fasteoi eth0\n", 0, &[], 1);
    let b = sample(2, " 11: 40 0 IO-APIC 11-fasteoi eth0\n", 1000, &[], 1);
    let d = b.delta(&a);
    assert_eq!(d.queues.len(), 1, "{:?}", d.queues);
    let q = &d.queues[0];
    assert_eq!(
        (q.packets, q.irq.map(|i| i.0), q.packets_per_interrupt),
        (Some(1000), Some(11), Some(25.0))
    );
    // Two queues: the interface's packets are not one queue's.
    let a = sample(1, " 11: 0 0 IO-APIC 11-fasteoi eth0\n", 0, &[], 2);
    let b = sample(2, " 11: 40 0 IO-APIC 11-fasteoi eth0\n", 1000, &[], 2);
    assert!(b.delta(&a).queues.is_empty());
    // virtio_net 6.x: per-queue drops but no packets; one queue pair.
    let nic = |d: u64| [("rx0_drops", d), ("rx0_kicks", 1), ("tx0_kicks", 1)];
    let virtio = |s: Sample| Sample {
        devices: Arc::new([("virtio2".to_string(), "eth0".to_string())].into()),
        ..s
    };
    let a = virtio(sample(
        1,
        " 38: 0 0 PCI-MSIX 1-edge virtio2-input.0\n",
        0,
        &nic(0),
        1,
    ));
    let b = virtio(sample(
        2,
        " 38: 0 10 PCI-MSIX 1-edge virtio2-input.0\n",
        500,
        &nic(2),
        1,
    ));
    let d = b.delta(&a);
    let rx = &d.queues[0];
    assert_eq!(
        (
            rx.packets,
            rx.drops,
            rx.irq.map(|i| i.0),
            rx.packets_per_interrupt
        ),
        (Some(500), Some(2), Some(38), Some(50.0))
    );
}
