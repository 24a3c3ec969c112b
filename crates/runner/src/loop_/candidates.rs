//! The Candidates stage: each finding of each host's [`Report`] becomes a
//! [`Candidate`]: plan changes (applied on that host through its journal),
//! a [`BenchFix`] for the "after" suite, or advice the lab cannot apply,
//! with the reason as a [`NotApplied`].

use super::bench_fix::{bench_fix, BenchFix};
use crate::exec::ExecError;
use crate::merge_args;
use model::findings::{FindingId as DoctorId, Report};
use model::plan::{Change, Plan};
use model::results::Note;
use std::fmt;

/// What the lab does with one finding.
#[derive(Debug, Clone, PartialEq)]
pub enum Candidate {
    /// Its changes (or its plan command's) are in the host's plan.
    Plan,
    /// Bench options of the "after" suite, for these workloads.
    Bench(BenchFix, Vec<String>),
    /// Nothing the lab can apply; why.
    Advice(NotApplied),
}

/// Why a finding's fix is not applied.
#[derive(Debug, Clone, PartialEq)]
pub enum NotApplied {
    /// Its bench flags are what every workload concerned already runs with.
    AlreadyInSuite {
        /// The flags.
        flags: Vec<String>,
        /// The workloads.
        workloads: Vec<String>,
    },
    /// Its fix is a plan command, not run because the host's plan holds the
    /// other findings' changes.
    CommandNotRun(String),
    /// Its plan command gave no changes in this namespace.
    CommandGaveNothing(String),
    /// Its fix names no plan change and no bench flag the lab knows, only
    /// this advice for the application.
    AppOnly(String),
    /// Its fix lists nothing the lab can act on; its text.
    NoFix(String),
}

impl fmt::Display for NotApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotApplied::AlreadyInSuite { flags, workloads } => write!(
                f,
                "bench {} is what the suite already runs with ({}): nothing left to apply",
                flags.join(" "),
                workloads.join(", ")
            ),
            NotApplied::CommandNotRun(cmd) => write!(
                f,
                "its fix is the command `{cmd}`, not run: the plan holds the other findings' changes"
            ),
            NotApplied::CommandGaveNothing(cmd) => {
                write!(f, "its command `{cmd}` gave no plan changes in this namespace")
            }
            NotApplied::AppOnly(app) => write!(
                f,
                "its fix lists no plan changes and names no bench flag, only: {app}"
            ),
            NotApplied::NoFix(text) => write!(
                f,
                "its fix lists no plan changes, command or bench flag: {text}"
            ),
        }
    }
}

/// The plan doctor's findings recommend: the union of their `fix.changes`
/// (one per target, in phase order) on the header of a plan made on the
/// same host (`base_plan`); or, when no finding lists changes, the plan of
/// the first `nettune plan ...` command a finding names (`command_plan`
/// runs it there). `None` when neither.
pub fn plan_from_doctor(
    report: &Report,
    base_plan: impl FnOnce() -> Result<Plan, ExecError>,
    mut command_plan: impl FnMut(&[String]) -> Result<Plan, ExecError>,
) -> Result<Option<(Plan, Vec<DoctorId>)>, ExecError> {
    let mut changes: Vec<Change> = Vec::new();
    let mut ids = Vec::new();
    for f in &report.findings {
        let mut took = false;
        for c in &f.fix.changes {
            if !changes.iter().any(|x| x.target == c.target) {
                changes.push(c.clone());
                took = true;
            }
        }
        if took {
            ids.push(f.id);
        }
    }
    if !changes.is_empty() {
        changes.sort_by_key(|c| c.phase);
        let mut plan = base_plan()?;
        plan.changes = changes;
        plan.notes.clear();
        return Ok(Some((plan, ids)));
    }
    for f in &report.findings {
        let Some(cmd) = f.fix.command.as_deref() else {
            continue;
        };
        let Some(rest) = cmd.strip_prefix("nettune plan ") else {
            continue;
        };
        let args: Vec<String> = rest
            .split_whitespace()
            .filter(|a| *a != "--json")
            .map(str::to_string)
            .collect();
        if args.iter().any(|a| a == "--root" || a == "--script") {
            continue;
        }
        let plan = command_plan(&args)?;
        if plan.changes.is_empty() {
            continue;
        }
        return Ok(Some((plan, vec![f.id])));
    }
    Ok(None)
}

/// A suite as the candidates see it: (workload name, bench arguments).
pub type SuiteArgs<'a> = &'a [(&'a str, &'a [&'a str])];

/// The suite's workloads `w` covers, by their `--test`.
pub fn workloads_of(w: super::bench_fix::Workloads, suite: SuiteArgs<'_>) -> Vec<String> {
    suite
        .iter()
        .filter(|(_, a)| {
            let test = a
                .iter()
                .position(|x| *x == "--test")
                .and_then(|i| a.get(i.saturating_add(1)))
                .copied()
                .unwrap_or("");
            w.covers(test)
        })
        .map(|(n, _)| n.to_string())
        .collect()
}

/// What the lab puts in place from doctor's reports on its hosts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabFixes {
    /// Per host: the plan and the findings it comes from.
    pub plans: Vec<(String, Plan, Vec<DoctorId>)>,
    /// Extra bench arguments of the "after" suite, per workload.
    pub workload_args: Vec<(String, Vec<String>)>,
    /// Per host and finding: what the lab does with it.
    pub candidates: Vec<(String, DoctorId, Candidate)>,
    /// `found on HOST: ...`, one per finding.
    pub found: Vec<Note>,
    /// `applied on HOST: ...`, one per plan and per bench-flag finding.
    pub applied: Vec<Note>,
    /// `not applied on HOST: ID: why`, one per finding the lab left.
    pub not_applied: Vec<Note>,
}

impl LabFixes {
    /// Whether anything is applied in the "after" cell.
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty() && self.workload_args.is_empty()
    }
}

/// From each host's report (host name, report): each host's plan
/// ([`plan_from_doctor`], made and later applied on that host), the bench
/// fixes its findings' rules give (for the workloads of `suite` they
/// cover), and one line per finding saying what was found, applied, or not
/// applied and why. Pure but for the two plan closures, which run `nettune
/// plan` on the named host.
pub fn fixes_from_doctor(
    reports: &[(String, Report)],
    suite: SuiteArgs<'_>,
    mut base_plan: impl FnMut(&str) -> Result<Plan, ExecError>,
    mut command_plan: impl FnMut(&str, &[String]) -> Result<Plan, ExecError>,
) -> Result<LabFixes, ExecError> {
    let mut out = LabFixes::default();
    for (host, report) in reports {
        let planned = plan_from_doctor(
            report,
            || base_plan(host),
            |a: &[String]| command_plan(host, a),
        )?;
        let ids: Vec<DoctorId> = planned.as_ref().map(|p| p.1.clone()).unwrap_or_default();
        for f in &report.findings {
            let id = f.id.as_str();
            out.found
                .push(Note::found(host, f.id, f.severity, &f.title));
            // In the plan: its own changes, or the same targets as another
            // finding's (one change per target), or its plan command.
            let in_plan = ids.contains(&f.id) || (planned.is_some() && !f.fix.changes.is_empty());
            let cand = match bench_fix(f) {
                Some(b) => {
                    let names = workloads_of(b.workloads, suite);
                    // Flags every workload concerned already runs with change nothing.
                    let already = !names.is_empty()
                        && names.iter().all(|n| {
                            suite.iter().any(|(w, a)| {
                                let a: Vec<String> = a.iter().map(|x| x.to_string()).collect();
                                w == n && merge_args(&a, &b.flags) == a
                            })
                        });
                    if already {
                        if in_plan {
                            continue;
                        }
                        Candidate::Advice(NotApplied::AlreadyInSuite {
                            flags: b.flags,
                            workloads: names,
                        })
                    } else {
                        Candidate::Bench(b, names)
                    }
                }
                None if in_plan => Candidate::Plan,
                None => Candidate::Advice(match (&f.fix.command, &f.fix.app) {
                    (Some(cmd), _) if planned.is_some() => NotApplied::CommandNotRun(cmd.clone()),
                    (Some(cmd), _) => NotApplied::CommandGaveNothing(cmd.clone()),
                    (None, Some(app)) => NotApplied::AppOnly(app.clone()),
                    (None, None) => NotApplied::NoFix(f.fix.text.clone()),
                }),
            };
            match &cand {
                Candidate::Bench(b, names) => {
                    for n in names {
                        match out.workload_args.iter_mut().find(|(w, _)| w == n) {
                            Some((_, a)) => *a = merge_args(a, &b.flags),
                            None => out.workload_args.push((n.clone(), b.flags.clone())),
                        }
                    }
                    out.applied.push(Note::applied(format_args!(
                        "{host}: {id}: bench {} on {} (the after suite)",
                        b.flags.join(" "),
                        if names.is_empty() {
                            "no workload of the suite".to_string()
                        } else {
                            names.join(", ")
                        }
                    )));
                }
                Candidate::Advice(why) => {
                    out.not_applied
                        .push(Note::not_applied(host, f.id, &why.to_string()))
                }
                Candidate::Plan => {}
            }
            out.candidates.push((host.clone(), f.id, cand));
        }
        if let Some((plan, ids)) = planned {
            out.applied.push(Note::applied(format_args!(
                "{host}: plan of {} change(s) ({}) from {}, through its journal, rolled back at the end",
                plan.changes.len(),
                plan.changes
                    .iter()
                    .map(|c| format!("{}={}", c.knob, c.after.split_whitespace().collect::<Vec<_>>().join(" ")))
                    .collect::<Vec<_>>()
                    .join(", "),
                ids.iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", ")
            )));
            out.plans.push((host.clone(), plan, ids));
        }
    }
    Ok(out)
}
