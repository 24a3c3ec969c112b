//! `nettune doctor --root` reads the host facts: on the c4.8xlarge fixture
//! with the busy overlay of `tests/fixtures/doctor/make-doctor.py` the
//! host-fact rules fire through the CLI, the JSON names them, and the exit
//! status is 2 for the critical conntrack finding.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

#[test]
fn doctor_cli_runs_the_host_fact_rules_on_an_overlaid_fixture() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let cp = |src: std::ffi::OsString| {
        assert!(Command::new("cp")
            .arg("-a")
            .arg(src)
            .arg(&root)
            .status()
            .unwrap()
            .success());
    };
    cp(fixtures().join("c4-8xlarge").into_os_string());
    let mut o = fixtures().join("doctor/c4-8xlarge-busy").into_os_string();
    o.push("/.");
    cp(o);
    let out = Command::new(env!("CARGO_BIN_EXE_nettune"))
        .args(["doctor", "--json", "--profile", "latency", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    for id in [
        "conntrack-full",
        "tcp-memory-pressure",
        "bufferbloat",
        "app-on-irq-cpu",
        "boot-override",
        "cpu-power",
        "buffers-below-bdp",
    ] {
        assert!(ids.contains(&id), "{id} not in {ids:?}");
    }
    let ct = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "conntrack-full")
        .unwrap();
    assert_eq!(ct["severity"], "critical");
    assert!(ct["fix"]["text"]
        .as_str()
        .unwrap()
        .contains("nf_conntrack_max"));
    assert!(ct["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["source"] == "/proc/sys/net/netfilter/nf_conntrack_max"));
}
