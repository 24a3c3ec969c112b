//! The lab's cells for the experiment runner, as [`CellSetup`]s beside the
//! experiment's (`runner::experiment::ExperimentSetup`): the baseline
//! applies nothing; the doctor cell runs the Diagnose stage on both hosts of
//! the suite under load, turns the findings into Candidates, applies each
//! host's plan on that host through its journal (Apply) and the bench fixes
//! to the after suite, and at the end diagnoses again and rolls back.

use super::candidates::fixes_from_doctor;
use super::diagnose::{merge_reports, merge_windows};
use super::suite::{fmt_secs, SUITE};
use super::{DOCTOR_PLAN, DOCTOR_SAMPLE_S, NOTHING_FOUND};
use crate::exec::{ExecError, Executor, HostId};
use crate::runner::{Applied, CellSetup};
use crate::NetnsExecutor;
use model::findings::Report;
use model::results::CellResult;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where the stages say what they do (a progress line each).
pub type Say = Box<dyn Fn(&str)>;

/// The doctor cell (index 1) and the baseline (index 0) of `nettune lab`.
pub struct DoctorSetup {
    /// Two more executors, for the loads that run while doctor samples.
    pub loads: Vec<NetnsExecutor>,
    /// One more, for doctor on the client while the runner's runs it on the server.
    pub doctor2: NetnsExecutor,
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
    pub doctor_before: Option<serde_json::Value>,
    /// And with them in place (`doctor_after`).
    pub doctor_after: Option<serde_json::Value>,
    /// Hosts with a plan applied (rolled back at the end).
    pub applied: Vec<HostId>,
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
            let c = s.spawn(move || doctor2.doctor_report(client, da));
            let r = exec.doctor_report(receiver, &dargs);
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

impl CellSetup for DoctorSetup {
    fn apply(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<Applied, ExecError> {
        if cell.index == 0 {
            return Ok(Applied::default());
        }
        (self.say)(&format!(
            "doctor on {} (client) and {} (server), {} s while a tcp-stream loads them, then {} s under tcp-crr and 64-byte udp-stream",
            exec.host_name(self.client),
            exec.host_name(self.receiver),
            fmt_secs(DOCTOR_SAMPLE_S),
            fmt_secs(DOCTOR_SAMPLE_S)
        ));
        let reports = self.diagnose(exec)?;
        self.doctor_before = Some(merge_reports(&reports));
        let mut base = vec!["--profile".to_string(), "balanced".into()];
        if let Some(b) = &self.bdp {
            base.extend(["--bdp".to_string(), b.clone()]);
        }
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
                |h| ex.borrow_mut().plan(id(h), &base),
                |h, args| ex.borrow_mut().plan(id(h), args),
            )?
        };
        for l in fixes
            .found
            .iter()
            .chain(&fixes.applied)
            .chain(&fixes.not_applied)
        {
            (self.say)(l);
        }
        let mut notes: Vec<String> = Vec::new();
        if fixes.found.is_empty() {
            notes.push(format!(
                "{NOTHING_FOUND}on {} or {} under load",
                exec.host_name(self.client),
                exec.host_name(self.receiver)
            ));
        }
        notes.extend(fixes.found.iter().cloned());
        notes.extend(fixes.applied.iter().cloned());
        notes.extend(fixes.not_applied.iter().cloned());
        let mut plans = Vec::new();
        for (host, plan, _) in &fixes.plans {
            let json = serde_json::to_value(plan).map_err(|e| ExecError::Failed {
                what: "plan to JSON".into(),
                code: None,
                stderr: e.to_string(),
            })?;
            let h = self.host_of(exec, host);
            (self.say)(&format!(
                "applying {} change(s) in {host}",
                plan.changes.len()
            ));
            exec.apply(h, &json.to_string())?;
            self.applied.push(h);
            plans.push((format!("{DOCTOR_PLAN} on {host}"), json));
        }
        Ok(Applied {
            bench_args: Vec::new(),
            workload_args: fixes.workload_args,
            plans,
            notes,
        })
    }

    fn rollback(&mut self, cell: &CellResult, exec: &mut dyn Executor) -> Result<(), ExecError> {
        if cell.index == 0 {
            return Ok(());
        }
        if !self.cancel.load(Ordering::SeqCst) && !self.applied.is_empty() {
            (self.say)(
                "doctor again on both hosts, under the same load, with the changes in place",
            );
            match self.diagnose(exec) {
                Ok(d) => self.doctor_after = Some(merge_reports(&d)),
                Err(e) => (self.say)(&format!("doctor after the plan: {e}")),
            }
        }
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
