//! Teardown of a lab built on the userspace delay line (root only): no
//! namespace, TUN device or forwarder thread is left. Alone in its test
//! binary, so the thread count is this test's own.

use nettune_lab::{require_root, run_text, DelayMechanism, Lab, LabSpec, MechanismChoice};
use std::process::Command;
use std::time::Duration;

/// Threads of this process named `delayline` (the forwarders).
fn forwarders() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.trim() == "delayline")
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_delay_line_lab_leaves_no_namespace_device_or_thread() {
    if !require_root("a_delay_line_lab_leaves_no_namespace_device_or_thread") {
        return;
    }
    assert_eq!(forwarders(), 0);
    let lab = Lab::build(LabSpec {
        prefix: "ntlabtd".into(),
        delay: Some(Duration::from_millis(4)),
        rate: Some(50_000_000),
        mechanism: MechanismChoice::Userspace,
        ..LabSpec::new(3, 1)
    })
    .expect("lab");
    assert_eq!(*lab.delay_mechanism(), DelayMechanism::Userspace);
    // One line per star link, each with its forwarder, and every host
    // reaches every other through the hub.
    assert_eq!(forwarders(), 2);
    for (from, to) in [(0, 1), (0, 2), (2, 1)] {
        let addr = lab.addr(to).unwrap();
        let out = lab.hosts()[from]
            .sh(&format!("ping -n -c1 -W2 {addr}"))
            .unwrap();
        assert!(out.contains("1 received"), "{from}->{to}: {out}");
    }
    let tbf = lab.hosts()[2].sh("tc qdisc show dev v0").unwrap();
    assert!(
        tbf.contains("tbf"),
        "the rate applies on the TUN ends: {tbf}"
    );
    let names: Vec<String> = lab.hosts().iter().map(|h| h.name().to_string()).collect();
    drop(lab);
    assert_eq!(forwarders(), 0, "forwarder threads joined");
    let list = run_text(Command::new("ip").args(["netns", "list"])).unwrap_or_default();
    for n in &names {
        assert!(!list.contains(n.as_str()), "{n} left in {list}");
    }
    let root = run_text(Command::new("ip").args(["-o", "link", "show"])).unwrap_or_default();
    let me = format!("ntdl{}x", std::process::id() % 100_000);
    assert!(
        !root.contains(&me),
        "no TUN device of ours in the root namespace: {root}"
    );
}
