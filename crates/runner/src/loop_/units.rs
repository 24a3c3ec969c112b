//! One change at a time: doctor's fixes split by the finding they answer,
//! each a [`FixUnit`] the lab measures in its own cell against the same
//! baseline, on the workloads the finding concerns. A finding seen on both
//! hosts is one unit applied on both ends (RPS on both ends).

use super::bench_fix::Workloads;
use super::candidates::{workloads_of, Candidate, LabFixes, SuiteArgs};
use crate::merge_args;
use model::findings::{FindingId as DoctorId, Report};
use model::plan::Plan;

/// Label prefix of a fix's cell: `fix tcp-reordering`.
pub const FIX_PREFIX: &str = "fix ";

/// One finding's fix, as the lab applies and measures it.
#[derive(Debug, Clone, PartialEq)]
pub struct FixUnit {
    /// The finding.
    pub finding: DoctorId,
    /// The hosts whose doctor found it, in report order.
    pub hosts: Vec<String>,
    /// Per host, the plan's changes this finding made (on that host's plan
    /// header).
    pub plans: Vec<(String, Plan)>,
    /// Bench options per workload (application options).
    pub workload_args: Vec<(String, Vec<String>)>,
    /// The workloads it is measured on (suite order).
    pub workloads: Vec<String>,
    /// What plans it for a real interface, or isolates it further.
    pub next: Option<String>,
}

impl FixUnit {
    /// Its cell's label.
    pub fn label(&self) -> String {
        format!("{FIX_PREFIX}{}", self.finding.as_str())
    }

    /// The application options it applies (`--congestion cubic`), each once.
    pub fn app_options(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, a) in &self.workload_args {
            let s = a.join(" ");
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// Its host changes, `host: knob=value` each.
    pub fn change_lines(&self) -> Vec<String> {
        self.plans
            .iter()
            .flat_map(|(h, p)| {
                p.changes.iter().map(move |c| {
                    let v: Vec<&str> = c.after.split_whitespace().collect();
                    let dev = c
                        .target
                        .device()
                        .map(|d| format!("{d} "))
                        .unwrap_or_default();
                    format!("{h}: {dev}{}={}", c.knob, v.join(" "))
                })
            })
            .collect()
    }

    /// Its host changes, one line per setting: `rps_cpus=00000003 on 4
    /// devices of h0, h1`, or `net.ipv4.tcp_tw_reuse=1 on h0`.
    pub fn summary(&self) -> Vec<String> {
        let mut by: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
        for (h, p) in &self.plans {
            for c in &p.changes {
                let v: Vec<&str> = c.after.split_whitespace().collect();
                let key = format!("{}={}", c.knob, v.join(" "));
                let dev = c.target.device().unwrap_or_default();
                let i = match by.iter().position(|(k, _, _)| *k == key) {
                    Some(i) => i,
                    None => {
                        by.push((key, Vec::new(), Vec::new()));
                        by.len() - 1
                    }
                };
                if let Some((_, hosts, devs)) = by.get_mut(i) {
                    if !hosts.contains(h) {
                        hosts.push(h.clone());
                    }
                    devs.push(dev);
                }
            }
        }
        by.into_iter()
            .map(|(k, hosts, devs)| match devs.as_slice() {
                [d] if !d.is_empty() => format!("{k} on {} {d}", hosts.join(", ")),
                [_] => format!("{k} on {}", hosts.join(", ")),
                _ => format!("{k} on {} devices of {}", devs.len(), hosts.join(", ")),
            })
            .collect()
    }

    /// What results.json records of it, in cell `cell`.
    pub fn record(&self, cell: usize) -> model::results::LabFix {
        model::results::LabFix {
            cell,
            finding: self.finding.as_str().into(),
            hosts: self.hosts.clone(),
            changes: self.change_lines(),
            summary: self.summary(),
            app_options: self.app_options(),
            workloads: self.workloads.clone(),
            next: self.next.clone(),
        }
    }
}

/// The bench tests a finding's host change is for, when it is not all of
/// them: connection churn for the connection findings, bulk TCP for
/// reordering and buffers, UDP for the socket-buffer findings.
const TARGETS: &[(DoctorId, &[&str])] = &[
    (DoctorId::TimewaitExhaustion, &["tcp-crr"]),
    (DoctorId::ListenDrops, &["tcp-crr"]),
    (DoctorId::SynQueueOverflow, &["tcp-crr"]),
    (DoctorId::TcpResets, &["tcp-crr"]),
    (DoctorId::TcpReordering, &["tcp-stream"]),
    (DoctorId::BuffersBelowBdp, &["tcp-stream"]),
    (DoctorId::UdpRcvbufErrors, &["udp-stream"]),
    (DoctorId::UdpSndbufErrors, &["udp-stream"]),
];

/// The suite's workloads a finding's host change is measured on.
fn targets(id: DoctorId, suite: SuiteArgs<'_>) -> Vec<String> {
    let Some((_, tests)) = TARGETS.iter().find(|(i, _)| *i == id) else {
        return workloads_of(Workloads::All, suite);
    };
    suite
        .iter()
        .filter(|(_, a)| {
            a.windows(2)
                .any(|w| w[0] == "--test" && tests.contains(&w[1]))
        })
        .map(|(n, _)| n.to_string())
        .collect()
}

/// Which finding of `report` made each change of `plan`: the first whose
/// fix lists a change of the same target (the plan took the first), else
/// the finding whose plan command gave the plan (`ids`).
fn owner(report: &Report, plan_change: &model::plan::Change, ids: &[DoctorId]) -> Option<DoctorId> {
    report
        .findings
        .iter()
        .find(|f| f.fix.changes.iter().any(|c| c.target == plan_change.target))
        .map(|f| f.id)
        .or_else(|| ids.first().copied())
}

/// The next step for a unit: the finding's own `nettune plan` command when
/// it has one, else the balanced plan on a real interface; for a unit with
/// application options only, the bench command that uses them.
fn next_step(report_cmd: Option<&str>, has_plan: bool, app: &[String]) -> Option<String> {
    if has_plan {
        return Some(
            match report_cmd.filter(|c| c.starts_with("nettune plan ")) {
                // The lab's own interface names mean nothing on a real host.
                Some(c) => {
                    let mut words: Vec<&str> = Vec::new();
                    let mut it = c.split_whitespace();
                    while let Some(w) = it.next() {
                        if w == "--iface" {
                            it.next();
                        } else if !w.starts_with("--iface=") {
                            words.push(w);
                        }
                    }
                    format!("{} --iface IF", words.join(" "))
                }
                None => "nettune plan --profile balanced --iface IF".into(),
            },
        );
    }
    (!app.is_empty()).then(|| format!("nettune bench HOST {}", app.join(" ")))
}

/// The index of `id`'s unit in `units` (made when new), with `host` among
/// its hosts.
fn unit(units: &mut Vec<FixUnit>, id: DoctorId, host: &str) -> usize {
    let i = match units.iter().position(|u| u.finding == id) {
        Some(i) => i,
        None => {
            units.push(FixUnit {
                finding: id,
                hosts: Vec::new(),
                plans: Vec::new(),
                workload_args: Vec::new(),
                workloads: Vec::new(),
                next: None,
            });
            units.len() - 1
        }
    };
    if let Some(u) = units.get_mut(i) {
        if !u.hosts.iter().any(|h| h == host) {
            u.hosts.push(host.to_string());
        }
    }
    i
}

/// The units of `fixes` (from `reports`, host by host), one per finding
/// with a plan change or a bench option, in the order of first report.
pub fn units_of(
    fixes: &LabFixes,
    reports: &[(String, Report)],
    suite: SuiteArgs<'_>,
) -> Vec<FixUnit> {
    let mut units: Vec<FixUnit> = Vec::new();
    for (host, id, cand) in &fixes.candidates {
        if let Candidate::Bench(b, names) = cand {
            let i = unit(&mut units, *id, host);
            let Some(u) = units.get_mut(i) else { continue };
            for n in names {
                match u.workload_args.iter_mut().find(|(w, _)| w == n) {
                    Some((_, a)) => *a = merge_args(a, &b.flags),
                    None => u.workload_args.push((n.clone(), b.flags.clone())),
                }
            }
        }
    }
    for (host, plan, ids) in &fixes.plans {
        let Some((_, report)) = reports.iter().find(|(h, _)| h == host) else {
            continue;
        };
        for c in &plan.changes {
            let Some(id) = owner(report, c, ids) else {
                continue;
            };
            let i = unit(&mut units, id, host);
            let Some(u) = units.get_mut(i) else { continue };
            match u.plans.iter_mut().find(|(h, _)| h == host) {
                Some((_, p)) => p.changes.push(c.clone()),
                None => {
                    let mut p = plan.clone();
                    p.changes = vec![c.clone()];
                    u.plans.push((host.clone(), p));
                }
            }
        }
    }
    for u in &mut units {
        let mut w = if u.plans.is_empty() {
            Vec::new()
        } else {
            targets(u.finding, suite)
        };
        for (n, _) in &u.workload_args {
            if !w.contains(n) {
                w.push(n.clone());
            }
        }
        // Suite order.
        u.workloads = suite
            .iter()
            .map(|(n, _)| n.to_string())
            .filter(|n| w.contains(n))
            .collect();
        let cmd = reports
            .iter()
            .flat_map(|(_, r)| &r.findings)
            .find(|f| f.id == u.finding)
            .and_then(|f| f.fix.command.as_deref());
        u.next = next_step(cmd, !u.plans.is_empty(), &u.app_options());
    }
    units.retain(|u| !u.workloads.is_empty());
    units
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loop_::suite::SUITE;

    #[test]
    fn targets_follow_the_finding() {
        assert_eq!(
            targets(DoctorId::TimewaitExhaustion, SUITE),
            vec!["tcp-crr"]
        );
        assert_eq!(targets(DoctorId::TcpReordering, SUITE), vec!["tcp-stream"]);
        assert_eq!(
            targets(DoctorId::UdpRcvbufErrors, SUITE),
            vec!["udp-stream-64"]
        );
        assert_eq!(targets(DoctorId::RpsOff, SUITE).len(), SUITE.len());
    }

    #[test]
    fn next_step_names_a_real_interface_or_the_bench_options() {
        assert_eq!(
            next_step(Some("nettune plan --profile throughput"), true, &[]).as_deref(),
            Some("nettune plan --profile throughput --iface IF")
        );
        assert_eq!(
            next_step(None, true, &[]).as_deref(),
            Some("nettune plan --profile balanced --iface IF")
        );
        assert_eq!(
            next_step(None, false, &["--congestion cubic".into()]).as_deref(),
            Some("nettune bench HOST --congestion cubic")
        );
        assert_eq!(next_step(None, false, &[]), None);
        // The lab's interface is no name for a real host.
        assert_eq!(
            next_step(
                Some("nettune plan --profile balanced --iface v1"),
                true,
                &[]
            )
            .as_deref(),
            Some("nettune plan --profile balanced --iface IF")
        );
    }
}
