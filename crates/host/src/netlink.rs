//! Ethtool state read live over netlink: the ethtool generic-netlink family
//! (kernel 5.6+) for channels, rings, coalescing and features, and rtnetlink
//! `IFLA_PERM_ADDRESS` (5.6+) for the permanent MAC.
//!
//! The few messages are encoded here over a `rustix` netlink socket instead
//! of pulling in the rust-netlink crates: those are async (tokio) and their
//! ethtool crate covers less than we need (no string sets), while these
//! GET requests are each one datagram out and one back. Pure encoders and
//! decoders (`Attrs`, `parse_*`) are unit-tested on bytes.

use crate::Root;
use model::snapshot::{Channels, DriverInfo, EthtoolState, Feature, Probe, Rings};
use rustix::fd::OwnedFd;
use rustix::net::netlink::{self, SocketAddrNetlink};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLA_F_NESTED: u16 = 1 << 15;
const NLA_TYPE_MASK: u16 = 0x3fff;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const RTM_GETLINK: u16 = 18;
const IFLA_IFNAME: u16 = 3;
const IFLA_EXT_MASK: u16 = 29;
const RTEXT_FILTER_SKIP_STATS: u32 = 1 << 3;
const IFLA_PERM_ADDRESS: u16 = 54;

/// ethtool netlink message and attribute numbers (`uapi/linux/ethtool_netlink.h`).
mod eth {
    pub const STRSET_GET: u8 = 1;
    pub const FEATURES_GET: u8 = 11;
    pub const RINGS_GET: u8 = 15;
    pub const CHANNELS_GET: u8 = 17;
    pub const COALESCE_GET: u8 = 19;
    pub const HEADER_DEV_NAME: u16 = 2;
    pub const HEADER_FLAGS: u16 = 3;
    pub const FLAG_COMPACT_BITSETS: u32 = 1;
    pub const STRSET_STRINGSETS: u16 = 2;
    pub const STRINGSETS_STRINGSET: u16 = 1;
    pub const STRINGSET_ID: u16 = 1;
    pub const STRINGSET_STRINGS: u16 = 3;
    pub const STRINGS_STRING: u16 = 1;
    pub const STRING_INDEX: u16 = 1;
    pub const STRING_VALUE: u16 = 2;
    pub const ETH_SS_FEATURES: u32 = 4;
    pub const FEATURES_HW: u16 = 2;
    pub const FEATURES_ACTIVE: u16 = 4;
    pub const FEATURES_NOCHANGE: u16 = 5;
    pub const BITSET_SIZE: u16 = 2;
    pub const BITSET_VALUE: u16 = 4;
}

/// ethtool's names for `ETHTOOL_A_COALESCE_*` attributes 2..=28 (as
/// `ethtool --json -c` prints them); `u8` ones are booleans.
pub(crate) const COALESCE_NAMES: &[(u16, &str, bool)] = &[
    (2, "rx-usecs", false),
    (3, "rx-frames", false),
    (4, "rx-usecs-irq", false),
    (5, "rx-frames-irq", false),
    (6, "tx-usecs", false),
    (7, "tx-frames", false),
    (8, "tx-usecs-irq", false),
    (9, "tx-frames-irq", false),
    (10, "stats-block-usecs", false),
    (11, "adaptive-rx", true),
    (12, "adaptive-tx", true),
    (13, "pkt-rate-low", false),
    (14, "rx-usecs-low", false),
    (15, "rx-frames-low", false),
    (16, "tx-usecs-low", false),
    (17, "tx-frames-low", false),
    (18, "pkt-rate-high", false),
    (19, "rx-usecs-high", false),
    (20, "rx-frames-high", false),
    (21, "tx-usecs-high", false),
    (22, "tx-frames-high", false),
    (23, "sample-interval", false),
    (24, "cqe-mode-tx", true),
    (25, "cqe-mode-rx", true),
    (26, "tx-aggr-max-bytes", false),
    (27, "tx-aggr-max-frames", false),
    (28, "tx-aggr-time-usecs", false),
];

/// A failed netlink exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NlError {
    /// The kernel answered with this errno (positive).
    Errno(i32),
    /// The socket call failed.
    Io(String),
    /// The reply did not parse.
    Malformed(String),
}

impl std::fmt::Display for NlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NlError::Errno(e) => write!(f, "{}", std::io::Error::from_raw_os_error(*e)),
            NlError::Io(m) => write!(f, "{m}"),
            NlError::Malformed(m) => write!(f, "malformed reply: {m}"),
        }
    }
}

const EOPNOTSUPP: i32 = 95;
const ENOENT: i32 = 2;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Builder of netlink attributes.
#[derive(Debug, Default)]
pub struct AttrBuf(Vec<u8>);

impl AttrBuf {
    /// Append an attribute with raw payload.
    pub fn put(&mut self, ty: u16, payload: &[u8]) -> &mut Self {
        let len = 4 + payload.len();
        self.0.extend_from_slice(&(len as u16).to_le_bytes());
        self.0.extend_from_slice(&ty.to_le_bytes());
        self.0.extend_from_slice(payload);
        self.0.resize(align4(self.0.len()), 0);
        self
    }
    /// Append a NUL-terminated string.
    pub fn put_str(&mut self, ty: u16, s: &str) -> &mut Self {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        self.put(ty, &b)
    }
    /// Append a u32.
    pub fn put_u32(&mut self, ty: u16, v: u32) -> &mut Self {
        self.put(ty, &v.to_le_bytes())
    }
    /// Append a nested attribute.
    pub fn nest(&mut self, ty: u16, inner: &AttrBuf) -> &mut Self {
        self.put(ty | NLA_F_NESTED, &inner.0)
    }
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Iterate over the attributes in `buf` as `(type, payload)`; stops at the
/// first malformed one.
pub fn attrs(buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut off = 0;
    std::iter::from_fn(move || {
        if off + 4 > buf.len() {
            return None;
        }
        let len = u16::from_le_bytes([buf[off], buf[off + 1]]) as usize;
        let ty = u16::from_le_bytes([buf[off + 2], buf[off + 3]]) & NLA_TYPE_MASK;
        if len < 4 || off + len > buf.len() {
            return None;
        }
        let payload = &buf[off + 4..off + len];
        off += align4(len);
        Some((ty, payload))
    })
}

fn attr(buf: &[u8], ty: u16) -> Option<&[u8]> {
    attrs(buf).find(|(t, _)| *t == ty).map(|(_, p)| p)
}

fn as_u32(p: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(p.get(..4)?.try_into().ok()?))
}

fn as_u16(p: &[u8]) -> Option<u16> {
    Some(u16::from_le_bytes(p.get(..2)?.try_into().ok()?))
}

fn as_str(p: &[u8]) -> String {
    let end = p.iter().position(|b| *b == 0).unwrap_or(p.len());
    String::from_utf8_lossy(&p[..end]).into_owned()
}

fn u32_attr(buf: &[u8], ty: u16) -> Option<u32> {
    attr(buf, ty).and_then(as_u32)
}

/// Decode a `CHANNELS_GET` reply's attributes.
pub fn parse_channels(a: &[u8]) -> Channels {
    Channels {
        rx_max: u32_attr(a, 2),
        tx_max: u32_attr(a, 3),
        other_max: u32_attr(a, 4),
        combined_max: u32_attr(a, 5),
        rx: u32_attr(a, 6),
        tx: u32_attr(a, 7),
        other: u32_attr(a, 8),
        combined: u32_attr(a, 9),
    }
}

/// Decode a `RINGS_GET` reply's attributes.
pub fn parse_rings(a: &[u8]) -> Rings {
    Rings {
        rx_max: u32_attr(a, 2),
        rx_mini_max: u32_attr(a, 3),
        rx_jumbo_max: u32_attr(a, 4),
        tx_max: u32_attr(a, 5),
        rx: u32_attr(a, 6),
        rx_mini: u32_attr(a, 7),
        rx_jumbo: u32_attr(a, 8),
        tx: u32_attr(a, 9),
    }
}

/// Decode a `COALESCE_GET` reply's attributes: only those the driver sent.
pub fn parse_coalesce(a: &[u8]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (ty, p) in attrs(a) {
        if let Some((_, name, is_bool)) = COALESCE_NAMES.iter().find(|(t, _, _)| *t == ty) {
            let v = if *is_bool {
                p.first().map(|b| u64::from(*b))
            } else {
                as_u32(p).map(u64::from)
            };
            if let Some(v) = v {
                out.insert((*name).to_string(), v);
            }
        }
    }
    out
}

/// Decode a `STRSET_GET` reply into the strings of its first set, by index.
pub fn parse_strset(a: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some(sets) = attr(a, eth::STRSET_STRINGSETS) else {
        return out;
    };
    let Some(set) = attr(sets, eth::STRINGSETS_STRINGSET) else {
        return out;
    };
    let Some(strings) = attr(set, eth::STRINGSET_STRINGS) else {
        return out;
    };
    for (ty, s) in attrs(strings) {
        if ty != eth::STRINGS_STRING {
            continue;
        }
        let (Some(i), Some(v)) = (u32_attr(s, eth::STRING_INDEX), attr(s, eth::STRING_VALUE))
        else {
            continue;
        };
        let i = i as usize;
        if i >= 4096 {
            continue;
        }
        if out.len() <= i {
            out.resize(i + 1, String::new());
        }
        out[i] = as_str(v);
    }
    out
}

/// A compact bitset (`SIZE` + `VALUE`) as a bit test.
fn compact_bits(a: &[u8], ty: u16) -> Vec<u8> {
    attr(a, ty)
        .and_then(|b| attr(b, eth::BITSET_VALUE))
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

fn bit(v: &[u8], i: usize) -> bool {
    v.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
}

/// Decode a compact `FEATURES_GET` reply with the feature names: a feature
/// is fixed when it is not in `hw` (changeable) or is in `nochange`, as
/// `ethtool -k` prints `[fixed]`.
pub fn parse_features(a: &[u8], names: &[String]) -> BTreeMap<String, Feature> {
    let hw = compact_bits(a, eth::FEATURES_HW);
    let active = compact_bits(a, eth::FEATURES_ACTIVE);
    let nochange = compact_bits(a, eth::FEATURES_NOCHANGE);
    let size = attr(a, eth::FEATURES_ACTIVE)
        .and_then(|b| u32_attr(b, eth::BITSET_SIZE))
        .map_or(names.len(), |s| s as usize);
    let mut out = BTreeMap::new();
    for (i, name) in names.iter().enumerate().take(size) {
        if name.is_empty() {
            continue;
        }
        out.insert(
            name.clone(),
            Feature {
                active: bit(&active, i),
                fixed: !bit(&hw, i) || bit(&nochange, i),
            },
        );
    }
    out
}

/// Format a hardware address.
pub fn format_mac(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

static SEQ: AtomicU32 = AtomicU32::new(1);

/// One netlink socket (generic or route).
struct Sock {
    fd: OwnedFd,
}

impl Sock {
    fn open(protocol: Option<rustix::net::Protocol>) -> Result<Sock, NlError> {
        let fd = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, protocol)
            .map_err(|e| NlError::Io(format!("netlink socket: {e}")))?;
        rustix::net::bind(&fd, &SocketAddrNetlink::new(0, 0))
            .map_err(|e| NlError::Io(format!("netlink bind: {e}")))?;
        rustix::net::sockopt::set_socket_timeout(
            &fd,
            rustix::net::sockopt::Timeout::Recv,
            Some(Duration::from_secs(2)),
        )
        .map_err(|e| NlError::Io(format!("netlink timeout: {e}")))?;
        Ok(Sock { fd })
    }

    /// Send one request and return the payload of its reply (after the
    /// 16-byte nlmsghdr).
    fn request(&self, ty: u16, payload: &[u8]) -> Result<Vec<u8>, NlError> {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let mut msg = Vec::with_capacity(16 + payload.len());
        msg.extend_from_slice(&((16 + payload.len()) as u32).to_le_bytes());
        msg.extend_from_slice(&ty.to_le_bytes());
        msg.extend_from_slice(&NLM_F_REQUEST.to_le_bytes());
        msg.extend_from_slice(&seq.to_le_bytes());
        msg.extend_from_slice(&0u32.to_le_bytes());
        msg.extend_from_slice(payload);
        rustix::net::sendto(
            &self.fd,
            &msg,
            SendFlags::empty(),
            &SocketAddrNetlink::new(0, 0),
        )
        .map_err(|e| NlError::Io(format!("netlink send: {e}")))?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let (_, n) = rustix::net::recv(&self.fd, &mut buf[..], RecvFlags::empty())
                .map_err(|e| NlError::Io(format!("netlink recv: {e}")))?;
            let mut off = 0;
            while off + 16 <= n {
                let len = as_u32(&buf[off..]).unwrap_or(0) as usize;
                let mty = as_u16(&buf[off + 4..]).unwrap_or(0);
                let mseq = as_u32(&buf[off + 8..]).unwrap_or(0);
                if len < 16 || off + len > n {
                    return Err(NlError::Malformed(format!("message length {len}")));
                }
                let body = &buf[off + 16..off + len];
                if mseq == seq {
                    if mty == NLMSG_ERROR {
                        let code = body
                            .get(..4)
                            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                            .unwrap_or(0);
                        if code != 0 {
                            return Err(NlError::Errno(-code));
                        }
                    } else {
                        return Ok(body.to_vec());
                    }
                }
                off += align4(len);
            }
        }
    }

    /// A generic-netlink request: returns the attributes of the reply.
    fn genl(&self, family: u16, cmd: u8, attrs: &AttrBuf) -> Result<Vec<u8>, NlError> {
        let mut p = vec![cmd, 1, 0, 0];
        p.extend_from_slice(attrs.bytes());
        let body = self.request(family, &p)?;
        Ok(body.get(4..).unwrap_or_default().to_vec())
    }
}

fn resolve_family(s: &Sock, name: &str) -> Result<u16, NlError> {
    let mut a = AttrBuf::default();
    a.put_str(CTRL_ATTR_FAMILY_NAME, name);
    let r = s.genl(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, &a)?;
    attr(&r, CTRL_ATTR_FAMILY_ID)
        .and_then(as_u16)
        .ok_or_else(|| NlError::Malformed("no family id".into()))
}

/// The permanent MAC over rtnetlink (`IFLA_PERM_ADDRESS`, kernel 5.6+).
pub fn perm_addr(iface: &str) -> Result<Option<String>, NlError> {
    let s = Sock::open(None)?;
    let mut p = vec![0u8; 16];
    let mut a = AttrBuf::default();
    a.put_str(IFLA_IFNAME, iface);
    a.put_u32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    p.extend_from_slice(a.bytes());
    let r = s.request(RTM_GETLINK, &p)?;
    Ok(attr(r.get(16..).unwrap_or_default(), IFLA_PERM_ADDRESS)
        .filter(|m| m.iter().any(|b| *b != 0))
        .map(format_mac))
}

fn probe<T>(iface: &str, what: &str, r: Result<T, NlError>) -> Probe<T> {
    match r {
        Ok(value) => Probe::Ok { value },
        Err(NlError::Errno(EOPNOTSUPP)) => Probe::Unsupported {
            reason: format!("{iface}: the driver does not report {what} (EOPNOTSUPP)"),
        },
        Err(e) => Probe::Error {
            message: format!("ethtool netlink {what} of {iface}: {e}"),
        },
    }
}

/// Live ethtool state over netlink; driver info from sysfs (the
/// `ETHTOOL_GDRVINFO` ioctl is not used, so `version`/`firmware` stay `None`
/// unless `/sys/module/<driver>/version` exists).
#[derive(Debug, Clone)]
pub struct NetlinkEthtool {
    sysfs: Root,
}

impl NetlinkEthtool {
    /// Read the live host.
    pub fn new() -> Self {
        NetlinkEthtool {
            sysfs: Root::live(),
        }
    }

    fn driver_info(&self, iface: &str) -> Probe<DriverInfo> {
        let dev = format!("/sys/class/net/{iface}/device");
        let Ok(driver) = self.sysfs.link_name(format!("{dev}/driver")) else {
            return Probe::Unsupported {
                reason: format!("{iface} has no device driver (virtual interface)"),
            };
        };
        let name_of = |p: &str| {
            std::fs::canonicalize(p)
                .ok()
                .and_then(|p| p.file_name().map(|s| s.to_string_lossy().into_owned()))
        };
        let dev_name = name_of(&dev);
        let parent = name_of(&format!("{dev}/.."));
        let bus_info = match (&dev_name, &parent) {
            (Some(d), _) if model::parse::sysfs::is_pci_address(d) => Some(d.clone()),
            (_, Some(p)) if model::parse::sysfs::is_pci_address(p) => Some(p.clone()),
            (d, _) => d.clone(),
        };
        let version = self
            .sysfs
            .read_trim(format!("/sys/module/{driver}/version"))
            .ok();
        Probe::Ok {
            value: DriverInfo {
                driver: Some(driver),
                version,
                firmware: None,
                bus_info,
            },
        }
    }
}

impl Default for NetlinkEthtool {
    fn default() -> Self {
        Self::new()
    }
}

fn header(iface: &str, flags: u32) -> AttrBuf {
    let mut h = AttrBuf::default();
    h.put_str(eth::HEADER_DEV_NAME, iface);
    if flags != 0 {
        h.put_u32(eth::HEADER_FLAGS, flags);
    }
    let mut a = AttrBuf::default();
    a.nest(1, &h);
    a
}

impl NetlinkEthtool {
    /// The ethtool state of `iface`. Never fails as a whole: each part is a
    /// [`Probe`].
    pub fn state(&self, iface: &str) -> EthtoolState {
        let perm_mac = perm_addr(iface).ok().flatten();
        let driver = self.driver_info(iface);
        let sock = Sock::open(Some(netlink::GENERIC)).and_then(|s| {
            let fam = resolve_family(&s, "ethtool").map_err(|e| match e {
                NlError::Errno(ENOENT) => NlError::Errno(EOPNOTSUPP),
                e => e,
            })?;
            Ok((s, fam))
        });
        let (s, fam) = match sock {
            Ok(x) => x,
            Err(NlError::Errno(EOPNOTSUPP)) => {
                let u = || "this kernel has no ethtool netlink family (before 5.6)".to_string();
                return EthtoolState {
                    driver,
                    channels: Probe::Unsupported { reason: u() },
                    rings: Probe::Unsupported { reason: u() },
                    coalesce: Probe::Unsupported { reason: u() },
                    features: Probe::Unsupported { reason: u() },
                    perm_mac,
                    stats: Probe::Absent,
                };
            }
            Err(e) => {
                let m = || format!("ethtool netlink ({iface}): {e}");
                return EthtoolState {
                    driver,
                    channels: Probe::Error { message: m() },
                    rings: Probe::Error { message: m() },
                    coalesce: Probe::Error { message: m() },
                    features: Probe::Error { message: m() },
                    perm_mac,
                    stats: Probe::Absent,
                };
            }
        };
        let h = header(iface, 0);
        let channels = probe(
            iface,
            "channels",
            s.genl(fam, eth::CHANNELS_GET, &h)
                .map(|a| parse_channels(&a)),
        );
        let rings = probe(
            iface,
            "rings",
            s.genl(fam, eth::RINGS_GET, &h).map(|a| parse_rings(&a)),
        );
        let coalesce = probe(
            iface,
            "coalescing",
            s.genl(fam, eth::COALESCE_GET, &h)
                .map(|a| parse_coalesce(&a)),
        );
        let features = probe(iface, "features", {
            let mut set = AttrBuf::default();
            set.put_u32(eth::STRINGSET_ID, eth::ETH_SS_FEATURES);
            let mut sets = AttrBuf::default();
            sets.nest(eth::STRINGSETS_STRINGSET, &set);
            let mut a = header(iface, 0);
            a.nest(eth::STRSET_STRINGSETS, &sets);
            s.genl(fam, eth::STRSET_GET, &a).and_then(|names| {
                let names = parse_strset(&names);
                let h = header(iface, eth::FLAG_COMPACT_BITSETS);
                s.genl(fam, eth::FEATURES_GET, &h)
                    .map(|f| parse_features(&f, &names))
            })
        });
        EthtoolState {
            driver,
            channels,
            rings,
            coalesce,
            features,
            perm_mac,
            stats: Probe::Absent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_roundtrip_and_padding() {
        let mut a = AttrBuf::default();
        a.put_str(2, "eth0").put_u32(9, 4).put(11, &[1]);
        assert_eq!(a.bytes().len() % 4, 0);
        let got: Vec<(u16, Vec<u8>)> = attrs(a.bytes()).map(|(t, p)| (t, p.to_vec())).collect();
        assert_eq!(got[0], (2, b"eth0\0".to_vec()));
        assert_eq!(as_u32(&got[1].1), Some(4));
        assert_eq!(got[2], (11, vec![1]));
        // Truncated buffers stop iteration instead of panicking.
        let b = a.bytes();
        for cut in 0..b.len() {
            let _ = attrs(&b[..cut]).count();
        }
        assert_eq!(attrs(&[0xff, 0xff, 0, 0]).count(), 0);
    }

    #[test]
    fn channels_rings_coalesce() {
        let mut a = AttrBuf::default();
        a.put_u32(5, 2).put_u32(9, 2);
        let c = parse_channels(a.bytes());
        assert_eq!((c.combined, c.combined_max, c.rx), (Some(2), Some(2), None));
        let mut r = AttrBuf::default();
        r.put_u32(2, 4096)
            .put_u32(6, 512)
            .put_u32(5, 4096)
            .put_u32(9, 256);
        let r = parse_rings(r.bytes());
        assert_eq!(
            (r.rx, r.rx_max, r.tx, r.tx_max),
            (Some(512), Some(4096), Some(256), Some(4096))
        );
        let mut co = AttrBuf::default();
        co.put_u32(2, 50).put(11, &[1]).put_u32(99, 7);
        let co = parse_coalesce(co.bytes());
        assert_eq!(co.get("rx-usecs"), Some(&50));
        assert_eq!(co.get("adaptive-rx"), Some(&1));
        assert_eq!(co.len(), 2);
    }

    #[test]
    fn features_from_compact_bitsets() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let bits = |v: u8| {
            let mut b = AttrBuf::default();
            b.put_u32(eth::BITSET_SIZE, 3)
                .put(eth::BITSET_VALUE, &[v, 0, 0, 0]);
            b
        };
        let mut a = AttrBuf::default();
        a.nest(eth::FEATURES_HW, &bits(0b011))
            .nest(eth::FEATURES_ACTIVE, &bits(0b101))
            .nest(eth::FEATURES_NOCHANGE, &bits(0b010));
        let f = parse_features(a.bytes(), &names);
        assert_eq!(
            f["a"],
            Feature {
                active: true,
                fixed: false
            }
        );
        assert_eq!(
            f["b"],
            Feature {
                active: false,
                fixed: true
            }
        );
        assert_eq!(
            f["c"],
            Feature {
                active: true,
                fixed: true
            }
        );
    }

    #[test]
    fn strset() {
        let mut s0 = AttrBuf::default();
        s0.put_u32(eth::STRING_INDEX, 1)
            .put_str(eth::STRING_VALUE, "rx-gro");
        let mut strings = AttrBuf::default();
        strings.nest(eth::STRINGS_STRING, &s0);
        let mut set = AttrBuf::default();
        set.put_u32(eth::STRINGSET_ID, 4)
            .nest(eth::STRINGSET_STRINGS, &strings);
        let mut sets = AttrBuf::default();
        sets.nest(eth::STRINGSETS_STRINGSET, &set);
        let mut a = AttrBuf::default();
        a.nest(eth::STRSET_STRINGSETS, &sets);
        assert_eq!(
            parse_strset(a.bytes()),
            vec![String::new(), "rx-gro".to_string()]
        );
        assert!(parse_strset(&[]).is_empty());
    }

    #[test]
    fn mac() {
        assert_eq!(format_mac(&[2, 0xfc, 0, 0, 0, 1]), "02:fc:00:00:00:01");
    }
}
