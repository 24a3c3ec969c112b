//! Where an error is: line and key path from a span, values cut and
//! escaped for one-line messages, and the checks every section shares.

use std::fmt;
use std::ops::Range;

use toml::Spanned;

use super::ranges::{FloatRange, IntRange};
use super::{ErrorKind, ExperimentError};

/// What a name (experiment, workload, `Name` level) may be.
pub(super) const NAME_EXPECTED: &str = "a name (letters, digits, _ or -, at most 32)";

pub(super) fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |s| s.matches('\n').count() + 1)
}

/// Key path for a serde error at `span`: the enclosing table header (with
/// the index of an array of tables) and the key on the error's line.
pub(super) fn key_at(text: &str, span: &Range<usize>) -> String {
    let start = span.start.min(text.len());
    let before = text.get(..start).unwrap_or("");
    // Headers up to and including the error's own line (a missing key is
    // reported at its table's header).
    let line_end = text
        .get(start..)
        .and_then(|r| r.find('\n'))
        .map_or(text.len(), |i| start + i);
    let mut header = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    for line in text.get(..line_end).unwrap_or("").lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let i = match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => {
                    *c += 1;
                    *c
                }
                None => {
                    counts.push((name.clone(), 0));
                    0
                }
            };
            header = format!("{name}[{i}]");
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            header = name.trim().to_string();
        }
    }
    // The span's own text is the key when `=` follows it (unknown keys).
    let spanned = text.get(span.clone()).unwrap_or("").trim();
    let after = text.get(span.end.min(text.len())..).unwrap_or("");
    let is_key = !spanned.is_empty()
        && !spanned.contains(['\n', '[', '{', '"'])
        && after.trim_start().starts_with('=');
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(line_start..).unwrap_or("");
    let line = line.lines().next().unwrap_or("");
    let line_key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('[') && !k.starts_with('#'));
    let key = match (is_key, line_key) {
        (true, Some(lk)) if lk != spanned => format!("{lk}.{spanned}"),
        (true, _) => spanned.to_string(),
        (false, Some(lk)) => lk.to_string(),
        (false, None) => String::new(),
    };
    // Escaped and cut: the key comes from the file (a key of control
    // characters must not reach a terminal raw; the fuzzer found one).
    truncate(&match (header.is_empty(), key.is_empty()) {
        (true, true) => "(top level)".into(),
        (true, false) => key,
        (false, true) => header,
        (false, false) => format!("{header}.{key}"),
    })
}

/// Span of the first line that opens `[name]` or `[name.…]` or sets `name = …`.
pub(super) fn header_span(text: &str, name: &str) -> Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let hit = t
            .strip_prefix('[')
            .map(|r| r.trim_start())
            .is_some_and(|r| r.starts_with(name))
            || t.strip_prefix(name)
                .is_some_and(|r| r.trim_start().starts_with(['=', '.']));
        if hit {
            return offset..offset + line.len();
        }
        offset += line.len();
    }
    0..0
}

/// At most 48 characters of a value from the file, control characters
/// escaped, so an error stays on one line whatever the file holds.
pub(super) fn truncate(s: &str) -> String {
    let t: String = s
        .chars()
        .take(48)
        .flat_map(|c| {
            let esc: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            esc
        })
        .collect();
    if s.chars().count() > 48 {
        format!("{t}…")
    } else {
        t
    }
}

/// The file's text, to turn spans into lines.
pub(super) struct Ctx<'a> {
    pub(super) text: &'a str,
}

impl Ctx<'_> {
    /// An error at `span`.
    pub(super) fn err(
        &self,
        span: Range<usize>,
        key: impl Into<String>,
        kind: ErrorKind,
    ) -> ExperimentError {
        ExperimentError {
            line: line_of(self.text, span.start),
            key: key.into(),
            kind,
        }
    }

    /// A [`ErrorKind::BadValue`] error at `span`.
    pub(super) fn bad(
        &self,
        span: Range<usize>,
        key: &str,
        value: impl fmt::Display,
        expected: &'static str,
    ) -> ExperimentError {
        self.err(
            span,
            key,
            ErrorKind::BadValue {
                value: truncate(&value.to_string()),
                expected,
            },
        )
    }

    /// An optional integer inside `range`.
    pub(super) fn opt_int(
        &self,
        v: &Option<Spanned<i64>>,
        key: &str,
        range: IntRange,
    ) -> Result<Option<i64>, ExperimentError> {
        match v {
            None => Ok(None),
            Some(s) if range.contains(*s.get_ref()) => Ok(Some(*s.get_ref())),
            Some(s) => Err(self.bad(s.span(), key, s.get_ref(), range.expected)),
        }
    }

    /// An integer inside `range`, `default` when absent.
    pub(super) fn int(
        &self,
        v: &Option<Spanned<i64>>,
        key: &str,
        default: i64,
        range: IntRange,
    ) -> Result<i64, ExperimentError> {
        Ok(self.opt_int(v, key, range)?.unwrap_or(default))
    }

    /// An optional finite float inside `range`.
    pub(super) fn float(
        &self,
        v: &Option<Spanned<f64>>,
        key: &str,
        range: FloatRange,
    ) -> Result<Option<f64>, ExperimentError> {
        match v {
            None => Ok(None),
            Some(s) if range.contains(*s.get_ref()) => Ok(Some(*s.get_ref())),
            Some(s) => Err(self.bad(s.span(), key, s.get_ref(), range.expected)),
        }
    }
}

/// Saturating conversion of a range-checked value.
pub(super) fn to_u32(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// 1 to 32 letters, digits, `_` or `-`.
pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
