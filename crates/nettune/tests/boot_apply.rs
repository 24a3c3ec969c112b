//! Issue 16, item 12: at boot `nettune.service` applies the persisted plan as
//! it was reviewed (no `--replan`), and when the hardware no longer matches
//! it fails: exit status 1 and one line naming what changed, so systemd
//! marks the unit failed and the journal says why.

#![allow(clippy::unwrap_used)]

mod fixture_copy;

use fixture_copy::{bin, copy, rename_iface, tree};

/// The unit's ExecStart arguments, as `apply --persist` writes them.
fn boot_args() -> Vec<String> {
    let unit = host::persist::unit_text("/usr/bin/nettune", "/var/lib/nettune").unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    assert!(!exec.contains("--replan"), "{exec}");
    exec.split(' ').skip(1).map(String::from).collect()
}

/// Run the boot unit's command against `c` with `plan` as the persisted plan.
fn boot_apply(c: &fixture_copy::Copy, plan: &std::path::Path) -> std::process::Output {
    let mut args = boot_args();
    for (i, a) in args.clone().iter().enumerate() {
        if a == host::persist::PLAN_PATH {
            args[i] = plan.to_str().unwrap().into();
        }
        if a == "/var/lib/nettune" {
            args[i] = c.state.to_str().unwrap().into();
        }
    }
    bin()
        .args(&args)
        .arg("--root")
        .arg(&c.root)
        .output()
        .unwrap()
}

#[test]
fn boot_apply_fails_naming_what_changed_when_the_nic_was_renamed() {
    let c = copy("nic-ena");
    let out = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(out.status.success());
    let plan = c.outside("plan.json");
    std::fs::write(&plan, &out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.to_string().contains("ens5"), "the plan names no ens5");
    // The NIC comes back as ens6 at the next boot.
    rename_iface(&c.root, "ens5", "ens6");
    let before = tree(&c.root);
    let out = boot_apply(&c, &plan);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("interface ens5 is gone"), "{err}");
    assert!(err.contains("IRQ 27 is now ens6 (was ens5)"), "{err}");
    assert_eq!(tree(&c.root), before, "nothing written");
}

#[test]
fn boot_apply_applies_the_reviewed_plan_when_the_hardware_matches() {
    let c = copy("nic-ena");
    let out = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    let plan = c.outside("plan.json");
    std::fs::write(&plan, &out.stdout).unwrap();
    let out = boot_apply(&c, &plan);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
