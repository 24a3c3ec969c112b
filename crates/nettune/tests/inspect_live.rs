//! `nettune inspect` on the live host: the eth0 queue → IRQ → CPU picture
//! agrees with /proc/interrupts, and inside a namespace the netlink ethtool
//! reader agrees with the `ethtool` CLI on a veth.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns

use std::collections::BTreeMap;
use std::process::Command;

fn nettune() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nettune"))
}

fn json_of(out: std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cpuset(v: &serde_json::Value) -> Option<model::CpuSet> {
    model::CpuSet::parse_list(v.as_str()?).ok()
}

#[test]
fn live_eth0_irqs_agree_with_proc_interrupts() {
    let human = nettune().arg("inspect").output().unwrap();
    assert!(
        human.status.success(),
        "{}",
        String::from_utf8_lossy(&human.stderr)
    );
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("cpus: "), "{human}");
    let v = json_of(nettune().args(["inspect", "--json"]).output().unwrap());
    let after = model::parse::interrupts::parse_interrupts(
        &std::fs::read_to_string("/proc/interrupts").unwrap(),
    )
    .unwrap();
    let Some(eth0) = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "eth0")
    else {
        eprintln!("skipping the eth0 checks: this host has no eth0");
        return;
    };
    let irqs: Vec<u64> = eth0["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    // eth0's IRQs are exactly the /proc/interrupts lines naming its device
    // (virtioN for virtio_net, the interface name otherwise).
    let dev = std::fs::read_link("/sys/class/net/eth0/device")
        .ok()
        .and_then(|p| p.file_name().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let expect: Vec<u64> = after
        .irqs
        .iter()
        .filter(|l| {
            let d = model::parse::irqname::parse_irq_name(&l.name).device;
            d.as_deref() == Some("eth0") || (!dev.is_empty() && d.as_deref() == Some(dev.as_str()))
        })
        .map(|l| u64::from(l.number.0))
        .collect();
    assert!(!irqs.is_empty());
    assert_eq!(irqs, expect, "eth0 IRQs vs /proc/interrupts names");
    for n in irqs {
        let irq = v["irqs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["number"] == n)
            .unwrap();
        assert_eq!(irq["interface"], "eth0");
        let name = irq["name"].as_str().unwrap();
        assert!(human.contains(name), "{name} missing from:\n{human}");
        let line = after.get(model::IrqNumber(n as u32)).unwrap();
        // Counts never go backwards between the snapshot and the re-read.
        for (col, cpu) in after.cpus.iter().enumerate() {
            let then = irq["per_cpu"][cpu.0 as usize].as_u64().unwrap();
            assert!(then <= line.per_cpu[col], "IRQ {n} CPU {}", cpu.0);
        }
        // The CPU that handled most of this IRQ is one it may run on.
        let total: u64 = line.per_cpu.iter().sum();
        if total == 0 {
            continue;
        }
        let (col, _) = line
            .per_cpu
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .unwrap();
        let busiest = after.cpus[col].0;
        let allowed = cpuset(&irq["effective_affinity"])
            .filter(|s| !s.is_empty())
            .or_else(|| cpuset(&irq["smp_affinity"]))
            .unwrap();
        assert!(
            allowed.contains(busiest),
            "IRQ {n} ({name}) counted mostly on CPU {busiest}, affinity {}",
            allowed.to_list()
        );
    }
}

/// `ethtool -k` lines `name: on [fixed]` → (active, fixed), by name.
fn ethtool_k(text: &str) -> BTreeMap<String, (bool, bool)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let (n, rest) = l.trim().split_once(':')?;
            let rest = rest.trim();
            Some((
                n.to_string(),
                (rest.starts_with("on"), rest.contains("[fixed]")),
            ))
        })
        .collect()
}

/// `ethtool -l`: (maxima, current) of RX, TX, Other, Combined.
fn ethtool_l(text: &str) -> [[Option<u64>; 4]; 2] {
    let mut out = [[None; 4]; 2];
    let mut sect = 0;
    for l in text.lines() {
        if l.starts_with("Current hardware settings") {
            sect = 1;
        }
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let i = match k.trim() {
            "RX" => 0,
            "TX" => 1,
            "Other" => 2,
            "Combined" => 3,
            _ => continue,
        };
        out[sect][i] = v.trim().parse().ok();
    }
    out
}

#[test]
fn netns_veth_ethtool_matches_the_cli() {
    if !lab::require_root("netns_veth_ethtool_matches_the_cli") {
        return;
    }
    let lab = lab::TwoHosts::create("ntsnap", 2).unwrap();
    lab.a
        .sh("echo 2 > /sys/class/net/nt0/queues/rx-1/rps_cpus")
        .unwrap();
    let inspect = || {
        json_of(
            lab.a
                .command(env!("CARGO_BIN_EXE_nettune"))
                .args(["inspect", "--json", "--iface", "nt0"])
                .output()
                .unwrap(),
        )
    };
    let v = inspect();
    let nt0 = &v["interfaces"][0];
    assert_eq!(nt0["name"], "nt0");
    assert_eq!(nt0["rx_queues"].as_array().unwrap().len(), 2);
    assert_eq!(nt0["rx_queues"][1]["rps_cpus"], "1");
    assert_eq!(nt0["rx_queues"][0]["rps_cpus"], "");
    let e = &nt0["ethtool"];
    assert_eq!(e["rings"]["status"], "unsupported", "{e}");
    assert_eq!(e["coalesce"]["status"], "unsupported", "{e}");

    // Features: every kernel feature name ethtool -k prints agrees.
    let k = ethtool_k(&lab.a.sh("ethtool -k nt0").unwrap());
    let ours = e["features"]["value"].as_object().unwrap();
    let mut matched = 0;
    for (name, (active, fixed)) in &k {
        if let Some(f) = ours.get(name) {
            assert_eq!(f["active"], *active, "{name}");
            assert_eq!(f["fixed"], *fixed, "{name}");
            matched += 1;
        }
    }
    assert!(matched >= 20, "only {matched} features matched");

    // Channels agree with ethtool -l, before and after changing them.
    let check = |v: &serde_json::Value| {
        let l = ethtool_l(&lab.a.sh("ethtool -l nt0").unwrap());
        let c = &v["interfaces"][0]["ethtool"]["channels"]["value"];
        let f = |k: &str| c[k].as_u64();
        assert_eq!(
            [f("rx_max"), f("tx_max"), f("other_max"), f("combined_max")],
            l[0],
            "{c}"
        );
        assert_eq!([f("rx"), f("tx"), f("other"), f("combined")], l[1], "{c}");
    };
    check(&v);
    lab.a.sh("ethtool -L nt0 rx 1 tx 1").unwrap();
    let v2 = inspect();
    check(&v2);
    assert_eq!(v2["interfaces"][0]["ethtool"]["channels"]["value"]["rx"], 1);

    // Permanent MAC: veth has none (ethtool -P prints `not set` or zeros).
    let p = lab.a.sh("ethtool -P nt0").unwrap();
    let cli = p.trim().trim_start_matches("Permanent address:").trim();
    if cli == "00:00:00:00:00:00" || cli == "not set" {
        assert!(e["perm_mac"].is_null(), "{e}");
    } else {
        assert_eq!(e["perm_mac"], cli);
    }
}

/// Blank what moves between two reads: counters, provenance, MemTotal
/// (a balloon driver changes it).
fn strip_moving(v: &mut serde_json::Value) {
    v["source"]["root"] = serde_json::Value::Null;
    v["source"]["label"] = serde_json::Value::Null;
    for i in v["interfaces"].as_array_mut().unwrap() {
        i["stats"] = serde_json::Value::Null;
    }
    for q in v["irqs"].as_array_mut().unwrap() {
        q["per_cpu"] = serde_json::Value::Null;
    }
    for n in v["nodes"].as_array_mut().unwrap() {
        n["mem_total_kib"] = serde_json::Value::Null;
    }
}

#[test]
fn capture_then_inspect_root_equals_live() {
    let t = tempfile::tempdir().unwrap();
    let out = nettune()
        .args(["capture", "--out"])
        .arg(t.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut captured = json_of(
        nettune()
            .args(["inspect", "--json", "--root"])
            .arg(t.path())
            .output()
            .unwrap(),
    );
    let mut live = json_of(nettune().args(["inspect", "--json"]).output().unwrap());
    assert!(
        captured["notes"].as_array().unwrap().is_empty(),
        "{}",
        captured["notes"]
    );
    strip_moving(&mut captured);
    strip_moving(&mut live);
    // Interfaces may come and go between the two reads (other tests'
    // namespaces do not show here, but hot-plugged devices would).
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["interfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&captured), names(&live));
    for k in [
        "source",
        "cpu",
        "cpus",
        "nodes",
        "interfaces",
        "irqs",
        "sysctls",
        "owners",
    ] {
        assert_eq!(captured[k], live[k], "{k} differs between capture and live");
    }
    let label = std::fs::read_to_string(t.path().join("LABEL")).unwrap();
    assert!(label.contains("nettune capture"), "{label}");
}
