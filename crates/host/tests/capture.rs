//! `capture` of the live host reads back (through `--root`) as the live
//! snapshot, apart from counters; and capturing a fixture reproduces it.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use model::snapshot::HostSnapshot;
use nettune_host::capture::capture_from;
use nettune_host::ethtool::{FixtureEthtool, NoEthtool};
use nettune_host::{read_snapshot_with, Root};
use std::path::PathBuf;

/// Zero the parts that move between two reads (counters, provenance).
fn strip(mut s: HostSnapshot) -> HostSnapshot {
    s.source.root = String::new();
    s.source.label = None;
    for i in &mut s.interfaces {
        i.stats = Default::default();
    }
    for q in &mut s.irqs {
        q.per_cpu = Vec::new();
    }
    s
}

#[test]
fn live_capture_reads_back_as_the_live_snapshot() {
    let t = tempfile::tempdir().unwrap();
    let live = Root::live();
    let r = capture_from(&live, t.path(), &NoEthtool).unwrap();
    assert!(r.files > 20, "{} files", r.files);
    let again = read_snapshot_with(&live, &NoEthtool);
    let back = read_snapshot_with(
        &Root::new(t.path()),
        &FixtureEthtool::new(&Root::new(t.path())),
    );
    assert!(back.notes.is_empty(), "{:?}", back.notes);
    let (mut a, b) = (strip(again), strip(back));
    // Interfaces and IRQs may appear between the two reads (other tests);
    // compare the ones both saw.
    a.interfaces.retain(|i| b.interface(&i.name).is_some());
    a.irqs.retain(|q| b.irq(q.number).is_some());
    let mut b = b;
    b.interfaces.retain(|i| a.interface(&i.name).is_some());
    b.irqs.retain(|q| a.irq(q.number).is_some());
    assert_eq!(a.cpus, b.cpus);
    assert_eq!(a.cpu, b.cpu);
    assert_eq!(a.nodes.len(), b.nodes.len());
    assert_eq!(a.interfaces, b.interfaces);
    assert_eq!(a.irqs, b.irqs);
    assert_eq!(a.sysctls, b.sysctls);
    assert_eq!(a.source, b.source);
    assert!(t.path().join("proc/net/softnet_stat").is_file());
    assert!(t.path().join("LABEL").is_file());
}

#[test]
fn capturing_a_fixture_reproduces_it() {
    let src = Root::new(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/two-socket-16q"),
    );
    let t = tempfile::tempdir().unwrap();
    let eth = FixtureEthtool::new(&src);
    let r = capture_from(&src, t.path(), &eth).unwrap();
    let copy = Root::new(t.path());
    let a = strip(read_snapshot_with(&src, &eth));
    let b = strip(read_snapshot_with(&copy, &FixtureEthtool::new(&copy)));
    assert_eq!(a, b);
    assert_eq!(r.snapshot.interfaces.len(), 2);
    // Only irqbalance's /proc/<pid> was copied, as a directory of two files.
    assert!(t.path().join("proc/4242/comm").is_file());
    // sysfs links were recreated as relative links.
    let l = std::fs::read_link(t.path().join("sys/class/net/ens1f0")).unwrap();
    assert!(l.is_relative());
}
