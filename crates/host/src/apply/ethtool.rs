//! Ethtool settings behind a trait: the live `ethtool` command, or the
//! fixture's `ethtool/<iface>.json` edited in place (byte-preserving).

use crate::error::HostError;
use crate::root::Root;
use model::plan::EthtoolGroup;
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

/// The live host: runs `ethtool -l/-g/-c` and `-L/-G/-C`.
#[derive(Debug, Default)]
pub struct CliEthtool;

fn ethtool_err(what: String, msg: String) -> HostError {
    HostError::Io {
        path: PathBuf::from(what),
        source: std::io::Error::other(msg),
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

/// Parse `ethtool -l`/`-g` output: the "Current" section's `Label: N` lines.
pub fn parse_current_section(text: &str, label: &str) -> Option<u64> {
    let cur = text.split("Current").nth(1)?;
    for line in cur.lines() {
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case(label) {
                return v.trim().parse().ok();
            }
        }
    }
    None
}

/// Parse `ethtool -c` output for one attribute (`rx-usecs`, `adaptive-rx`).
pub fn parse_coalesce(text: &str, attr: &str) -> Option<u64> {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Adaptive RX:") {
            let mut it = rest.split_whitespace();
            let rx = it.next()?;
            let tx = it.nth(1);
            match attr {
                "adaptive-rx" => return Some(u64::from(rx == "on")),
                "adaptive-tx" => return tx.map(|t| u64::from(t == "on")),
                _ => {}
            }
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.trim() == attr {
                return v.trim().parse().ok();
            }
        }
    }
    None
}

impl Ethtool for CliEthtool {
    fn get(&self, iface: &str, group: EthtoolGroup, attr: &str) -> Result<Option<u64>, HostError> {
        Ok(match group {
            EthtoolGroup::Channels => parse_current_section(&run(&["-l", iface])?, attr),
            EthtoolGroup::Rings => {
                let label = match attr {
                    "rx_mini" => "RX Mini",
                    "rx_jumbo" => "RX Jumbo",
                    other => other,
                };
                parse_current_section(&run(&["-g", iface])?, label)
            }
            EthtoolGroup::Coalesce => parse_coalesce(&run(&["-c", iface])?, attr),
        })
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

    fn path(&self, iface: &str) -> PathBuf {
        self.root
            .dir()
            .join("ethtool")
            .join(format!("{iface}.json"))
    }
}

impl Ethtool for FixtureEthtool {
    fn get(&self, iface: &str, group: EthtoolGroup, attr: &str) -> Result<Option<u64>, HostError> {
        let p = self.path(iface);
        let text = std::fs::read_to_string(&p).map_err(|e| HostError::io(&p, e))?;
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
        let p = self.path(iface);
        let text = std::fs::read_to_string(&p).map_err(|e| HostError::io(&p, e))?;
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
        let real = self.root.resolve(format!("/ethtool/{iface}.json"))?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&real)
            .map_err(|e| HostError::io(&p, e))?;
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

    #[test]
    fn cli_output_parsers() {
        let l = "Channel parameters for eth0:\nPre-set maximums:\nRX:\t\tn/a\nCombined:\t8\nCurrent hardware settings:\nRX:\t\tn/a\nCombined:\t4\n";
        assert_eq!(parse_current_section(l, "combined"), Some(4));
        let c =
            "Coalesce parameters for eth0:\nAdaptive RX: on  TX: off\nrx-usecs: 3\ntx-usecs: 0\n";
        assert_eq!(parse_coalesce(c, "adaptive-rx"), Some(1));
        assert_eq!(parse_coalesce(c, "adaptive-tx"), Some(0));
        assert_eq!(parse_coalesce(c, "rx-usecs"), Some(3));
    }
}
