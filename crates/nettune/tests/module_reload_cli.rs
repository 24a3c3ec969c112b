//! `apply --allow-reload` on a fixture copy whose NIC is driven by e1000e:
//! the module parameter snippet is written and the module reloaded (the
//! fixture root records the reload in `sys/module/e1000e/`), rollback
//! reloads again; a plan that asks for reloads needs the flag. Nothing here
//! runs modprobe: the root is never `/`.

#![allow(clippy::unwrap_used)]

mod fixture_copy;
use fixture_copy::{bin, copy, nettune, ok, Copy};

/// The kvm fixture with its NIC's driver link pointed at e1000e (as
/// tune_apply.rs does); `None` when the fixture's layout changed.
fn e1000e_host() -> Option<Copy> {
    let c = copy("kvm-2vcpu-6.18");
    let link = c
        .root
        .join("sys/devices/pci0000:00/0000:00:03.0/virtio2/driver");
    let pci_driver = c.root.join("sys/devices/pci0000:00/0000:00:03.0/driver");
    let target = if std::fs::symlink_metadata(&link).is_ok() {
        link
    } else {
        pci_driver
    };
    std::fs::symlink_metadata(&target).ok()?;
    std::fs::remove_file(&target).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/e1000e", &target).unwrap();
    Some(c)
}

fn reloads(c: &Copy) -> String {
    std::fs::read_to_string(c.root.join("sys/module/e1000e/nettune-reloads")).unwrap_or_default()
}

#[test]
fn allow_reload_reloads_after_the_write_and_after_the_rollback() {
    let Some(c) = e1000e_host() else {
        eprintln!("fixture layout changed; skipping");
        return;
    };
    // Without the flag: the snippet only, as before.
    let out = ok(&c, &["apply", "--profile", "latency", "--yes"]);
    assert!(out.contains("for review (not loaded"), "{out}");
    assert_eq!(reloads(&c), "");
    ok(&c, &["rollback"]);
    assert_eq!(reloads(&c), "");

    let dry = ok(
        &c,
        &[
            "apply",
            "--profile",
            "latency",
            "--dry-run",
            "--allow-reload",
        ],
    );
    assert!(dry.contains("then each module above is reloaded"), "{dry}");
    assert_eq!(reloads(&c), "");
    let out = ok(
        &c,
        &["apply", "--profile", "latency", "--yes", "--allow-reload"],
    );
    assert!(out.contains("loaded by reloading their modules"), "{out}");
    let param = c
        .root
        .join("sys/module/e1000e/parameters/InterruptThrottleRate");
    assert_eq!(std::fs::read_to_string(&param).unwrap(), "0\n");
    assert_eq!(reloads(&c), "reload InterruptThrottleRate=0\n");
    let plan = std::fs::read_to_string(c.state.join("generations/000002/plan.json")).unwrap();
    assert!(plan.contains("\"reload_modules\": true"), "{plan}");
    ok(&c, &["rollback"]);
    assert!(!c
        .state
        .join("modprobe.d/nettune-e1000e-InterruptThrottleRate.conf")
        .exists());
    assert_eq!(reloads(&c), "reload InterruptThrottleRate=0\nreload\n");
}

#[test]
fn a_plan_that_reloads_needs_allow_reload() {
    let Some(c) = e1000e_host() else {
        eprintln!("fixture layout changed; skipping");
        return;
    };
    let o = bin()
        .args(["plan", "--profile", "latency", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(plan["options"].get("reload_modules").is_none(), "{plan}");
    plan["options"]["reload_modules"] = serde_json::Value::Bool(true);
    let f = c.outside("plan.json");
    std::fs::write(&f, serde_json::to_string(&plan).unwrap()).unwrap();
    let f = f.to_str().unwrap();
    let o = nettune(&c, &["apply", "--plan", f, "--yes"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("reloads module(s) e1000e") && err.contains("--allow-reload"),
        "{err}"
    );
    assert_eq!(reloads(&c), "");
    ok(&c, &["apply", "--plan", f, "--yes", "--allow-reload"]);
    assert_eq!(reloads(&c), "reload InterruptThrottleRate=0\n");
}

/// `fleet apply --plan` of a plan that asks for reloads is refused on the
/// controller without `--allow-reload`, before any host is contacted.
#[test]
fn fleet_apply_of_a_plan_that_reloads_needs_allow_reload() {
    let Some(c) = e1000e_host() else {
        eprintln!("fixture layout changed; skipping");
        return;
    };
    let o = bin()
        .args(["plan", "--profile", "latency", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    plan["options"]["reload_modules"] = serde_json::Value::Bool(true);
    let f = c.outside("plan.json");
    std::fs::write(&f, serde_json::to_string(&plan).unwrap()).unwrap();
    let inv = c.outside("inv.toml");
    std::fs::write(&inv, "[[host]]\nname = \"h\"\ntransport = \"local\"\n").unwrap();
    let o = bin()
        .args(["fleet", "apply", "--inventory"])
        .arg(&inv)
        .arg("--plan")
        .arg(&f)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("reloads module(s) e1000e") && err.contains("--allow-reload"),
        "{err}"
    );
    assert_eq!(reloads(&c), "");
}
