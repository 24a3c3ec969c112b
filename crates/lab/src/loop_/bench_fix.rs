//! Which doctor findings the lab answers with bench options, as one table:
//! a [`BenchFixRule`] per finding id names the workloads of the suite the
//! options go to and how they are read from the finding's fix. A finding
//! with no row here is advice the lab cannot apply.
//!
//! To make the lab apply a new finding's bench-flag fix, add one row to
//! [`BENCH_FIXES`] (docs/architecture.md, "The loop").

use doctor::{DoctorId, Finding};

/// The workloads of the suite a bench fix is for, by transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workloads {
    /// The `udp-*` tests.
    Udp,
    /// The `tcp-*` tests.
    Tcp,
    /// Every workload.
    All,
}

impl Workloads {
    /// Whether a workload running bench `--test TEST` is one of these.
    pub fn covers(self, test: &str) -> bool {
        match self {
            Workloads::Udp => test.starts_with("udp"),
            Workloads::Tcp => test.starts_with("tcp"),
            Workloads::All => true,
        }
    }
}

/// A fix the lab applies as bench options of the "after" suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchFix {
    /// The bench arguments (`--rcvbuf 4M --force-buffers`).
    pub flags: Vec<String>,
    /// The workloads they go to.
    pub workloads: Workloads,
}

/// One row of the table: a finding id, its workloads and how its fix gives
/// bench flags (`None` when this finding's fix names none).
#[derive(Debug, Clone, Copy)]
pub struct BenchFixRule {
    /// The finding.
    pub id: DoctorId,
    /// The workloads of the suite the flags go to.
    pub workloads: Workloads,
    /// The bench flags of one finding of that id.
    pub flags: fn(&Finding) -> Option<Vec<String>>,
}

impl BenchFixRule {
    /// The bench fix of `f` under this rule.
    pub fn fix(&self, f: &Finding) -> Option<BenchFix> {
        (f.id == self.id)
            .then(|| (self.flags)(f))
            .flatten()
            .map(|flags| BenchFix {
                flags,
                workloads: self.workloads,
            })
    }
}

/// The findings the lab answers with bench options.
pub const BENCH_FIXES: &[BenchFixRule] = &[
    BenchFixRule {
        id: DoctorId::UdpRcvbufErrors,
        workloads: Workloads::Udp,
        flags: app_bench_flags,
    },
    BenchFixRule {
        id: DoctorId::TcpReordering,
        workloads: Workloads::Tcp,
        flags: app_congestion,
    },
    BenchFixRule {
        id: DoctorId::AppOnIrqCpu,
        workloads: Workloads::All,
        flags: app_bench_flags,
    },
];

/// The bench fix of `f` under the first row of `table` for its id.
pub fn bench_fix(table: &[BenchFixRule], f: &Finding) -> Option<BenchFix> {
    table.iter().find(|r| r.id == f.id).and_then(|r| r.fix(f))
}

/// The flags after `nettune bench:` in the fix's `app` text.
pub fn app_bench_flags(f: &Finding) -> Option<Vec<String>> {
    f.fix.app.as_deref().and_then(bench_marker_flags)
}

/// `--congestion NAME` for the fix's socket option `TCP_CONGESTION "NAME"`.
pub fn app_congestion(f: &Finding) -> Option<Vec<String>> {
    f.fix.app.as_deref().and_then(congestion_flags)
}

/// The flags after `nettune bench:` in `app` (up to a `;`), with
/// `--force-buffers` added to a buffer size: the lab's namespaces share the
/// machine's rmem_max, which is never raised.
pub fn bench_marker_flags(app: &str) -> Option<Vec<String>> {
    const MARK: &str = "nettune bench:";
    let i = app.find(MARK)?;
    let rest = app.get(i.checked_add(MARK.len())?..)?;
    let rest = rest.split(';').next().unwrap_or("");
    let mut toks: Vec<String> = rest
        .split_whitespace()
        .map(|t| t.trim_end_matches(['.', ',', ')']).to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if !toks
        .first()
        .is_some_and(|t| t.starts_with("--") && t.len() > 2)
    {
        return None;
    }
    let sized = toks.iter().any(|t| t == "--rcvbuf" || t == "--sndbuf");
    if sized && !toks.iter().any(|t| t == "--force-buffers") {
        toks.push("--force-buffers".into());
    }
    Some(toks)
}

/// `--congestion NAME` for `TCP_CONGESTION "NAME"` in `app` (a plain name
/// of under 16 characters).
pub fn congestion_flags(app: &str) -> Option<Vec<String>> {
    let i = app.find("TCP_CONGESTION")?;
    let name = app.get(i..)?.split('"').nth(1)?;
    let ok = !name.is_empty()
        && name.len() < 16
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    ok.then(|| vec!["--congestion".to_string(), name.to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loop_::candidates::{fixes_from_doctor, Candidate, NotApplied};
    use crate::loop_::suite::SUITE;
    use crate::runner::merge_args;
    use doctor::{Fix, Report, Severity};

    /// A finding whose fix, like udp-rcvbuf-errors', names bench flags for
    /// the application (here the send buffer, of udp-sndbuf-errors).
    fn sndbuf_finding() -> Report {
        Report {
            schema_version: doctor::REPORT_SCHEMA_VERSION,
            findings: vec![doctor::Finding {
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
                },
                source: String::new(),
            }],
            skipped: Vec::new(),
        }
    }

    fn run(table: &[BenchFixRule]) -> crate::loop_::candidates::LabFixes {
        let reports = vec![("lab-h0".to_string(), sndbuf_finding())];
        fixes_from_doctor(
            &reports,
            SUITE,
            table,
            |_| panic!("no plan: the finding lists no changes"),
            |_, _| panic!("no plan command"),
        )
        .expect("pure without plans")
    }

    /// docs/architecture.md, "To add a finding with a bench fix": one row
    /// in the table is what makes the lab apply a finding's bench flags to
    /// the after suite (the rule and its id live in doctor's files).
    #[test]
    fn a_new_findings_bench_fix_reaches_the_after_suite() {
        // Without a row: advice the lab cannot apply, with its reason.
        let before = run(BENCH_FIXES);
        assert!(before.workload_args.is_empty());
        assert!(matches!(
            before.candidates[0].2,
            Candidate::Advice(NotApplied::AppOnly(_))
        ));
        // With the row.
        let mut table = BENCH_FIXES.to_vec();
        table.push(BenchFixRule {
            id: DoctorId::UdpSndbufErrors,
            workloads: Workloads::Udp,
            flags: app_bench_flags,
        });
        let after = run(&table);
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
            after.applied,
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
