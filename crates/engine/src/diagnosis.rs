//! `nettune bench --doctor`: the doctor rules run on each end over the
//! measured window, and the server's report read back with the same care as
//! the rest of its final message.
//!
//! Each end samples the host (the same sampler as its per-CPU accounting) at
//! the window's start, at every step and at its end; after the window it
//! reads the host's snapshot, extras, sockstat and applied plan through
//! `host` ([`read_host`], shared with `nettune doctor`) and lets `doctor`
//! decide ([`diagnose`]).

use doctor::collect::HostRead;
use doctor::Report;
use host::sampler::Sample;
use host::Root;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Capability a server offers when it runs the doctor rules on request.
pub const CAP: &str = "doctor";
/// Shortest time between two doctor samples inside the window (the
/// sampler reads a dozen `/proc` files: once a second costs nothing
/// measurable; a shorter `--interval` does not sample faster).
pub const MIN_STEP: Duration = Duration::from_secs(1);
/// Most samples one window keeps (a long window samples less often).
pub const MAX_SAMPLES: u32 = 120;
/// Skip reason of the rate rules when the window ended before a second sample.
pub const SHORT_WINDOW: &str = "the measured window ended before a second sample";

/// Both ends' doctor reports: `"doctor": {"client": .., "server": ..}` in
/// the `--json` document (docs/engine.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchDoctor {
    /// This host's report over its window.
    pub client: Option<Report>,
    /// The server's report over its window; `None` when the server does not
    /// run doctor (an older nettune) or its report could not be read (a note
    /// says which).
    pub server: Option<Report>,
}

/// Time between doctor samples for a window of `duration` with intervals of
/// `interval`: the interval, at least [`MIN_STEP`], and long enough that the
/// window holds at most [`MAX_SAMPLES`].
pub fn step(duration: Duration, interval: Duration) -> Duration {
    interval.max(MIN_STEP).max(duration / MAX_SAMPLES)
}

/// Read what doctor needs from the host under `root`: snapshot, extras,
/// `/proc/net/sockstat` and the applied plan of the journal. Nothing here
/// fails: what cannot be read is left out (and listed as unreadable).
pub fn read_host(root: &Root) -> HostRead {
    let snapshot = host::read_snapshot(root);
    let extras = host::extras::read_extras(root, &snapshot);
    let mut unreadable = Vec::new();
    let sockstat = match host::sockstat::read_sockstat(root) {
        Ok(s) => s,
        Err(e) => {
            unreadable.push((host::sockstat::SOCKSTAT.to_string(), e.to_string()));
            None
        }
    };
    let facts = host::doctor_facts::read_doctor_facts(root, &snapshot);
    HostRead {
        facts,
        snapshot,
        extras,
        sockstat,
        applied: applied_plan(root),
        unreadable,
    }
}

/// The plan of the newest finished generation still in force in the
/// journal under the root, if any (a missing or unreadable journal is none).
pub fn applied_plan(root: &Root) -> Option<model::plan::Plan> {
    let dir = host::apply::default_state_dir(root, None).ok()?;
    let gens = host::journal::StateDir::new(dir).load_all().ok()?;
    gens.iter()
        .rev()
        .find(|g| g.finished() && g.active())
        .and_then(|g| g.plan())
}

/// The doctor report of the host under `root` over the window sampled in
/// `samples` (time order).
pub fn diagnose(root: &Root, samples: Vec<Sample>) -> Report {
    let mut input = read_host(root).into_input();
    if samples.len() < 2 {
        input.no_samples = SHORT_WINDOW.to_string();
    }
    input.samples = samples;
    doctor::diagnose(&input)
}

/// The server's doctor report as it arrived (already bounded by the
/// protocol's frame limit and decoded by its checked decoder), made a
/// [`Report`]: findings and skips this client cannot read (a newer server's
/// rule ids) are left out, each kind with a note. `None` with a note when
/// the report is not one at all.
pub fn from_peer(v: serde_json::Value, notes: &mut Vec<String>) -> Option<Report> {
    #[derive(Deserialize)]
    struct Loose {
        schema_version: u32,
        findings: Vec<serde_json::Value>,
        skipped: Vec<serde_json::Value>,
    }
    let loose: Loose = match serde_json::from_value(v) {
        Ok(l) => l,
        Err(e) => {
            notes.push(format!(
                "the server's doctor report is malformed ({}): left out",
                crate::proto::printable(&e.to_string(), 200)
            ));
            return None;
        }
    };
    if loose.schema_version != doctor::REPORT_SCHEMA_VERSION {
        notes.push(format!(
            "the server's doctor report has schema_version {}, this nettune reads {}: left out",
            loose.schema_version,
            doctor::REPORT_SCHEMA_VERSION
        ));
        return None;
    }
    let mut dropped = 0usize;
    let findings = keep(loose.findings, &mut dropped);
    let skipped = keep(loose.skipped, &mut dropped);
    if dropped > 0 {
        notes.push(format!(
            "{dropped} entr{} of the server's doctor report could not be read (rules this nettune does not know?): left out",
            if dropped == 1 { "y" } else { "ies" }
        ));
    }
    Some(Report {
        schema_version: loose.schema_version,
        findings,
        skipped,
    })
}

/// The entries of `vs` that read as `T`; counts the others in `dropped`.
fn keep<T: serde::de::DeserializeOwned>(vs: Vec<serde_json::Value>, dropped: &mut usize) -> Vec<T> {
    let mut out = Vec::with_capacity(vs.len());
    for v in vs {
        match serde_json::from_value(v) {
            Ok(t) => out.push(t),
            Err(_) => *dropped = dropped.saturating_add(1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn finding(id: &str) -> serde_json::Value {
        json!({"id": id, "severity": "warning", "title": "t", "subject": "host",
               "evidence": [], "why": "w",
               "fix": {"text": "x", "changes": [], "command": null, "app": null},
               "source": "s"})
    }

    #[test]
    fn a_peers_report_keeps_what_it_can_read() {
        let mut notes = Vec::new();
        let v = json!({"schema_version": 1,
            "findings": [finding("udp-rcvbuf-errors"), finding("from-the-future"), 7],
            "skipped": [{"id": "rps-off", "reason": "r"}, {"id": "nope", "reason": "r"}]});
        let r = from_peer(v, &mut notes).unwrap();
        assert_eq!(r.findings.len(), 1);
        assert!(r.has(doctor::DoctorId::UdpRcvbufErrors));
        assert_eq!(r.skipped.len(), 1);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("3 entries"), "{notes:?}");
    }

    #[test]
    fn a_peers_report_of_another_shape_is_left_out_with_a_note() {
        for v in [
            json!({"schema_version": 2, "findings": [], "skipped": []}),
            json!({"findings": []}),
            json!("report"),
        ] {
            let mut notes = Vec::new();
            assert!(from_peer(v.clone(), &mut notes).is_none(), "{v}");
            assert_eq!(notes.len(), 1, "{v}");
        }
    }

    #[test]
    fn steps_are_at_least_a_second_and_at_most_max_samples_per_window() {
        let s = |d: u64, i: u64| step(Duration::from_millis(d), Duration::from_millis(i));
        assert_eq!(s(10_000, 1000), Duration::from_secs(1));
        assert_eq!(s(10_000, 100), Duration::from_secs(1));
        assert_eq!(s(10_000, 2000), Duration::from_secs(2));
        assert_eq!(s(3_600_000, 1000), Duration::from_secs(30));
    }
}
