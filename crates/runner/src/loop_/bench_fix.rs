//! The bench options the lab applies for a finding: the finding's own
//! typed [`BenchFix`] (`Fix::bench`, set by its doctor rule), with the lab's
//! one policy on top: a buffer size is forced (`--force-buffers`), since the
//! lab's namespaces share the machine's `rmem_max`/`wmem_max`, which the lab
//! never raises. A finding whose fix has no bench options is advice the lab
//! cannot apply.
//!
//! To make the lab apply a new finding's bench fix, its rule sets
//! `Fix::bench` (docs/architecture.md, "To add a finding with a bench fix").

use model::findings::Finding;
pub use model::findings::{BenchFix, Workloads};

/// The bench fix the lab applies for `f`, if its fix has one.
pub fn bench_fix(f: &Finding) -> Option<BenchFix> {
    let mut b = f.fix.bench.clone()?;
    if !b
        .flags
        .first()
        .is_some_and(|t| t.starts_with("--") && t.len() > 2)
    {
        return None;
    }
    let sized = b.flags.iter().any(|t| t == "--rcvbuf" || t == "--sndbuf");
    if sized && !b.flags.iter().any(|t| t == "--force-buffers") {
        b.flags.push("--force-buffers".into());
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loop_::candidates::{fixes_from_doctor, Candidate, NotApplied};
    use crate::loop_::suite::SUITE;
    use crate::merge_args;
    use model::findings::{FindingId as DoctorId, Fix, Report, Severity};

    /// A finding whose fix, like udp-rcvbuf-errors', names bench options for
    /// the application (here the send buffer, of udp-sndbuf-errors), when
    /// `bench` is set.
    fn sndbuf_finding(bench: Option<BenchFix>) -> Report {
        Report {
            schema_version: model::findings::REPORT_SCHEMA_VERSION,
            findings: vec![model::findings::Finding {
                id: DoctorId::UdpSndbufErrors,
                severity: Severity::Warning,
                title: "UDP: 500 datagrams not sent at full send buffers in 2.0 s".into(),
                subject: "host".into(),
                evidence: Vec::new(),
                why: String::new(),
                fix: Fix {
                    text: "Give the sending sockets a larger buffer".into(),
                    changes: Vec::new(),
                    command: None,
                    app: Some(
                        "setsockopt(SO_SNDBUF, 4194304) on the sending socket; with nettune bench: --sndbuf 4M"
                            .into(),
                    ),
                    bench,
                },
                source: String::new(),
            }],
            skipped: Vec::new(),
        }
    }

    fn run(bench: Option<BenchFix>) -> crate::loop_::candidates::LabFixes {
        let reports = vec![("lab-h0".to_string(), sndbuf_finding(bench))];
        fixes_from_doctor(
            &reports,
            SUITE,
            |_| panic!("no plan: the finding lists no changes"),
            |_, _| panic!("no plan command"),
        )
        .expect("pure without plans")
    }

    /// docs/architecture.md, "To add a finding with a bench fix": the rule
    /// setting `Fix::bench` is what makes the lab apply a finding's bench
    /// options to the after suite; nothing in the lab names the finding.
    #[test]
    fn a_new_findings_bench_fix_reaches_the_after_suite() {
        // Without a row: advice the lab cannot apply, with its reason.
        let before = run(None);
        assert!(before.workload_args.is_empty());
        assert!(matches!(
            before.candidates[0].2,
            Candidate::Advice(NotApplied::AppOnly(_))
        ));
        // With the rule's typed bench options.
        let after = run(Some(BenchFix::new(Workloads::Udp, &["--sndbuf", "4M"])));
        let flags: Vec<String> = ["--sndbuf", "4M", "--force-buffers"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            after.candidates[0].2,
            Candidate::Bench(
                BenchFix {
                    flags: flags.clone(),
                    workloads: Workloads::Udp,
                },
                vec!["udp-stream-64".into()]
            )
        );
        assert_eq!(
            after.workload_args,
            [("udp-stream-64".to_string(), flags.clone())]
        );
        assert_eq!(
            after.applied.iter().map(|n| n.text()).collect::<Vec<_>>(),
            ["applied on lab-h0: udp-sndbuf-errors: bench --sndbuf 4M --force-buffers on udp-stream-64 (the after suite)"]
        );
        // The after suite's udp-stream-64 runs with them (the runner merges
        // a cell's workload arguments into the workload's).
        let (_, base) = SUITE
            .iter()
            .find(|(n, _)| *n == "udp-stream-64")
            .expect("in the suite");
        let base: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        let run_args = merge_args(&base, &flags);
        assert!(run_args.windows(2).any(|w| w == ["--sndbuf", "4M"]));
        assert!(run_args.windows(2).any(|w| w == ["--rcvbuf", "4M"]));
    }
}
