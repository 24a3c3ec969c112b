//! Issue 38: fixture roots are what they claim. Every root built around a
//! real dump has a network interface with a known driver and says where its
//! link speed comes from; no root gives a gigabit driver a faster link; no
//! root reports coalescing modes its driver does not report; and a root with
//! recorded samples has each IRQ effective on the CPUs its samples fire on.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every fixture root (a directory with a sys/class/net tree).
fn roots() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("sys/class/net").is_dir())
        .collect();
    out.sort();
    assert!(out.len() > 20, "{out:?}");
    out
}

/// (name, driver, speed file) of each interface but lo.
fn interfaces(root: &Path) -> Vec<(String, Option<String>, Option<String>)> {
    let mut out = Vec::new();
    for e in fs::read_dir(root.join("sys/class/net")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name == "lo" {
            continue;
        }
        let dir = root.join("sys/class/net").join(&name);
        let driver = fs::read_link(dir.join("device/driver"))
            .ok()
            .and_then(|t| t.file_name().map(|n| n.to_string_lossy().into_owned()));
        let speed = fs::read_to_string(dir.join("speed"))
            .ok()
            .map(|s| s.trim().to_string());
        out.push((name, driver, speed));
    }
    out.sort();
    out
}

#[test]
fn every_real_root_has_a_nic_with_a_driver_and_a_sourced_speed() {
    let mut seen = 0;
    for root in roots() {
        let name = root.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("real-") {
            continue;
        }
        seen += 1;
        let label = fs::read_to_string(root.join("LABEL")).unwrap();
        let nics = interfaces(&root);
        assert!(!nics.is_empty(), "{name}: no network interface");
        assert!(!label.contains("driver unknown"), "{name}: {label}");
        for (iface, driver, speed) in nics {
            assert!(driver.is_some(), "{name}: {iface} has no driver");
            let speed = speed.unwrap_or_else(|| panic!("{name}: {iface} has no speed file"));
            let claim = if speed == "-1" {
                format!("{iface} speed -1 (unknown): ")
            } else {
                format!("{iface} {speed} Mb/s: ")
            };
            assert!(
                label.contains(&claim),
                "{name}: the LABEL does not say where {iface}'s speed {speed} comes from: {label}"
            );
        }
    }
    assert!(seen >= 20, "{seen}");
}

/// The fastest link each gigabit-class driver can report (Mb/s).
const MAX_SPEED: &[(&str, i64)] = &[
    ("e1000", 1000),
    ("e1000e", 1000),
    ("igb", 1000),
    ("tg3", 1000),
    ("igc", 2500),
];

#[test]
fn no_gigabit_driver_claims_a_faster_link() {
    for root in roots() {
        for (iface, driver, speed) in interfaces(&root) {
            let (Some(d), Some(s)) = (driver, speed) else {
                continue;
            };
            let s: i64 = s.parse().unwrap();
            if let Some((_, max)) = MAX_SPEED.iter().find(|(n, _)| *n == d) {
                assert!(s <= *max, "{}: {iface} ({d}) at {s} Mb/s", root.display());
            }
        }
    }
}

/// Drivers whose `ethtool -c` has no adaptive-rx/tx (their
/// supported_coalesce_params lack ETHTOOL_COALESCE_USE_ADAPTIVE).
const NO_ADAPTIVE: &[&str] = &["e1000", "e1000e", "igb", "igc", "ixgbe", "ixgbevf"];

#[test]
fn no_root_reports_coalescing_modes_its_driver_lacks() {
    let mut checked = 0;
    for root in roots() {
        let Ok(dir) = fs::read_dir(root.join("ethtool")) else {
            continue;
        };
        for e in dir {
            let p = e.unwrap().path();
            let v: serde_json::Value =
                serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
            let Some(driver) = v["driver"]["value"]["driver"].as_str() else {
                continue;
            };
            let Some(co) = v["coalesce"]["value"].as_object() else {
                continue;
            };
            if NO_ADAPTIVE.contains(&driver) {
                checked += 1;
                for k in ["adaptive-rx", "adaptive-tx"] {
                    assert!(!co.contains_key(k), "{}: {driver} reports {k}", p.display());
                }
            }
        }
    }
    assert!(checked >= 4, "{checked}");
}

/// IRQ number -> per-CPU counts of an interrupts text.
fn counts(text: &str) -> BTreeMap<u32, Vec<u64>> {
    let mut lines = text.lines();
    let ncpu = lines.next().unwrap().split_whitespace().count();
    let mut out = BTreeMap::new();
    for l in lines {
        let (head, rest) = l.split_once(':').unwrap();
        let Ok(irq) = head.trim().parse::<u32>() else {
            continue;
        };
        let c: Vec<u64> = rest
            .split_whitespace()
            .take(ncpu)
            .map(|x| x.parse().unwrap())
            .collect();
        out.insert(irq, c);
    }
    out
}

fn mask_cpus(hex: &str) -> Vec<usize> {
    let digits: String = hex.trim().chars().filter(|c| *c != ',').collect();
    let mut out = Vec::new();
    for (i, ch) in digits.chars().rev().enumerate() {
        let v = ch.to_digit(16).unwrap();
        for b in 0..4 {
            if v & (1 << b) != 0 {
                out.push(i * 4 + b);
            }
        }
    }
    out
}

#[test]
fn recorded_samples_fire_where_the_irqs_are_effective() {
    let mut checked = 0;
    for root in roots() {
        let samples = root.join("samples");
        let Ok(index) = fs::read_to_string(samples.join("index.json")) else {
            continue;
        };
        let index: serde_json::Value = serde_json::from_str(&index).unwrap();
        let dirs: Vec<&str> = index["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["dir"].as_str().unwrap())
            .collect();
        let read =
            |d: &str| counts(&fs::read_to_string(samples.join(d).join("proc/interrupts")).unwrap());
        let (first, last) = (read(dirs[0]), read(dirs[dirs.len() - 1]));
        for (irq, after) in &last {
            let Ok(eff) =
                fs::read_to_string(root.join(format!("proc/irq/{irq}/effective_affinity")))
            else {
                continue;
            };
            let eff = mask_cpus(&eff);
            let before = &first[irq];
            for (cpu, (a, b)) in after.iter().zip(before).enumerate() {
                if a > b {
                    checked += 1;
                    assert!(
                        eff.contains(&cpu),
                        "{}: IRQ {irq} fires on CPU {cpu}, effective on {eff:?}",
                        root.display()
                    );
                }
            }
        }
    }
    assert!(checked >= 4, "{checked}");
}
