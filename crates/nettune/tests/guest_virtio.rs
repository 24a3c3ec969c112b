//! virtio_net with two queue pairs, on a multi-queue tap that QEMU creates
//! in a network namespace made for the test (docs/guests.md): its golden
//! queue → IRQ table and capture, what an apply does to its IRQs, and a
//! channel change followed by the IRQ placement planned after it.
//! `NETTUNE_GUEST_FIXTURES=1` writes the capture to
//! `tests/fixtures/guest-virtio-net-pci/` with its LABEL.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

mod guest_common;

use guest::run::Shutdown;
use guest::{BootOptions, Netdev, Nic, NicModel};
use guest_common::channels::{self, placed};
use guest_common::*;

/// The latency plan's IRQ placements (on CPU 1) on the real virtio_net:
/// each one is in the apply's report. On Linux 6.1 virtio_net's vectors
/// are not kernel-managed (virtnet_find_vqs asks virtio_pci for its vectors
/// without an `irq_affinity` descriptor; the driver only sets affinity
/// hints), so every write is taken: verified and rolled back with the
/// rest. Had the kernel refused one as managed, the report would say so
/// and the apply would go on (the branch kept below).
fn irq_placement_is_reported(agent: &mut fleet::client::Agent) {
    // virtio_net spreads its queue IRQs one per CPU itself, which is the
    // latency plan's placement too: on CPU 1 only, they must move.
    let plan = plan_on(agent, "latency", Some("1"));
    let before = knobs(&inspect(agent));
    let wanted = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["target"]["kind"] == "irq_affinity")
        .count();
    assert!(wanted > 0, "no IRQ placement planned: {plan:#}");
    let report = ask(agent, &apply(&plan, false), "apply latency");
    let irqs = placed(&report);
    assert_eq!(irqs.len(), wanted, "an IRQ change missing from {report:#}");
    let mut refused = 0;
    for (n, line) in &irqs {
        let outcome = line["outcome"].to_string();
        if outcome.contains("unchangeable") {
            refused += 1;
            assert!(outcome.contains("managed"), "IRQ {n}: {line:#}");
        } else {
            assert!(outcome.contains("applied"), "IRQ {n}: {line:#}");
        }
    }
    let others = report["changes"].as_array().unwrap().len() - irqs.len();
    assert!(others > 0, "{report:#}");
    assert_eq!(
        refused, 0,
        "6.1's virtio_net IRQs took no write: {report:#}"
    );
    eprintln!(
        "virtio_net: {} IRQ placement(s), {refused} refused as managed, {others} other change(s): {report:#}",
        irqs.len()
    );
    verify_no_drift(agent, "latency");
    rollback(agent, "latency");
    let differ = differences(&before, &knobs(&inspect(agent)));
    assert!(differ.is_empty(), "after rollback {differ:?}");
}

/// The golden table, but for the `effective` column: where an idle queue's
/// IRQ is delivered differs from boot to boot (tx queue 0 on CPU 0 in one
/// boot, CPU 1 in the next; on x86 a new affinity of a non-managed MSI takes
/// effect when the interrupt next fires), while the requested affinity is
/// virtio_net's own. The capture under tests/fixtures is read back against
/// the whole golden, written by the same boot (`NETTUNE_GUEST_BLESS=1`).
fn golden_but_effective(device: &str, live: &str) {
    if std::env::var("NETTUNE_GUEST_BLESS").as_deref() == Ok("1") {
        check_golden(device, live);
        return;
    }
    let strip = |t: &str| -> String {
        let mut out = Vec::new();
        let mut words = t.split(' ').peekable();
        while let Some(w) = words.next() {
            if w == "effective" {
                words.next();
            } else {
                out.push(w);
            }
        }
        out.join(" ")
    };
    let want = std::fs::read_to_string(golden(device)).unwrap();
    assert_eq!(strip(live), strip(&want), "{device}: the table differs");
    eprintln!("{device}: live table (effective affinities of this boot):\n{live}");
}

#[test]
fn virtio_net_multi_queue_in_a_guest() {
    let Some((qemu, kernel)) = machine_or_skip() else {
        return;
    };
    let Some(ns) = Netns::new("virtio") else {
        return;
    };
    let model = NicModel::VirtioNet;
    let device = model.device();
    let dir = tempfile::tempdir().unwrap();
    let nic = Nic {
        model,
        netdev: Netdev::Tap { queues: 2 },
        node1: false,
    };
    let opts = BootOptions {
        netns: Some(ns.0.clone()),
        append: vec![],
    };
    let g = boot_nics_with(
        &qemu,
        &kernel,
        "virtio-net-mq",
        vec![nic],
        true,
        dir.path(),
        &opts,
    );
    let mut agent = connect(&g);
    let live = table(&inspect(&mut agent));
    assert!(live.contains("driver virtio_net"), "{live}");
    golden_but_effective(device, &live);
    let captured = extract_capture(&g, dir.path());
    assert_eq!(table(&inspect_root(&captured)), live);
    if std::env::var("NETTUNE_GUEST_FIXTURES").as_deref() == Ok("1") {
        let netdev = "mq=on over a 2-queue tap in a network namespace made for the test";
        let version = qemu_version(&qemu);
        write_fixture(device, model, &captured, &version, &kernel, false, netdev);
    }
    irq_placement_is_reported(&mut agent);
    channels::channels_then_irqs(agent, &g);
    assert_eq!(g.shutdown(SHUTDOWN_DEADLINE), Shutdown::Clean);
    drop(ns);
}

/// The committed capture gives the golden table with no QEMU at all.
#[test]
fn the_guest_fixture_reads_back_as_the_golden() {
    let device = NicModel::VirtioNet.device();
    let got = table(&inspect_root(&fixture(device)));
    let want = std::fs::read_to_string(golden(device)).unwrap();
    assert_eq!(got, want, "{device}");
}
