//! `/proc/net/sockstat` (and `sockstat6`): socket counts per protocol, one
//! line per section of `KEY VALUE` pairs:
//!
//! ```text
//! sockets: used 18
//! TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 221
//! UDP: inuse 0 mem 0
//! FRAG: inuse 0 memory 0
//! ```
//!
//! These are levels (gauges), not counters. `mem` is in pages. Under
//! `ip netns exec` the file is the namespace's (kernel 6.18 counts `tw` and
//! `inuse` per namespace; `mem` and `orphan` are host-wide).

use crate::error::ParseError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// At most this many sections or keys per section are kept (a real file has 6
/// sections of at most 5 keys).
const MAX_ENTRIES: usize = 64;

/// Parsed `/proc/net/sockstat`: section (`TCP`) → key (`tw`) → value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sockstat {
    /// Sections by name, without the colon.
    pub sections: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Sockstat {
    /// The value of `key` in `section` (`get("TCP", "tw")`).
    pub fn get(&self, section: &str, key: &str) -> Option<u64> {
        self.sections.get(section)?.get(key).copied()
    }

    /// TCP sockets in TIME_WAIT.
    pub fn tcp_tw(&self) -> Option<u64> {
        self.get("TCP", "tw")
    }
}

/// Parse the text of `/proc/net/sockstat`.
pub fn parse_sockstat(text: &str) -> Result<Sockstat, ParseError> {
    let mut out = Sockstat::default();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (sec, rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::format(ln, "expected `SECTION: key value ...`"))?;
        let sec = sec.trim();
        if sec.is_empty() || sec.contains(char::is_whitespace) {
            return Err(ParseError::invalid(ln, "section name", sec));
        }
        let toks: Vec<&str> = rest.split_whitespace().collect();
        if !toks.len().is_multiple_of(2) {
            return Err(ParseError::format(
                ln,
                "odd number of tokens after the section",
            ));
        }
        if out.sections.len() >= MAX_ENTRIES || toks.len() / 2 > MAX_ENTRIES {
            return Err(ParseError::format(
                ln,
                "more entries than a sockstat file has",
            ));
        }
        let map = out.sections.entry(sec.to_string()).or_default();
        for kv in toks.chunks_exact(2) {
            let v: u64 = kv[1]
                .parse()
                .map_err(|_| ParseError::invalid(ln, "counter", kv[1]))?;
            map.insert(kv[0].to_string(), v);
        }
    }
    if out.sections.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read on kernel 6.18 (2 vCPU KVM guest).
    const K618: &str = "sockets: used 18\nTCP: inuse 1 orphan 0 tw 0 alloc 1 mem 221\n\
                        UDP: inuse 0 mem 0\nUDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n";

    #[test]
    fn kernel_6_18() {
        let s = parse_sockstat(K618).unwrap();
        assert_eq!(s.tcp_tw(), Some(0));
        assert_eq!(s.get("TCP", "mem"), Some(221));
        assert_eq!(s.get("sockets", "used"), Some(18));
        assert_eq!(s.get("FRAG", "memory"), Some(0));
        assert_eq!(s.get("TCP", "nope"), None);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert_eq!(parse_sockstat(""), Err(ParseError::Empty));
        assert!(parse_sockstat("TCP: inuse\n").is_err());
        assert!(parse_sockstat("TCP inuse 1\n").is_err());
        assert!(parse_sockstat("TCP: tw -1\n").is_err());
        assert!(parse_sockstat("TCP: tw 99999999999999999999999\n").is_err());
        let many: String = (0..100).map(|i| format!("S{i}: a 1\n")).collect();
        assert!(parse_sockstat(&many).is_err());
    }
}
