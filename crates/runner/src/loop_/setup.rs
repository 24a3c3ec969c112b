//! The lab's cells for the experiment runner, as [`CellSetup`]s beside the
//! experiment's (`runner::experiment::ExperimentSetup`): the baseline
//! applies nothing; after it, [`DoctorSetup::prepare`] runs the Diagnose
//! stage on both hosts of the suite under load and turns the findings into
//! Candidates and one [`FixUnit`] each; each fix's cell applies its changes
//! on the hosts that found it through their journals (Apply) and its bench
//! options to its workloads, and rolls back after its runs;
//! [`DoctorSetup::check_all`] puts every fix in place at once for doctor's
//! second look, then rolls back.

use super::candidates::fixes_from_doctor;
use super::diagnose::{merge_reports, merge_windows};
use super::suite::{fmt_secs, SUITE};
use super::units::{units_of, FixUnit};
use super::DOCTOR_SAMPLE_S;
use crate::exec::{ExecError, Executor, HostId};
use crate::{Applied, CellSetup};
use model::findings::Report;
use model::plan::{Bdp, NetnsScope, PlanOptions};
use model::results::CellResult;
use model::results::Note;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where the stages say what they do (a progress line each).
pub type Say = Box<dyn Fn(&str)>;

/// The doctor cell (index 1) and the baseline (index 0) of `nettune lab`.
pub struct DoctorSetup {
    /// Two more executors, for the loads that run while doctor samples.
    pub loads: Vec<Box<dyn Executor + Send>>,
    /// One more, for doctor on the client while the runner's runs it on the server.
    pub doctor2: Box<dyn Executor + Send>,
    /// The connecting host of the suite.
    pub client: HostId,
    /// The receiving host.
    pub receiver: HostId,
    /// Set by Ctrl-C: no second diagnosis.
    pub cancel: Arc<AtomicBool>,
    /// Progress lines.
    pub say: Say,
    /// `--bdp RATE,RTT` for doctor and the plan, when the link has a rate
    /// and a delay.
    pub bdp: Option<String>,
    /// Both hosts' reports before the changes (results.json `doctor_before`).
    pub doctor_before: Option<model::findings::HostReports>,
    /// And with them in place (`doctor_after`).
    pub doctor_after: Option<model::findings::HostReports>,
    /// Hosts with a plan applied (rolled back at the end).
    pub applied: Vec<HostId>,
    /// The fixes, one cell each (cell index − 1), from [`DoctorSetup::prepare`].
    pub units: Vec<FixUnit>,
    /// Every host's whole plan (all fixes), for [`DoctorSetup::check_all`].
    pub plans: Vec<(String, model::plan::Plan)>,
    /// What was found, what each cell applies, what was not applied.
    pub notes: Vec<Note>,
}

impl fmt::Debug for DoctorSetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoctorSetup")
            .field("client", &self.client)
            .field("receiver", &self.receiver)
            .field("bdp", &self.bdp)
            .field("applied", &self.applied)
            .finish_non_exhaustive()
    }
}

impl DoctorSetup {
    /// Diagnose: doctor on the client and the receiving host at once, in
    /// two windows: one while a tcp-stream loads them (reordering,
    /// retransmits), one while tcp-crr and 64-byte udp-stream do (connection
    /// churn, UDP socket drops); the rate rules need traffic in the window.
    /// Each host's two reports are merged ([`merge_windows`]). (host name,
    /// report) for each, client first.
    pub fn diagnose(
        &mut self,
        exec: &mut dyn Executor,
    ) -> Result<Vec<(String, Report)>, ExecError> {
        let load_s = DOCTOR_SAMPLE_S + 1.5;
        let args = |test: &[&str]| {
            let mut a: Vec<String> = test.iter().map(|s| s.to_string()).collect();
            a.extend([
                "--duration".into(),
                fmt_secs(load_s),
                "--warmup".into(),
                "0".into(),
            ]);
            a
        };
        let stream = vec![args(&["--test", "tcp-stream"])];
        let churn = vec![
            args(&["--test", "tcp-crr"]),
            args(&["--test", "udp-stream", "--size", "64"]),
        ];
        let (mut c, mut r) = (Vec::new(), Vec::new());
        for loads in [&stream, &churn] {
            let (on_c, on_r) = self.window(exec, loads, load_s)?;
            c.push(on_c);
            r.push(on_r);
        }
        Ok(vec![
            (exec.host_name(self.client), merge_windows(&c)),
            (exec.host_name(self.receiver), merge_windows(&r)),
        ])
    }

    /// One doctor window on both hosts under `load` (bench arguments, one
    /// flow each from the client to the receiver): their reports.
    fn window(
        &mut self,
        exec: &mut dyn Executor,
        load: &[Vec<String>],
        load_s: f64,
    ) -> Result<(Report, Report), ExecError> {
        let deadline = Duration::from_secs_f64(load_s) + Duration::from_secs(20);
        let (client, receiver) = (self.client, self.receiver);
        let mut dargs = vec!["--sample".to_string(), fmt_secs(DOCTOR_SAMPLE_S)];
        if let Some(b) = &self.bdp {
            dargs.extend(["--bdp".to_string(), b.clone()]);
        }
        let loads = &mut self.loads;
        let doctor2 = &mut self.doctor2;
        let (on_client, on_receiver) = std::thread::scope(|s| {
            for (ex, a) in loads.iter_mut().zip(load) {
                // A failed load leaves doctor's rate rules without traffic;
                // its report says so (skipped rules), nothing else breaks.
                s.spawn(move || {
                    let _ = ex.bench(client, receiver, a, deadline);
                });
            }
            std::thread::sleep(Duration::from_millis(500));
            let da = &dargs;
            let c = s.spawn(move || doctor2.doctor(client, da));
            let r = exec.doctor(receiver, &dargs);
            let c = c.join().unwrap_or_else(|_| {
                Err(ExecError::Failed {
                    what: format!("doctor on {client}"),
                    code: None,
                    stderr: "its thread panicked".into(),
                })
            });
            (c, r)
        });
        Ok((on_client?, on_receiver?))
    }

    fn host_of(&self, exec: &dyn Executor, name: &str) -> HostId {
        if exec.host_name(self.client) == name {
            self.client
        } else {
            self.receiver
        }
    }
}

impl DoctorSetup {
    /// Diagnose (both hosts under load), then the Candidates stage, then
    /// one [`FixUnit`] per finding with a fix the lab can apply: each is
    /// measured in its own cell. Records `doctor_before` and the notes of
    /// what was found, what each cell applies and what was not applied.
    pub fn prepare(&mut self, exec: &mut dyn Executor) -> Result<Vec<FixUnit>, ExecError> {
        (self.say)(&format!(
            "doctor on {} (client) and {} (server), {} s while a tcp-stream loads them, then {} s under tcp-crr and 64-byte udp-stream",
            exec.host_name(self.client),
            exec.host_name(self.receiver),
            fmt_secs(DOCTOR_SAMPLE_S),
            fmt_secs(DOCTOR_SAMPLE_S)
        ));
        let reports = self.diagnose(exec)?;
        self.doctor_before = Some(merge_reports(&reports));
        let options = PlanOptions {
            bdp: self.bdp.as_deref().and_then(|b| Bdp::parse(b).ok()),
            ..PlanOptions::default()
        };
        let balanced = tune::profile::builtin("balanced").map_err(|e| ExecError::Failed {
            what: "the balanced profile".into(),
            code: None,
            stderr: e.to_string(),
        })?;
        let fixes = {
            let hosts: Vec<(String, HostId)> = [self.client, self.receiver]
                .into_iter()
                .map(|h| (exec.host_name(h), h))
                .collect();
            let id = |name: &str| {
                hosts
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(self.receiver, |(_, h)| *h)
            };
            let ex = std::cell::RefCell::new(&mut *exec);
            fixes_from_doctor(
                &reports,
                SUITE,
                // The header of the plan `nettune plan --profile balanced`
                // makes in the host's namespace, from its own snapshot.
                |h| {
                    let snap = ex.borrow_mut().inspect(id(h))?;
                    Ok(tune::planner::header(
                        &snap,
                        &balanced,
                        &options,
                        NetnsScope::Child,
                    ))
                },
                |h, args| ex.borrow_mut().plan(id(h), args),
            )?
        };
        let units = units_of(&fixes, &reports, SUITE);
        let mut notes: Vec<Note> = Vec::new();
        if fixes.found.is_empty() {
            notes.push(Note::nothing_found(&format!(
                "on {} or {} under load",
                exec.host_name(self.client),
                exec.host_name(self.receiver)
            )));
        }
        notes.extend(fixes.found.iter().cloned());
        notes.extend(units.iter().map(applied_note));
        notes.extend(fixes.not_applied.iter().cloned());
        // The lines themselves go to the table (stdout), once.
        (self.say)(&format!(
            "doctor found {} finding(s); {} fix(es) to measure, one cell each{}",
            fixes.found.len(),
            units.len(),
            if units.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    units
                        .iter()
                        .map(FixUnit::label)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ));
        self.notes = notes;
        self.plans = fixes
            .plans
            .iter()
            .map(|(h, p, _)| (h.clone(), p.clone()))
            .collect();
        self.units = units.clone();
        Ok(units)
    }

    /// With every fix's host changes in place at once (nothing measured):
    /// doctor again on both hosts under the same load (`doctor_after`: the
    /// applied plans should leave nothing to fix), then roll back.
    pub fn check_all(&mut self, exec: &mut dyn Executor) -> Result<(), ExecError> {
        if self.cancel.load(Ordering::SeqCst) || self.plans.is_empty() {
            return Ok(());
        }
        (self.say)("every fix's changes at once: doctor again on both hosts, under the same load");
        let plans = self.plans.clone();
        let applied = plans.iter().try_for_each(|(host, plan)| {
            let h = self.host_of(exec, host);
            self.applied.push(h);
            exec.apply(h, plan)
        });
        let checked = applied.and_then(|()| self.diagnose(exec));
        let rolled = self.roll_back(exec);
        self.doctor_after = Some(merge_reports(&checked?));
        rolled
    }

    fn roll_back(&mut self, exec: &mut dyn Executor) -> Result<(), ExecError> {
        let mut first_err = None;
        for h in std::mem::take(&mut self.applied) {
            (self.say)(&format!("rolling back in {}", exec.host_name(h)));
            if let Err(e) = exec.rollback(h) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// The note of what a fix's cell applies: `applied on h0, h1 in cell `fix
/// rps-off`: h0: v1 rx-0 rps_cpus=3, ...; measured on tcp-stream, tcp-rr`.
fn applied_note(u: &FixUnit) -> Note {
    let mut what: Vec<String> = u.change_lines();
    what.extend(u.app_options().into_iter().map(|a| {
        format!("bench {a} (an application option: a socket option, not a host setting)")
    }));
    Note::applied(format_args!(
        "{} in cell `{}`: {}; measured on {}",
        u.hosts.join(", "),
        u.label(),
        what.join(", "),
        u.workloads.join(", ")
    ))
}

impl CellSetup for DoctorSetup {
    fn apply(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<Applied, ExecError> {
        if cell.index == 0 {
            return Ok(Applied::default());
        }
        let Some(u) = cell
            .index
            .checked_sub(1)
            .and_then(|i| self.units.get(i))
            .cloned()
        else {
            return Err(ExecError::NotApplicable {
                kind: crate::exec::NotApplicableKind::Level,
                reason: format!("no fix for cell {}", cell.label),
            });
        };
        let mut plans = Vec::new();
        for (host, plan) in &u.plans {
            let h = self.host_of(exec, host);
            (self.say)(&format!(
                "{}: applying {} change(s) in {host}",
                u.label(),
                plan.changes.len()
            ));
            self.applied.push(h);
            exec.apply(h, plan)?;
            let value = serde_json::to_value(plan).map_err(|source| ExecError::Malformed {
                what: format!("the plan of {} on {host}", u.label()),
                source,
            })?;
            plans.push((format!("{} on {host}", u.label()), value));
        }
        Ok(Applied {
            bench_args: Vec::new(),
            workload_args: u.workload_args.clone(),
            plans,
            notes: Vec::new(),
            workloads: Some(u.workloads.clone()),
        })
    }

    fn rollback(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<(), ExecError> {
        if cell.index == 0 {
            return Ok(());
        }
        self.roll_back(exec)
    }
}

/// Nothing to put in place: the loopback benchmark only measures.
#[derive(Debug)]
pub struct MeasureOnly;

impl CellSetup for MeasureOnly {
    fn apply(&mut self, _: &CellResult, _: &mut dyn Executor) -> Result<Applied, ExecError> {
        Ok(Applied::default())
    }
    fn rollback(&mut self, _: &CellResult, _: &mut dyn Executor) -> Result<(), ExecError> {
        Ok(())
    }
}
