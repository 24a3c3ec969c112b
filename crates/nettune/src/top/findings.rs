//! The findings panel's data: a [`FindingSource`] turns a window (the host
//! snapshot and the last deltas) into [`TopFinding`]s; the [`Board`] keeps
//! when each appeared and shows a cleared one for a while after it clears.

use host::sampler::{Delta, Sample};
use host::Root;
use model::plan::HostExtras;
use model::snapshot::HostSnapshot;
use model::Nanos;
use std::collections::BTreeMap;

/// How long a cleared finding stays on the panel, dimmed.
pub const CLEARED_FOR: Nanos = Nanos(10_000_000_000);

/// Severity as the panel shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Costs performance now.
    Critical,
    /// Likely costs performance.
    Warning,
    /// Worth knowing.
    Info,
}

impl Level {
    /// Four letters for the panel.
    pub fn tag(self) -> &'static str {
        match self {
            Level::Critical => "CRIT",
            Level::Warning => "WARN",
            Level::Info => "info",
        }
    }
}

/// One finding as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TopFinding {
    /// Severity (sorts first).
    pub level: Level,
    /// Stable rule id (`softirq-concentrated`).
    pub id: String,
    /// What it is about (`eth0`, `cpu1`).
    pub subject: String,
    /// One line: the title with its main number.
    pub title: String,
}

impl TopFinding {
    /// The identity that tells a finding that stays from a new one.
    fn key(&self) -> (String, String) {
        (self.id.clone(), self.subject.clone())
    }
}

/// The last intervals the findings look at, oldest first; both empty before
/// the first interval.
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    /// The samples the intervals lie between (one more than `deltas` on a
    /// live host; empty when the deltas were made elsewhere, as in tests).
    pub samples: &'a [Sample],
    /// The intervals.
    pub deltas: &'a [Delta],
}

/// Where findings come from.
pub trait FindingSource: std::fmt::Debug {
    /// The findings for the snapshot and this window.
    fn findings(&mut self, snapshot: &HostSnapshot, window: Window<'_>) -> Vec<TopFinding>;
}

/// The `nettune doctor` rules on the window: every rule of
/// `doctor::CATALOGUE`, on the snapshot, the last samples and the host
/// facts the rules read beside them. Those facts are read through the
/// `host` crate: the planner's extras every [`EXTRAS_EVERY`], the socket
/// summary (`/proc/net/sockstat`) every interval.
#[derive(Debug)]
pub struct DoctorFindings {
    root: Root,
    extras: Option<(Nanos, HostExtras)>,
}

/// How often [`DoctorFindings`] reads the planner's extras again.
pub const EXTRAS_EVERY: Nanos = Nanos(30_000_000_000);

impl DoctorFindings {
    /// Rules on the host at `root`.
    pub fn new(root: Root) -> DoctorFindings {
        DoctorFindings { root, extras: None }
    }

    /// The doctor report for this window (what [`FindingSource::findings`]
    /// maps to panel rows).
    pub fn report(&mut self, snapshot: &HostSnapshot, window: Window<'_>) -> doctor::Report {
        let now = window.samples.last().map_or(Nanos(0), |s| s.at);
        let extras = match &self.extras {
            Some((at, e)) if now.0.saturating_sub(at.0) < EXTRAS_EVERY.0 => e.clone(),
            _ => {
                let e = host::extras::read_extras(&self.root, snapshot);
                self.extras = Some((now, e.clone()));
                e
            }
        };
        let mut input = doctor::Input::new(snapshot.clone());
        input.extras = extras;
        input.samples = window.samples.to_vec();
        if input.samples.len() < 2 {
            input.no_samples = "waiting for the first interval".into();
        }
        match host::sockstat::read_sockstat(&self.root) {
            Ok(s) => input.sockstat = s,
            Err(e) => input
                .unreadable
                .push((host::sockstat::SOCKSTAT.to_string(), e.to_string())),
        }
        doctor::diagnose(&input)
    }
}

/// A doctor finding as a panel row.
pub fn from_doctor(f: &doctor::Finding) -> TopFinding {
    TopFinding {
        level: match f.severity {
            doctor::Severity::Critical => Level::Critical,
            doctor::Severity::Warning => Level::Warning,
            doctor::Severity::Info => Level::Info,
        },
        id: f.id.as_str().to_string(),
        subject: f.subject.clone(),
        title: f.title.clone(),
    }
}

impl FindingSource for DoctorFindings {
    fn findings(&mut self, snapshot: &HostSnapshot, window: Window<'_>) -> Vec<TopFinding> {
        self.report(snapshot, window)
            .findings
            .iter()
            .map(from_doctor)
            .collect()
    }
}

/// A fixed list (tests, and a source that has nothing to say).
#[derive(Debug, Default, Clone)]
pub struct FixedFindings(pub Vec<TopFinding>);

impl FindingSource for FixedFindings {
    fn findings(&mut self, _: &HostSnapshot, _: Window<'_>) -> Vec<TopFinding> {
        self.0.clone()
    }
}

/// One row of the panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardRow {
    /// The finding.
    pub finding: TopFinding,
    /// Active: seconds since it appeared. Cleared: seconds since it cleared.
    pub age_s: u64,
    /// It no longer fires (shown dimmed for [`CLEARED_FOR`]).
    pub cleared: bool,
}

/// Findings over time: which are active since when, which cleared lately.
#[derive(Debug, Default, Clone)]
pub struct Board {
    active: BTreeMap<(String, String), (TopFinding, Nanos)>,
    cleared: BTreeMap<(String, String), (TopFinding, Nanos)>,
    now: Nanos,
}

impl Board {
    /// Take the findings of the window ending at `now` (monotonic).
    pub fn update(&mut self, now: Nanos, current: Vec<TopFinding>) {
        self.now = now;
        let mut next = BTreeMap::new();
        for f in current {
            let k = f.key();
            let since = self.active.get(&k).map_or(now, |(_, t)| *t);
            self.cleared.remove(&k);
            next.insert(k, (f, since));
        }
        for (k, (f, _)) in std::mem::take(&mut self.active) {
            if !next.contains_key(&k) {
                self.cleared.insert(k, (f, now));
            }
        }
        self.active = next;
        self.cleared
            .retain(|_, (_, at)| now.0.saturating_sub(at.0) < CLEARED_FOR.0);
    }

    /// Active findings (by severity, id, subject), then the lately cleared.
    pub fn rows(&self) -> Vec<BoardRow> {
        let secs = |t: Nanos| self.now.0.saturating_sub(t.0) / 1_000_000_000;
        let mut active: Vec<BoardRow> = self
            .active
            .values()
            .map(|(f, since)| BoardRow {
                finding: f.clone(),
                age_s: secs(*since),
                cleared: false,
            })
            .collect();
        active.sort_by(|a, b| a.finding.cmp(&b.finding));
        let mut cleared: Vec<BoardRow> = self
            .cleared
            .values()
            .map(|(f, at)| BoardRow {
                finding: f.clone(),
                age_s: secs(*at),
                cleared: true,
            })
            .collect();
        cleared.sort_by(|a, b| a.age_s.cmp(&b.age_s).then(a.finding.cmp(&b.finding)));
        active.extend(cleared);
        active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: &str, subject: &str, level: Level) -> TopFinding {
        TopFinding {
            level,
            id: id.into(),
            subject: subject.into(),
            title: format!("{id} on {subject}"),
        }
    }

    fn s(n: u64) -> Nanos {
        Nanos(n * 1_000_000_000)
    }

    #[test]
    fn findings_appear_stay_and_clear() {
        let mut b = Board::default();
        b.update(s(1), vec![f("rps-off", "eth0", Level::Warning)]);
        b.update(
            s(4),
            vec![
                f("rps-off", "eth0", Level::Warning),
                f("softnet-drops", "cpu1", Level::Critical),
            ],
        );
        let rows = b.rows();
        assert_eq!(rows.len(), 2);
        // Critical first; rps-off has been there for 3 s, the new one for 0.
        assert_eq!(rows[0].finding.id, "softnet-drops");
        assert_eq!(rows[0].age_s, 0);
        assert_eq!(rows[1].age_s, 3);
        b.update(s(6), vec![f("softnet-drops", "cpu1", Level::Critical)]);
        let rows = b.rows();
        assert_eq!(rows.len(), 2);
        assert!(!rows[0].cleared);
        assert!(rows[1].cleared && rows[1].finding.id == "rps-off");
        assert_eq!(rows[1].age_s, 0);
        // Gone from the panel CLEARED_FOR after it cleared.
        b.update(s(16), vec![f("softnet-drops", "cpu1", Level::Critical)]);
        assert_eq!(b.rows().len(), 1);
        assert_eq!(b.rows()[0].age_s, 12);
    }

    #[test]
    fn a_finding_that_returns_is_active_again() {
        let mut b = Board::default();
        b.update(s(1), vec![f("rps-off", "eth0", Level::Warning)]);
        b.update(s(2), vec![]);
        assert!(b.rows()[0].cleared);
        b.update(s(3), vec![f("rps-off", "eth0", Level::Warning)]);
        let rows = b.rows();
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].cleared);
        assert_eq!(rows[0].age_s, 0);
    }
}
