//! One line of a results file's `notes`, typed by what it says: the loop's
//! account of the baseline, of what doctor found and of what was or was not
//! applied, or any other remark. Written and read as its text, so
//! results.json keeps its shape; the kind is read back from the words the
//! constructors begin with, which exist only here.

use serde::{Deserialize, Serialize};
use std::fmt;

const BASELINE: &str = "the baseline is ";
const FOUND: &str = "found on ";
const APPLIED: &str = "applied on ";
const NOT_APPLIED: &str = "not applied on ";
const NOTHING_FOUND: &str = "doctor found nothing ";

/// What a [`Note`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// What the baseline is and which way the suite runs.
    Baseline,
    /// A finding of doctor on a host.
    Found,
    /// What was applied on a host (a plan, bench options).
    Applied,
    /// A fix that was not applied on a host, and why.
    NotApplied,
    /// Doctor found nothing on the hosts.
    NothingFound,
    /// Any other remark (a delay mechanism, a part skipped).
    Other,
}

impl NoteKind {
    /// Every kind with the words its notes begin with.
    const PREFIXES: [(NoteKind, &'static str); 5] = [
        (NoteKind::Baseline, BASELINE),
        (NoteKind::Found, FOUND),
        (NoteKind::Applied, APPLIED),
        (NoteKind::NotApplied, NOT_APPLIED),
        (NoteKind::NothingFound, NOTHING_FOUND),
    ];

    /// The kind of a note's text.
    fn of(text: &str) -> NoteKind {
        Self::PREFIXES
            .iter()
            .find(|(_, p)| text.starts_with(p))
            .map_or(NoteKind::Other, |(k, _)| *k)
    }

    fn prefix(self) -> &'static str {
        Self::PREFIXES
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("", |(_, p)| p)
    }
}

/// One line of `notes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub struct Note {
    kind: NoteKind,
    text: String,
}

impl Note {
    fn with(kind: NoteKind, rest: fmt::Arguments<'_>) -> Note {
        let text = format!("{}{rest}", kind.prefix());
        Note {
            kind: NoteKind::of(&text),
            text,
        }
    }

    /// `the baseline is WHAT`.
    pub fn baseline(what: &str) -> Note {
        Note::with(NoteKind::Baseline, format_args!("{what}"))
    }

    /// `found on HOST: ID (SEVERITY): TITLE`.
    pub fn found(
        host: &str,
        id: crate::findings::FindingId,
        severity: crate::findings::Severity,
        title: &str,
    ) -> Note {
        Note::with(
            NoteKind::Found,
            format_args!("{host}: {id} ({severity}): {title}"),
        )
    }

    /// `applied on HOST: WHAT` (WHAT may begin with ` in cell ..` instead
    /// of `: `, as the caller writes it).
    pub fn applied(host_and_what: fmt::Arguments<'_>) -> Note {
        Note::with(NoteKind::Applied, host_and_what)
    }

    /// `not applied on HOST: ID: WHY`.
    pub fn not_applied(host: &str, id: crate::findings::FindingId, why: &str) -> Note {
        Note::with(NoteKind::NotApplied, format_args!("{host}: {id}: {why}"))
    }

    /// `doctor found nothing WHERE`.
    pub fn nothing_found(where_: &str) -> Note {
        Note::with(NoteKind::NothingFound, format_args!("{where_}"))
    }

    /// What it says.
    pub fn kind(&self) -> NoteKind {
        self.kind
    }

    /// Its text, as results.json carries it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a results table prints it under its title: what the
    /// baseline is, what doctor found, what was applied and what was not.
    pub fn is_header(&self) -> bool {
        self.kind != NoteKind::Other
    }
}

impl From<String> for Note {
    fn from(text: String) -> Note {
        Note {
            kind: NoteKind::of(&text),
            text,
        }
    }
}

impl From<&str> for Note {
    fn from(text: &str) -> Note {
        Note::from(text.to_string())
    }
}

impl From<Note> for String {
    fn from(n: Note) -> String {
        n.text
    }
}

/// A note reads as its text (`starts_with`, `contains`).
impl std::ops::Deref for Note {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{FindingId, Severity};

    #[test]
    fn a_note_is_its_text_and_its_kind_comes_back_from_it() {
        let notes = [
            Note::baseline("the kernel's defaults"),
            Note::found("h0", FindingId::RpsOff, Severity::Warning, "RPS is off"),
            Note::applied(format_args!("h1: plan of 2 change(s)")),
            Note::not_applied("h1", FindingId::TcpReordering, "advice"),
            Note::nothing_found("on h0 or h1 under load"),
            Note::from("delay line: netem"),
        ];
        let kinds: Vec<NoteKind> = notes.iter().map(Note::kind).collect();
        assert_eq!(
            kinds,
            [
                NoteKind::Baseline,
                NoteKind::Found,
                NoteKind::Applied,
                NoteKind::NotApplied,
                NoteKind::NothingFound,
                NoteKind::Other
            ]
        );
        assert_eq!(
            notes[1].text(),
            "found on h0: rps-off (warning): RPS is off"
        );
        let json = serde_json::to_string(&notes).unwrap();
        assert!(json.starts_with("[\"the baseline is the kernel's defaults\","));
        let back: Vec<Note> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, notes);
        assert!(notes[..5].iter().all(Note::is_header) && !notes[5].is_header());
    }
}
