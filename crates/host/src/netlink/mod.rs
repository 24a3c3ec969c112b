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
use model::snapshot::{DriverInfo, EthtoolState, Probe};
use rustix::fd::OwnedFd;
use rustix::net::netlink::{self, SocketAddrNetlink};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketType};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

mod codec;
#[cfg(test)]
mod tests;

use codec::{as_u16, attr};
pub use codec::{
    attrs, attrs_in, format_mac, parse_channels, parse_coalesce, parse_features, parse_rings,
    parse_strset, AttrBuf, Decoder, Endian,
};

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
