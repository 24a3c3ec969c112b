//! `nettune inspect` human output on each fixture (insta snapshots) and the
//! findings each fixture is built to show.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use doctor::snapshot::findings;
use nettune::cmd::inspect::render;
use std::path::PathBuf;

fn fixture(name: &str) -> host::Root {
    host::Root::new(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures")
            .join(name),
    )
}

fn codes(name: &str) -> Vec<String> {
    findings(&host::read_snapshot(&fixture(name)))
        .into_iter()
        .map(|f| format!("{}:{}", f.id, f.subject))
        .collect()
}

#[test]
fn human_kvm_2vcpu() {
    insta::assert_snapshot!(render(&host::read_snapshot(&fixture("kvm-2vcpu-6.18"))));
}

#[test]
fn human_c4_8xlarge() {
    insta::assert_snapshot!(render(&host::read_snapshot(&fixture("c4-8xlarge"))));
}

#[test]
fn human_two_socket_16q() {
    insta::assert_snapshot!(render(&host::read_snapshot(&fixture("two-socket-16q"))));
}

#[test]
fn findings_two_socket_16q() {
    let c = codes("two-socket-16q");
    for want in [
        "irqbalance-running:irqbalance",
        "irq-remote-node:ens1f0",
        "rps-on-irq-sibling:ens1f0",
        "irqs-on-smt-siblings:ens1f0",
    ] {
        assert!(c.iter().any(|x| x == want), "missing {want} in {c:?}");
    }
    // Only queue 5 is remote.
    let s = host::read_snapshot(&fixture("two-socket-16q"));
    let remote: Vec<_> = findings(&s)
        .into_iter()
        .filter(|f| f.id == "irq-remote-node")
        .collect();
    assert_eq!(remote.len(), 1);
    assert!(remote[0].title.contains("IRQ 126"), "{}", remote[0].title);
}

#[test]
fn findings_c4_8xlarge() {
    let c = codes("c4-8xlarge");
    assert!(c.contains(&"numa-node-unknown:eth0".to_string()), "{c:?}");
    assert!(c.contains(&"rps-off:eth0".to_string()), "{c:?}");
    assert!(!c.iter().any(|x| x.starts_with("irqbalance")), "{c:?}");
}

#[test]
fn findings_one_cpu_and_isolated() {
    // Every queue IRQ of ens1f0 on CPU 8, and CPU 8 isolated.
    let mut s = host::read_snapshot(&fixture("two-socket-16q"));
    for irq in &mut s.irqs {
        if irq.interface.as_deref() == Some("ens1f0") {
            irq.effective_affinity = Some(model::CpuSet::single(8));
        }
    }
    s.cpu.isolated = model::CpuSet::single(8);
    let f = findings(&s);
    assert!(f.iter().any(|f| f.id == "irqs-on-one-cpu"), "{f:?}");
    assert!(f.iter().any(|f| f.id == "irq-on-isolated-cpu"), "{f:?}");
    assert!(!f.iter().any(|f| f.id == "irq-remote-node"), "{f:?}");
}

#[test]
fn iface_filter() {
    let s = host::read_snapshot(&fixture("two-socket-16q"));
    let s = nettune::cmd::inspect::filter(s, &["lo".to_string()]).unwrap();
    assert_eq!(s.interfaces.len(), 1);
    let out = render(&s);
    assert!(!out.contains("ens1f0:"), "{out}");
    let s = host::read_snapshot(&fixture("two-socket-16q"));
    let e = nettune::cmd::inspect::filter(s, &["nope".to_string()]).unwrap_err();
    assert!(e.to_string().contains("no interface nope"), "{e}");
}

#[test]
fn findings_rfs_and_drops() {
    let mut s = host::read_snapshot(&fixture("two-socket-16q"));
    s.sysctls
        .insert("net.core.rps_sock_flow_entries".into(), "32768".into());
    let nic = s
        .interfaces
        .iter_mut()
        .find(|i| i.name == "ens1f0")
        .unwrap();
    nic.stats.rx_missed_errors = Some(1234);
    let f = findings(&s);
    let rfs: Vec<_> = f.iter().filter(|f| f.id == "rfs-half-configured").collect();
    assert_eq!(rfs.len(), 1, "{f:?}");
    assert!(rfs[0].title.contains("32768"), "{}", rfs[0].title);
    assert!(
        f.iter()
            .any(|f| f.id == "nic-rx-drops" && f.title.contains("rx_missed_errors is 1234")),
        "{f:?}"
    );
    // Warnings come before infos.
    let sev: Vec<_> = f.iter().map(|f| f.severity).collect();
    let mut sorted = sev.clone();
    sorted.sort();
    assert_eq!(sev, sorted);
}

#[test]
fn driver_counters_per_queue_nic_ena() {
    // tests/fixtures/nic-ena/ethtool/ens5.json: ena's counter names, 4 queues.
    let snap = host::read_snapshot(&fixture("nic-ena"));
    let text = render(&snap);
    let ens5 = &text[text.find("ens5: driver ena").unwrap()..];
    assert!(
        ens5.contains("stats: 129 driver counters (ethtool -S)"),
        "{ens5}"
    );
    // Packets, bytes, drops (ena has no per-queue drop counter), raw counters.
    for (q, raw) in [("rx-0", 13), ("rx-3", 13), ("tx-0", 15), ("tx-3", 15)] {
        let row: Vec<&str> = ens5
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{q} ")))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(row, [q, "0", "0", "-", &raw.to_string()], "{ens5}");
    }
    assert!(ens5.contains("driver drop/error counters: all 0"), "{ens5}");
    let st = snap
        .interface("ens5")
        .unwrap()
        .ethtool
        .stats
        .value()
        .unwrap();
    assert_eq!(st.driver["pps_allowance_exceeded"], 0);
}

#[test]
fn nonzero_driver_trouble_counters_are_listed() {
    let mut snap = host::read_snapshot(&fixture("nic-ena"));
    let i = snap
        .interfaces
        .iter_mut()
        .find(|i| i.name == "ens5")
        .unwrap();
    let model::snapshot::Probe::Ok { value } = &mut i.ethtool.stats else {
        panic!("no stats");
    };
    value.driver.insert("pps_allowance_exceeded".into(), 1840);
    value.driver.insert("queue_2_rx_cnt".into(), 77);
    let text = render(&snap);
    assert!(
        text.contains("driver drop/error counters: pps_allowance_exceeded 1840"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("rx-2   77")),
        "{text}"
    );
}
