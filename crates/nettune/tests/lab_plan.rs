//! What `nettune lab` applies: the loop's Candidates stage
//! (`runner::loop_::candidates`) on doctor's typed reports, from the real
//! doctor report and plans of the c4.8xlarge fixture (whose RPS is off:
//! four steering changes).

#![allow(clippy::unwrap_used)]

use doctor::{DoctorId, Report};
use model::plan::{Phase, Plan};
use runner::exec::{ExecError, HostId};
use runner::loop_::bench_fix::{bench_fix, BenchFix, Workloads};
use runner::loop_::candidates::{fixes_from_doctor, plan_from_doctor, workloads_of};
use runner::loop_::diagnose::{merge_reports, merge_windows, parse_report};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_nettune");

fn fixture() -> String {
    format!(
        "{}/../../tests/fixtures/c4-8xlarge",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn nettune(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn doctor() -> serde_json::Value {
    serde_json::from_str(&nettune(&["doctor", "--root", &fixture(), "--json"])).unwrap()
}

/// A report as the loop reads it (doctor's typed shape).
fn typed(v: serde_json::Value) -> Report {
    serde_json::from_value(v).unwrap()
}

fn plan(args: &[String]) -> Result<Plan, ExecError> {
    let mut a: Vec<&str> = vec!["plan"];
    a.extend(args.iter().map(String::as_str));
    a.push("--json");
    runner::exec::parse("plan", &nettune(&a))
}

fn base() -> Result<Plan, ExecError> {
    plan(&[
        "--profile".into(),
        "balanced".into(),
        "--root".into(),
        fixture(),
    ])
}

#[test]
fn the_union_of_the_findings_changes_one_per_target_in_phase_order() {
    let mut doc = doctor();
    let rps = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rps-off")
        .cloned()
        .unwrap();
    let steering = rps["fix"]["changes"].as_array().unwrap().clone();
    assert_eq!(steering.len(), 4);
    // A second finding listing a sysctl change first and one of the same
    // steering changes again.
    let throughput = serde_json::to_value(
        plan(&[
            "--profile".into(),
            "throughput".into(),
            "--root".into(),
            fixture(),
        ])
        .unwrap(),
    )
    .unwrap();
    let sysctl = throughput["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["phase"] == "sysctls")
        .cloned()
        .unwrap();
    let mut other = rps.clone();
    other["id"] = "softirq-concentrated".into();
    other["fix"]["changes"] = serde_json::json!([sysctl, steering[0]]);
    // First, so the phase order is the sort's doing, not the findings'.
    doc["findings"].as_array_mut().unwrap().insert(0, other);

    let (p, ids) = plan_from_doctor(&typed(doc), base, |_| panic!("no command needed"))
        .unwrap()
        .unwrap();
    assert_eq!(ids, [DoctorId::SoftirqConcentrated, DoctorId::RpsOff]);
    assert_eq!(p.changes.len(), 5, "{:?}", p.changes);
    let phases: Vec<Phase> = p.changes.iter().map(|c| c.phase).collect();
    assert_eq!(phases[..4], [Phase::Steering; 4]);
    assert_eq!(phases[4], Phase::Sysctls);
    // The header is the plan made on the same host.
    let b = base().unwrap();
    assert_eq!(p.fingerprint, b.fingerprint);
    assert_eq!(p.profile, "balanced");
}

#[test]
fn without_changes_the_command_a_finding_names_is_planned() {
    let mut doc = doctor();
    // As on a live host: the fixture's command names its --root, which the
    // closure below supplies the way the namespace does in the lab.
    let cmd = "nettune plan --profile balanced --iface eth0";
    for f in doc["findings"].as_array_mut().unwrap() {
        f["fix"]["changes"] = serde_json::json!([]);
        f["fix"]["command"] = cmd.into();
    }
    let mut asked = Vec::new();
    let (p, ids) = plan_from_doctor(
        &typed(doc),
        || panic!("no base plan needed"),
        |args| {
            asked = args.to_vec();
            let mut a = args.to_vec();
            a.extend(["--root".to_string(), fixture()]);
            plan(&a)
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(ids, [DoctorId::RpsOff]);
    assert!(!p.changes.is_empty());
    assert_eq!(asked.join(" "), cmd.trim_start_matches("nettune plan "));
}

#[test]
fn nothing_to_apply_is_none_and_root_commands_are_not_run_elsewhere() {
    let none = typed(serde_json::json!({"schema_version": 1, "findings": [], "skipped": []}));
    assert!(plan_from_doctor(&none, || panic!(), |_| panic!())
        .unwrap()
        .is_none());
    // A command for a capture (`--root`) is not this host's plan: skipped.
    let mut doc = doctor();
    for f in doc["findings"].as_array_mut().unwrap() {
        f["fix"]["changes"] = serde_json::json!([]);
        f["fix"]["command"] = "nettune plan --profile balanced --root /tmp/cap --iface eth0".into();
    }
    assert!(plan_from_doctor(&typed(doc), || panic!(), |_| panic!())
        .unwrap()
        .is_none());
}

/// What is not a doctor report is an error of the Diagnose stage naming
/// the host, not a report with odd findings (the untyped lab read it as
/// one).
#[test]
fn garbage_is_not_a_report() {
    for bad in [
        "null",
        r#"{"findings": 3}"#,
        r#"{"schema_version": 1, "skipped": [], "findings": [{"id": 3, "fix": "x"}, 7]}"#,
        r#"{"schema_version": 1, "skipped": [], "findings": [{"id": "no-such-rule"}]}"#,
    ] {
        let e = parse_report(HostId(1), bad).unwrap_err().to_string();
        assert!(
            e.contains("doctor on h1") && e.contains("did not parse"),
            "{e}"
        );
    }
}

/// A suite as `nettune lab` gives it: (workload, bench arguments); its UDP
/// workload without an explicit receive buffer.
const SUITE: &[(&str, &[&str])] = &[
    ("tcp-stream", &["--test", "tcp-stream"]),
    ("udp-stream-64", &["--test", "udp-stream", "--size", "64"]),
    ("tcp-rr", &["--test", "tcp-rr"]),
    ("tcp-crr", &["--test", "tcp-crr"]),
];

/// Two hosts' reports as the lab gets them: the connecting h0 with
/// TIME_WAIT (fix: sysctls only), the receiving h1 with UDP socket drops
/// (fix: a bench flag), bbr's reordering (fix: a socket option) and the
/// c4.8xlarge fixture's `rps-off` (fix: plan changes). The `fix` objects are
/// those the rules write (crates/doctor/src/rules).
fn two_hosts() -> Vec<(String, serde_json::Value)> {
    let rps = doctor()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rps-off")
        .cloned()
        .unwrap();
    let h0 = serde_json::json!({"schema_version": 1, "skipped": [], "findings": [{
        "id": "timewait-exhaustion", "severity": "critical", "subject": "host",
        "title": "20000 TIME_WAIT sockets against 28232 ephemeral ports (71 %), tcp_tw_reuse 2 (loopback only)",
        "fix": {"text": "Let new outgoing connections reuse TIME_WAIT ports", "changes": [], "command": null,
                "app": "sysctl -w net.ipv4.tcp_tw_reuse=1 net.ipv4.ip_local_port_range=\"1024 65535\"; in the application, reuse connections"}}]});
    let h1 = serde_json::json!({"schema_version": 1, "skipped": [{"id": "nic-drops", "reason": "no NIC"}], "findings": [
        {"id": "udp-rcvbuf-errors", "severity": "critical", "subject": "host",
         "title": "UDP: 9000 datagrams dropped at full receive buffers (1.50 % of those that arrived) in 2.0 s",
         "fix": {"text": "Give the receiving sockets a larger buffer", "changes": [], "command": null,
                 "app": "setsockopt(SO_RCVBUF, 4194304) on the receiving socket; with nettune bench: --rcvbuf 4M",
                 "bench": {"workloads": "udp", "flags": ["--rcvbuf", "4M"]}}},
        {"id": "tcp-reordering", "severity": "warning", "subject": "host",
         "title": "TCP: 30000 retransmits with 900 SACK reorderings and no drops in 2.0 s (congestion control bbr)",
         "fix": {"text": "Do not tune for loss", "changes": [], "command": null,
                 "app": "setsockopt(IPPROTO_TCP, TCP_CONGESTION, \"cubic\") on the sending socket",
                 "bench": {"workloads": "tcp", "flags": ["--congestion", "cubic"]}}},
        rps,
    ]});
    vec![("lab-h0".into(), h0), ("lab-h1".into(), h1)]
}

/// [`two_hosts`] typed: each finding completed with the fields every
/// doctor finding has.
fn typed_hosts(hosts: Vec<(String, serde_json::Value)>) -> Vec<(String, Report)> {
    hosts
        .into_iter()
        .map(|(h, mut v)| {
            for f in v["findings"].as_array_mut().unwrap() {
                for k in ["why", "source"] {
                    if f.get(k).is_none() {
                        f[k] = "".into();
                    }
                }
                if f.get("evidence").is_none() {
                    f["evidence"] = serde_json::json!([]);
                }
            }
            (h, typed(v))
        })
        .collect()
}

/// The lab applies a finding's typed bench options (`fix.bench`, set by its
/// rule), forcing a buffer size; options that do not start with a flag are
/// refused; a fix without bench options gives none (no text is parsed).
#[test]
fn bench_options_come_from_the_fixes_typed_field() {
    let reports = typed_hosts(two_hosts());
    let fs = &reports[1].1.findings;
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let rcv = bench_fix(&fs[0]).unwrap();
    assert_eq!(rcv.flags, s(&["--rcvbuf", "4M", "--force-buffers"]));
    assert_eq!(rcv.workloads, Workloads::Udp);
    let cc = bench_fix(&fs[1]).unwrap();
    assert_eq!(cc.flags, s(&["--congestion", "cubic"]));
    // The time-wait fix names no bench options, though its app text does.
    assert_eq!(bench_fix(&reports[0].1.findings[0]), None);
    let mut f = fs[0].clone();
    for bad in [&[][..], &["4M"][..], &["--"][..], &["-x"][..]] {
        f.fix.bench = Some(BenchFix::new(Workloads::Udp, bad));
        assert_eq!(bench_fix(&f), None, "{bad:?}");
    }
}

/// A bench fix's transport picks the suite's workloads.
#[test]
fn a_bench_fixs_transport_picks_the_workloads() {
    assert_eq!(workloads_of(Workloads::Udp, SUITE), ["udp-stream-64"]);
    assert_eq!(
        workloads_of(Workloads::Tcp, SUITE),
        ["tcp-stream", "tcp-rr", "tcp-crr"]
    );
    assert_eq!(workloads_of(Workloads::All, SUITE).len(), 4);
}

#[test]
fn findings_of_both_hosts_each_host_its_plan_flags_to_the_after_suite() {
    let reports = typed_hosts(two_hosts());
    let mut bases = Vec::new();
    let fixes = fixes_from_doctor(
        &reports,
        SUITE,
        |h| {
            bases.push(h.to_string());
            base()
        },
        |_, _| panic!("no command needed"),
    )
    .unwrap();
    // Only the receiving host had plan changes; its plan was made there.
    assert_eq!(bases, ["lab-h1"]);
    assert_eq!(fixes.plans.len(), 1);
    assert_eq!(fixes.plans[0].0, "lab-h1");
    assert_eq!(fixes.plans[0].1.changes.len(), 4);
    assert_eq!(fixes.plans[0].2, [DoctorId::RpsOff]);
    // The socket options: --rcvbuf for the UDP workload, --congestion for TCP.
    let args = |w: &str| {
        fixes
            .workload_args
            .iter()
            .find(|(n, _)| n == w)
            .map(|(_, a)| a.join(" "))
    };
    assert_eq!(
        args("udp-stream-64").as_deref(),
        Some("--rcvbuf 4M --force-buffers")
    );
    assert_eq!(args("tcp-stream").as_deref(), Some("--congestion cubic"));
    assert_eq!(args("tcp-crr").as_deref(), Some("--congestion cubic"));
    // Every finding is said, with its host.
    assert_eq!(fixes.found.len(), 4, "{:?}", fixes.found);
    assert!(fixes.found[0].starts_with("found on lab-h0: timewait-exhaustion (critical)"));
    let applied = fixes
        .applied
        .iter()
        .map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        applied
            .contains("applied on lab-h1: udp-rcvbuf-errors: bench --rcvbuf 4M --force-buffers on udp-stream-64"),
        "{applied}"
    );
    assert!(
        applied.contains("applied on lab-h1: plan of 4 change(s)"),
        "{applied}"
    );
    assert!(!applied.contains("lab-h0"), "{applied}");
    // The TIME_WAIT fix names sysctls but no plan change and no bench flag.
    assert_eq!(fixes.not_applied.len(), 1, "{:?}", fixes.not_applied);
    assert!(fixes.not_applied[0].starts_with("not applied on lab-h0: timewait-exhaustion: its fix lists no plan changes and names no bench flag, only: sysctl -w net.ipv4.tcp_tw_reuse=1"), "{:?}", fixes.not_applied);
}

#[test]
fn a_plan_change_found_on_the_client_is_planned_on_the_client() {
    let mut reports = two_hosts();
    // Move rps-off to h0.
    let rps = reports[1].1["findings"]
        .as_array_mut()
        .unwrap()
        .pop()
        .unwrap();
    reports[0].1["findings"].as_array_mut().unwrap().push(rps);
    let reports = typed_hosts(reports);
    let mut bases = Vec::new();
    let fixes = fixes_from_doctor(
        &reports,
        SUITE,
        |h| {
            bases.push(h.to_string());
            base()
        },
        |_, _| panic!("no command needed"),
    )
    .unwrap();
    assert_eq!(bases, ["lab-h0"]);
    assert_eq!(fixes.plans.len(), 1);
    assert_eq!(fixes.plans[0].0, "lab-h0");
}

#[test]
fn nothing_found_nothing_applied() {
    let empty = typed(serde_json::json!({"schema_version": 1, "findings": [], "skipped": []}));
    let fixes = fixes_from_doctor(
        &[("a".into(), empty.clone()), ("b".into(), empty)],
        SUITE,
        |_| panic!("no plan"),
        |_, _| panic!("no command"),
    )
    .unwrap();
    assert!(fixes.is_empty());
    assert!(fixes.applied.is_empty() && fixes.not_applied.is_empty() && fixes.found.is_empty());
}

#[test]
fn both_reports_merge_into_one_with_their_hosts() {
    let typed = merge_reports(&typed_hosts(two_hosts()));
    assert_eq!(typed.findings[0].host.as_deref(), Some("lab-h0"));
    assert_eq!(typed.findings[0].item.subject, "host");
    assert_eq!(typed.host("lab-h1").skipped[0].reason, "no NIC");
    let m = serde_json::to_value(&typed).unwrap();
    let f = m["findings"].as_array().unwrap();
    assert_eq!(f.len(), 4);
    assert_eq!(f[0]["host"], "lab-h0");
    assert_eq!(f[0]["subject"], "lab-h0: host");
    assert_eq!(f[1]["subject"], "lab-h1: host");
    assert_eq!(m["skipped"][0]["reason"], "lab-h1: no NIC");
    assert_eq!(m["schema_version"], 1);
}

#[test]
fn a_hosts_windows_merge_first_finding_per_rule_and_subject() {
    let finding = |id: &str, subject: &str, title: &str| {
        serde_json::json!({"id": id, "severity": "warning", "title": title, "subject": subject,
            "evidence": [], "why": "", "source": "",
            "fix": {"text": "", "changes": [], "command": null, "app": null}})
    };
    let stream = typed(serde_json::json!({"schema_version": 1, "findings": [
        finding("tcp-reordering", "host", "stream window"),
        finding("softirq-concentrated", "cpu1", "stream window")],
        "skipped": [{"id": "ring-small", "reason": "no NIC"}, {"id": "udp-rcvbuf-errors", "reason": "x"}]}));
    let churn = typed(serde_json::json!({"schema_version": 1, "findings": [
        finding("softirq-concentrated", "cpu1", "churn window"),
        finding("udp-rcvbuf-errors", "host", "churn window")],
        "skipped": [{"id": "ring-small", "reason": "no NIC"}]}));
    let m = merge_windows(&[stream, churn]);
    let ids: Vec<&str> = m.findings.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "tcp-reordering",
            "softirq-concentrated",
            "udp-rcvbuf-errors"
        ]
    );
    assert_eq!(m.findings[1].title, "stream window");
    // Skipped only where it was skipped in every window and never fired.
    let sk: Vec<&str> = m.skipped.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(sk, ["ring-small"]);
    assert!(merge_windows(&[]).findings.is_empty());
}

#[test]
fn a_bench_flag_the_suite_already_has_is_not_applied_again() {
    // The lab's suite spells out bench's udp-stream default, --rcvbuf 4M,
    // forced (the lab's namespaces share the machine's rmem_max).
    let suite: &[(&str, &[&str])] = &[
        ("tcp-stream", &["--test", "tcp-stream"]),
        (
            "udp-stream-64",
            &[
                "--test",
                "udp-stream",
                "--size",
                "64",
                "--rcvbuf",
                "4M",
                "--force-buffers",
            ],
        ),
    ];
    let mut reports = two_hosts();
    reports[1].1["findings"].as_array_mut().unwrap().truncate(2);
    let reports = typed_hosts(reports);
    let fixes = fixes_from_doctor(&reports, suite, |_| panic!("no plan"), |_, _| panic!()).unwrap();
    assert!(
        !fixes
            .workload_args
            .iter()
            .any(|(w, _)| w == "udp-stream-64"),
        "{:?}",
        fixes.workload_args
    );
    let na = fixes
        .not_applied
        .iter()
        .map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        na.contains("not applied on lab-h1: udp-rcvbuf-errors: bench --rcvbuf 4M --force-buffers is what the suite already runs with (udp-stream-64)"),
        "{na}"
    );
    // The TCP flag is still new to the TCP workload.
    assert_eq!(
        fixes.workload_args,
        [(
            "tcp-stream".to_string(),
            vec!["--congestion".to_string(), "cubic".into()]
        )]
    );
}
