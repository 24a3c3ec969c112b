//! The perf ring's records (`struct perf_event_header`, then the body) as
//! `sys::perf::TracepointEvent::drain` copies them out, and the raw
//! `kfree_skb` record inside a `PERF_SAMPLE_RAW` sample.
//!
//! The bytes are the kernel's, in host byte order; every length is checked
//! against what is there, so a torn or hostile buffer ends the walk instead
//! of reading past it.

use super::format::DropLayout;

/// `PERF_RECORD_LOST`: the ring was full and records were dropped.
const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`.
const RECORD_SAMPLE: u32 = 9;
/// `sizeof(struct perf_event_header)`.
const HEADER: usize = 8;

/// One record of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// A sample's raw tracepoint record (`PERF_SAMPLE_RAW` alone).
    Sample(&'a [u8]),
    /// Samples the kernel could not write (ring full).
    Lost(u64),
    /// Any other record type, skipped.
    Other,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_ne_bytes(a))
}

/// The records of `buf`, in order; stops at the first header whose size is
/// below 8 or beyond the buffer.
pub fn records(buf: &[u8]) -> impl Iterator<Item = Record<'_>> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let kind = u32_at(buf, at)?;
        let size = usize::from(u16_at(buf, at.checked_add(6)?)?);
        let end = at.checked_add(size)?;
        if size < HEADER || end > buf.len() {
            return None;
        }
        let body = &buf[at + HEADER..end];
        at = end;
        Some(match kind {
            RECORD_SAMPLE => {
                let n = u32_at(body, 0).and_then(|n| usize::try_from(n).ok());
                match n.and_then(|n| body.get(4..4usize.checked_add(n)?)) {
                    Some(raw) => Record::Sample(raw),
                    None => Record::Other,
                }
            }
            // struct { u64 id; u64 lost; }
            RECORD_LOST => Record::Lost(u64_at(body, 8).unwrap_or(0)),
            _ => Record::Other,
        })
    })
}

/// One sampled drop, as the raw record gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawDrop {
    /// The kernel address that freed the skb (`location`).
    pub location: u64,
    /// The skb's ethertype (`protocol`, already host order in the record).
    pub protocol: Option<u16>,
    /// `enum skb_drop_reason`; `None` before Linux 5.17.
    pub reason: Option<u32>,
}

/// Decode a raw `kfree_skb` record by `layout`; `None` when it is shorter
/// than the layout needs.
pub fn decode(layout: &DropLayout, raw: &[u8]) -> Option<RawDrop> {
    if raw.len() < layout.min_len {
        return None;
    }
    Some(RawDrop {
        location: u64_at(raw, layout.location)?,
        protocol: layout.protocol.and_then(|o| u16_at(raw, o)),
        reason: layout.reason.and_then(|o| u32_at(raw, o)),
    })
}

/// A ring buffer's bytes holding these raw records as samples, and a lost
/// record of `lost` when non-zero: the inverse of [`records`], for tests
/// and fixtures.
pub fn encode_samples(raws: &[Vec<u8>], lost: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for raw in raws {
        let body = 4 + raw.len();
        let size = (HEADER + body).next_multiple_of(8);
        out.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
        out.extend_from_slice(&0u16.to_ne_bytes());
        out.extend_from_slice(&u16::try_from(size).unwrap_or(u16::MAX).to_ne_bytes());
        out.extend_from_slice(&u32::try_from(raw.len()).unwrap_or(0).to_ne_bytes());
        out.extend_from_slice(raw);
        out.resize(out.len() + size - HEADER - body, 0);
    }
    if lost > 0 {
        out.extend_from_slice(&RECORD_LOST.to_ne_bytes());
        out.extend_from_slice(&0u16.to_ne_bytes());
        out.extend_from_slice(&24u16.to_ne_bytes());
        out.extend_from_slice(&0u64.to_ne_bytes());
        out.extend_from_slice(&lost.to_ne_bytes());
    }
    out
}
