//! apply / rollback / verify / history on temp copies of the fixtures:
//! byte-identical after rollback, after an injected failure, and after a
//! kill -9 in the middle of an apply; bad input refused.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod fixture_copy;
use fixture_copy::{assert_same, bin, copy, nettune, ok, tree, Copy};

fn plan_json(c: &Copy) -> String {
    let o = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap()
}

const FIXTURES: [&str; 4] = [
    "c4-8xlarge",
    "two-socket-16q",
    "kvm-2vcpu-6.18",
    "tuner-two-socket-32c",
];

#[test]
fn apply_then_rollback_is_byte_identical_on_every_fixture_and_profile() {
    for f in FIXTURES {
        for p in ["latency", "throughput", "balanced"] {
            let c = copy(f);
            let before = tree(&c.root);
            let out = ok(&c, &["apply", "--profile", p, "--yes"]);
            assert!(out.contains("Generation 1"), "{f} {p}: {out}");
            let mid = tree(&c.root);
            if f != "kvm-2vcpu-6.18" || p != "latency" {
                assert_ne!(mid.len(), 0);
            }
            let v = nettune(&c, &["verify"]);
            assert!(
                v.status.success(),
                "{f} {p}: verify after apply: {}",
                String::from_utf8_lossy(&v.stdout)
            );
            ok(&c, &["rollback"]);
            assert_same(&before, &tree(&c.root));
            // Idempotent.
            let again = ok(&c, &["rollback"]);
            assert!(again.contains("Nothing to roll back"), "{again}");
            assert_same(&before, &tree(&c.root));
        }
    }
}

#[test]
fn apply_really_writes_the_c4_layout_and_verify_sees_drift() {
    let c = copy("c4-8xlarge");
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let rps0 = std::fs::read_to_string(c.root.join("sys/class/net/eth0/queues/rx-0/rps_cpus"));
    // sys/class/net/eth0 is a symlink into sys/devices; read through it.
    assert_eq!(rps0.unwrap().trim(), "00000000,000001fe");
    let irq = std::fs::read_to_string(c.root.join("proc/irq/267/smp_affinity")).unwrap();
    assert_eq!(irq.trim(), "00000000,00000200");
    let eth = std::fs::read_to_string(c.root.join("ethtool/eth0.json")).unwrap();
    // Not rx-usecs 1 (dynamic ITR): seed 001 measured it the worst for CPU.
    assert!(
        eth.contains("\"rx-usecs\": 50"),
        "ixgbevf gets a fixed 50 µs interval"
    );
    let v: serde_json::Value = serde_json::from_str(&ok(&c, &["verify", "--json"])).unwrap();
    assert_eq!(v["drift"], 0);
    std::fs::write(
        c.root.join("sys/class/net/eth0/queues/rx-1/rps_cpus"),
        "0\n",
    )
    .unwrap();
    let o = nettune(&c, &["verify"]);
    assert_eq!(o.status.code(), Some(3));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("DRIFT") && s.contains("rx-1/rps_cpus"), "{s}");
    // A knob that disappeared is n/a, not drift.
    let flow = c
        .root
        .join("sys/devices/pci0000:00/0000:00:03.0/net/eth0/queues/rx-0/rps_flow_cnt");
    let saved = std::fs::read(&flow).unwrap();
    std::fs::remove_file(&flow).unwrap();
    let v: serde_json::Value =
        serde_json::from_slice(&nettune(&c, &["verify", "--json"]).stdout).unwrap();
    let item = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["target"].as_str().unwrap().ends_with("rx-0/rps_flow_cnt"))
        .unwrap()
        .clone();
    assert_eq!(item["status"], "not_available");
    assert_eq!(v["drift"], 1);
    std::fs::write(&flow, saved).unwrap();
    let h: serde_json::Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert_eq!(h["generations"][0]["status"], "applied");
    assert!(h["generations"][0]["rolled_back_at"].is_null());
    ok(&c, &["rollback", "1"]);
    let h: serde_json::Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert!(h["generations"][0]["rolled_back_at"].is_u64());
}

#[test]
fn rings_and_coalescing_go_through_the_fixture_ethtool_and_come_back() {
    let c = copy("tuner-two-socket-32c");
    let before = std::fs::read(c.root.join("ethtool/ens1f0.json")).unwrap();
    ok(&c, &["apply", "--profile", "latency", "--yes"]);
    let eth = std::fs::read_to_string(c.root.join("ethtool/ens1f0.json")).unwrap();
    assert!(
        eth.contains("\"adaptive-rx\": 0") && eth.contains("\"rx-usecs\": 8"),
        "{eth}"
    );
    let snip = std::fs::read_dir(c.state.join("modprobe.d"));
    assert!(snip.is_err(), "i40e has no module parameter to write");
    let eff = std::fs::read_to_string(c.root.join("proc/irq/121/effective_affinity")).unwrap();
    assert_eq!(
        eff.trim(),
        "00000000,00010000",
        "effective_affinity follows the IRQ to CPU 16"
    );
    ok(&c, &["rollback"]);
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let eth = std::fs::read_to_string(c.root.join("ethtool/ens1f0.json")).unwrap();
    assert!(
        eth.contains("\"rx\": 4096"),
        "rings raised on rx drops: {eth}"
    );
    ok(&c, &["rollback"]);
    assert_eq!(
        std::fs::read(c.root.join("ethtool/ens1f0.json")).unwrap(),
        before
    );
}

#[test]
fn default_state_dir_is_under_the_root() {
    let c = copy("c4-8xlarge");
    let o = bin()
        .args(["apply", "--profile", "balanced", "--yes", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(c
        .root
        .join("var/lib/nettune/generations/000001/journal.log")
        .exists());
}

fn make_immutable(p: &Path) -> bool {
    Command::new("chattr")
        .arg("+i")
        .arg(p)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn injected_failure_rolls_back_and_names_the_knob() {
    let c = copy("c4-8xlarge");
    let knob = c
        .root
        .join("sys/devices/pci0000:00/0000:00:03.0/net/eth0/queues/rx-1/rps_cpus");
    assert!(knob.exists());
    // Root ignores file modes: make the file immutable, or failing that,
    // replace it with a directory (EISDIR on open).
    let immutable = make_immutable(&knob);
    if !immutable {
        std::fs::remove_file(&knob).unwrap();
        std::fs::create_dir(&knob).unwrap();
    }
    let before = tree(&c.root);
    let o = nettune(&c, &["apply", "--profile", "throughput", "--yes"]);
    if immutable {
        let _ = Command::new("chattr").arg("-i").arg(&knob).status();
    }
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("rps_cpus (/sys/class/net/eth0/queues/rx-1/rps_cpus)")
            && e.contains("rolled back"),
        "{e}"
    );
    // The immutable file refuses root too with EPERM: the status of a write
    // refused for privileges (docs/exit-codes.md); a directory in its place
    // is neither that nor an absent knob: the plain error status.
    assert_eq!(o.status.code(), Some(if immutable { 6 } else { 1 }), "{e}");
    assert_same(&before, &tree(&c.root));
    let h: serde_json::Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert_eq!(h["generations"][0]["status"], "failed");
    assert!(h["generations"][0]["rolled_back_at"].is_u64());
}

#[test]
fn vanished_knob_mid_apply_rolls_back_and_names_it() {
    let c = copy("c4-8xlarge");
    let plan = plan_json(&c);
    let plan_file = c.state.with_file_name("plan.json");
    std::fs::write(&plan_file, plan).unwrap();
    let knob = c
        .root
        .join("sys/devices/pci0000:00/0000:00:03.0/net/eth0/queues/rx-1/rps_flow_cnt");
    std::fs::remove_file(&knob).unwrap();
    let before = tree(&c.root);
    let o = nettune(
        &c,
        &["apply", "--plan", plan_file.to_str().unwrap(), "--yes"],
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("rx-1/rps_flow_cnt") && e.contains("not found"),
        "{e}"
    );
    // Its own exit status (docs/exit-codes.md): the lab and fleet executors
    // tell an absent knob by it, not by these words.
    assert_eq!(o.status.code(), Some(5), "{e}");
    assert_same(&before, &tree(&c.root));
}

#[test]
fn kill_9_mid_apply_then_rollback_is_byte_identical() {
    let c = copy("tuner-two-socket-32c");
    let before = tree(&c.root);
    let mut child = bin()
        .args(["apply", "--profile", "throughput", "--yes", "--root"])
        .arg(&c.root)
        .arg("--state-dir")
        .arg(&c.state)
        .env("NETTUNE_TEST_PAUSE_AFTER_WRITES", "7")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("paused after 7 writes"), "{line}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let mid = tree(&c.root);
    assert!(mid != before, "7 writes happened");
    let h: serde_json::Value = serde_json::from_str(&ok(&c, &["history", "--json"])).unwrap();
    assert_eq!(h["generations"][0]["status"], "incomplete");
    // A new apply over an unfinished one is refused.
    let o = nettune(&c, &["apply", "--profile", "throughput", "--yes"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("did not finish"));
    ok(&c, &["rollback"]);
    assert_same(&before, &tree(&c.root));
}

#[test]
fn corrupt_journal_is_refused_and_nothing_is_touched() {
    let c = copy("c4-8xlarge");
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let j = c.state.join("generations/000001/journal.log");
    let text = std::fs::read_to_string(&j).unwrap();
    std::fs::write(
        &j,
        text.replacen("000001fe", "000001ff", 1).replacen(
            "\"original\":\"0",
            "\"original\":\"1",
            1,
        ),
    )
    .unwrap();
    let before = tree(&c.root);
    let o = nettune(&c, &["rollback"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("corrupt journal") && e.contains("journal.log:"),
        "{e}"
    );
    assert_same(&before, &tree(&c.root));
}

#[test]
fn foreign_plan_is_refused_without_force() {
    let c4 = copy("c4-8xlarge");
    let other = copy("two-socket-16q");
    let plan = plan_json(&other);
    let f = c4.state.with_file_name("foreign.json");
    std::fs::write(&f, plan).unwrap();
    let before = tree(&c4.root);
    let o = nettune(&c4, &["apply", "--plan", f.to_str().unwrap(), "--yes"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("db-2s-16q") && e.contains("--force"), "{e}");
    assert_same(&before, &tree(&c4.root));
}

#[test]
fn no_tty_without_yes_is_refused_and_dry_run_writes_nothing() {
    let c = copy("c4-8xlarge");
    let before = tree(&c.root);
    let o = nettune(&c, &["apply", "--profile", "throughput"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--yes"));
    let out = ok(&c, &["apply", "--profile", "throughput", "--dry-run"]);
    assert!(
        out.contains("echo 00000000,000001fe > /sys/class/net/eth0/queues/rx-0/rps_cpus"),
        "{out}"
    );
    assert_same(&before, &tree(&c.root));
    assert!(!c.state.exists());
}

#[test]
fn malformed_profile_writes_nothing() {
    let c = copy("c4-8xlarge");
    let p = c.state.with_file_name("bad.toml");
    std::fs::write(
        &p,
        "inherit = \"latency\"\n[rules]\nirq-afinity = { enabled = false }\n",
    )
    .unwrap();
    let before = tree(&c.root);
    let o = nettune(&c, &["apply", "--profile", p.to_str().unwrap(), "--yes"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("bad.toml:3") && e.contains("rules.irq-afinity"),
        "{e}"
    );
    assert_same(&before, &tree(&c.root));
    assert!(!c.state.exists());
}

#[test]
fn persist_installs_a_unit_and_rollback_removes_it() {
    let c = copy("c4-8xlarge");
    let before = tree(&c.root);
    ok(
        &c,
        &["apply", "--profile", "throughput", "--yes", "--persist"],
    );
    let unit = std::fs::read_to_string(c.root.join("etc/systemd/system/nettune.service")).unwrap();
    assert!(
        unit.contains("apply --plan /etc/nettune/plan.json"),
        "{unit}"
    );
    assert!(unit.contains("WantedBy=multi-user.target"));
    let link = std::fs::read_link(
        c.root
            .join("etc/systemd/system/multi-user.target.wants/nettune.service"),
    )
    .unwrap();
    assert_eq!(link, PathBuf::from("/etc/systemd/system/nettune.service"));
    let plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(c.root.join("etc/nettune/plan.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(plan["profile"], "throughput");
    // The persisted plan re-applies cleanly (as the unit would at boot).
    ok(&c, &["rollback"]);
    assert_same(&before, &tree(&c.root));
}

#[test]
fn module_parameters_become_a_snippet_for_review() {
    // An e1000e host: the kvm fixture with its driver link pointed at e1000e.
    let c = copy("kvm-2vcpu-6.18");
    let link = c
        .root
        .join("sys/devices/pci0000:00/0000:00:03.0/virtio2/driver");
    let pci_driver = c.root.join("sys/devices/pci0000:00/0000:00:03.0/driver");
    let target = if link.exists() || std::fs::symlink_metadata(&link).is_ok() {
        link
    } else {
        pci_driver
    };
    if std::fs::symlink_metadata(&target).is_err() {
        eprintln!("fixture layout changed; skipping");
        return;
    }
    std::fs::remove_file(&target).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/e1000e", &target).unwrap();
    ok(&c, &["apply", "--profile", "latency", "--yes"]);
    let snip = std::fs::read_to_string(
        c.state
            .join("modprobe.d/nettune-e1000e-InterruptThrottleRate.conf"),
    )
    .unwrap();
    assert!(
        snip.contains("options e1000e InterruptThrottleRate=0"),
        "{snip}"
    );
    ok(&c, &["rollback"]);
    assert!(!c
        .state
        .join("modprobe.d/nettune-e1000e-InterruptThrottleRate.conf")
        .exists());
}

#[test]
fn refused_irq_affinity_is_unchangeable_and_the_apply_goes_on() {
    // EPERM on an IRQ affinity write is what 6.12+ returns for managed IRQs.
    let c = copy("c4-8xlarge");
    let knob = c.root.join("proc/irq/267/smp_affinity");
    if !make_immutable(&knob) {
        eprintln!("chattr +i unsupported here; skipping");
        return;
    }
    let before = tree(&c.root);
    let o = nettune(&c, &["apply", "--profile", "throughput", "--yes"]);
    let _ = Command::new("chattr").arg("-i").arg(&knob).status();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("UNCHANGEABLE") && out.contains("/proc/irq/267"),
        "{out}"
    );
    assert!(out.contains("1 unchangeable"), "{out}");
    let v = ok(&c, &["verify"]);
    assert!(
        v.contains("unchangeable") && v.contains("/proc/irq/267"),
        "{v}"
    );
    ok(&c, &["rollback"]);
    assert_same(&before, &tree(&c.root));
}

// ---- IRQs are named by interface and queue ---------------------------------

/// Give the c4 copy's queue IRQs distinct original affinities (CPUs 0-17
/// for IRQ 266, queue 0; 18-35 for IRQ 267, queue 1), so restoring them to
/// the wrong IRQ shows.
fn c4_distinct_irqs() -> Copy {
    let c = copy("c4-8xlarge");
    std::fs::write(c.root.join("proc/irq/266/smp_affinity"), "0,0003ffff\n").unwrap();
    std::fs::write(c.root.join("proc/irq/267/smp_affinity"), "f,fffc0000\n").unwrap();
    c
}

/// What a driver reload can do: queue 0 and queue 1 trade IRQ numbers (each
/// queue keeps its state; only the numbers move).
fn swap_queue_irqs(root: &Path) {
    let irq = root.join("proc/irq");
    std::fs::rename(irq.join("266"), irq.join("tmp")).unwrap();
    std::fs::rename(irq.join("267"), irq.join("266")).unwrap();
    std::fs::rename(irq.join("tmp"), irq.join("267")).unwrap();
    let p = root.join("proc/interrupts");
    let t = std::fs::read_to_string(&p).unwrap();
    let t = t
        .replace("eth0-TxRx-0", "@Q0@")
        .replace("eth0-TxRx-1", "eth0-TxRx-0")
        .replace("@Q0@", "eth0-TxRx-1");
    std::fs::write(&p, t).unwrap();
}

#[test]
fn verify_and_rollback_follow_a_queue_whose_irq_was_renumbered() {
    let c = c4_distinct_irqs();
    let expected = {
        let pristine = c4_distinct_irqs();
        swap_queue_irqs(&pristine.root);
        tree(&pristine.root)
    };
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let mask = |n: u32| {
        std::fs::read_to_string(c.root.join(format!("proc/irq/{n}/smp_affinity"))).unwrap()
    };
    assert_eq!(
        (mask(266), mask(267)),
        ("00000000,00000001\n".into(), "00000000,00000200\n".into())
    );
    swap_queue_irqs(&c.root);
    // Queue 0 (now IRQ 267) is still on CPU 0 and queue 1 on CPU 9: no drift.
    let o = nettune(&c, &["verify", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{v:#}");
    assert!(v["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["target"] == "/proc/irq/267/smp_affinity_list" && i["intended"] == "0"));
    // Each queue gets its own original back, on the IRQ it has now.
    ok(&c, &["rollback"]);
    assert_eq!(
        (mask(267), mask(266)),
        ("0,0003ffff\n".into(), "f,fffc0000\n".into())
    );
    assert_same(&expected, &tree(&c.root));
}

#[test]
fn a_stale_plan_naming_another_devices_irq_writes_nothing() {
    let c = copy("c4-8xlarge");
    let plan = c.root.join("../plan.json");
    std::fs::write(&plan, plan_json(&c)).unwrap();
    // eth0's queue 0 IRQ is renumbered 266 -> 300, and 266 now serves a disk.
    let irq = c.root.join("proc/irq");
    std::fs::rename(irq.join("266"), irq.join("300")).unwrap();
    std::fs::create_dir(irq.join("266")).unwrap();
    std::fs::write(irq.join("266/smp_affinity"), "f,ffffffff\n").unwrap();
    let msi = c.root.join("sys/devices/pci0000:00/0000:00:03.0/msi_irqs");
    std::fs::rename(msi.join("266"), msi.join("300")).unwrap();
    let p = c.root.join("proc/interrupts");
    let t = std::fs::read_to_string(&p).unwrap();
    let line = t.lines().find(|l| l.contains("eth0-TxRx-0")).unwrap();
    let disk = line.replace("eth0-TxRx-0", "nvme0q1");
    let moved = line.replacen(" 266:", " 300:", 1);
    std::fs::write(&p, t.replace(line, &format!("{disk}\n{moved}"))).unwrap();
    let before = tree(&c.root);
    let o = nettune(&c, &["apply", "--plan", plan.to_str().unwrap(), "--yes"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("IRQ 266 is not an IRQ of eth0 on this host now") && err.contains("300"),
        "{err}"
    );
    assert!(err.contains("nothing was written"), "{err}");
    assert_same(&before, &tree(&c.root));
}

/// Debian's stock /etc/default/irqbalance (irqbalance misc/irqbalance.env,
/// shortened) with one argument already set, which must survive.
const IRQBALANCE_ENV: &str = "# irqbalance is a daemon process that distributes interrupts\n#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=\"--policyscript=/etc/irqpolicy\"\n";

/// The IRQs whose affinity a plan sets.
fn pinned_irqs(plan: &serde_json::Value) -> std::collections::BTreeSet<u32> {
    plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["target"]["kind"] == "irq_affinity")
        .filter_map(|c| c["target"]["irq"].as_u64())
        .map(|n| u32::try_from(n).unwrap())
        .collect()
}

/// Issue 17 item 6: irqbalance (running in the fixture) is kept and exactly
/// the pinned IRQs are banned in its environment file; rollback restores the
/// file byte for byte. Before, every plan stopped irqbalance.
#[test]
fn irqbalance_is_kept_and_the_pinned_irqs_banned() {
    let c = copy("tuner-two-socket-32c");
    let env = c.root.join("etc/default/irqbalance");
    std::fs::create_dir_all(env.parent().unwrap()).unwrap();
    std::fs::write(&env, IRQBALANCE_ENV).unwrap();
    let before = tree(&c.root);
    let p: serde_json::Value = serde_json::from_str(&plan_json(&c)).unwrap();
    let changes = p["changes"].as_array().unwrap();
    assert!(
        !changes.iter().any(|c| c["target"]["kind"] == "service"),
        "no service stop: {changes:?}"
    );
    let ban = changes
        .iter()
        .find(|c| c["knob"] == "irqbalance")
        .expect("a ban change");
    assert_eq!(ban["target"]["path"], "/etc/default/irqbalance", "{ban}");
    let pinned = pinned_irqs(&p);
    assert!(!pinned.is_empty());
    ok(&c, &["apply", "--profile", "throughput", "--yes"]);
    let text = std::fs::read_to_string(&env).unwrap();
    let want: Vec<String> = pinned.iter().map(|n| format!("--banirq={n}")).collect();
    assert_eq!(
        text,
        format!(
            "# irqbalance is a daemon process that distributes interrupts\n#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=\"--policyscript=/etc/irqpolicy {}\"\n",
            want.join(" ")
        )
    );
    assert_eq!(text.matches("--banirq=").count(), pinned.len());
    let v = nettune(&c, &["verify"]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    ok(&c, &["rollback"]);
    assert_same(&before, &tree(&c.root));
    assert_eq!(std::fs::read_to_string(&env).unwrap(), IRQBALANCE_ENV);
}

/// `irqbalance = "stop"` keeps the old behaviour: irqbalance stopped, the
/// environment file untouched.
#[test]
fn irqbalance_stop_profile_option_stops_it() {
    let c = copy("tuner-two-socket-32c");
    let env = c.root.join("etc/default/irqbalance");
    std::fs::create_dir_all(env.parent().unwrap()).unwrap();
    std::fs::write(&env, IRQBALANCE_ENV).unwrap();
    let prof = c.outside("stop.toml");
    std::fs::write(
        &prof,
        "inherit = \"throughput\"\n[settings]\nirqbalance = \"stop\"\n",
    )
    .unwrap();
    let o = bin()
        .args(["plan", "--json", "--profile"])
        .arg(&prof)
        .arg("--root")
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let first = &p["changes"][0];
    assert_eq!(first["knob"], "irqbalance");
    assert_eq!(first["target"]["kind"], "service", "{first}");
    assert_eq!(first["after"], "stopped");
}

/// Issue 21: `apply` and `rollback` without root said only "Permission
/// denied (os error 13)"; now they say they need root and how to work on a
/// copy. Run as `nobody` (setpriv) on a fixture copy it cannot write.
#[test]
fn apply_and_rollback_without_root_say_they_need_root() {
    if !lab::is_root() {
        eprintln!("skipped: needs root to drop to an unprivileged user with setpriv");
        return;
    }
    let c = copy("two-socket-16q");
    let bin = env!("CARGO_BIN_EXE_nettune");
    // Every directory on the way must be searchable by nobody.
    let mut d = c.root.clone();
    while let Some(p) = d.parent() {
        let _ = std::process::Command::new("chmod")
            .arg("o+x")
            .arg(p)
            .status();
        d = p.to_path_buf();
    }
    for (cmd, args) in [
        ("apply", vec!["apply", "--profile", "throughput", "--yes"]),
        ("rollback", vec!["rollback"]),
    ] {
        let o = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", bin])
            .args(&args)
            .arg("--root")
            .arg(&c.root)
            .arg("--state-dir")
            .arg(&c.state)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{cmd}: {err}");
        assert!(
            err.contains(&format!("{cmd} needs root"))
                && err.contains("--root DIR --state-dir DIR"),
            "{cmd}: {err}"
        );
        // `apply` says it by its exit status too (docs/exit-codes.md).
        if cmd == "apply" {
            assert_eq!(o.status.code(), Some(6), "{err}");
        }
    }
}
