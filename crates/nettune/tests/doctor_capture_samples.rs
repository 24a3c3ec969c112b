//! Issue 10, "offline rates": `nettune doctor --root` on a capture made with
//! `nettune capture --samples N --interval S` computes the rate-based rules
//! from the recorded samples, as live doctor does from its own; a corrupt
//! samples index skips only the rate rules, naming the file; the capture's
//! `/proc/net/sockstat` lets `timewait-exhaustion` run offline.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;

mod fixture_copy;
use fixture_copy::{bin, copy, fixture};

fn doctor(args: &[&str]) -> (Output, serde_json::Value) {
    let o = bin()
        .arg("doctor")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: status {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o, v)
}

fn root_json(dir: &Path) -> serde_json::Value {
    let (o, v) = doctor(&["--root", dir.to_str().unwrap()]);
    let code = o.status.code().unwrap();
    assert!(
        code <= 2,
        "status {code}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    v
}

/// Skipped rule id → reason.
fn skipped(v: &serde_json::Value) -> BTreeMap<String, String> {
    v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn fired(v: &serde_json::Value) -> BTreeSet<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

fn cp(from: &Path, to: &Path) {
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success());
}

fn capture_with_samples(out: &Path) {
    let o = bin()
        .arg("capture")
        .arg("--out")
        .arg(out)
        .args(["--samples", "3", "--interval", "0.5"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("samples/index.json").is_file());
}

/// The rate rules: those a capture without samples skips for that reason.
fn rate_rules(no_samples: &BTreeMap<String, String>) -> BTreeSet<String> {
    no_samples
        .iter()
        .filter(|(_, r)| r.as_str() == "no samples in the capture")
        .map(|(id, _)| id.clone())
        .collect()
}

#[test]
fn a_capture_with_samples_runs_the_rate_rules_as_live() {
    let t = tempfile::tempdir().unwrap();
    let cap = t.path().join("cap");
    capture_with_samples(&cap);

    // The same capture without its samples: the rate rules skip.
    let bare = t.path().join("bare");
    cp(&cap, &bare);
    std::fs::remove_dir_all(bare.join("samples")).unwrap();
    let bare_skips = skipped(&root_json(&bare));
    let rates = rate_rules(&bare_skips);
    assert!(
        rates.contains("softirq-concentrated"),
        "softirq-concentrated is not a rate rule: {rates:?}"
    );
    // Issue 17: the drop counters report their totals since boot instead.
    for id in ["softnet-drops", "udp-rcvbuf-errors", "listen-drops"] {
        assert!(!rates.contains(id), "{id}: {:?}", bare_skips.get(id));
    }

    // With them, none of the rate rules skips for want of samples.
    let with = skipped(&root_json(&cap));
    for id in &rates {
        if let Some(r) = with.get(id) {
            assert!(!r.contains("no samples"), "{id} skipped: {r}");
            assert!(!r.contains("one sample"), "{id} skipped: {r}");
        }
    }

    // And the rules run or skip as they do live (buffers-below-bdp depends on
    // whether a bulk TCP socket exists at that moment, so it is left out).
    let (_, live) = doctor(&["--sample", "1"]);
    let ids = |m: &BTreeMap<String, String>| -> BTreeSet<String> {
        m.keys()
            .filter(|k| k.as_str() != "buffers-below-bdp")
            .cloned()
            .collect()
    };
    assert_eq!(ids(&with), ids(&skipped(&live)), "capture vs live skips");
}

#[test]
fn a_corrupt_samples_index_skips_the_rate_rules_naming_it_and_the_others_run() {
    let c = copy("nic-ena-allowance");
    let whole = skipped(&root_json(&c.root));
    std::fs::write(
        c.root.join("samples/index.json"),
        b"{\"schema_version\": 1, ",
    )
    .unwrap();
    let v = root_json(&c.root);
    let broken = skipped(&v);
    // cloud-allowance (window form) needs samples; its since-boot form would
    // run, but the rule names what it lacks.
    let mut named = 0;
    for (id, r) in &broken {
        if whole.contains_key(id) {
            continue; // skipped with the samples too
        }
        assert!(r.contains("samples/index.json"), "{id}: {r}");
        named += 1;
    }
    assert!(named >= 2, "{broken:?}");
    // The snapshot rules still run: cloud-allowance's since-boot form fires
    // on this fixture's ethtool counters.
    assert!(fired(&v).contains("cloud-allowance"), "{v}");
}

#[test]
fn cloud_allowance_on_the_recorded_ena_capture_shows_the_arithmetic() {
    let dir = fixture("nic-ena-allowance");
    let (o, v) = doctor(&["--root", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "a warning");
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "cloud-allowance")
        .unwrap_or_else(|| panic!("no cloud-allowance: {v}"));
    assert_eq!(f["severity"], "warning");
    let ev = f["evidence"].as_array().unwrap();
    let window = ev
        .iter()
        .find(|e| e["what"] == "pps_allowance_exceeded in the window")
        .unwrap_or_else(|| panic!("{ev:?}"));
    assert_eq!(window["value"], "3680");
    let arith = ev
        .iter()
        .find(|e| e["what"] == "received: pps × packet size × 8")
        .unwrap_or_else(|| panic!("{ev:?}"));
    let a = arith["value"].as_str().unwrap();
    assert!(a.starts_with("400000 pps × 64 B × 8 = 204.8 Mbit/s"), "{a}");
    // No allowances given: the link speed stands for the bandwidth one and
    // the pps one is not guessed.
    assert!(a.contains("pps allowance not given"), "{a}");
    // With the instance's allowances the larger share names the limit.
    let (_, v) = doctor(&["--root", dir.to_str().unwrap(), "--allowance", "5gbit,400k"]);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "cloud-allowance")
        .unwrap_or_else(|| panic!("no cloud-allowance: {v}"));
    let a = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["what"] == "received: pps × packet size × 8")
        .and_then(|e| e["value"].as_str())
        .unwrap()
        .to_string();
    assert!(
        a.ends_with("4.1 % of the 5000 Mbit/s bandwidth allowance, 100.0 % of the 400000 pps allowance: the packet-rate allowance binds"),
        "{a}"
    );
    // A malformed allowance is refused, naming the flag.
    let o = bin()
        .args([
            "doctor",
            "--root",
            dir.to_str().unwrap(),
            "--allowance",
            "5gbit",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--allowance"));
}

#[test]
fn timewait_exhaustion_runs_on_a_capture() {
    let t = tempfile::tempdir().unwrap();
    let cap = t.path().join("cap");
    let o = bin()
        .arg("capture")
        .arg("--out")
        .arg(&cap)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sockstat = cap.join("proc/net/sockstat");
    let text = std::fs::read_to_string(&sockstat).unwrap();
    let v = root_json(&cap);
    assert!(
        !skipped(&v).contains_key("timewait-exhaustion"),
        "{:?}",
        skipped(&v)
    );

    // The same capture with the port range full of TIME_WAIT sockets, and
    // tw_reuse off: the rule fires from the recorded files.
    let range = std::fs::read_to_string(cap.join("proc/sys/net/ipv4/ip_local_port_range")).unwrap();
    let mut it = range.split_whitespace().map(|s| s.parse::<u64>().unwrap());
    let (lo, hi) = (it.next().unwrap(), it.next().unwrap());
    let tw = (hi - lo + 1) * 9 / 10;
    let edited: String = text
        .lines()
        .map(|l| {
            if let Some(rest) = l.strip_prefix("TCP: ") {
                let mut f: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
                if let Some(i) = f.iter().position(|w| w == "tw") {
                    f[i + 1] = tw.to_string();
                }
                format!("TCP: {}\n", f.join(" "))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_ne!(edited, text);
    std::fs::write(&sockstat, edited).unwrap();
    std::fs::write(cap.join("proc/sys/net/ipv4/tcp_tw_reuse"), "0\n").unwrap();
    let v = root_json(&cap);
    assert!(fired(&v).contains("timewait-exhaustion"), "{v}");
}
