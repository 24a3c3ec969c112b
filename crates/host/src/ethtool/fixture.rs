//! [`FixtureEthtool`]: a fixture root's `ethtool/<iface>.json`, in the shape
//! of [`EthtoolState`] as `nettune inspect --json` prints it. Reads parse it;
//! writes replace one number in the text, so restoring the original value
//! restores the original bytes.

use super::{fixture_path, Ethtool, EthtoolAttr, EthtoolStateExt};
use crate::error::HostError;
use crate::iface::check_iface;
use crate::root::{open_for_write, read_regular, Root, MAX_READ};
use model::snapshot::EthtoolState;
use std::path::PathBuf;

/// `ethtool/<iface>.json` under a fixture root.
#[derive(Debug, Clone)]
pub struct FixtureEthtool {
    root: Root,
}

impl FixtureEthtool {
    /// For the fixture at `root`.
    pub fn new(root: &Root) -> Self {
        FixtureEthtool { root: root.clone() }
    }

    /// The file as named in messages, and where it really is: resolved
    /// inside the root (`iface` is checked, so it is one file name); a
    /// symlink leading out of the root is refused.
    fn confined(&self, iface: &str) -> Result<(PathBuf, PathBuf), HostError> {
        check_iface(iface)?;
        let shown = format!("/{}", fixture_path(iface));
        let real = self.root.resolve_confined(&shown, true)?;
        Ok((self.root.dir().join(fixture_path(iface)), real))
    }

    /// The text of the file, read through [`FixtureEthtool::confined`].
    fn text(&self, iface: &str) -> Result<(PathBuf, PathBuf, String), HostError> {
        let (p, real) = self.confined(iface)?;
        let bytes = read_regular(&real, &p, MAX_READ)?;
        let text = String::from_utf8(bytes).map_err(|_| HostError::Io {
            path: p.clone(),
            error: std::io::Error::other("not UTF-8"),
        })?;
        Ok((p, real, text))
    }

    /// The value's span: a number, or an offload's `active` (true/false).
    fn span(text: &str, attr: EthtoolAttr) -> Option<(usize, usize)> {
        let (g, n) = (attr.group().name(), attr.name());
        match attr {
            EthtoolAttr::Features(_) => json_span(text, &[g, "value", n, "active"]),
            _ => json_span(text, &[g, "value", n]),
        }
    }

    /// A value as the fixture file holds it: offloads as true/false.
    fn parse(attr: EthtoolAttr, v: &str) -> Option<u64> {
        match (attr, v) {
            (EthtoolAttr::Features(_), "true") => Some(1),
            (EthtoolAttr::Features(_), "false") => Some(0),
            (EthtoolAttr::Features(_), _) => None,
            _ => v.parse().ok(),
        }
    }
}

impl Ethtool for FixtureEthtool {
    fn read(&self, iface: &str) -> EthtoolState {
        let path = self.root.dir().join(fixture_path(iface));
        let shown = PathBuf::from(fixture_path(iface));
        let text = match read_regular(&path, &shown, MAX_READ) {
            Ok(t) => String::from_utf8_lossy(&t).into_owned(),
            Err(e) if e.is_not_found() => {
                return EthtoolState::default();
            }
            Err(e) => return EthtoolState::error(e.to_string()),
        };
        match serde_json::from_str::<EthtoolState>(&text) {
            Ok(s) => s,
            Err(e) => EthtoolState::error(format!("{}: not valid JSON: {e}", fixture_path(iface))),
        }
    }

    /// Read from the text (confined, like a write), not from [`Ethtool::read`]:
    /// what apply journals is what the file holds.
    fn get(&self, iface: &str, attr: EthtoolAttr) -> Result<Option<u64>, HostError> {
        let (_, _, text) = self.text(iface)?;
        Ok(Self::span(&text, attr).and_then(|(a, b)| Self::parse(attr, text[a..b].trim())))
    }

    fn set(&self, iface: &str, attr: EthtoolAttr, value: u64) -> Result<(), HostError> {
        let (p, real, text) = self.text(iface)?;
        let Some((a, b)) = Self::span(&text, attr) else {
            return Err(HostError::NotFound {
                path: PathBuf::from(format!(
                    "{}: {}.{}",
                    fixture_path(iface),
                    attr.group().name(),
                    attr.name()
                )),
            });
        };
        if text[a..b].trim() == "null" {
            return Err(HostError::Io {
                path: attr.describe(iface).into(),
                error: std::io::Error::other("not supported by the driver (null in the fixture)"),
            });
        }
        let shown = match attr {
            EthtoolAttr::Features(_) => (value != 0).to_string(),
            _ => value.to_string(),
        };
        let new = format!("{}{shown}{}", &text[..a], &text[b..]);
        let mut f = open_for_write(&real, &p, true)?;
        std::io::Write::write_all(&mut f, new.as_bytes()).map_err(|e| HostError::io(&p, e))
    }
}

/// Byte span of the value at `path` (object keys) in JSON text.
pub fn json_span(text: &str, path: &[&str]) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut depth_path: &[&str] = path;
    loop {
        skip_ws(b, &mut i);
        if depth_path.is_empty() {
            let start = i;
            skip_value(b, &mut i)?;
            return Some((start, i));
        }
        if b.get(i) != Some(&b'{') {
            return None;
        }
        i += 1;
        loop {
            skip_ws(b, &mut i);
            if b.get(i) == Some(&b'}') {
                return None;
            }
            let ks = i;
            skip_string(b, &mut i)?;
            let key = &text[ks + 1..i - 1];
            skip_ws(b, &mut i);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
            skip_ws(b, &mut i);
            if key == depth_path[0] {
                depth_path = &depth_path[1..];
                break;
            }
            skip_value(b, &mut i)?;
            skip_ws(b, &mut i);
            if b.get(i) == Some(&b',') {
                i += 1;
            }
        }
    }
}

fn skip_ws(b: &[u8], i: &mut usize) {
    while *i < b.len() && b[*i].is_ascii_whitespace() {
        *i += 1;
    }
}

fn skip_string(b: &[u8], i: &mut usize) -> Option<()> {
    if b.get(*i) != Some(&b'"') {
        return None;
    }
    *i += 1;
    while *i < b.len() {
        match b[*i] {
            b'\\' => *i += 2,
            b'"' => {
                *i += 1;
                return Some(());
            }
            _ => *i += 1,
        }
    }
    None
}

fn skip_value(b: &[u8], i: &mut usize) -> Option<()> {
    match b.get(*i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            while *i < b.len() {
                match b[*i] {
                    b'"' => {
                        skip_string(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            *i += 1;
                            return Some(());
                        }
                    }
                    _ => {}
                }
                *i += 1;
            }
            None
        }
        _ => {
            while *i < b.len()
                && !matches!(b[*i], b',' | b'}' | b']')
                && !b[*i].is_ascii_whitespace()
            {
                *i += 1;
            }
            Some(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_span_finds_nested_values() {
        let t = "{\n  \"driver\": {\"status\": \"ok\", \"value\": {\"x\": \"a}\"}},\n  \"rings\": {\n    \"status\": \"ok\",\n    \"value\": {\n      \"rx_max\": 4096,\n      \"rx\": 1024\n    }\n  }\n}\n";
        let (a, b) = json_span(t, &["rings", "value", "rx"]).unwrap();
        assert_eq!(&t[a..b], "1024");
        let (a, b) = json_span(t, &["rings", "value", "rx_max"]).unwrap();
        assert_eq!(&t[a..b], "4096");
        assert!(json_span(t, &["rings", "value", "tx"]).is_none());
        assert!(json_span(t, &["coalesce", "value", "rx"]).is_none());
    }
}
