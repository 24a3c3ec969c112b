//! Pure encoders and decoders of netlink messages and attributes, in either
//! byte order: unit-tested on bytes, no socket.

use super::{eth, NlError, COALESCE_NAMES, NLA_F_NESTED, NLA_TYPE_MASK, NLMSG_ERROR};
use model::snapshot::{Channels, Feature, Rings};
use std::collections::BTreeMap;

pub(super) fn align4(n: usize) -> usize {
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

    pub(super) fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    pub(super) fn u32_bytes(self, v: u32) -> [u8; 4] {
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

    pub(super) fn attr(self, buf: &[u8], ty: u16) -> Option<&[u8]> {
        attrs_in(buf, self.0)
            .find(|(t, _)| *t == ty)
            .map(|(_, p)| p)
    }

    pub(super) fn u32_attr(self, buf: &[u8], ty: u16) -> Option<u32> {
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
    pub(super) fn compact_bits(self, a: &[u8], ty: u16) -> Vec<u32> {
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

pub(super) fn attr(buf: &[u8], ty: u16) -> Option<&[u8]> {
    Decoder::NATIVE.attr(buf, ty)
}

pub(super) fn as_u16(p: &[u8]) -> Option<u16> {
    Endian::NATIVE.u16(p)
}

pub(super) fn as_str(p: &[u8]) -> String {
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

pub(super) fn bit(words: &[u32], i: usize) -> bool {
    words.get(i / 32).is_some_and(|w| w & (1 << (i % 32)) != 0)
}

/// Format a hardware address.
pub fn format_mac(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}
