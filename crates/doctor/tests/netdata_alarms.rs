//! The rules that carry netdata's network alarms, on synthetic counter
//! windows (written as /proc text, read by the sampler): each fires above
//! its threshold and stays quiet below it.

#![allow(clippy::unwrap_used)]

mod common;
use common::*;
use nettune_doctor::{DoctorId, Severity};

/// Three seconds in which counter `key` grows by `per_s` a second (and
/// `extra` counters by their amounts).
fn counter_window(per_s: &[(&str, i64)]) -> Vec<host::sampler::Sample> {
    run(2, 3, |c| {
        for (k, v) in per_s {
            c.add(k, *v);
        }
    })
}

fn fired(i: &nettune_doctor::Input, id: DoctorId) -> Vec<nettune_doctor::Finding> {
    report(i).of(id).cloned().collect()
}

#[test]
fn syn_queue_overflow_fires_above_one_per_second_and_is_critical_above_five() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = counter_window(&[
        ("TcpExt.TCPReqQFullDrop", 0),
        ("TcpExt.TCPReqQFullDoCookies", 1),
    ]);
    assert!(
        fired(&i, DoctorId::SynQueueOverflow).is_empty(),
        "1/s is not above 1/s"
    );
    assert_eq!(report(&i).skipped(DoctorId::SynQueueOverflow), None);
    i.samples = counter_window(&[
        ("TcpExt.TCPReqQFullDrop", 3),
        ("TcpExt.TCPReqQFullDoCookies", 0),
    ]);
    let f = fired(&i, DoctorId::SynQueueOverflow);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.what == "TcpExt.TCPReqQFullDrop" && e.value.starts_with("9 ")));
    assert!(
        f[0].fix.text.contains("net.core.somaxconn"),
        "{}",
        f[0].fix.text
    );
    assert!(f[0].source.contains("1m_tcp_syn_queue_drops"));
    i.samples = counter_window(&[
        ("TcpExt.TCPReqQFullDrop", 0),
        ("TcpExt.TCPReqQFullDoCookies", 100),
    ]);
    assert_eq!(
        fired(&i, DoctorId::SynQueueOverflow)[0].severity,
        Severity::Critical
    );
}

#[test]
fn tcp_resets_fire_above_fifty_per_second_and_name_the_cause() {
    let mut i = input("kvm-2vcpu-6.18");
    let quiet = [
        ("Tcp.OutRsts", 40),
        ("Tcp.EstabResets", 10),
        ("Tcp.AttemptFails", 50),
        ("TcpExt.TCPAbortOnClose", 0),
        ("TcpExt.TCPAbortOnMemory", 0),
    ];
    i.samples = counter_window(&quiet);
    assert!(fired(&i, DoctorId::TcpResets).is_empty());
    i.samples = counter_window(&[
        ("Tcp.OutRsts", 400),
        ("Tcp.EstabResets", 10),
        ("Tcp.AttemptFails", 0),
        ("TcpExt.TCPAbortOnClose", 0),
        ("TcpExt.TCPAbortOnMemory", 300),
    ]);
    let f = fired(&i, DoctorId::TcpResets);
    assert_eq!(f.len(), 1);
    assert!(f[0].title.contains("1200 resets sent"), "{}", f[0].title);
    assert!(
        f[0].fix.text.contains("tcp-memory-pressure"),
        "{}",
        f[0].fix.text
    );
    assert!(f[0].evidence.iter().any(|e| e.what == "Tcp.AttemptFails"));
    i.samples = counter_window(&[("Tcp.AttemptFails", 60)]);
    let f = fired(&i, DoctorId::TcpResets);
    assert!(
        f[0].fix.text.contains("own connects refused"),
        "{}",
        f[0].fix.text
    );
}

#[test]
fn udp_sndbuf_errors_fire_above_ten_per_second() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = counter_window(&[("Udp.OutDatagrams", 100_000), ("Udp.SndbufErrors", 10)]);
    assert!(fired(&i, DoctorId::UdpSndbufErrors).is_empty());
    i.samples = counter_window(&[("Udp.OutDatagrams", 100_000), ("Udp.SndbufErrors", 500)]);
    let f = fired(&i, DoctorId::UdpSndbufErrors);
    assert_eq!(f.len(), 1);
    assert!(f[0].title.contains("1500 sends failed"), "{}", f[0].title);
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.source == "/proc/net/snmp Udp.SndbufErrors"));
    assert!(f[0].fix.app.as_deref().unwrap().contains("SO_SNDBUF"));
}

/// `/proc/net/dev` of `eth0`: `per_s` packets a second received, `drop_per_s` dropped.
fn netdev_window(per_s: u64, drop_per_s: u64) -> Vec<host::sampler::Sample> {
    run(2, 3, |c| {
        let (p, d) = c.netdev.first().map_or((0, 0), |x| (x.1, x.2));
        c.netdev = vec![("eth0".into(), p + per_s, d + drop_per_s)];
    })
}

#[test]
fn iface_drop_ratio_fires_from_two_percent() {
    let mut i = input("kvm-2vcpu-6.18");
    i.samples = netdev_window(10_000, 150);
    assert!(fired(&i, DoctorId::IfaceDropRatio).is_empty(), "1.5 %");
    i.samples = netdev_window(10_000, 300);
    let f = fired(&i, DoctorId::IfaceDropRatio);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].subject, "eth0");
    assert!(f[0].title.contains("3.0 %"), "{}", f[0].title);
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.source == "/proc/net/dev eth0 receive drop"));
    // Neither the NIC nor the backlog dropped: the cause named is frames nothing handles.
    assert!(f[0].fix.text.contains("no handler"), "{}", f[0].fix.text);
    // Too few packets to judge (netdata: 10 000 in the window).
    i.samples = netdev_window(1_000, 300);
    assert!(fired(&i, DoctorId::IfaceDropRatio).is_empty());
}

#[test]
fn link_saturated_fires_from_ninety_percent_of_the_speed() {
    let mut i = input("kvm-2vcpu-6.18");
    let eth0 = i
        .snapshot
        .interfaces
        .iter_mut()
        .find(|x| x.name == "eth0")
        .unwrap();
    // The test's /proc/net/dev has 100 bytes a packet: 100 000 packets/s = 80 Mbit/s.
    eth0.speed_mbps = Some(100);
    i.samples = netdev_window(100_000, 0);
    assert!(fired(&i, DoctorId::LinkSaturated).is_empty(), "80 %");
    i.samples = netdev_window(120_000, 0);
    let f = fired(&i, DoctorId::LinkSaturated);
    assert_eq!(f.len(), 1);
    assert!(
        f[0].title.contains("inbound 96 Mbit/s, 96 %"),
        "{}",
        f[0].title
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.source == "/sys/class/net/eth0/speed"));
}

/// A veth's 10000 Mbit/s is a figure, not a wire: the rule skips it and
/// says why, rather than "185 % of its link".
#[test]
fn link_saturated_skips_a_nominal_speed() {
    let mut i = input("kvm-2vcpu-6.18");
    for x in i.snapshot.interfaces.iter_mut() {
        if x.name == "eth0" {
            x.speed_mbps = Some(100);
            x.driver = None;
        } else {
            x.speed_mbps = None;
        }
    }
    i.samples = netdev_window(120_000, 0);
    let r = report(&i);
    assert_eq!(r.of(DoctorId::LinkSaturated).count(), 0);
    let skip = r
        .skipped
        .iter()
        .find(|s| s.id == DoctorId::LinkSaturated)
        .expect("skipped with a reason");
    assert!(
        skip.reason.contains("eth0") && skip.reason.contains("nominal"),
        "{}",
        skip.reason
    );
}
