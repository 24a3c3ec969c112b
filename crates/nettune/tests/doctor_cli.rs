//! `nettune doctor` on fixture roots: the JSON shape, human screens
//! (insta), exit statuses, one-line errors for bad flags, and no finding
//! above info once a plan has been applied to a fixture copy.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Output;

mod fixture_copy;
use fixture_copy::{bin, copy, ok};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `nettune doctor ARGS` from the workspace root (fixture paths stay short).
fn doctor(args: &[&str]) -> Output {
    bin()
        .current_dir(workspace())
        .arg("doctor")
        .args(args)
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

#[test]
fn json_has_the_documented_shape() {
    let o = doctor(&["--root", "tests/fixtures/nic-sfc-2node", "--json"]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&v), ["findings", "schema_version", "skipped"]);
    assert_eq!(v["schema_version"], 1);
    let f = &v["findings"][0];
    assert_eq!(
        keys(f),
        ["evidence", "fix", "id", "severity", "source", "subject", "title", "why"]
    );
    assert_eq!(f["id"], "irq-remote-node");
    assert_eq!(f["severity"], "warning");
    assert_eq!(keys(&f["evidence"][0]), ["source", "value", "what"]);
    assert_eq!(keys(&f["fix"]), ["app", "changes", "command", "text"]);
    let ch = &f["fix"]["changes"][0];
    assert_eq!(ch["rule"], "irq-affinity");
    assert_eq!(ch["target"]["kind"], "irq_affinity");
    assert!(f["fix"]["command"]
        .as_str()
        .unwrap()
        .starts_with("nettune plan --profile balanced --root tests/fixtures/nic-sfc-2node"));
    let s = &v["skipped"][0];
    assert_eq!(keys(s), ["id", "reason"]);
    assert_eq!(s["reason"], "no samples in the capture");
    // Round trip through the library's types.
    let r: nettune_doctor_report::Report = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r.schema_version, 1);
}

/// The library's report type, to check the JSON reads back.
mod nettune_doctor_report {
    pub use doctor::Report;
}

#[test]
fn human_screens() {
    for (name, args) in [
        ("c4_8xlarge", &["--root", "tests/fixtures/c4-8xlarge"][..]),
        (
            "two_socket_sfc",
            &["--root", "tests/fixtures/nic-sfc-2node"][..],
        ),
        ("ena", &["--root", "tests/fixtures/nic-ena"][..]),
        (
            "two_socket_32c_latency_bdp",
            &[
                "--root",
                "tests/fixtures/tuner-two-socket-32c",
                "--profile",
                "latency",
                "--bdp",
                "100mbit,100ms",
            ][..],
        ),
    ] {
        let o = doctor(args);
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        insta::assert_snapshot!(
            format!("doctor_{name}"),
            String::from_utf8(o.stdout).unwrap()
        );
    }
}

#[test]
fn exit_status_follows_the_worst_finding() {
    // c4.8xlarge: only rps-off (info) → 0; sfc on two nodes: remote IRQs → 1.
    assert_eq!(code(&doctor(&["--root", "tests/fixtures/c4-8xlarge"])), 0);
    assert_eq!(
        code(&doctor(&["--root", "tests/fixtures/nic-sfc-2node"])),
        1
    );
}

#[test]
fn bad_flags_are_one_line_errors_with_status_3() {
    for (args, want) in [
        (
            vec!["--sample", "0"],
            "--sample `0`: must be more than 0 seconds",
        ),
        (
            vec!["--sample", "-2"],
            "--sample `-2`: must be more than 0 seconds",
        ),
        (
            vec!["--sample", "1e9"],
            "--sample `1e9`: above the 3600 s maximum",
        ),
        (
            vec!["--sample", "NaN"],
            "--sample `NaN`: must be more than 0 seconds",
        ),
        (
            vec!["--sample", "soon"],
            "--sample `soon`: not a number of seconds",
        ),
        (
            vec!["--profile", "fast"],
            "--profile: unknown profile `fast`",
        ),
        (
            vec!["--bdp", "10gbit"],
            "--bdp: `10gbit`: expected RATE,RTT",
        ),
        (
            vec!["--root", "tests/fixtures/c4-8xlarge", "--sample", "2"],
            "--sample: not with --root",
        ),
        (
            vec!["--root", "tests/fixtures/nope"],
            "--root tests/fixtures/nope: not a directory",
        ),
    ] {
        let o = doctor(&args);
        let err = String::from_utf8(o.stderr.clone()).unwrap();
        assert_eq!(code(&o), 3, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("nettune: doctor: "), "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn help_has_examples() {
    let o = bin().args(["doctor", "--help"]).output().unwrap();
    let h = String::from_utf8(o.stdout).unwrap();
    assert!(
        h.contains("Examples:") && h.contains("nettune doctor --root"),
        "{h}"
    );
    assert!(h.contains("Exit status"), "{h}");
}

/// After `apply` of a plan to a copy of each fixture (the c4.8xlarge and
/// two-socket shapes among them), doctor with the same intent finds nothing
/// above info there: no false positives on a tuned host.
#[test]
fn tuned_fixtures_have_nothing_above_info() {
    for f in [
        "c4-8xlarge",
        "two-socket-16q",
        "tuner-two-socket-32c",
        "nic-sfc-2node",
        "nic-ena",
        "nic-mlx5",
        "kvm-2vcpu-6.18",
    ] {
        for intent in [
            &["--profile", "throughput", "--bdp", "100mbit,100ms"][..],
            &["--profile", "latency"][..],
        ] {
            let c = copy(f);
            let mut apply = vec!["apply", "--yes"];
            apply.extend_from_slice(intent);
            ok(&c, &apply);
            let o = bin()
                .arg("doctor")
                .args(intent)
                .arg("--root")
                .arg(&c.root)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&o.stdout);
            assert_eq!(code(&o), 0, "{f} {intent:?} after apply:\n{text}");
            assert!(
                !text.contains("WARNING") && !text.contains("CRITICAL"),
                "{f}: {text}"
            );
        }
    }
}

/// A fixture with a corrupt /proc/net/sockstat and a missing softnet file:
/// the rules needing them are skipped naming the file, the others run.
#[test]
fn corrupt_capture_skips_what_it_cannot_read() {
    let c = copy("kvm-2vcpu-6.18");
    std::fs::write(c.root.join("proc/net/sockstat"), "TCP: tw banana\n").unwrap();
    let _ = std::fs::remove_file(c.root.join("proc/net/softnet_stat"));
    let o = bin()
        .args(["doctor", "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(code(&o) <= 1, "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let skipped = v["skipped"].as_array().unwrap();
    let tw = skipped
        .iter()
        .find(|s| s["id"] == "timewait-exhaustion")
        .unwrap();
    let reason = tw["reason"].as_str().unwrap();
    assert!(
        reason.contains("/proc/net/sockstat") && reason.contains("banana"),
        "{reason}"
    );
    // Snapshot rules still ran.
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "rps-off"));
}
