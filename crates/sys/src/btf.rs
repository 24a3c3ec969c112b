//! A small reader of the kernel's BTF (`/sys/kernel/btf/vmlinux`, Linux
//! 5.4+): enough to find a function's type id, its parameters' names, and
//! an enum's values, for attaching an fentry program
//! (Documentation/bpf/btf.rst, include/uapi/linux/btf.h).
//!
//! The input is treated as hostile: every offset and length is checked
//! (checked arithmetic, slices by `get`), nothing panics, and the walk is
//! bounded by the data's length (each type is at least 12 bytes).
//! Only the host's byte order is read; a foreign-endian file is
//! [`BtfError::BadMagic`].

/// `BTF_MAGIC`.
pub const MAGIC: u16 = 0xeb9f;
/// Largest file read: vmlinux BTF is a few MiB (6.18: 5.3 MiB).
pub const MAX_BYTES: usize = 64 << 20;

const KIND_INT: u32 = 1;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_DECL_TAG: u32 = 17;
const KIND_ENUM64: u32 = 19;
/// Kinds up to this one are known (`BTF_KIND_ENUM64`, Linux 6.0).
const KIND_MAX: u32 = 19;

/// What is wrong with a BTF blob, or what it lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    /// Shorter than its header says (or than a header).
    #[error("BTF: truncated ({what})")]
    Truncated {
        /// The part that does not fit.
        what: &'static str,
    },
    /// Not `0xeb9f` in the host's byte order.
    #[error("BTF: bad magic {0:#06x}")]
    BadMagic(u16),
    /// More than [`MAX_BYTES`].
    #[error("BTF: {0} bytes, more than {MAX_BYTES}")]
    TooLarge(usize),
    /// A type of a kind this reader does not know (its size is unknown,
    /// so the types after it cannot be found).
    #[error("BTF: type {id} has unknown kind {kind}")]
    UnknownKind {
        /// The type's id.
        id: u32,
        /// Its kind.
        kind: u32,
    },
    /// A name offset outside the string section, or a name not
    /// NUL-terminated.
    #[error("BTF: type {id} has a bad name offset")]
    BadName {
        /// The type's id.
        id: u32,
    },
    /// No function of that name.
    #[error("BTF: no function `{0}`")]
    NoFunction(String),
    /// The function has no parameter of that name.
    #[error("BTF: function `{0}` has no parameter `{1}`")]
    NoParameter(String, String),
    /// The function's type is not a `FUNC_PROTO`.
    #[error("BTF: function `{0}` has no prototype")]
    NoPrototype(String),
}

/// A parsed BTF blob: the offsets of its types (id 1 is the first).
#[derive(Debug)]
pub struct Btf<'a> {
    types: &'a [u8],
    strings: &'a [u8],
    /// Byte offset in `types` of type id `i + 1`.
    offsets: Vec<usize>,
}

/// One type's common header and its trailing data.
#[derive(Debug, Clone, Copy)]
struct Type<'a> {
    name_off: u32,
    kind: u32,
    vlen: usize,
    size_or_type: u32,
    extra: &'a [u8],
}

/// `N` bytes of `b` at `at`, when they are all there.
fn bytes<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    bytes(b, at).map(u16::from_ne_bytes)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    bytes(b, at).map(u32::from_ne_bytes)
}

/// Bytes after the 12-byte header for a type of `kind` with `vlen`.
fn extra_len(kind: u32, vlen: usize) -> Option<usize> {
    match kind {
        KIND_INT | KIND_VAR | KIND_DECL_TAG => Some(4),
        KIND_ARRAY => Some(12),
        KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => vlen.checked_mul(12),
        KIND_ENUM | KIND_FUNC_PROTO => vlen.checked_mul(8),
        // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT,
        // TYPE_TAG
        2 | 7..=12 | 16 | 18 => Some(0),
        _ => None,
    }
}

impl<'a> Btf<'a> {
    /// Parse the header and index the types of `data`.
    pub fn parse(data: &'a [u8]) -> Result<Btf<'a>, BtfError> {
        if data.len() > MAX_BYTES {
            return Err(BtfError::TooLarge(data.len()));
        }
        let short = |what| BtfError::Truncated { what };
        let magic = u16_at(data, 0).ok_or(short("header"))?;
        if magic != MAGIC {
            return Err(BtfError::BadMagic(magic));
        }
        let field = |at| u32_at(data, at).ok_or(short("header"));
        let hdr_len = field(4)? as usize;
        if hdr_len < 24 {
            return Err(short("header"));
        }
        let section = |off: u32, len: u32, what| {
            let start = hdr_len.checked_add(off as usize).ok_or(short(what))?;
            let end = start.checked_add(len as usize).ok_or(short(what))?;
            data.get(start..end).ok_or(short(what))
        };
        let types = section(field(8)?, field(12)?, "type section")?;
        let strings = section(field(16)?, field(20)?, "string section")?;
        let mut offsets = Vec::new();
        let mut at = 0usize;
        while at < types.len() {
            let id = u32::try_from(offsets.len().saturating_add(1)).unwrap_or(u32::MAX);
            let info = u32_at(types, at.saturating_add(4)).ok_or(short("type"))?;
            u32_at(types, at.saturating_add(8)).ok_or(short("type"))?;
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let extra = match extra_len(kind, vlen) {
                Some(n) if kind <= KIND_MAX => n,
                _ => return Err(BtfError::UnknownKind { id, kind }),
            };
            let next = at
                .checked_add(12)
                .and_then(|a| a.checked_add(extra))
                .ok_or(short("type"))?;
            if next > types.len() {
                return Err(short("type"));
            }
            offsets.push(at);
            at = next;
        }
        Ok(Btf {
            types,
            strings,
            offsets,
        })
    }

    /// How many types (ids `1..=count`).
    pub fn count(&self) -> usize {
        self.offsets.len()
    }

    fn get(&self, id: u32) -> Option<Type<'a>> {
        let at = *self.offsets.get((id as usize).checked_sub(1)?)?;
        let info = u32_at(self.types, at.checked_add(4)?)?;
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let start = at.checked_add(12)?;
        let end = start.checked_add(extra_len(kind, vlen)?)?;
        Some(Type {
            name_off: u32_at(self.types, at)?,
            kind,
            vlen,
            size_or_type: u32_at(self.types, at.checked_add(8)?)?,
            extra: self.types.get(start..end)?,
        })
    }

    /// The string at `off` (without its NUL).
    fn name(&self, off: u32) -> Option<&'a [u8]> {
        let rest = self.strings.get(off as usize..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        rest.get(..end)
    }

    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        (1..=self.offsets.len()).filter_map(|i| u32::try_from(i).ok())
    }

    /// The type id of function `name` (`BTF_KIND_FUNC`) and its
    /// parameters' names in order (an unnamed one is empty).
    pub fn function(&self, name: &str) -> Result<(u32, Vec<String>), BtfError> {
        for id in self.ids() {
            let Some(t) = self.get(id) else { continue };
            if t.kind != KIND_FUNC {
                continue;
            }
            let n = self.name(t.name_off).ok_or(BtfError::BadName { id })?;
            if n != name.as_bytes() {
                continue;
            }
            let proto = self
                .get(t.size_or_type)
                .filter(|p| p.kind == KIND_FUNC_PROTO)
                .ok_or_else(|| BtfError::NoPrototype(name.to_string()))?;
            let mut params = Vec::with_capacity(proto.vlen);
            for p in proto.extra.chunks_exact(8) {
                let off = u32_at(p, 0).unwrap_or(0);
                let pn = self
                    .name(off)
                    .ok_or(BtfError::BadName { id: t.size_or_type })?;
                params.push(String::from_utf8_lossy(pn).into_owned());
            }
            return Ok((id, params));
        }
        Err(BtfError::NoFunction(name.to_string()))
    }

    /// The first of `functions` that exists, with its type id and the
    /// 0-based index of its parameter named `param`.
    pub fn function_with<'n>(
        &self,
        functions: &[&'n str],
        param: &str,
    ) -> Result<(&'n str, u32, u32), BtfError> {
        let mut last = BtfError::NoFunction(functions.join(", "));
        for &f in functions {
            match self.function(f) {
                Ok((id, params)) => match params.iter().position(|p| p == param) {
                    Some(i) => return Ok((f, id, u32::try_from(i).unwrap_or(u32::MAX))),
                    None => last = BtfError::NoParameter(f.to_string(), param.to_string()),
                },
                Err(BtfError::NoFunction(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// The value of enumerator `item` of enum `name` (`ENUM` or `ENUM64`),
    /// when both exist.
    pub fn enum_value(&self, name: &str, item: &str) -> Option<i64> {
        for id in self.ids() {
            let t = self.get(id)?;
            if !matches!(t.kind, KIND_ENUM | KIND_ENUM64) {
                continue;
            }
            if self.name(t.name_off) != Some(name.as_bytes()) {
                continue;
            }
            let step = if t.kind == KIND_ENUM { 8 } else { 12 };
            for e in t.extra.chunks_exact(step) {
                if self.name(u32_at(e, 0)?) != Some(item.as_bytes()) {
                    continue;
                }
                let lo = u32_at(e, 4)?;
                return Some(if t.kind == KIND_ENUM {
                    i64::from(lo as i32)
                } else {
                    let hi = u32_at(e, 8)?;
                    ((u64::from(hi) << 32) | u64::from(lo)) as i64
                });
            }
        }
        None
    }
}

/// The kernel functions every drop with a reason goes through, newest
/// first: `sk_skb_reason_drop(sk, skb, reason)` (Linux 6.10+, where
/// `kfree_skb_reason` became an inline wrapper of it) and
/// `kfree_skb_reason(skb, reason)` (5.17 to 6.9). net/core/skbuff.c.
pub const DROP_FUNCTIONS: [&str; 2] = ["sk_skb_reason_drop", "kfree_skb_reason"];

/// Where to count drops at fentry on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropFunction {
    /// One of [`DROP_FUNCTIONS`].
    pub name: &'static str,
    /// Its BTF type id.
    pub btf_id: u32,
    /// The index of its `reason` parameter.
    pub reason_arg: u32,
    /// Reasons below this are not drops: `SKB_NOT_DROPPED_YET` (0) and
    /// `SKB_CONSUMED` (1, Linux 6.3+; the function then frees a consumed
    /// skb, and the tracepoint fired is `consume_skb`), from the kernel's
    /// `enum skb_drop_reason`.
    pub skip: u32,
}

/// The drop function of the kernel whose BTF is `btf`.
pub fn drop_function(btf: &Btf<'_>) -> Result<DropFunction, BtfError> {
    let (name, btf_id, reason_arg) = btf.function_with(&DROP_FUNCTIONS, "reason")?;
    let not_drops: Vec<i64> = ["SKB_NOT_DROPPED_YET", "SKB_CONSUMED"]
        .iter()
        .filter_map(|i| btf.enum_value("skb_drop_reason", i))
        .collect();
    // the values 0, 1, ... that are not drops, counted from 0
    let mut skip = 0u32;
    while not_drops.contains(&i64::from(skip)) {
        skip += 1;
    }
    Ok(DropFunction {
        name,
        btf_id,
        reason_arg,
        skip,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A blob built the way the kernel lays it out: header, types, strings.
    pub(crate) fn blob(types: &[u8], strings: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC.to_ne_bytes());
        b.extend_from_slice(&[1, 0]);
        for v in [24u32, 0, types.len() as u32, types.len() as u32] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&(strings.len() as u32).to_ne_bytes());
        b.extend_from_slice(types);
        b.extend_from_slice(strings);
        b
    }

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    /// `int` (1), `enum r { A = 0, B = 7 }` (2), `proto(int sk, int
    /// reason)` (3), `FUNC f` (4).
    pub(crate) fn sample() -> Vec<u8> {
        let strings = b"\0int\0r\0A\0B\0sk\0reason\0f\0";
        let types = words(&[
            1,
            1 << 24,
            4,
            0x20, // int, 32 bits
            5,
            (6 << 24) | 2,
            4,
            7,
            0,
            9,
            7, // enum r { A = 0, B = 7 }
            0,
            (13 << 24) | 2,
            0,
            11,
            1,
            14,
            1, // proto(sk, reason) -> void
            21,
            12 << 24,
            3, // FUNC f
        ]);
        blob(&types, strings)
    }

    #[test]
    fn finds_a_function_its_parameters_and_an_enum() {
        let b = sample();
        let btf = Btf::parse(&b).expect("parse");
        assert_eq!(btf.count(), 4);
        let (id, params) = btf.function("f").expect("f");
        assert_eq!(id, 4);
        assert_eq!(params, ["sk", "reason"]);
        assert_eq!(btf.enum_value("r", "B"), Some(7));
        assert_eq!(btf.enum_value("r", "A"), Some(0));
        assert_eq!(btf.enum_value("r", "C"), None);
        assert_eq!(
            btf.function("g").unwrap_err(),
            BtfError::NoFunction("g".into())
        );
        assert_eq!(btf.function_with(&["g", "f"], "reason"), Ok(("f", 4, 1)));
        assert_eq!(
            btf.function_with(&["f"], "skb"),
            Err(BtfError::NoParameter("f".into(), "skb".into()))
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(matches!(Btf::parse(&[]), Err(BtfError::Truncated { .. })));
        assert!(matches!(
            Btf::parse(&[0x9f, 0xeb, 0, 0]),
            Err(BtfError::BadMagic(_)) | Err(BtfError::Truncated { .. })
        ));
        let mut b = sample();
        b.truncate(b.len() - 30);
        assert!(matches!(Btf::parse(&b), Err(BtfError::Truncated { .. })));
        // kind 31: unknown, so nothing after it can be found
        let bad = blob(&words(&[0, 31 << 24, 0]), b"\0");
        assert_eq!(
            Btf::parse(&bad).unwrap_err(),
            BtfError::UnknownKind { id: 1, kind: 31 }
        );
    }

    /// On the running kernel, when it has BTF: the function every
    /// reasoned drop goes through has a `reason` parameter.
    #[test]
    fn the_running_kernel_has_the_drop_function() {
        let Ok(data) = std::fs::read("/sys/kernel/btf/vmlinux") else {
            eprintln!("skipped: no /sys/kernel/btf/vmlinux");
            return;
        };
        let btf = Btf::parse(&data).expect("vmlinux BTF parses");
        let d = drop_function(&btf).expect("a drop function with a reason");
        match d.name {
            "sk_skb_reason_drop" => assert_eq!(d.reason_arg, 2),
            _ => assert_eq!(d.reason_arg, 1),
        }
        // SKB_NOT_DROPPED_YET = 0 always; SKB_CONSUMED = 1 since 6.3
        assert!((1..=2).contains(&d.skip), "{d:?}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any bytes: an answer or an error, never a panic.
        #[test]
        fn never_panics_on_any_bytes(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            if let Ok(b) = Btf::parse(&data) {
                let _ = b.function("f");
                let _ = b.enum_value("r", "B");
            }
        }

        /// A valid blob with bytes flipped and cut: never a panic.
        #[test]
        fn never_panics_on_a_damaged_blob(
            flips in proptest::collection::vec((0usize..200, proptest::prelude::any::<u8>()), 0..8),
            cut in 0usize..200,
        ) {
            let mut b = sample();
            for (at, v) in flips {
                if let Some(x) = b.get_mut(at) {
                    *x = v;
                }
            }
            b.truncate(cut.max(1));
            if let Ok(btf) = Btf::parse(&b) {
                let _ = btf.function("f");
                let _ = btf.enum_value("r", "B");
            }
        }
    }
}
