//! `/proc/net/sockstat`: socket counts and memory per protocol.
//!
//! Each line is `PROTO: key value key value ...` (`TCP: inuse 1 orphan 0 tw 0
//! alloc 1 mem 221`). `mem` counts pages (the unit of `tcp_mem` and
//! `udp_mem`); `FRAG` has `memory` in bytes. Unknown protocols and keys are
//! kept, so newer kernels parse too.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parsed `/proc/net/sockstat`, by protocol then key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SockStat {
    /// `PROTO -> key -> value` (`TCP -> mem -> 221`).
    pub protocols: BTreeMap<String, BTreeMap<String, u64>>,
}

impl SockStat {
    /// One value (`get("TCP", "mem")`).
    pub fn get(&self, proto: &str, key: &str) -> Option<u64> {
        self.protocols.get(proto)?.get(key).copied()
    }
}

/// Most protocols or keys kept (the kernel prints about a dozen lines).
const MAX_ENTRIES: usize = 256;

/// Parse the text of `/proc/net/sockstat` (or `sockstat6`).
pub fn parse_sockstat(text: &str) -> Result<SockStat, ParseError> {
    let mut out = SockStat::default();
    let mut entries = 0usize;
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let (proto, rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::format(ln, "no `PROTO:` prefix"))?;
        let proto = proto.trim();
        if proto.is_empty() || proto.contains(char::is_whitespace) {
            return Err(ParseError::invalid(ln, "protocol name", proto));
        }
        let toks: Vec<&str> = rest.split_whitespace().collect();
        if !toks.len().is_multiple_of(2) {
            return Err(ParseError::format(ln, "odd number of key/value tokens"));
        }
        let map = out.protocols.entry(proto.to_string()).or_default();
        for kv in toks.chunks(2) {
            let [k, v] = kv else { continue };
            let v: u64 = v.parse().map_err(|_| ParseError::invalid(ln, "count", v))?;
            entries += 1;
            if entries > MAX_ENTRIES {
                return Err(ParseError::format(ln, "more than 256 entries"));
            }
            map.insert((*k).to_string(), v);
        }
    }
    if out.protocols.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18.
    const KVM_6_18: &str = "\
sockets: used 14
TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 221
UDP: inuse 0 mem 0
UDPLITE: inuse 0
RAW: inuse 0
FRAG: inuse 0 memory 0
";

    // Kernel 3.10 layout (RHEL 7), values illustrative of a busy web server.
    const K3_10: &str = "\
sockets: used 5012
TCP: inuse 3021 orphan 12 tw 18345 alloc 3100 mem 96021
UDP: inuse 4 mem 2
UDPLITE: inuse 0
RAW: inuse 0
FRAG: inuse 0 memory 0
";

    #[test]
    fn parses_kvm_6_18() {
        let s = parse_sockstat(KVM_6_18).unwrap();
        assert_eq!(s.get("sockets", "used"), Some(14));
        assert_eq!(s.get("TCP", "mem"), Some(221));
        assert_eq!(s.get("TCP", "alloc"), Some(1));
        assert_eq!(s.get("UDP", "mem"), Some(0));
        assert_eq!(s.get("FRAG", "memory"), Some(0));
        assert_eq!(s.get("TCP", "nope"), None);
    }

    #[test]
    fn parses_3_10() {
        let s = parse_sockstat(K3_10).unwrap();
        assert_eq!(s.get("TCP", "tw"), Some(18345));
        assert_eq!(s.get("TCP", "orphan"), Some(12));
    }

    #[test]
    fn garbage() {
        assert_eq!(parse_sockstat(""), Err(ParseError::Empty));
        assert!(parse_sockstat("TCP inuse 1\n").is_err());
        assert!(parse_sockstat("TCP: inuse\n").is_err());
        assert!(parse_sockstat("TCP: inuse -1\n").is_err());
        assert!(parse_sockstat(&"A: b 1\n".repeat(200)).is_ok());
        let many: String = (0..300).map(|i| format!("P{i}: k 1\n")).collect();
        assert!(parse_sockstat(&many).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "[A-Z: a-z0-9\\n]{0,300}") {
            let _ = parse_sockstat(&s);
        }
    }
}
