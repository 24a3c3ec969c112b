//! `nettune guest up`'s refusals, without QEMU: bad arguments are usage
//! errors naming what is allowed, and a machine without QEMU gets the one
//! line naming the package (docs/guests.md, "Studies").

#![allow(clippy::unwrap_used)]

use std::process::Command;

const NETTUNE: &str = env!("CARGO_BIN_EXE_nettune");

fn up(args: &[&str], path: &str) -> (i32, String) {
    let out = Command::new(NETTUNE)
        .args(["guest", "up"])
        .args(args)
        .env("PATH", path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_nic_or_too_many_clients_is_a_usage_error() {
    let (code, err) = up(&["--nic", "rtl8139"], "/usr/bin:/bin");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("e1000-82545em, e1000, e1000e, vmxnet3, virtio-net-pci"),
        "{err}"
    );
    let (code, err) = up(&["--clients", "9"], "/usr/bin:/bin");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("1..=8"), "{err}");
}

#[test]
fn no_qemu_is_one_line_naming_the_package_and_nothing_boots() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("guests");
    let (code, err) = up(
        &["--dir", dir.to_str().unwrap()],
        d.path().to_str().unwrap(),
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "no QEMU: qemu-system-x86_64 not found; install the Debian package qemu-system-x86"
        ),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!dir.exists(), "nothing is written before QEMU is found");
}
