//! `ethtool -S IF` (and `ethtool -S IF --all-groups`): a NIC driver's own
//! counters, as ethtool(8) prints them, and the per-queue view of them.
//!
//! The values of the driver's string set (`ETH_SS_STATS`) only come from
//! the `ETHTOOL_GSTATS` ioctl: `host` issues it itself (the audited
//! `nettune-sys` crate) and runs ethtool(8) only when it is refused, or for
//! the standard groups; this module parses ethtool's text, which has not
//! changed since ethtool 2.x:
//!
//! ```text
//! NIC statistics:
//!      rx_queue_0_packets: 18
//!      tx_queue_0_bytes: 2312
//! ```
//!
//! and, with `--all-groups` (ethtool 5.13+, kernel 5.13+), the standard
//! groups (`eth-phy`, `eth-mac`, `eth-ctrl`, `rmon`) under
//! `Standard stats for IF:` as `eth-mac-FramesReceivedOK: 12`.
//!
//! [`queues`] normalizes the per-queue naming schemes of the common drivers
//! (ixgbe/igb/ice/virtio_net/veth `rx_queue_0_packets`, i40e/iavf/sfc
//! `rx-0.packets`, ena `queue_0_rx_cnt`, mlx4/mlx5/virtio_net (6.x)
//! `rx0_packets`, hns3 `rxq0_pktnum_rcd`, bnxt `[0]: rx_ucast_packets`, gve
//! `rx_dropped_pkt[0]`) into [`QueueCounters`], keeping every raw name.

use crate::error::ParseError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most counters one interface may report (mlx5 with 64 channels prints
/// about 6,000); further lines are refused, so a hostile file cannot grow memory.
pub const MAX_COUNTERS: usize = 65_536;

/// Longest counter name kept (ETH_GSTRING_LEN is 32; a bit of slack).
const MAX_NAME: usize = 128;

pub use crate::snapshot::NicStats;

/// Direction of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueDir {
    /// Receive queue.
    Rx,
    /// Transmit queue.
    Tx,
}

impl QueueDir {
    /// `rx` or `tx`.
    pub fn name(self) -> &'static str {
        match self {
            QueueDir::Rx => "rx",
            QueueDir::Tx => "tx",
        }
    }
}

/// What a per-queue counter counts, after normalization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueMetric {
    /// Packets (`packets`, `pkts`, ena's `cnt`, hns3's `pktnum_rcd`).
    Packets,
    /// Unicast/multicast/broadcast packets (bnxt), summed into packets.
    CastPackets,
    /// Bytes.
    Bytes,
    /// Drops (`drops`, `dropped`, `drop`, gve's `dropped_pkt`).
    Drops,
    /// Anything else (kept raw only).
    Other,
}

/// One queue's counters, normalized from the driver's names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCounters {
    /// Receive or transmit.
    pub dir: QueueDir,
    /// Queue index.
    pub index: u32,
    /// Packets; `None` when the driver reports none for this queue.
    pub packets: Option<u64>,
    /// Bytes.
    pub bytes: Option<u64>,
    /// Drops.
    pub drops: Option<u64>,
    /// Every counter of this queue, by the driver's own name.
    pub raw: BTreeMap<String, u64>,
}

/// A per-queue counter name split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueName<'a> {
    /// Receive or transmit.
    pub dir: QueueDir,
    /// Queue index.
    pub index: u32,
    /// The counter's own part, direction prefix removed (`packets`, `cnt`).
    pub metric: &'a str,
}

fn dir_of(s: &str) -> Option<QueueDir> {
    match s {
        "rx" => Some(QueueDir::Rx),
        "tx" => Some(QueueDir::Tx),
        _ => None,
    }
}

/// Leading decimal digits of `s` as a queue index (at most 5 digits, so
/// `rx_65535_...` size buckets and absurd numbers are not queues), and the rest.
fn index(s: &str) -> Option<(u32, &str)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 || n > 5 {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

/// Split `metric` of a queue counter, dropping a repeated direction prefix
/// (sfc `rx-0.rx_packets`, bnxt `rx_ucast_packets`).
fn strip_dir(dir: QueueDir, metric: &str) -> &str {
    metric
        .strip_prefix(dir.name())
        .and_then(|m| m.strip_prefix('_'))
        .unwrap_or(metric)
}

fn ok(dir: QueueDir, index: u32, metric: &str) -> Option<QueueName<'_>> {
    (!metric.is_empty()).then_some(QueueName { dir, index, metric })
}

/// Recognize a per-queue counter name; `None` for NIC-wide counters.
pub fn queue_name(name: &str) -> Option<QueueName<'_>> {
    // bnxt: `[0]: rx_ucast_packets`; qede-like `0: rx_...` is not taken.
    if let Some(rest) = name.strip_prefix('[') {
        let (i, rest) = index(rest)?;
        let rest = rest.strip_prefix("]:")?.trim_start();
        let (d, m) = rest.split_once('_')?;
        let dir = dir_of(d)?;
        return ok(dir, i, m);
    }
    // gve: `rx_dropped_pkt[0]`.
    if let Some(body) = name.strip_suffix(']') {
        let (head, num) = body.rsplit_once('[')?;
        let (i, tail) = index(num)?;
        if !tail.is_empty() {
            return None;
        }
        let (d, m) = head.split_once('_')?;
        return ok(dir_of(d)?, i, m);
    }
    // ena: `queue_0_rx_cnt`; also `queue_0_tx_bytes`.
    if let Some(rest) = name.strip_prefix("queue_") {
        let (i, rest) = index(rest)?;
        let rest = rest.strip_prefix('_')?;
        let (d, m) = rest.split_once('_')?;
        return ok(dir_of(d)?, i, m);
    }
    let d = name.get(..2).and_then(dir_of)?;
    let rest = &name[2..];
    // ixgbe, igb, ice, virtio_net (before 6.10), veth: `rx_queue_0_packets`.
    if let Some(r) = rest.strip_prefix("_queue_") {
        let (i, r) = index(r)?;
        return ok(d, i, r.strip_prefix('_')?);
    }
    // i40e, iavf: `rx-0.packets`; sfc: `rx-0.rx_packets`.
    if let Some(r) = rest.strip_prefix('-') {
        let (i, r) = index(r)?;
        return ok(d, i, strip_dir(d, r.strip_prefix('.')?));
    }
    // hns3: `rxq0_pktnum_rcd`; nfp-like `rxq_0_pkts`.
    if let Some(r) = rest.strip_prefix('q') {
        let r = r.strip_prefix('_').unwrap_or(r);
        let (i, r) = index(r)?;
        return ok(d, i, r.strip_prefix('_')?);
    }
    // mlx4, mlx5, virtio_net (6.10+): `rx0_packets`, `tx3_dropped`.
    let (i, r) = index(rest)?;
    ok(d, i, r.strip_prefix('_')?)
}

/// What a queue counter's metric counts.
pub fn metric_kind(metric: &str) -> QueueMetric {
    match metric {
        "packets" | "pkts" | "cnt" | "pktnum_rcd" | "pkts_num" => QueueMetric::Packets,
        "ucast_packets" | "mcast_packets" | "bcast_packets" => QueueMetric::CastPackets,
        "bytes" => QueueMetric::Bytes,
        "drops" | "dropped" | "drop" | "dropped_pkt" => QueueMetric::Drops,
        _ => QueueMetric::Other,
    }
}

/// The per-queue view of driver counters, sorted by direction then index.
/// `packets` is the plain packet count when the driver has one, else the
/// sum of unicast+multicast+broadcast (bnxt). `xdp_packets` (veth's only
/// per-queue packet counter) is kept raw, not taken for packets: it counts
/// only packets through veth's NAPI path and stayed 0 under ping traffic
/// between two namespaces on kernel 6.18 (`tests/data/ethtool-S/veth-6.18.txt`).
pub fn queues(driver: &BTreeMap<String, u64>) -> Vec<QueueCounters> {
    #[derive(Default)]
    struct Acc {
        packets: Option<u64>,
        cast: Option<u64>,
        bytes: Option<u64>,
        drops: Option<u64>,
        raw: BTreeMap<String, u64>,
    }
    let mut by: BTreeMap<(QueueDir, u32), Acc> = BTreeMap::new();
    for (name, v) in driver {
        let Some(q) = queue_name(name) else {
            continue;
        };
        let a = by.entry((q.dir, q.index)).or_default();
        a.raw.insert(name.clone(), *v);
        let add = |slot: &mut Option<u64>| *slot = Some(slot.unwrap_or(0).saturating_add(*v));
        match metric_kind(q.metric) {
            QueueMetric::Packets => add(&mut a.packets),
            QueueMetric::CastPackets => add(&mut a.cast),
            QueueMetric::Bytes => add(&mut a.bytes),
            QueueMetric::Drops => add(&mut a.drops),
            QueueMetric::Other => {}
        }
    }
    by.into_iter()
        .map(|((dir, index), a)| QueueCounters {
            dir,
            index,
            packets: a.packets.or(a.cast),
            bytes: a.bytes,
            drops: a.drops,
            raw: a.raw,
        })
        .collect()
}

impl NicStats {
    /// The per-queue view of [`NicStats::driver`] (see [`queues`]).
    pub fn queues(&self) -> Vec<QueueCounters> {
        queues(&self.driver)
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.driver.is_empty() && self.standard.is_empty()
    }
}

/// Which section of ethtool's output a line is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Driver,
    Standard,
}

/// Parse the text of `ethtool -S IF` and/or `ethtool -S IF --all-groups`
/// (both sections may be in one text). Lines are `name: value` under a
/// `NIC statistics:` or `Standard stats for IF:` header; a name that repeats
/// (a few drivers print duplicates) keeps its first value. A value that is
/// not a number is an error naming the line, as is a counter before any
/// header or more than [`MAX_COUNTERS`] counters. ethtool's
/// `no stats available` gives empty stats.
pub fn parse_ethtool_stats(text: &str) -> Result<NicStats, ParseError> {
    let mut out = NicStats::default();
    let mut section = Section::None;
    let mut n = 0usize;
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let t = line.trim();
        if t == "NIC statistics:" {
            section = Section::Driver;
            continue;
        }
        if t.starts_with("Standard stats for ") && t.ends_with(':') {
            section = Section::Standard;
            continue;
        }
        if t == "no stats available" {
            continue;
        }
        let Some((name, value)) = t.rsplit_once(':') else {
            return Err(ParseError::format(ln, "expected `name: value`"));
        };
        let name = name.trim();
        let value = value.trim();
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(ParseError::invalid(ln, "counter name", name));
        }
        let v: u64 = value
            .parse()
            .map_err(|_| ParseError::invalid(ln, "counter value", value))?;
        let map = match section {
            Section::Driver => &mut out.driver,
            Section::Standard => &mut out.standard,
            Section::None => {
                return Err(ParseError::format(
                    ln,
                    "counter before a `NIC statistics:` or `Standard stats for` header",
                ))
            }
        };
        n += 1;
        if n > MAX_COUNTERS {
            return Err(ParseError::format(
                ln,
                format!("more than {MAX_COUNTERS} counters"),
            ));
        }
        map.entry(name.to_string()).or_insert(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(name: &str) -> Option<(QueueDir, u32, &str)> {
        queue_name(name).map(|q| (q.dir, q.index, q.metric))
    }

    #[test]
    fn naming_schemes() {
        use QueueDir::{Rx, Tx};
        for (name, want) in [
            ("rx_queue_0_packets", Some((Rx, 0, "packets"))),
            ("tx_queue_12_bytes", Some((Tx, 12, "bytes"))),
            ("rx_queue_3_xdp_packets", Some((Rx, 3, "xdp_packets"))),
            ("rx_queue_0_drops", Some((Rx, 0, "drops"))),
            ("rx-0.packets", Some((Rx, 0, "packets"))),
            ("tx-7.rx_packets", Some((Tx, 7, "rx_packets"))),
            ("rx-2.rx_packets", Some((Rx, 2, "packets"))),
            ("queue_0_rx_cnt", Some((Rx, 0, "cnt"))),
            ("queue_3_tx_bytes", Some((Tx, 3, "bytes"))),
            ("rx0_packets", Some((Rx, 0, "packets"))),
            ("tx15_dropped", Some((Tx, 15, "dropped"))),
            ("rxq0_pktnum_rcd", Some((Rx, 0, "pktnum_rcd"))),
            ("rxq_1_pkts", Some((Rx, 1, "pkts"))),
            ("[2]: rx_ucast_packets", Some((Rx, 2, "ucast_packets"))),
            ("rx_dropped_pkt[1]", Some((Rx, 1, "dropped_pkt"))),
            // NIC-wide counters are not queues.
            ("rx_packets", None),
            ("rx_64_bytes", None),
            ("rx_65_to_127_byte_packets", None),
            ("rx_drops", None),
            ("bw_in_allowance_exceeded", None),
            ("rx_prio0_bytes", None),
            ("ch0_events", None),
            ("rx123456_packets", None),
            ("queue_0_cnt", None),
            ("rx0_", None),
            ("", None),
            ("[", None),
            ("[1]", None),
            ("x[1]", None),
        ] {
            assert_eq!(q(name), want, "{name}");
        }
    }

    fn map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn per_queue_view_prefers_plain_packets() {
        let qs = queues(&map(&[
            ("rx_queue_0_packets", 10),
            ("rx_queue_0_xdp_packets", 3),
            ("rx_queue_0_drops", 2),
            ("rx_queue_1_xdp_packets", 7),
            ("[0]: tx_ucast_packets", 5),
            ("[0]: tx_bcast_packets", 1),
            ("queue_1_rx_cnt", 9),
            ("rx_packets", 99),
        ]));
        let got: Vec<_> = qs
            .iter()
            .map(|q| (q.dir, q.index, q.packets, q.drops, q.raw.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (QueueDir::Rx, 0, Some(10), Some(2), 3),
                (QueueDir::Rx, 1, Some(9), None, 2),
                (QueueDir::Tx, 0, Some(6), None, 2),
            ]
        );
    }

    #[test]
    fn parses_both_sections_and_refuses_junk() {
        let t = "NIC statistics:\n     rx_queue_0_packets: 18\n     tx_kicks: 4\n     rx_queue_0_packets: 99\nStandard stats for eth0:\neth-mac-FramesReceivedOK: 12\n";
        let s = parse_ethtool_stats(t).unwrap();
        assert_eq!(
            s.driver,
            map(&[("rx_queue_0_packets", 18), ("tx_kicks", 4)])
        );
        assert_eq!(s.standard, map(&[("eth-mac-FramesReceivedOK", 12)]));
        assert!(parse_ethtool_stats("").unwrap().is_empty());
        assert!(parse_ethtool_stats("no stats available\n")
            .unwrap()
            .is_empty());
        // bnxt's names carry a colon themselves.
        let b = parse_ethtool_stats("NIC statistics:\n     [0]: rx_ucast_packets: 7\n").unwrap();
        assert_eq!(b.driver["[0]: rx_ucast_packets"], 7);
        for bad in [
            "NIC statistics:\n  x: -1\n",
            "NIC statistics:\n  x: 18446744073709551616\n",
            "NIC statistics:\n  x 1\n",
            "  x: 1\n",
            "NIC statistics:\n  : 1\n",
        ] {
            assert!(parse_ethtool_stats(bad).is_err(), "{bad:?}");
        }
    }
}
