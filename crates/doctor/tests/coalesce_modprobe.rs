//! coalesce-mismatch, modprobe.d part (issue 10): `InterruptThrottleRate` in
//! `/etc/modprobe.d` for a NIC's ixgbe/ixgbevf/e1000 family driver fires when
//! it is a dynamic mode under a latency goal (seed 001: ixgbevf's dynamic ITR
//! was the worst for CPU) or a value the driver rejects (tune::drivers'
//! ranges); quiet otherwise.

#![allow(clippy::unwrap_used)]

use host::Root;
use nettune_doctor::{diagnose, DoctorId, Finding, Input};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A copy of `fixture` with `/etc/modprobe.d/nic.conf` holding `conf`, read as
/// doctor reads it, with `profile` as the intent.
fn with_conf(fixture: &str, conf: Option<&str>, profile: Option<&str>) -> Input {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    assert!(Command::new("cp")
        .arg("-a")
        .arg(fixtures().join(fixture))
        .arg(&root)
        .status()
        .unwrap()
        .success());
    if let Some(c) = conf {
        let d = root.join("etc/modprobe.d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("nic.conf"), c).unwrap();
    }
    let r = Root::new(&root);
    let mut i = Input::new(host::read_snapshot(&r));
    i.extras = host::extras::read_extras(&r, &i.snapshot);
    i.facts = host::doctor_facts::read_doctor_facts(&r, &i.snapshot);
    i.profile = profile.map(|p| tune::profile::builtin(p).unwrap());
    i
}

/// The modprobe.d evidence of coalesce-mismatch findings.
fn itr_evidence(i: &Input) -> Vec<(Finding, String)> {
    diagnose(i)
        .of(DoctorId::CoalesceMismatch)
        .filter_map(|f| {
            f.evidence
                .iter()
                .find(|e| e.source.contains("modprobe.d"))
                .map(|e| {
                    (
                        f.clone(),
                        format!("{} = {} ({})", e.what, e.value, e.source),
                    )
                })
        })
        .collect()
}

#[test]
fn ixgbevf_dynamic_itr_in_modprobe_d_under_latency() {
    // c4.8xlarge's eth0 is ixgbevf.
    let conf = "# seed 001\noptions ixgbevf InterruptThrottleRate=1\n";
    let i = with_conf("c4-8xlarge", Some(conf), Some("latency"));
    let ev = itr_evidence(&i);
    assert_eq!(ev.len(), 1, "{ev:?}");
    let (f, e) = &ev[0];
    assert_eq!(f.subject, "eth0");
    assert!(
        e.starts_with("ixgbevf InterruptThrottleRate = 1 (/etc/modprobe.d/nic.conf:2)"),
        "{e}"
    );
    assert!(
        f.title
            .contains("InterruptThrottleRate=1 (/etc/modprobe.d/nic.conf:2) is ixgbevf's dynamic moderation under a latency goal"),
        "{}",
        f.title
    );
    // The fixture's in-tree ixgbevf (2.12.1-k) ignores the parameter: said so.
    assert!(
        f.evidence
            .iter()
            .any(|e| e.what == "ixgbevf version" && e.value.contains("in-tree driver ignores")),
        "{:?}",
        f.evidence
    );
    assert!(
        f.fix.text.contains("InterruptThrottleRate"),
        "{}",
        f.fix.text
    );

    // Quiet: a fixed rate, off, no intent, throughput, no file, another driver's line.
    for (conf, profile) in [
        (
            Some("options ixgbevf InterruptThrottleRate=8000\n"),
            Some("latency"),
        ),
        (
            Some("options ixgbevf InterruptThrottleRate=0\n"),
            Some("latency"),
        ),
        (Some(conf), None),
        (Some(conf), Some("throughput")),
        (None, Some("latency")),
        (
            Some("options ixgbe InterruptThrottleRate=1\n"),
            Some("latency"),
        ),
    ] {
        let i = with_conf("c4-8xlarge", conf, profile);
        assert!(itr_evidence(&i).is_empty(), "{conf:?} {profile:?}");
    }
}

#[test]
fn a_value_the_driver_rejects_fires_under_any_intent() {
    // ixgbevf takes 0, 1 or 956-488281: 3 (e1000's conservative mode) and 500 are not.
    for bad in ["3", "500", "8000,abc", "600000"] {
        let conf = format!("options ixgbevf InterruptThrottleRate={bad}\n");
        let i = with_conf("c4-8xlarge", Some(&conf), None);
        let ev = itr_evidence(&i);
        assert_eq!(ev.len(), 1, "{bad}: {ev:?}");
        assert!(
            ev[0]
                .0
                .title
                .contains("is a value ixgbevf rejects (it takes 0, 1 or 956-488281"),
            "{bad}: {}",
            ev[0].0.title
        );
    }
    // e1000 takes 3 (dynamic conservative) and 100-100000: quiet without a latency goal.
    let i = with_conf(
        "nic-e1000-legacy",
        Some("options e1000 InterruptThrottleRate=3,8000\n"),
        None,
    );
    assert!(itr_evidence(&i).is_empty());
    let i = with_conf(
        "nic-e1000-legacy",
        Some("options e1000 InterruptThrottleRate=50\n"),
        None,
    );
    let ev = itr_evidence(&i);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(ev[0]
        .0
        .title
        .contains("e1000 rejects (it takes 0, 1, 3, 4 or 100-100000"));
    // Under latency e1000's 3 is dynamic conservative: fires, and e1000 is in-tree (no note).
    let i = with_conf(
        "nic-e1000-legacy",
        Some("options e1000 InterruptThrottleRate=3\n"),
        Some("latency"),
    );
    let ev = itr_evidence(&i);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(ev[0].0.title.contains("InterruptThrottleRate=3"));
    assert!(!ev[0].0.evidence.iter().any(|e| e.what == "e1000 version"));
}

/// Issue 17 item 4: e1000's default rx-usecs 3 is its dynamic conservative
/// mode, not 3 µs: under a latency goal it fires, says the mode in both
/// units, and the fix is a value e1000_set_coalesce takes (0 on this 82545EM,
/// 8086:100f), without adaptive-rx, which e1000 does not have.
#[test]
fn e1000_dynamic_rx_usecs_under_latency_gets_a_fix_the_driver_takes() {
    let i = with_conf("nic-e1000-legacy", None, Some("latency"));
    let fs: Vec<Finding> = diagnose(&i)
        .of(DoctorId::CoalesceMismatch)
        .cloned()
        .collect();
    assert_eq!(fs.len(), 1, "{fs:?}");
    let f = &fs[0];
    assert!(f.title.contains("dynamic conservative"), "{}", f.title);
    assert!(f.title.contains("4,000-20,000 interrupts/s"), "{}", f.title);
    let cmd = f.fix.command.clone().unwrap_or_default();
    let planned: Vec<&str> = f
        .fix
        .changes
        .iter()
        .filter(|c| c.knob == "rx-usecs")
        .map(|c| c.after.as_str())
        .collect();
    assert!(
        planned == ["0"] || cmd.ends_with("rx-usecs 0"),
        "{cmd} {planned:?}"
    );
    assert!(!cmd.contains("adaptive-rx"), "{cmd}");
}
