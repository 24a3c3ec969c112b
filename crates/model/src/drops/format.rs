//! The tracefs `format` file of `skb:kfree_skb`: its id, its fields'
//! offsets and sizes, and the reason names of its `print fmt`'s
//! `__print_symbolic` table, so no reason number is hard-coded per kernel.
//!
//! Kernel caveats: the `reason` field and the table exist since Linux 5.17
//! (`enum skb_drop_reason`, include/net/dropreason-core.h since 6.4);
//! `rx_sk` since 6.12. Before 5.17 the event has `skbaddr`, `location` and
//! `protocol` only: [`DropLayout::reason`] is `None` and only locations and
//! protocols can be told apart.

use std::collections::BTreeMap;

/// Largest format file parsed (6.18's is about 6 KiB).
pub const MAX_FORMAT_BYTES: usize = 64 * 1024;
/// Most fields kept.
pub const MAX_FIELDS: usize = 64;
/// Most reasons kept from the table.
pub const MAX_REASONS: usize = 4096;
/// Longest field or reason name kept.
pub const MAX_NAME: usize = 64;

/// What is wrong with a format file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FormatError {
    /// Larger than [`MAX_FORMAT_BYTES`].
    #[error("kfree_skb format: {0} bytes, more than {MAX_FORMAT_BYTES}")]
    TooLarge(usize),
    /// No `location` field of 8 bytes (a 64-bit kernel's pointer).
    #[error("kfree_skb format: no 8-byte `location` field")]
    NoLocation,
    /// A field lies outside any sane record.
    #[error("kfree_skb format: field `{0}` has an offset or size out of range")]
    BadField(String),
}

/// One `field:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name (`location`, `reason`).
    pub name: String,
    /// Byte offset in the raw record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// A parsed format file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TracepointFormat {
    /// `ID:`, the `config` of a `PERF_TYPE_TRACEPOINT` event.
    pub id: Option<u64>,
    /// The fields, in file order.
    pub fields: Vec<Field>,
    /// Reason number to name from `__print_symbolic(REC->reason, ...)`;
    /// empty before 5.17.
    pub reasons: BTreeMap<u32, String>,
}

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn field_line(line: &str) -> Option<Field> {
    let mut name = None;
    let mut offset = None;
    let mut size = None;
    for part in line.split(';') {
        let part = part.trim();
        if let Some(decl) = part.strip_prefix("field:") {
            let last = decl.split_whitespace().last()?;
            let last = last
                .split('[')
                .next()
                .unwrap_or(last)
                .trim_start_matches('*');
            name = Some(last.to_string());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        }
    }
    Some(Field {
        name: name.filter(|n| plain_name(n))?,
        offset: offset?,
        size: size?,
    })
}

/// The `{ N, "NAME" }` pairs of the `__print_symbolic` call on `REC->reason`.
fn symbolic_table(fmt: &str) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    let Some(at) = fmt.find("__print_symbolic(REC->reason") else {
        return out;
    };
    let mut rest = &fmt[at..];
    while out.len() < MAX_REASONS {
        let Some(open) = rest.find('{') else { break };
        // the call ends at the first ')' not inside a pair
        if rest[..open].contains(')') {
            break;
        }
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let pair = &rest[..close];
        rest = &rest[close + 1..];
        let mut it = pair.splitn(2, ',');
        let (Some(n), Some(name)) = (it.next(), it.next()) else {
            continue;
        };
        let name = name.trim().trim_matches('"');
        if let (Ok(n), true) = (parse_number(n.trim()), plain_name(name)) {
            out.insert(n, name.to_string());
        }
    }
    out
}

fn parse_number(s: &str) -> Result<u32, std::num::ParseIntError> {
    match s.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse(),
    }
}

/// Parse a tracepoint's `format` file. Never panics; lines it does not
/// know are skipped.
pub fn parse_format(text: &str) -> Result<TracepointFormat, FormatError> {
    if text.len() > MAX_FORMAT_BYTES {
        return Err(FormatError::TooLarge(text.len()));
    }
    let mut f = TracepointFormat::default();
    for line in text.lines() {
        let t = line.trim();
        if let Some(id) = t.strip_prefix("ID:") {
            f.id = id.trim().parse().ok();
        } else if t.starts_with("field:") {
            if let Some(field) = field_line(t) {
                if f.fields.len() < MAX_FIELDS {
                    f.fields.push(field);
                }
            }
        } else if let Some(fmt) = t.strip_prefix("print fmt:") {
            f.reasons = symbolic_table(fmt);
        }
    }
    Ok(f)
}

/// Where the fields nettune reads sit in a raw `kfree_skb` record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropLayout {
    /// `location`: the caller's address (8 bytes).
    pub location: usize,
    /// `protocol`: the skb's ethertype, host order (2 bytes).
    pub protocol: Option<usize>,
    /// `reason`: `enum skb_drop_reason` (4 bytes); `None` before 5.17.
    pub reason: Option<usize>,
    /// Bytes a record must have to hold every field read.
    pub min_len: usize,
}

impl DropLayout {
    /// The layout of a parsed format; fields of unexpected sizes are left
    /// out (the record is then read without them), except `location`.
    pub fn of(f: &TracepointFormat) -> Result<DropLayout, FormatError> {
        let mut min_len = 0usize;
        let mut pick = |name: &str, size: usize| -> Result<Option<usize>, FormatError> {
            let Some(fd) = f.fields.iter().find(|x| x.name == name && x.size == size) else {
                return Ok(None);
            };
            let end = fd
                .offset
                .checked_add(fd.size)
                .filter(|e| *e <= 4096)
                .ok_or_else(|| FormatError::BadField(name.to_string()))?;
            min_len = min_len.max(end);
            Ok(Some(fd.offset))
        };
        let location = pick("location", 8)?.ok_or(FormatError::NoLocation)?;
        let protocol = pick("protocol", 2)?;
        let reason = pick("reason", 4)?;
        Ok(DropLayout {
            location,
            protocol,
            reason,
            min_len,
        })
    }
}
