//! `/proc/net/snmp` and `/proc/net/netstat`: pairs of lines, a header naming
//! the counters of a section (`Udp: InDatagrams NoPorts ...`) and a line of
//! values with the same prefix. Counters are addressed as `Section.Name`
//! (`Udp.RcvbufErrors`, `TcpExt.ListenDrops`). Sections and counters come and
//! go between kernels (`Udp.InCsumErrors` since 3.10, `MPTcpExt` since 5.6),
//! so lookups are by name and absence is normal. Both files are per network
//! namespace.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every counter of one or more snmp-style files, keyed `Section.Name`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snmp {
    /// Values (signed: `Tcp.MaxConn` is -1).
    pub values: BTreeMap<String, i64>,
}

impl Snmp {
    /// The value of `key` (`"Udp.RcvbufErrors"`).
    pub fn get(&self, key: &str) -> Option<i64> {
        self.values.get(key).copied()
    }
}

/// Walk every counter of an snmp-style text without building a map:
/// `f(section, name, value)` once per counter, in file order.
pub fn for_each_counter(text: &str, mut f: impl FnMut(&str, &str, i64)) -> Result<(), ParseError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let mut any = false;
    while let Some((hi, header)) = lines.next() {
        let (section, names) = header
            .split_once(':')
            .ok_or_else(|| ParseError::format(hi + 1, "no `:` after the section name"))?;
        let section = section.trim();
        if section.is_empty() || section.contains(char::is_whitespace) {
            return Err(ParseError::invalid(hi + 1, "section name", section));
        }
        let (vi, vline) = lines.next().ok_or_else(|| {
            ParseError::format(hi + 1, format!("{section}: header without a value line"))
        })?;
        let (vsection, values) = vline
            .split_once(':')
            .ok_or_else(|| ParseError::format(vi + 1, "no `:` after the section name"))?;
        if vsection.trim() != section {
            return Err(ParseError::format(
                vi + 1,
                format!(
                    "value line `{}` follows header `{section}`",
                    vsection.trim()
                ),
            ));
        }
        let mut names = names.split_whitespace();
        let mut values = values.split_whitespace();
        loop {
            match (names.next(), values.next()) {
                (Some(n), Some(v)) => {
                    let v: i64 = v
                        .parse()
                        .map_err(|_| ParseError::invalid(vi + 1, "counter value", v))?;
                    f(section, n, v);
                    any = true;
                }
                (None, None) => break,
                _ => {
                    return Err(ParseError::format(
                        vi + 1,
                        format!("{section}: header and value counts differ"),
                    ))
                }
            }
        }
    }
    if !any {
        return Err(ParseError::Empty);
    }
    Ok(())
}

/// Parse one snmp-style text into a map.
pub fn parse_snmp(text: &str) -> Result<Snmp, ParseError> {
    let mut out = Snmp::default();
    parse_snmp_into(text, &mut out)?;
    Ok(out)
}

/// Parse one snmp-style text, adding its counters to `out` (to merge
/// `/proc/net/snmp` and `/proc/net/netstat`).
pub fn parse_snmp_into(text: &str, out: &mut Snmp) -> Result<(), ParseError> {
    for_each_counter(text, |s, n, v| {
        out.values.insert(format!("{s}.{n}"), v);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18 (/proc/net/snmp, excerpt).
    const SNMP_6_18: &str = "Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits
Ip: 2 64 2435 0 0 0 0 0 2435 1229 0 0 0 0 0 0 0 0 0 1229
IcmpMsg: InType3
IcmpMsg: 1
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 17 2 0 4 0 2400 1200 0 0 6 0
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 34 0 0 35 0 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 0 0 0 0 0
";

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18 (/proc/net/netstat,
    // TcpExt cut after TCPSACKReorder; IpExt whole).
    const NETSTAT_6_18: &str = "TcpExt: SyncookiesSent SyncookiesRecv SyncookiesFailed EmbryonicRsts PruneCalled RcvPruned OfoPruned OutOfWindowIcmps LockDroppedIcmps ArpFilter TW TWRecycled TWKilled PAWSActive PAWSEstab BeyondWindow TSEcrRejected PAWSOldAck PAWSTimewait DelayedACKs DelayedACKLocked DelayedACKLost ListenOverflows ListenDrops TCPHPHits TCPPureAcks TCPHPAcks TCPRenoRecovery TCPSackRecovery TCPSACKReneging TCPSACKReorder
TcpExt: 0 0 0 0 0 0 0 0 0 0 11 0 0 0 0 0 0 0 0 0 0 0 0 0 19 33 36 0 0 0 0
IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets InMcastOctets OutMcastOctets InBcastOctets OutBcastOctets InCsumErrors InNoECTPkts InECT1Pkts InECT0Pkts InCEPkts ReasmOverlaps
IpExt: 0 0 0 0 0 0 51800252 113875 0 0 0 0 0 2435 0 0 0 0
";

    // Kernel 3.10 layout of the Udp section (7 counters); values illustrative.
    const SNMP_3_10: &str =
        "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors
Udp: 1000 3 12 999 12 0 0
";

    #[test]
    fn parses_kvm_6_18_and_merges() {
        let mut s = parse_snmp(SNMP_6_18).unwrap();
        assert_eq!(s.get("Tcp.MaxConn"), Some(-1));
        assert_eq!(s.get("Tcp.InSegs"), Some(2400));
        assert_eq!(s.get("Udp.InDatagrams"), Some(34));
        assert_eq!(s.get("Udp.OutDatagrams"), Some(35));
        assert_eq!(s.get("UdpLite.InDatagrams"), Some(0));
        assert_eq!(s.get("IcmpMsg.InType3"), Some(1));
        parse_snmp_into(NETSTAT_6_18, &mut s).unwrap();
        assert_eq!(s.get("TcpExt.TW"), Some(11));
        assert_eq!(s.get("TcpExt.TCPHPHits"), Some(19));
        assert_eq!(s.get("TcpExt.ListenDrops"), Some(0));
        assert_eq!(s.get("IpExt.InOctets"), Some(51800252));
        assert_eq!(s.get("TcpExt.Nope"), None);
    }

    #[test]
    fn parses_old_udp_section() {
        let s = parse_snmp(SNMP_3_10).unwrap();
        assert_eq!(s.get("Udp.RcvbufErrors"), Some(12));
        assert_eq!(s.get("Udp.IgnoredMulti"), None);
    }

    #[test]
    fn visitor_sees_every_counter_in_order() {
        let mut seen = Vec::new();
        for_each_counter(SNMP_3_10, |s, n, v| seen.push(format!("{s}.{n}={v}"))).unwrap();
        assert_eq!(seen.len(), 7);
        assert_eq!(seen[0], "Udp.InDatagrams=1000");
    }

    #[test]
    fn garbage_and_truncation() {
        assert_eq!(parse_snmp(""), Err(ParseError::Empty));
        assert!(parse_snmp("hello\n").is_err());
        assert!(parse_snmp("Udp: A B\n").is_err());
        assert!(parse_snmp("Udp: A B\nUdp: 1\n").is_err());
        assert!(parse_snmp("Udp: A B\nUdp: 1 2 3\n").is_err());
        assert!(parse_snmp("Udp: A B\nTcp: 1 2\n").is_err());
        assert!(parse_snmp("Udp: A B\nUdp: 1 x\n").is_err());
        let cut = &SNMP_6_18[..SNMP_6_18.find("Udp: 34").unwrap() + 6];
        assert!(parse_snmp(cut).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") {
            let _ = parse_snmp(&s);
        }

        #[test]
        fn never_panics_on_cut_real_text(n in 0usize..1200) {
            let n = n.min(SNMP_6_18.len());
            let _ = parse_snmp(&SNMP_6_18[..n]);
        }
    }
}
