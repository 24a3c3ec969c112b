//! Both ends' doctor reports as a bench result carries them, and the
//! server's report read back from its final message within fixed limits.

use crate::findings::{Finding, Report, Skipped};
use serde::{Deserialize, Serialize};

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
    /// Drops by reason on this host over the run (the watcher starts with
    /// the run and stops at its end), or the one line saying why none;
    /// absent from older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drops: Option<crate::drops::run::RunDrops>,
}

/// Most findings, and most skipped rules, read from a peer's report (this
/// build has a couple of dozen rules; a finding is per subject).
pub const MAX_PEER_ENTRIES: usize = 1024;
/// Longest JSON text of one finding or skip read from a peer's report; a
/// longer one is left out. This bounds every string and list inside it.
pub const MAX_PEER_ENTRY_BYTES: usize = 16 * 1024;
/// Most JSON text of entries kept from one peer's report, all together.
pub const MAX_PEER_KEPT_BYTES: usize = 4 << 20;
/// Longest text (in characters) of a finding's title, subject, reason,
/// evidence or fix read from a peer.
pub const MAX_PEER_TEXT: usize = 4096;
/// Most evidence lines of one finding read from a peer.
pub const MAX_PEER_EVIDENCE: usize = 64;

/// The server's doctor report as decoded from its `report` message
/// (`"doctor"` of the server's [`crate::bench::result::SideReport`]): read
/// straight into [`Report`] within the `MAX_PEER_*` limits, never into a
/// generic JSON tree, so a hostile server's report costs about its own size
/// in memory. Entries this client cannot read (a newer server's rule ids,
/// malformed, over a limit) are counted and left out; a value that is not a
/// report at all is left out whole with the reason.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PeerReport {
    /// The report, without the entries left out; `None` when it was not one.
    pub report: Option<Report>,
    /// Findings and skips left out.
    pub dropped: usize,
    /// Why the whole report was left out (one line, escaped).
    pub problem: Option<String>,
}

impl From<Report> for PeerReport {
    fn from(r: Report) -> PeerReport {
        PeerReport {
            report: Some(r),
            dropped: 0,
            problem: None,
        }
    }
}

impl Serialize for PeerReport {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.report.serialize(s)
    }
}

impl<'de> Deserialize<'de> for PeerReport {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PeerReport, D::Error> {
        // The report's text, copied once; decoded on its own below, so a
        // malformed report is left out with a note instead of failing the
        // whole `report` message.
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Ok(PeerReport::from_json(raw.get()))
    }
}

/// At most [`MAX_PEER_ENTRIES`] entries of a JSON list, each a slice of the
/// input (nothing decoded yet), and how many more there were.
#[derive(Default)]
struct Entries<'a> {
    kept: Vec<&'a serde_json::value::RawValue>,
    over: usize,
}

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Entries<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Entries<'a>, A::Error> {
                let mut e = Entries::default();
                while e.kept.len() < MAX_PEER_ENTRIES {
                    match a.next_element::<&'de serde_json::value::RawValue>()? {
                        Some(v) => e.kept.push(v),
                        None => return Ok(e),
                    }
                }
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    e.over = e.over.saturating_add(1);
                }
                Ok(e)
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

impl PeerReport {
    /// Decode a peer's doctor report from its JSON text (see [`PeerReport`]).
    pub fn from_json(text: &str) -> PeerReport {
        #[derive(Deserialize)]
        struct Loose<'a> {
            schema_version: u32,
            #[serde(borrow)]
            findings: Entries<'a>,
            #[serde(borrow)]
            skipped: Entries<'a>,
        }
        let left_out = |problem: String| PeerReport {
            report: None,
            dropped: 0,
            problem: Some(problem),
        };
        let loose: Loose<'_> = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(e) => {
                return left_out(format!(
                    "the server's doctor report is malformed ({}): left out",
                    crate::text::printable_capped(&e.to_string(), 200)
                ))
            }
        };
        if loose.schema_version != crate::findings::REPORT_SCHEMA_VERSION {
            return left_out(format!(
                "the server's doctor report has schema_version {}, this nettune reads {}: left out",
                loose.schema_version,
                crate::findings::REPORT_SCHEMA_VERSION
            ));
        }
        let mut budget = MAX_PEER_KEPT_BYTES;
        let mut dropped = loose.findings.over.saturating_add(loose.skipped.over);
        let findings = keep(&loose.findings.kept, &mut budget, &mut dropped, finding_ok);
        let skipped = keep(
            &loose.skipped.kept,
            &mut budget,
            &mut dropped,
            |s: &Skipped| text_ok(&s.reason),
        );
        PeerReport {
            report: Some(Report {
                schema_version: loose.schema_version,
                findings,
                skipped,
            }),
            dropped,
            problem: None,
        }
    }
}

/// Whether a peer's text is within [`MAX_PEER_TEXT`] characters.
fn text_ok(s: &str) -> bool {
    s.chars().nth(MAX_PEER_TEXT).is_none()
}

/// Whether a peer's finding is within the `MAX_PEER_*` limits.
fn finding_ok(f: &Finding) -> bool {
    let fix = &f.fix;
    [&f.title, &f.subject, &f.why, &f.source, &fix.text]
        .into_iter()
        .chain(fix.command.iter())
        .chain(fix.app.iter())
        .all(|t| text_ok(t))
        && f.evidence.len() <= MAX_PEER_EVIDENCE
        && f.evidence
            .iter()
            .all(|e| text_ok(&e.what) && text_ok(&e.value) && text_ok(&e.source))
}

/// The entries of `raw` that read as `T` and pass `ok`, each at most
/// [`MAX_PEER_ENTRY_BYTES`] of text and all within `budget` bytes; counts
/// the others in `dropped`.
fn keep<T: serde::de::DeserializeOwned>(
    raw: &[&serde_json::value::RawValue],
    budget: &mut usize,
    dropped: &mut usize,
    ok: impl Fn(&T) -> bool,
) -> Vec<T> {
    let mut out = Vec::new();
    for r in raw {
        let text = r.get();
        let fits = text.len() <= MAX_PEER_ENTRY_BYTES && text.len() <= *budget;
        match serde_json::from_str::<T>(text) {
            Ok(t) if fits && ok(&t) => {
                *budget -= text.len();
                out.push(t);
            }
            _ => *dropped = dropped.saturating_add(1),
        }
    }
    out
}

/// The server's doctor report as decoded ([`PeerReport`]), made a
/// [`Report`], with a note for what was left out; `None` with a note when
/// the report is not one at all.
pub fn from_peer(p: PeerReport, notes: &mut Vec<String>) -> Option<Report> {
    if let Some(why) = p.problem {
        notes.push(why);
    }
    if p.dropped > 0 {
        notes.push(format!(
            "{} entr{} of the server's doctor report could not be read (rules this nettune does not know?) or exceeded a limit: left out",
            p.dropped,
            if p.dropped == 1 { "y" } else { "ies" }
        ));
    }
    p.report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn peer(v: serde_json::Value) -> PeerReport {
        PeerReport::from_json(&v.to_string())
    }

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
        let r = from_peer(peer(v), &mut notes).unwrap();
        assert_eq!(r.findings.len(), 1);
        assert!(r.has(crate::findings::FindingId::UdpRcvbufErrors));
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
            assert!(from_peer(peer(v.clone()), &mut notes).is_none(), "{v}");
            assert_eq!(notes.len(), 1, "{v}");
        }
    }
}
