//! Bad input: a fixture copied to a temp dir and corrupted (truncated,
//! garbage, deleted, unreadable files; broken links; an ethtool file that is
//! not JSON). Reading never panics, the bad file is named in a note, and
//! `inspect` still shows everything else.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use host::{read_snapshot, Root};
use model::snapshot::{HostSnapshot, Probe};
use nettune::cmd::inspect::render;
use std::fs;
use std::path::{Path, PathBuf};

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn copy_tree(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for e in fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let (s, d) = (e.path(), dst.join(e.file_name()));
        let ft = fs::symlink_metadata(&s).unwrap().file_type();
        if ft.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&s).unwrap(), &d).unwrap();
        } else if ft.is_dir() {
            copy_tree(&s, &d);
        } else {
            fs::copy(&s, &d).unwrap();
        }
    }
}

/// A copy of `name` with `corrupt` applied to it.
fn corrupted(name: &str, corrupt: impl FnOnce(&Path)) -> (tempfile::TempDir, HostSnapshot) {
    let t = tempfile::tempdir().unwrap();
    copy_tree(&fixture_dir(name), t.path());
    corrupt(t.path());
    let s = read_snapshot(&Root::new(t.path()));
    (t, s)
}

fn note_for<'a>(s: &'a HostSnapshot, path: &str) -> &'a str {
    s.notes
        .iter()
        .find(|n| n.path == path)
        .map(|n| n.message.as_str())
        .unwrap_or_else(|| panic!("no note for {path}: {:?}", s.notes))
}

/// The rest of the picture is still there.
fn still_shows(s: &HostSnapshot) -> String {
    let out = render(s);
    for want in [
        "cpus: 32 online",
        "numa nodes: 2",
        "ens1f0: driver",
        "sysctls:",
        "findings",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    out
}

const IRQ_DIR: &str = "sys/devices/pci0000:81/0000:81:00.0";
const NIC: &str = "sys/devices/pci0000:81/0000:81:00.0/net/ens1f0";

#[test]
fn truncated_proc_interrupts_keeps_the_lines_before() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        let p = d.join("proc/interrupts");
        let text = fs::read_to_string(&p).unwrap();
        // Cut in the middle of IRQ 130's line.
        let cut = text.find(" 130:").unwrap() + 40;
        fs::write(&p, &text[..cut]).unwrap();
    });
    let m = note_for(&s, "/proc/interrupts");
    assert!(m.contains("IRQ 130"), "{m}");
    assert!(s.irq(model::IrqNumber(129)).is_some());
    assert!(s.irq(model::IrqNumber(130)).is_none());
    let out = still_shows(&s);
    assert!(out.contains("i40e-ens1f0-TxRx-8"), "{out}");
    assert!(out.contains("/proc/interrupts:"), "{out}");
}

#[test]
fn garbage_and_missing_proc_interrupts() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        fs::write(
            d.join("proc/interrupts"),
            "\u{0}\u{1}binary garbage\n\n::::\n",
        )
        .unwrap();
    });
    note_for(&s, "/proc/interrupts");
    assert!(s.irqs.is_empty());
    still_shows(&s);
    let (_t, s) = corrupted("two-socket-16q", |d| {
        fs::remove_file(d.join("proc/interrupts")).unwrap();
    });
    assert!(note_for(&s, "/proc/interrupts").contains("not found"));
    still_shows(&s);
}

#[test]
fn smp_affinity_garbage() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        fs::write(d.join("proc/irq/126/smp_affinity"), "zz,not-a-mask\n").unwrap();
    });
    assert!(note_for(&s, "/proc/irq/126/smp_affinity").contains("hex mask"));
    let irq = s.irq(model::IrqNumber(126)).unwrap();
    assert_eq!(irq.smp_affinity, None);
    assert!(irq.effective_affinity.is_some());
    let out = still_shows(&s);
    assert!(out.contains("i40e-ens1f0-TxRx-5"), "{out}");
}

#[test]
fn cpulist_garbage() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        fs::write(d.join("sys/devices/system/node/node1/cpulist"), "8-x,,\n").unwrap();
        fs::write(
            d.join("sys/devices/system/cpu/cpu5/topology/thread_siblings_list"),
            "5-\n",
        )
        .unwrap();
    });
    note_for(&s, "/sys/devices/system/node/node1/cpulist");
    note_for(
        &s,
        "/sys/devices/system/cpu/cpu5/topology/thread_siblings_list",
    );
    assert!(s.nodes[1].cpus.is_empty());
    // The CPU is still listed, as its own only sibling.
    assert_eq!(s.cpu(5).unwrap().siblings.to_list(), "5");
    let out = render(&s);
    assert!(out.contains("ens1f0: driver i40e"), "{out}");
}

#[test]
fn missing_queues_dir() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        fs::remove_dir_all(d.join(NIC).join("queues")).unwrap();
    });
    note_for(&s, "/sys/class/net/ens1f0/queues");
    let nic = s.interface("ens1f0").unwrap();
    assert!(nic.rx_queues.is_empty());
    assert_eq!(nic.irqs.len(), 17);
    let out = still_shows(&s);
    // The queue → IRQ rows remain, without RPS/XPS.
    assert!(out.contains("i40e-ens1f0-TxRx-15"), "{out}");
}

#[test]
fn unreadable_files() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        // A directory where a file should be (EISDIR), and a symlink loop:
        // both fail even for root, unlike chmod 000.
        let p = d.join("proc/irq/121/smp_affinity");
        fs::remove_file(&p).unwrap();
        fs::create_dir(&p).unwrap();
        let m = d.join(NIC).join("mtu");
        fs::remove_file(&m).unwrap();
        std::os::unix::fs::symlink("mtu", &m).unwrap();
        // chmod 000 as well (only unreadable when not root).
        let g = d.join(NIC).join("gro_flush_timeout");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&g, fs::Permissions::from_mode(0o000)).unwrap();
    });
    note_for(&s, "/proc/irq/121/smp_affinity");
    note_for(&s, "/sys/class/net/ens1f0/mtu");
    assert_eq!(s.interface("ens1f0").unwrap().mtu, None);
    if !lab::is_root() {
        note_for(&s, "/sys/class/net/ens1f0/gro_flush_timeout");
    }
    still_shows(&s);
}

#[test]
fn broken_device_link() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        let l = d.join(NIC).join("device");
        fs::remove_file(&l).unwrap();
        std::os::unix::fs::symlink("../../../nowhere", &l).unwrap();
        let _ = IRQ_DIR;
    });
    assert!(note_for(&s, "/sys/class/net/ens1f0/device").contains("does not exist"));
    let nic = s.interface("ens1f0").unwrap();
    assert_eq!(nic.pci_address, None);
    assert_eq!(nic.numa_node, None);
    // The IRQs are still attributed by name.
    assert_eq!(nic.irqs.len(), 16);
    still_shows(&s);
}

#[test]
fn ethtool_json_that_is_not_json() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        fs::write(d.join("ethtool/ens1f0.json"), "{ \"channels\": [1, 2,").unwrap();
    });
    let m = note_for(&s, "ethtool/ens1f0.json");
    assert!(m.contains("not valid JSON"), "{m}");
    let e = &s.interface("ens1f0").unwrap().ethtool;
    assert!(matches!(e.channels, Probe::Error { .. }));
    let out = still_shows(&s);
    assert!(
        out.contains("channels: error (ethtool/ens1f0.json: not valid JSON"),
        "{out}"
    );
    // A missing file is "not read", not an error.
    let (_t, s) = corrupted("two-socket-16q", |d| {
        fs::remove_file(d.join("ethtool/ens1f0.json")).unwrap();
    });
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    assert!(render(&s).contains("not read: driver, channels, rings, coalesce, features"));
}

#[test]
fn older_and_newer_kernel_formats() {
    let (_t, s) = corrupted("two-socket-16q", |d| {
        // A newer kernel: an extra column of text and a new arch line.
        let p = d.join("proc/interrupts");
        let mut text = fs::read_to_string(&p).unwrap();
        text.push_str("NEW:          1          2   Some future interrupt kind\n");
        fs::write(&p, text).unwrap();
        // nohz_full printed as "(null)"; effective_affinity gone (pre-4.15).
        fs::remove_file(d.join("proc/irq/122/effective_affinity")).unwrap();
        // Sysctls with extra whitespace.
        fs::write(
            d.join("proc/sys/net/ipv4/tcp_rmem"),
            "4096 \t 131072\t\t6291456 \n",
        )
        .unwrap();
    });
    assert!(s.notes.is_empty(), "{:?}", s.notes);
    assert_eq!(
        s.irq(model::IrqNumber(122)).unwrap().effective_affinity,
        None
    );
    assert_eq!(s.sysctls["net.ipv4.tcp_rmem"], "4096 131072 6291456");
    still_shows(&s);
}

/// Every file of the captured fixture, truncated to half, emptied, or
/// replaced by garbage: no panic, and any note names a real path.
#[test]
fn every_file_truncated_or_garbage_never_panics() {
    let src = fixture_dir("kvm-2vcpu-6.18");
    let t = tempfile::tempdir().unwrap();
    copy_tree(&src, t.path());
    let mut files = Vec::new();
    let mut stack = vec![t.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let ft = fs::symlink_metadata(&p).unwrap().file_type();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 100);
    let root = Root::new(t.path());
    for f in &files {
        let orig = fs::read(f).unwrap();
        for bad in [
            orig[..orig.len() / 2].to_vec(),
            Vec::new(),
            b"\xff\xfe garbage -1 ,,, x-y \n\n".to_vec(),
        ] {
            fs::write(f, &bad).unwrap();
            let s = read_snapshot(&root);
            let out = render(&s);
            assert!(out.contains("cpus:"), "{}", f.display());
            for n in &s.notes {
                assert!(
                    n.path.starts_with('/') || n.path.starts_with("ethtool/"),
                    "{}: note path {:?}",
                    f.display(),
                    n.path
                );
            }
        }
        fs::write(f, &orig).unwrap();
    }
}
