//! `nettune plan` on the fixtures: goldens for each profile, the seed 000
//! layout, the 2-socket placement, JSON shape and bad input.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nettune"))
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

const FIXTURES: [&str; 5] = [
    "c4-8xlarge",
    "two-socket-16q",
    "kvm-2vcpu-6.18",
    "tuner-two-socket-32c",
    // igb and ixgbe as they report coalescing: no adaptive-rx/tx to change.
    "two-socket-multi-nic",
];

#[test]
fn golden_plans_for_each_profile_on_each_fixture() {
    for f in FIXTURES {
        let root = fixture(f);
        for p in ["latency", "throughput", "balanced"] {
            let out = ok(&["plan", "--profile", p, "--root", root.to_str().unwrap()]);
            insta::assert_snapshot!(format!("plan_{f}_{p}"), out);
        }
    }
}

#[test]
fn golden_script_for_the_c4() {
    let root = fixture("c4-8xlarge");
    let out = ok(&[
        "plan",
        "--profile",
        "throughput",
        "--root",
        root.to_str().unwrap(),
        "--script",
    ]);
    insta::assert_snapshot!("script_c4_throughput", out);
}

fn plan_json(f: &str, profile: &str, extra: &[&str]) -> serde_json::Value {
    let root = fixture(f);
    let mut args = vec![
        "plan",
        "--profile",
        profile,
        "--root",
        root.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(&args)).unwrap()
}

fn after_of(plan: &serde_json::Value, path: &str) -> Option<String> {
    plan["changes"].as_array().unwrap().iter().find_map(|c| {
        let t = &c["target"];
        let p = match t["kind"].as_str().unwrap() {
            "file" => t["path"].as_str().unwrap().to_string(),
            "irq_affinity" => format!("/proc/irq/{}/smp_affinity_list", t["irq"]),
            _ => return None,
        };
        (p == path).then(|| c["after"].as_str().unwrap().to_string())
    })
}

#[test]
fn c4_throughput_is_the_seed_000_layout() {
    let p = plan_json("c4-8xlarge", "throughput", &[]);
    assert_eq!(p["schema_version"], 1);
    assert_eq!(p["profile"], "throughput");
    assert_eq!(p["scope"], "init");
    assert_eq!(
        after_of(&p, "/proc/irq/266/smp_affinity_list").unwrap(),
        "0"
    );
    assert_eq!(
        after_of(&p, "/proc/irq/267/smp_affinity_list").unwrap(),
        "9"
    );
    assert!(after_of(&p, "/proc/irq/268/smp_affinity_list").is_none());
    assert_eq!(
        after_of(&p, "/sys/class/net/eth0/queues/rx-0/rps_cpus").unwrap(),
        "00000000,000001fe"
    );
    assert_eq!(
        after_of(&p, "/sys/class/net/eth0/queues/rx-1/rps_cpus").unwrap(),
        "00000000,0003fc00"
    );
    for c in p["changes"].as_array().unwrap() {
        for k in [
            "phase", "knob", "target", "after", "rule", "reason", "source",
        ] {
            assert!(!c[k].is_null(), "{k} missing in {c}");
        }
    }
}

#[test]
fn two_socket_queue_irqs_take_distinct_physical_cores_of_node_1_and_rps_stays_off() {
    let p = plan_json("tuner-two-socket-32c", "throughput", &[]);
    let mut cpus = Vec::new();
    for irq in 121..=136 {
        cpus.push(
            after_of(&p, &format!("/proc/irq/{irq}/smp_affinity_list"))
                .unwrap()
                .parse::<u32>()
                .unwrap(),
        );
    }
    cpus.sort();
    assert_eq!(
        cpus,
        (16..32).collect::<Vec<u32>>(),
        "physical cores 16-31 of node 1"
    );
    assert!(!p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["knob"] == "rps_cpus"));
    assert_eq!(p["changes"][0]["knob"], "irqbalance");
    // The 8-core-per-node fixture cannot hold 16 queues on node 1: the plan says so.
    let p = plan_json("two-socket-16q", "throughput", &[]);
    let notes = serde_json::to_string(&p["notes"]).unwrap();
    assert!(
        notes.contains("node 1 has 8 usable physical cores for 16 queue IRQs"),
        "{notes}"
    );
}

#[test]
fn exclude_cpus_and_bdp_are_honoured() {
    let p = plan_json(
        "c4-8xlarge",
        "throughput",
        &["--exclude-cpus", "0", "--bdp", "100mbit,100ms"],
    );
    assert_eq!(
        after_of(&p, "/proc/irq/266/smp_affinity_list").unwrap(),
        "1"
    );
    // A window of 1.33 x 1250000 B, half of the buffer (the default share).
    assert_eq!(
        after_of(&p, "/proc/sys/net/core/rmem_max").unwrap(),
        "3325000"
    );
}

#[test]
fn cpu_lists_outside_the_online_cpus_are_refused() {
    let root = fixture("c4-8xlarge");
    for flag in ["--cpus", "--exclude-cpus"] {
        let o = run(&[
            "plan",
            "--profile",
            "throughput",
            "--root",
            root.to_str().unwrap(),
            flag,
            "30-40",
        ]);
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains(flag) && e.contains("36-40") && e.contains("not online"),
            "{e}"
        );
    }
}

#[test]
fn malformed_profile_names_line_and_key() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("bad.toml");
    std::fs::write(
        &p,
        "inherit = \"throughput\"\n[settings]\nrfs_entries = 32768\nbusy_pol_us = 5\n",
    )
    .unwrap();
    let root = fixture("c4-8xlarge");
    let o = run(&[
        "plan",
        "--profile",
        p.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("line 4") && e.contains("busy_pol_us"), "{e}");
}

#[test]
fn example_user_profile_loads() {
    let prof = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../profiles/example.toml");
    let root = fixture("c4-8xlarge");
    let out = ok(&[
        "plan",
        "--profile",
        prof.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(out.contains("profile web-frontend"), "{out}");
    assert!(
        !out.contains("[rfs]"),
        "rfs is disabled by the example profile:\n{out}"
    );
}

#[test]
fn help_teaches_with_examples() {
    for cmd in ["plan", "apply", "rollback", "verify", "history"] {
        let out = ok(&[cmd, "--help"]);
        assert!(out.contains("Examples:"), "{cmd}: {out}");
    }
}

#[test]
fn netns_scope_child_leaves_global_knobs_out_on_a_fixture() {
    let p = plan_json(
        "tuner-two-socket-32c",
        "latency",
        &["--netns-scope", "child"],
    );
    assert_eq!(p["scope"], "child");
    for c in p["changes"].as_array().unwrap() {
        let t = serde_json::to_string(&c["target"]).unwrap();
        assert!(
            !t.contains("/proc/sys/net/core/")
                && !t.contains("scaling_governor")
                && !t.contains("pm_qos")
                && !t.contains("\"service\""),
            "{t}"
        );
    }
    let notes = serde_json::to_string(&p["notes"]).unwrap();
    for knob in [
        "busy_poll",
        "service irqbalance",
        "pm_qos_resume_latency_us",
        "scaling_governor",
    ] {
        assert!(notes.contains(knob), "{knob} not noted: {notes}");
    }
    // The NIC's own IRQs are still placed.
    assert_eq!(
        after_of(&p, "/proc/irq/121/smp_affinity_list").unwrap(),
        "16"
    );
}

fn fails_one_line(args: &[&str], want: &str) {
    let o = run(args);
    assert!(!o.status.success(), "{args:?} succeeded");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(want), "{args:?}: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
}

#[test]
fn bdp_buffers_are_clamped_to_int_max_and_say_so() {
    let p = plan_json("c4-8xlarge", "throughput", &["--bdp", "100gbit,200ms"]);
    for path in ["/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max"] {
        assert_eq!(after_of(&p, path).unwrap(), "2147483647", "{path}");
    }
    for path in ["/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/ipv4/tcp_wmem"] {
        let after = after_of(&p, path).unwrap();
        assert!(after.ends_with(" 2147483647"), "{path}: {after}");
    }
    let reasons: Vec<&str> = p["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["rule"] == "socket-buffers")
        .map(|c| c["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 4);
    assert!(
        reasons.iter().all(|r| r.contains("clamped to 2147483647")),
        "{reasons:?}"
    );
}

#[test]
fn absurd_bdp_values_get_a_one_line_error() {
    let root = fixture("c4-8xlarge");
    let root = root.to_str().unwrap();
    for bdp in [
        "0,1ms",
        "-1gbit,1ms",
        "10gbit,-1ms",
        "10gbit,0ms",
        "10gbit,100s",
        "10tbit,1ms",
    ] {
        fails_one_line(
            &[
                "plan",
                "--profile",
                "throughput",
                "--root",
                root,
                "--bdp",
                bdp,
            ],
            "--bdp",
        );
    }
}

#[test]
fn bad_cpu_lists_say_what_is_expected_without_a_line_number() {
    let root = fixture("c4-8xlarge");
    let root = root.to_str().unwrap();
    for flag in ["--cpus", "--exclude-cpus"] {
        let args = ["plan", "--profile", "throughput", "--root", root, flag, "x"];
        fails_one_line(
            &args,
            &format!("{flag}: invalid CPU list \"x\": expected a list like 0-3,8"),
        );
        let e = String::from_utf8_lossy(&run(&args).stderr).into_owned();
        assert!(!e.contains("line 1"), "{e}");
    }
}

#[test]
fn profile_with_an_absurd_rtt_is_refused_naming_file_line_and_key() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("far.toml");
    std::fs::write(
        &p,
        "inherit = \"throughput\"\n[settings]\ndefault_rtt_us = 1000000000000\n",
    )
    .unwrap();
    let root = fixture("c4-8xlarge");
    let o = run(&[
        "plan",
        "--profile",
        p.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
    ]);
    assert!(!o.status.success(), "terabyte buffers were planned");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("far.toml:3") && e.contains("settings.default_rtt_us"),
        "{e}"
    );
}

#[test]
fn every_golden_plan_reads_back_through_the_plan_reader() {
    for f in FIXTURES {
        for p in ["latency", "throughput", "balanced"] {
            let root = fixture(f);
            let json = ok(&[
                "plan",
                "--profile",
                p,
                "--root",
                root.to_str().unwrap(),
                "--json",
            ]);
            let plan = model::plan::Plan::from_json(&json).unwrap();
            assert_eq!(
                serde_json::to_string_pretty(&plan).unwrap(),
                json.trim_end()
            );
        }
    }
}

#[test]
fn a_plan_with_an_unknown_schema_version_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let json = ok(&[
        "plan",
        "--profile",
        "throughput",
        "--root",
        fixture("c4-8xlarge").to_str().unwrap(),
        "--json",
    ]);
    let file = t.path().join("plan.json");
    std::fs::write(
        &file,
        json.replacen("\"schema_version\": 1,", "\"schema_version\": 2,", 1),
    )
    .unwrap();
    // An empty root: nothing there to write even if the plan were taken.
    let root = t.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let o = run(&[
        "apply",
        "--plan",
        file.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--dry-run",
        "--force",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("schema_version 2") && e.contains("reads schema_version 1"),
        "{e}"
    );
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
}
