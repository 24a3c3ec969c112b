//! Ethtool settings behind a trait: the live `ethtool` command, or the
//! fixture's `ethtool/<iface>.json` edited in place (byte-preserving).

use crate::error::HostError;
use crate::root::Root;
use model::plan::EthtoolGroup;
use model::snapshot::Probe;
use std::path::PathBuf;
use std::process::Command;

/// Reads and writes one ethtool attribute.
pub trait Ethtool {
    /// Current value; `None` when the driver does not report the attribute.
    fn get(&self, iface: &str, group: EthtoolGroup, attr: &str) -> Result<Option<u64>, HostError>;
    /// Set a value.
    fn set(
        &self,
        iface: &str,
        group: EthtoolGroup,
        attr: &str,
        value: u64,
    ) -> Result<(), HostError>;
}

/// The live host: reads over ethtool netlink (as `inspect` does), writes
/// with `ethtool -L/-G/-C`.
#[derive(Debug, Default)]
pub struct CliEthtool;

fn ethtool_err(what: String, msg: String) -> HostError {
    HostError::Io {
        path: PathBuf::from(what),
        error: std::io::Error::other(msg),
    }
}

fn run(args: &[&str]) -> Result<String, HostError> {
    let what = format!("ethtool {}", args.join(" "));
    let out = Command::new("ethtool")
        .args(args)
        .output()
        .map_err(|e| HostError::io(&what, e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(ethtool_err(what, err));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Ethtool for CliEthtool {
    fn get(&self, iface: &str, group: EthtoolGroup, attr: &str) -> Result<Option<u64>, HostError> {
        use crate::ethtool::EthtoolSource;
        let st = crate::ethtool::NetlinkEthtool::new().read(iface);
        let probe_err = |m: String| ethtool_err(format!("ethtool {} {iface}", group.name()), m);
        match group {
            EthtoolGroup::Channels => match st.channels {
                Probe::Ok { value: c } => Ok(match attr {
                    "combined" => c.combined,
                    "rx" => c.rx,
                    "tx" => c.tx,
                    "other" => c.other,
                    _ => None,
                }
                .map(u64::from)),
                Probe::Error { message } => Err(probe_err(message)),
                _ => Ok(None),
            },
            EthtoolGroup::Rings => match st.rings {
                Probe::Ok { value: r } => Ok(match attr {
                    "rx" => r.rx,
                    "tx" => r.tx,
                    "rx_mini" => r.rx_mini,
                    "rx_jumbo" => r.rx_jumbo,
                    _ => None,
                }
                .map(u64::from)),
                Probe::Error { message } => Err(probe_err(message)),
                _ => Ok(None),
            },
            EthtoolGroup::Coalesce => match st.coalesce {
                Probe::Ok { value } => Ok(value.get(attr).copied()),
                Probe::Error { message } => Err(probe_err(message)),
                _ => Ok(None),
            },
        }
    }

    fn set(
        &self,
        iface: &str,
        group: EthtoolGroup,
        attr: &str,
        value: u64,
    ) -> Result<(), HostError> {
        let flag = match group {
            EthtoolGroup::Channels => "-L",
            EthtoolGroup::Rings => "-G",
            EthtoolGroup::Coalesce => "-C",
        };
        let v = if attr.starts_with("adaptive-") {
            if value == 0 { "off" } else { "on" }.to_string()
        } else {
            value.to_string()
        };
        let a = attr.replace('_', "-");
        run(&[flag, iface, &a, &v]).map(|_| ())
    }
}

/// A fixture root: `ROOT/ethtool/<iface>.json` in the snapshot's shape.
/// Values are replaced in the text, so restoring the original value restores
/// the original bytes.
#[derive(Debug)]
pub struct FixtureEthtool {
    root: Root,
}

impl FixtureEthtool {
    /// For a fixture root.
    pub fn new(root: Root) -> Self {
        FixtureEthtool { root }
    }

    /// The file as named in messages, and where it really is: resolved
    /// inside the root (`iface` is checked, so it is one file name).
    fn path(&self, iface: &str) -> Result<(PathBuf, PathBuf), HostError> {
        super::targets::check_iface(iface)?;
        let shown = format!("/ethtool/{iface}.json");
        let real = self.root.resolve_confined(&shown, true)?;
        Ok((
            self.root
                .dir()
                .join("ethtool")
                .join(format!("{iface}.json")),
            real,
        ))
    }

    fn read(&self, iface: &str) -> Result<(PathBuf, PathBuf, String), HostError> {
        let (p, real) = self.path(iface)?;
        let bytes = crate::root::read_regular(&real, &p, crate::root::MAX_READ)?;
        let text = String::from_utf8(bytes).map_err(|_| HostError::Io {
            path: p.clone(),
            error: std::io::Error::other("not UTF-8"),
        })?;
        Ok((p, real, text))
    }
}

impl Ethtool for FixtureEthtool {
    fn get(&self, iface: &str, group: EthtoolGroup, attr: &str) -> Result<Option<u64>, HostError> {
        let (_, _, text) = self.read(iface)?;
        Ok(json_span(&text, &[group.name(), "value", attr])
            .and_then(|(a, b)| text[a..b].trim().parse().ok()))
    }

    fn set(
        &self,
        iface: &str,
        group: EthtoolGroup,
        attr: &str,
        value: u64,
    ) -> Result<(), HostError> {
        let (p, real, text) = self.read(iface)?;
        let Some((a, b)) = json_span(&text, &[group.name(), "value", attr]) else {
            return Err(HostError::NotFound {
                path: PathBuf::from(format!("ethtool/{iface}.json: {}.{attr}", group.name())),
            });
        };
        if text[a..b].trim() == "null" {
            return Err(ethtool_err(
                format!("ethtool {} {iface} {attr}", group.name()),
                "not supported by the driver (null in the fixture)".into(),
            ));
        }
        let new = format!("{}{value}{}", &text[..a], &text[b..]);
        let mut f = crate::root::open_for_write(&real, &p, true)?;
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
