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

/// Byte order of netlink headers, attributes and bitset words. The kernel
/// speaks the host's own order ([`Endian::NATIVE`]: big-endian on s390x and
/// ppc64, little-endian on x86 and arm64); the decoders take it as a
/// parameter so a big-endian capture can be decoded and tested anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// The order of this host, which its kernel uses on netlink.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// The first two bytes of `p` as a u16.
    pub fn u16(self, p: &[u8]) -> Option<u16> {
        let b: [u8; 2] = p.get(..2)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        })
    }

    /// The first four bytes of `p` as a u32.
    pub fn u32(self, p: &[u8]) -> Option<u32> {
        let b: [u8; 4] = p.get(..4)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }
}

/// Builder of netlink attributes, in the host's byte order unless built
/// with [`AttrBuf::with_endian`].
#[derive(Debug)]
pub struct AttrBuf {
    bytes: Vec<u8>,
    endian: Endian,
}

impl Default for AttrBuf {
    fn default() -> Self {
        AttrBuf::with_endian(Endian::NATIVE)
    }
}

impl AttrBuf {
    /// An empty buffer encoding in `endian` (tests build foreign captures).
    pub fn with_endian(endian: Endian) -> Self {
        AttrBuf {
            bytes: Vec::new(),
            endian,
        }
    }

    /// Append an attribute with raw payload.
    pub fn put(&mut self, ty: u16, payload: &[u8]) -> &mut Self {
        let len = u16::try_from(4 + payload.len()).unwrap_or(u16::MAX);
        let e = self.endian;
        self.bytes.extend_from_slice(&e.u16_bytes(len));
        self.bytes.extend_from_slice(&e.u16_bytes(ty));
        self.bytes.extend_from_slice(payload);
        self.bytes.resize(align4(self.bytes.len()), 0);
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
        let b = self.endian.u32_bytes(v);
        self.put(ty, &b)
    }
    /// Append a nested attribute.
    pub fn nest(&mut self, ty: u16, inner: &AttrBuf) -> &mut Self {
        self.put(ty | NLA_F_NESTED, &inner.bytes)
    }
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Iterate over the attributes in `buf` (host byte order) as `(type,
/// payload)`; stops at the first malformed one.
pub fn attrs(buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    attrs_in(buf, Endian::NATIVE)
}

/// [`attrs`] in byte order `e`.
pub fn attrs_in(buf: &[u8], e: Endian) -> impl Iterator<Item = (u16, &[u8])> {
    let mut off = 0usize;
    std::iter::from_fn(move || {
        let rest = buf.get(off..)?;
        let len = usize::from(e.u16(rest)?);
        let ty = e.u16(rest.get(2..)?)? & NLA_TYPE_MASK;
        if len < 4 || len > rest.len() {
            return None;
        }
        let payload = &rest[4..len];
        off = off.checked_add(align4(len))?;
        Some((ty, payload))
    })
}

/// Pure decoders of ethtool netlink replies in one byte order.
#[derive(Debug, Clone, Copy)]
pub struct Decoder(pub Endian);

impl Decoder {
    /// The host's decoder.
    pub const NATIVE: Decoder = Decoder(Endian::NATIVE);

    fn attr(self, buf: &[u8], ty: u16) -> Option<&[u8]> {
        attrs_in(buf, self.0)
            .find(|(t, _)| *t == ty)
            .map(|(_, p)| p)
    }

    fn u32_attr(self, buf: &[u8], ty: u16) -> Option<u32> {
        self.attr(buf, ty).and_then(|p| self.0.u32(p))
    }

    /// Decode a `CHANNELS_GET` reply's attributes.
    pub fn channels(self, a: &[u8]) -> Channels {
        let u = |t| self.u32_attr(a, t);
        Channels {
            rx_max: u(2),
            tx_max: u(3),
            other_max: u(4),
            combined_max: u(5),
            rx: u(6),
            tx: u(7),
            other: u(8),
            combined: u(9),
        }
    }

    /// Decode a `RINGS_GET` reply's attributes.
    pub fn rings(self, a: &[u8]) -> Rings {
        let u = |t| self.u32_attr(a, t);
        Rings {
            rx_max: u(2),
            rx_mini_max: u(3),
            rx_jumbo_max: u(4),
            tx_max: u(5),
            rx: u(6),
            rx_mini: u(7),
            rx_jumbo: u(8),
            tx: u(9),
        }
    }

    /// Decode a `COALESCE_GET` reply's attributes: only those the driver sent.
    pub fn coalesce(self, a: &[u8]) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (ty, p) in attrs_in(a, self.0) {
            if let Some((_, name, is_bool)) = COALESCE_NAMES.iter().find(|(t, _, _)| *t == ty) {
                let v = if *is_bool {
                    p.first().map(|b| u64::from(*b))
                } else {
                    self.0.u32(p).map(u64::from)
                };
                if let Some(v) = v {
                    out.insert((*name).to_string(), v);
                }
            }
        }
        out
    }

    /// Decode a `STRSET_GET` reply into the strings of its first set, by index.
    pub fn strset(self, a: &[u8]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let Some(strings) = self
            .attr(a, eth::STRSET_STRINGSETS)
            .and_then(|sets| self.attr(sets, eth::STRINGSETS_STRINGSET))
            .and_then(|set| self.attr(set, eth::STRINGSET_STRINGS))
        else {
            return out;
        };
        for (ty, s) in attrs_in(strings, self.0) {
            if ty != eth::STRINGS_STRING {
                continue;
            }
            let (Some(i), Some(v)) = (
                self.u32_attr(s, eth::STRING_INDEX),
                self.attr(s, eth::STRING_VALUE),
            ) else {
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

    /// A compact bitset's `VALUE`: an array of u32 words in this byte
    /// order, bit `i` in word `i / 32` (what `ethnl_put_bitset32` sends).
    fn compact_bits(self, a: &[u8], ty: u16) -> Vec<u32> {
        self.attr(a, ty)
            .and_then(|b| self.attr(b, eth::BITSET_VALUE))
            .map(|v| v.chunks_exact(4).filter_map(|w| self.0.u32(w)).collect())
            .unwrap_or_default()
    }

    /// Decode a compact `FEATURES_GET` reply with the feature names: a
    /// feature is fixed when it is not in `hw` (changeable) or is in
    /// `nochange`, as `ethtool -k` prints `[fixed]`.
    pub fn features(self, a: &[u8], names: &[String]) -> BTreeMap<String, Feature> {
        let hw = self.compact_bits(a, eth::FEATURES_HW);
        let active = self.compact_bits(a, eth::FEATURES_ACTIVE);
        let nochange = self.compact_bits(a, eth::FEATURES_NOCHANGE);
        let size = self
            .attr(a, eth::FEATURES_ACTIVE)
            .and_then(|b| self.u32_attr(b, eth::BITSET_SIZE))
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

    /// Split a datagram of netlink messages and find the reply to `seq`:
    /// `Some(Ok(body))` for its payload (after the 16-byte header),
    /// `Some(Err)` for an error or a malformed message, `None` when the
    /// datagram holds no answer to `seq` (an ACK of 0 included).
    pub fn reply(self, buf: &[u8], seq: u32) -> Option<Result<Vec<u8>, NlError>> {
        let e = self.0;
        let mut off = 0usize;
        while let Some(m) = buf.get(off..).filter(|m| m.len() >= 16) {
            let len = e.u32(m).map_or(0, |l| l as usize);
            let mty = e.u16(&m[4..]).unwrap_or(0);
            let mseq = e.u32(&m[8..]).unwrap_or(0);
            if len < 16 || len > m.len() {
                return Some(Err(NlError::Malformed(format!("message length {len}"))));
            }
            let body = &m[16..len];
            if mseq == seq {
                if mty == NLMSG_ERROR {
                    let code = e.u32(body).map_or(0, |c| c as i32);
                    if code != 0 {
                        return Some(Err(NlError::Errno(code.saturating_neg())));
                    }
                } else {
                    return Some(Ok(body.to_vec()));
                }
            }
            off = off.checked_add(align4(len))?;
        }
        None
    }

    /// An nlmsghdr (16 bytes) followed by `payload`, in this byte order.
    pub fn message(self, ty: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let e = self.0;
        let len = u32::try_from(16 + payload.len()).unwrap_or(u32::MAX);
        let mut msg = Vec::with_capacity(16 + payload.len());
        msg.extend_from_slice(&e.u32_bytes(len));
        msg.extend_from_slice(&e.u16_bytes(ty));
        msg.extend_from_slice(&e.u16_bytes(flags));
        msg.extend_from_slice(&e.u32_bytes(seq));
        msg.extend_from_slice(&e.u32_bytes(0));
        msg.extend_from_slice(payload);
        msg
    }
}

fn attr(buf: &[u8], ty: u16) -> Option<&[u8]> {
    Decoder::NATIVE.attr(buf, ty)
}

fn as_u16(p: &[u8]) -> Option<u16> {
    Endian::NATIVE.u16(p)
}

fn as_str(p: &[u8]) -> String {
    let end = p.iter().position(|b| *b == 0).unwrap_or(p.len());
    String::from_utf8_lossy(&p[..end]).into_owned()
}

/// Decode a `CHANNELS_GET` reply's attributes (host byte order).
pub fn parse_channels(a: &[u8]) -> Channels {
    Decoder::NATIVE.channels(a)
}

/// Decode a `RINGS_GET` reply's attributes (host byte order).
pub fn parse_rings(a: &[u8]) -> Rings {
    Decoder::NATIVE.rings(a)
}

/// Decode a `COALESCE_GET` reply's attributes (host byte order).
pub fn parse_coalesce(a: &[u8]) -> BTreeMap<String, u64> {
    Decoder::NATIVE.coalesce(a)
}

/// Decode a `STRSET_GET` reply (host byte order).
pub fn parse_strset(a: &[u8]) -> Vec<String> {
    Decoder::NATIVE.strset(a)
}

/// Decode a compact `FEATURES_GET` reply (host byte order).
pub fn parse_features(a: &[u8], names: &[String]) -> BTreeMap<String, Feature> {
    Decoder::NATIVE.features(a, names)
}

fn bit(words: &[u32], i: usize) -> bool {
    words.get(i / 32).is_some_and(|w| w & (1 << (i % 32)) != 0)
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
        let msg = Decoder::NATIVE.message(ty, NLM_F_REQUEST, seq, payload);
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
            if let Some(r) = Decoder::NATIVE.reply(buf.get(..n).unwrap_or_default(), seq) {
                return r;
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
        assert_eq!(Endian::NATIVE.u32(&got[1].1), Some(4));
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
                .put(eth::BITSET_VALUE, &Endian::NATIVE.u32_bytes(u32::from(v)));
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

    /// A CHANNELS_GET reply as a big-endian kernel (s390x, ppc64) sends it:
    /// `combined_max` (5) = 2 and `combined` (9) = 2, written out by hand.
    const BE_CHANNELS: [u8; 16] = [
        0, 8, 0, 5, 0, 0, 0, 2, // len 8, type 5, u32 2
        0, 8, 0, 9, 0, 0, 0, 2, // len 8, type 9, u32 2
    ];

    #[test]
    fn big_endian_capture_decodes() {
        let c = Decoder(Endian::Big).channels(&BE_CHANNELS);
        assert_eq!((c.combined, c.combined_max, c.rx), (Some(2), Some(2), None));
        // The same bytes read little-endian are garbage: the order matters.
        let wrong = Decoder(Endian::Little).channels(&BE_CHANNELS);
        assert_eq!(wrong.combined, None);
        // A little-endian host builds and decodes its own order.
        let mut le = AttrBuf::with_endian(Endian::Little);
        le.put_u32(5, 2).put_u32(9, 2);
        assert_eq!(Decoder(Endian::Little).channels(le.bytes()), c);
        let mut be = AttrBuf::with_endian(Endian::Big);
        be.put_u32(5, 2).put_u32(9, 2);
        assert_eq!(be.bytes(), BE_CHANNELS);
    }

    #[test]
    fn big_endian_bitsets_are_u32_words() {
        // 34 features; bits 0 and 33 active. ethnl_put_bitset32 sends u32
        // words in host order: on big-endian bit 0 is in the 4th byte.
        let names: Vec<String> = (0..34).map(|i| format!("f{i}")).collect();
        let bits = |words: [u32; 2], e: Endian| {
            let mut v = Vec::new();
            for w in words {
                v.extend_from_slice(&e.u32_bytes(w));
            }
            let mut b = AttrBuf::with_endian(e);
            b.put_u32(eth::BITSET_SIZE, 34).put(eth::BITSET_VALUE, &v);
            b
        };
        for e in [Endian::Big, Endian::Little] {
            let mut a = AttrBuf::with_endian(e);
            a.nest(eth::FEATURES_HW, &bits([u32::MAX, 3], e))
                .nest(eth::FEATURES_ACTIVE, &bits([1, 2], e))
                .nest(eth::FEATURES_NOCHANGE, &bits([0, 0], e));
            let f = Decoder(e).features(a.bytes(), &names);
            let on: Vec<&str> = f
                .iter()
                .filter(|(_, v)| v.active)
                .map(|(k, _)| k.as_str())
                .collect();
            assert_eq!(on, ["f0", "f33"], "{e:?}");
            assert!(f.values().all(|v| !v.fixed), "{e:?}");
        }
        // The raw big-endian bytes of the ACTIVE words, by hand.
        let mut be = AttrBuf::with_endian(Endian::Big);
        be.put_u32(eth::BITSET_SIZE, 34)
            .put(eth::BITSET_VALUE, &[0, 0, 0, 1, 0, 0, 0, 2]);
        let mut a = AttrBuf::with_endian(Endian::Big);
        a.nest(eth::FEATURES_ACTIVE, &be);
        let f = Decoder(Endian::Big).features(a.bytes(), &names);
        assert!(f["f0"].active && f["f33"].active && !f["f1"].active && !f["f24"].active);
    }

    #[test]
    fn big_endian_messages_and_errors() {
        let be = Decoder(Endian::Big);
        // An NLMSG_ERROR carrying -EOPNOTSUPP, as a big-endian kernel sends it.
        let mut err = vec![0, 0, 0, 36, 0, 2, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0];
        err.extend_from_slice(&(-95i32).to_be_bytes());
        err.extend_from_slice(&[0; 16]);
        assert_eq!(be.reply(&err, 7), Some(Err(NlError::Errno(95))));
        assert_eq!(be.reply(&err, 8), None);
        let ok = be.message(0x1c, 0, 9, &BE_CHANNELS);
        assert_eq!(&ok[..4], &[0, 0, 0, 32]);
        assert_eq!(be.reply(&ok, 9), Some(Ok(BE_CHANNELS.to_vec())));
        // A length past the datagram is malformed, not a panic.
        let mut cut = ok.clone();
        cut.truncate(20);
        assert!(matches!(
            be.reply(&cut, 9),
            Some(Err(NlError::Malformed(_)))
        ));
        for n in 0..ok.len() {
            let _ = Decoder(Endian::Little).reply(&ok[..n], 9);
        }
    }

    #[test]
    fn big_endian_strset_rings_coalesce() {
        let e = Endian::Big;
        let mut s0 = AttrBuf::with_endian(e);
        s0.put_u32(eth::STRING_INDEX, 1)
            .put_str(eth::STRING_VALUE, "rx-gro");
        let mut strings = AttrBuf::with_endian(e);
        strings.nest(eth::STRINGS_STRING, &s0);
        let mut set = AttrBuf::with_endian(e);
        set.put_u32(eth::STRINGSET_ID, 4)
            .nest(eth::STRINGSET_STRINGS, &strings);
        let mut sets = AttrBuf::with_endian(e);
        sets.nest(eth::STRINGSETS_STRINGSET, &set);
        let mut a = AttrBuf::with_endian(e);
        a.nest(eth::STRSET_STRINGSETS, &sets);
        assert_eq!(Decoder(e).strset(a.bytes()), ["", "rx-gro"]);
        let mut r = AttrBuf::with_endian(e);
        r.put_u32(2, 4096).put_u32(6, 512);
        let r = Decoder(e).rings(r.bytes());
        assert_eq!((r.rx, r.rx_max), (Some(512), Some(4096)));
        let mut co = AttrBuf::with_endian(e);
        co.put_u32(2, 50).put(11, &[1]);
        let co = Decoder(e).coalesce(co.bytes());
        assert_eq!((co["rx-usecs"], co["adaptive-rx"]), (50, 1));
    }

    #[test]
    fn mac() {
        assert_eq!(format_mac(&[2, 0xfc, 0, 0, 0, 1]), "02:fc:00:00:00:01");
    }
}
