//! `read_snapshot` on the committed fixtures gives the machines' known facts.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use model::snapshot::{Probe, QueueKind};
use model::{CpuSet, IrqNumber, NodeId};
use nettune_host::{read_snapshot, Root};
use std::path::PathBuf;

fn fixture(name: &str) -> Root {
    Root::new(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name),
    )
}

#[test]
fn c4_8xlarge_matches_the_seed() {
    let s = read_snapshot(&fixture("c4-8xlarge"));
    assert_eq!(s.cpus.len(), 36);
    assert_eq!(s.nodes.len(), 2);
    assert_eq!(s.nodes[0].cpus.to_list(), "0-8,18-26");
    assert_eq!(s.nodes[1].cpus.to_list(), "9-17,27-35");
    assert_eq!(s.nodes[0].distances, vec![10, 20]);
    for c in &s.cpus {
        let sib = (c.id.0 + 18) % 36;
        assert!(
            c.siblings.contains(sib) && c.siblings.len() == 2,
            "cpu {}",
            c.id.0
        );
    }
    assert_eq!(s.cpu(9).unwrap().node, Some(NodeId(1)));
    let eth0 = s.interface("eth0").unwrap();
    assert_eq!(eth0.driver.as_deref(), Some("ixgbevf"));
    assert_eq!(eth0.pci_address.as_deref(), Some("0000:00:03.0"));
    assert_eq!(eth0.numa_node, Some(-1));
    assert_eq!(eth0.rx_queues.len(), 2);
    assert!(eth0
        .rx_queues
        .iter()
        .all(|q| q.rps_cpus == Some(CpuSet::new())));
    assert_eq!(
        eth0.irqs,
        vec![IrqNumber(266), IrqNumber(267), IrqNumber(268)]
    );
    let q0 = s.irq(IrqNumber(266)).unwrap();
    assert_eq!(q0.name, "eth0-TxRx-0");
    assert_eq!(q0.interface.as_deref(), Some("eth0"));
    assert_eq!(q0.queue.unwrap().kind, QueueKind::Combined);
    assert_eq!(q0.queue.unwrap().index, Some(0));
    assert_eq!(q0.smp_affinity.as_ref().unwrap().to_list(), "0-35");
    assert_eq!(q0.effective_affinity, None);
    assert_eq!(q0.per_cpu.len(), 36);
    let ch = eth0.ethtool.channels.value().unwrap();
    assert_eq!((ch.combined, ch.combined_max), (Some(2), Some(2)));
    assert_eq!(s.sysctls["net.ipv4.tcp_rmem"], "4096 87380 6291456");
    // 4.4 lacks these: absent and noted, nothing else is.
    let noted: Vec<&str> = s.notes.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(
        noted,
        vec![
            "/proc/sys/net/core/netdev_budget_usecs",
            "/proc/sys/net/ipv4/tcp_mem",
            "/proc/sys/net/ipv4/udp_mem"
        ]
    );
    assert!(s.owners.irqbalance.is_none());
}

#[test]
fn two_socket_16q_has_its_planted_oddities() {
    let s = read_snapshot(&fixture("two-socket-16q"));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    assert_eq!(s.cpus.len(), 32);
    assert_eq!(s.nodes[1].cpus.to_list(), "8-15,24-31");
    let nic = s.interface("ens1f0").unwrap();
    assert_eq!(nic.driver.as_deref(), Some("i40e"));
    assert_eq!(nic.numa_node, Some(1));
    assert_eq!(nic.rx_queues.len(), 16);
    assert_eq!(nic.irqs.len(), 17);
    let q5 = s.irq(IrqNumber(126)).unwrap();
    assert_eq!(q5.queue.unwrap().index, Some(5));
    assert_eq!(q5.effective_affinity.as_ref().unwrap().to_list(), "3");
    assert_eq!(q5.per_cpu[3], 600_000);
    assert_eq!(s.cpu(3).unwrap().node, Some(NodeId(0)));
    assert_eq!(
        nic.rx_queues[1].rps_cpus.as_ref().unwrap().to_list(),
        "9,25"
    );
    assert_eq!(s.owners.irqbalance.as_ref().unwrap().pid, 4242);
    assert_eq!(s.cpus[0].governor.as_deref(), Some("performance"));
    assert!(matches!(
        s.interface("lo").unwrap().ethtool.rings,
        Probe::Unsupported { .. }
    ));
}

#[test]
fn kvm_capture_has_virtio_eth0() {
    let s = read_snapshot(&fixture("kvm-2vcpu-6.18"));
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    assert_eq!(s.cpus.len(), 2);
    assert_eq!(s.nodes.len(), 1);
    let eth0 = s.interface("eth0").unwrap();
    assert_eq!(eth0.driver.as_deref(), Some("virtio_net"));
    // virtio: the PCI address is the parent device's.
    assert_eq!(eth0.pci_address.as_deref(), Some("0000:00:03.0"));
    assert_eq!(eth0.numa_node, Some(-1));
    assert!(eth0.irqs.len() >= 2);
    for n in &eth0.irqs {
        let irq = s.irq(*n).unwrap();
        assert!(irq.name.starts_with("virtio2-"), "{}", irq.name);
        assert_eq!(irq.interface.as_deref(), Some("eth0"));
    }
    let lo = s.interface("lo").unwrap();
    assert_eq!(lo.driver, None);
    assert!(lo.irqs.is_empty());
}

#[test]
fn tuned_and_irqbalance_are_found_under_proc() {
    let t = tempfile::tempdir().unwrap();
    let w = |p: &str, s: &str| {
        let p = t.path().join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    w("proc/12/comm", "tuned\n");
    w(
        "proc/12/cmdline",
        "/usr/bin/python3\0-Es\0/usr/sbin/tuned\0-l\0-P\0",
    );
    w("proc/13/comm", "irqbalance\n");
    w("proc/13/cmdline", "/usr/sbin/irqbalance\0--foreground\0");
    w("proc/14/comm", "sshd\n");
    w("etc/tuned/active_profile", "network-latency\n");
    let s = read_snapshot(&Root::new(t.path()));
    let tuned = s.owners.tuned.as_ref().unwrap();
    assert_eq!(tuned.process.as_ref().unwrap().pid, 12);
    assert_eq!(tuned.active_profile.as_deref(), Some("network-latency"));
    assert_eq!(s.owners.irqbalance.as_ref().unwrap().pid, 13);
    assert_eq!(
        s.owners.irqbalance.as_ref().unwrap().cmdline,
        "/usr/sbin/irqbalance --foreground"
    );
    // An empty tree: everything absent, each missing required file noted, no panic.
    assert!(s.interfaces.is_empty());
    assert!(s.notes.iter().any(|n| n.path == "/proc/interrupts"));
    assert!(s.notes.iter().any(|n| n.path == "/sys/class/net"));
}

/// Issue 17: `/sys/class/net/bonding_masters` is a file on every host with
/// bonding loaded; it is not an interface (it used to be listed with a
/// dozen error notes). Interfaces are the entries resolving to directories.
#[test]
fn files_in_sys_class_net_are_not_interfaces() {
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    let dev = r.join("sys/devices/virtual/net/lo");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("mtu"), "65536\n").unwrap();
    std::fs::create_dir_all(r.join("sys/class/net")).unwrap();
    std::os::unix::fs::symlink("../../devices/virtual/net/lo", r.join("sys/class/net/lo")).unwrap();
    std::fs::write(r.join("sys/class/net/bonding_masters"), "bond0\n").unwrap();
    let root = Root::new(r);
    let s = read_snapshot(&root);
    let names: Vec<&str> = s.interfaces.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["lo"]);
    assert!(
        !s.notes.iter().any(|n| n.path.contains("bonding_masters")),
        "{:?}",
        s.notes
    );
    assert_eq!(root.list_interfaces().unwrap(), ["lo"]);
}
