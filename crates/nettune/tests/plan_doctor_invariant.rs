//! Issues 17 and 38: on every fixture with network interfaces and every
//! built-in profile, the applied plan raises no warning from doctor run with
//! the same profile (neither the placement rules nor a warning whose fix is
//! a plan change still to make, nor the plan's own changes flagged as
//! boot overrides or offloads left off), and doctor never advises what that
//! profile's plan avoids.

#![allow(clippy::unwrap_used)]

mod fixture_copy;
use fixture_copy::{bin, copy, fixture, ok};

/// Every fixture directory that has `/sys/class/net`.
fn fixtures_with_nics() -> Vec<String> {
    let mut out = Vec::new();
    let dir = fixture("");
    for e in std::fs::read_dir(&dir).unwrap() {
        let e = e.unwrap();
        if e.path().join("sys/class/net").exists() {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    assert!(out.len() >= 20, "{out:?}");
    out
}

/// What `doctor --json --profile P` on `root` says that contradicts the plan
/// of P: with `applied`, a warning of the placement rules, a warning whose
/// fix still has plan changes, a boot override or an offload left off; in
/// any case a finding whose advice is a planner rule P turns off.
fn contradictions(root: &std::path::Path, profile: &str, applied: bool) -> Vec<String> {
    let o = bin()
        .args(["doctor", "--json", "--profile", profile, "--root"])
        .arg(root)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let p = tune::profile::builtin(profile).unwrap();
    let mut bad = Vec::new();
    for f in v["findings"].as_array().unwrap() {
        let id = f["id"].as_str().unwrap_or_default();
        let warning = f["severity"] != "info";
        let changes_left = f["fix"]["changes"]
            .as_array()
            .is_some_and(|c| !c.is_empty());
        let own = [
            "irq-remote-node",
            "irq-stacked",
            "boot-override",
            "offload-off",
        ];
        if applied && warning && (own.contains(&id) || changes_left) {
            bad.push(format!("after apply: {f}"));
        }
        let rule = doctor::CATALOGUE.iter().find(|r| r.id() == id);
        if let Some(r) = rule {
            let (rules, _) = r.advises();
            if !rules.is_empty() && rules.iter().all(|x| !p.enabled(*x)) {
                bad.push(format!("advises what {profile} avoids: {f}"));
            }
        }
    }
    bad
}

#[test]
fn applied_plan_raises_no_warning_from_doctor_with_the_same_profile() {
    let mut bad = Vec::new();
    for f in fixtures_with_nics() {
        for p in ["latency", "throughput", "balanced"] {
            let c = copy(&f);
            for w in contradictions(&c.root, p, false) {
                bad.push(format!("{f} {p}: {w}"));
            }
            ok(&c, &["apply", "--profile", p, "--yes"]);
            for w in contradictions(&c.root, p, true) {
                bad.push(format!("{f} {p}: {w}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} contradictions:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The host: a busy 10G port named last, after an idle 1G port and
/// a down port, all on node 0. The busy port keeps node 0's cores.
#[test]
fn busy_nic_named_last_keeps_the_local_cores() {
    let o = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(fixture("two-socket-multi-nic"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Node 0 is CPUs 0-7 (and siblings 16-23).
    let node0 = |cpu: u64| cpu < 8 || (16..24).contains(&cpu);
    let mut busy = 0;
    for ch in v["changes"].as_array().unwrap() {
        if ch["target"]["kind"] != "irq_affinity" {
            continue;
        }
        let iface = ch["target"]["iface"].as_str().unwrap();
        let cpu: u64 = ch["after"].as_str().unwrap().parse().unwrap();
        if iface == "enp2s0" {
            busy += 1;
            assert!(node0(cpu), "busy enp2s0 sent to CPU {cpu}: {ch}");
        }
    }
    assert_eq!(busy, 8, "{v}");
    // The whole plan: idle and down NICs share the busy one's cores (notes
    // say why); enp65s0's 12 queues stack on node 1's 8 cores and their
    // sibling threads, never node 0.
    let o = bin()
        .args(["plan", "--profile", "throughput", "--root"])
        .arg(fixture("two-socket-multi-nic"))
        .output()
        .unwrap();
    assert!(o.status.success());
    insta::assert_snapshot!(
        "plan_two-socket-multi-nic_throughput",
        String::from_utf8(o.stdout).unwrap()
    );
}

/// Issue 17: two NICs on different nodes, each with more queues than its
/// node's cores, never push queues onto each other's node.
#[test]
fn queues_beyond_the_local_cores_stay_local() {
    let o = bin()
        .args(["plan", "--profile", "throughput", "--json", "--root"])
        .arg(fixture("two-socket-16q"))
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // ens1f0 is on node 1: CPUs 8-15 and 24-31.
    for ch in v["changes"].as_array().unwrap() {
        if ch["target"]["kind"] == "irq_affinity" {
            let cpu: u64 = ch["after"].as_str().unwrap().parse().unwrap();
            assert!((8..16).contains(&cpu) || (24..32).contains(&cpu), "{ch}");
        }
    }
}

/// Issue 38: plain doctor said "the balanced plan makes 2 changes ... run
/// `nettune apply`" where that apply made 6. Every fix that names a plan
/// command states the number of changes that command's apply makes.
#[test]
fn a_fix_states_how_many_changes_its_apply_makes() {
    let mut checked = 0;
    for f in [
        "c4-8xlarge",
        "two-socket-16q",
        "nic-e1000-legacy",
        "tuner-two-socket-32c",
    ] {
        let root = fixture(f);
        let o = bin()
            .args(["doctor", "--json", "--root"])
            .arg(&root)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for finding in v["findings"].as_array().unwrap() {
            let Some(cmd) = finding["fix"]["command"].as_str() else {
                continue;
            };
            let args: Vec<&str> = cmd.split(' ').skip(1).collect();
            let p = bin().args(&args).arg("--json").output().unwrap();
            assert!(
                p.status.success(),
                "{cmd}: {}",
                String::from_utf8_lossy(&p.stderr)
            );
            let plan: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
            let n = plan["changes"].as_array().unwrap().len();
            let text = finding["fix"]["text"].as_str().unwrap();
            let want = format!("`nettune apply` with the same flags makes {n} change");
            assert!(
                text.contains(&want),
                "{f}: {cmd} plans {n} changes; the fix says: {text}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 3, "{checked} fixes with a command");
}

/// The plan of `profile` on `c` as JSON.
fn plan_json(c: &fixture_copy::Copy, profile: &str) -> serde_json::Value {
    let o = bin()
        .args(["plan", "--profile", profile, "--json", "--root"])
        .arg(&c.root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Issue 38: for Intel's out-of-tree ixgbevf the latency plan's ethtool
/// `rx-usecs` (now) and its `InterruptThrottleRate` (at the next module
/// reload) say the same thing: no throttling (ITR 0 is rx-usecs 0), so a
/// reload does not undo the ethtool change; and once applied, doctor with
/// the same profile flags none of the plan's own changes.
#[test]
fn out_of_tree_ixgbevf_latency_plan_agrees_with_itself() {
    for profile in ["latency", "throughput", "balanced"] {
        let c = copy("c4-8xlarge");
        let p = c.root.join("ethtool/eth0.json");
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(t.contains("\"2.12.1-k\""), "the fixture's version moved");
        std::fs::write(&p, t.replace("\"2.12.1-k\"", "\"4.1.2\"")).unwrap();
        let plan = plan_json(&c, profile);
        let changes = plan["changes"].as_array().unwrap();
        let itr = changes
            .iter()
            .find(|ch| ch["target"]["kind"] == "module_param")
            .map(|ch| ch["after"].as_str().unwrap().to_string());
        let usecs = changes
            .iter()
            .find(|ch| ch["target"]["attr"] == "rx-usecs")
            .map(|ch| ch["after"].as_str().unwrap().to_string());
        if profile == "latency" {
            assert!(
                itr.is_some(),
                "{profile}: no InterruptThrottleRate planned: {plan}"
            );
        }
        // ITR 0 (off) is rx-usecs 0; a rate R is rx-usecs 1e6/R; 1 is dynamic.
        if let (Some(itr), Some(us)) = (&itr, &usecs) {
            let first: u64 = itr.split(',').next().unwrap().parse().unwrap();
            let us: u64 = us.parse().unwrap();
            let same = match first {
                0 => us == 0,
                1 => us == 1,
                r => us == 1_000_000 / r,
            };
            assert!(
                same,
                "{profile}: rx-usecs {us} now, InterruptThrottleRate={itr} at the next reload"
            );
        }
        ok(&c, &["apply", "--profile", profile, "--yes"]);
        let bad = contradictions(&c.root, profile, true);
        assert!(bad.is_empty(), "{profile}: {}", bad.join("\n"));
    }
}
