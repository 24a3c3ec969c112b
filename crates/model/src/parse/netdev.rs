//! `/proc/net/dev`: per-interface receive and transmit counters.
//!
//! Two header lines, then `name: 16 counters` per interface. Kernels before
//! 3.x printed large byte counts glued to the colon (`eth0:1234567890 ...`);
//! both forms parse. Inside a network namespace only its interfaces appear.

use crate::error::ParseError;
use crate::units::{Bytes, Packets};
use serde::{Deserialize, Serialize};

/// Receive-side counters of one interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxCounters {
    /// Bytes received.
    pub bytes: Bytes,
    /// Packets received.
    pub packets: Packets,
    /// Receive errors.
    pub errs: u64,
    /// Packets dropped (no buffer, backlog full, ...).
    pub drop: u64,
    /// FIFO overruns.
    pub fifo: u64,
    /// Framing errors.
    pub frame: u64,
    /// Compressed packets.
    pub compressed: u64,
    /// Multicast packets.
    pub multicast: u64,
}

/// Transmit-side counters of one interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxCounters {
    /// Bytes sent.
    pub bytes: Bytes,
    /// Packets sent.
    pub packets: Packets,
    /// Transmit errors.
    pub errs: u64,
    /// Packets dropped.
    pub drop: u64,
    /// FIFO errors.
    pub fifo: u64,
    /// Collisions.
    pub colls: u64,
    /// Carrier errors.
    pub carrier: u64,
    /// Compressed packets.
    pub compressed: u64,
}

/// One interface line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetDevStats {
    /// Interface name.
    pub name: String,
    /// Receive counters.
    pub rx: RxCounters,
    /// Transmit counters.
    pub tx: TxCounters,
}

/// Parsed `/proc/net/dev`, interfaces in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetDev {
    /// Interfaces.
    pub ifaces: Vec<NetDevStats>,
}

impl NetDev {
    /// Counters of interface `name`.
    pub fn get(&self, name: &str) -> Option<&NetDevStats> {
        self.ifaces.iter().find(|i| i.name == name)
    }
}

/// Parse the text of `/proc/net/dev`.
pub fn parse_netdev(text: &str) -> Result<NetDev, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let mut out = NetDev::default();
    let mut saw_header = false;
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if line.contains('|') {
            saw_header = true;
            continue;
        }
        if !saw_header {
            return Err(ParseError::format(ln, "missing the `Inter-|` header"));
        }
        let (name, rest) = line
            .split_once(':')
            .ok_or_else(|| ParseError::format(ln, "no `:` after the interface name"))?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(ParseError::invalid(ln, "interface name", name));
        }
        let mut v = [0u64; 16];
        let mut n = 0;
        for tok in rest.split_whitespace() {
            if n == 16 {
                return Err(ParseError::format(
                    ln,
                    format!("{name}: more than 16 counters"),
                ));
            }
            v[n] = tok
                .parse()
                .map_err(|_| ParseError::invalid(ln, "interface counter", tok))?;
            n += 1;
        }
        if n != 16 {
            return Err(ParseError::format(
                ln,
                format!("{name}: {n} counters, expected 16"),
            ));
        }
        out.ifaces.push(NetDevStats {
            name: name.to_string(),
            rx: RxCounters {
                bytes: Bytes(v[0]),
                packets: Packets(v[1]),
                errs: v[2],
                drop: v[3],
                fifo: v[4],
                frame: v[5],
                compressed: v[6],
                multicast: v[7],
            },
            tx: TxCounters {
                bytes: Bytes(v[8]),
                packets: Packets(v[9]),
                errs: v[10],
                drop: v[11],
                fifo: v[12],
                colls: v[13],
                carrier: v[14],
                compressed: v[15],
            },
        });
    }
    if !saw_header {
        return Err(ParseError::format(1, "missing the `Inter-|` header"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Captured on this project's machine: KVM 2 vCPU, kernel 6.18.
    const KVM_6_18: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0
  ifb0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  ifb1:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  eth0: 51831095    2412    0    0    0     0          0         0   128618    1214    0    0    0     0       0          0
";

    // Kernel 2.6.32 layout: large byte counts glued to the colon; values illustrative.
    const OLD_2_6: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  123456     789    0    0    0     0          0         0   123456     789    0    0    0     0       0          0
  eth0:4294967296 3000000 2 17 0 0 0 55 987654321 2000000 0 3 0 0 0 0
";

    #[test]
    fn parses_kvm_6_18() {
        let d = parse_netdev(KVM_6_18).unwrap();
        assert_eq!(d.ifaces.len(), 4);
        let e = d.get("eth0").unwrap();
        assert_eq!(e.rx.bytes, Bytes(51831095));
        assert_eq!(e.rx.packets, Packets(2412));
        assert_eq!(e.tx.packets, Packets(1214));
        assert_eq!(d.ifaces[0].name, "lo");
    }

    #[test]
    fn parses_glued_old_layout() {
        let d = parse_netdev(OLD_2_6).unwrap();
        let e = d.get("eth0").unwrap();
        assert_eq!(e.rx.bytes, Bytes(4294967296));
        assert_eq!(e.rx.drop, 17);
        assert_eq!(e.rx.multicast, 55);
        assert_eq!(e.tx.drop, 3);
    }

    #[test]
    fn header_only_is_no_interfaces() {
        let hdr: String = KVM_6_18.lines().take(2).collect::<Vec<_>>().join("\n");
        assert!(parse_netdev(&hdr).unwrap().ifaces.is_empty());
    }

    #[test]
    fn garbage_and_truncation() {
        assert_eq!(parse_netdev(""), Err(ParseError::Empty));
        assert!(parse_netdev("eth0: 1 2 3\n").is_err());
        let cut = &KVM_6_18[..KVM_6_18.find("eth0:").unwrap() + 20];
        assert!(parse_netdev(cut).is_err());
        let bad = KVM_6_18.replace("51831095", "5183x095");
        assert!(parse_netdev(&bad).is_err());
        let extra = KVM_6_18.replace("       0          0\n", "       0          0 9\n");
        assert!(parse_netdev(&extra).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") {
            let _ = parse_netdev(&s);
        }

        #[test]
        fn never_panics_on_cut_real_text(n in 0usize..800) {
            let n = n.min(KVM_6_18.len());
            let _ = parse_netdev(&KVM_6_18[..n]);
        }
    }
}
