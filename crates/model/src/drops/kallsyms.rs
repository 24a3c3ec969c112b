//! `/proc/kallsyms`' text symbols, to name a drop's `location` as
//! `symbol+0xoffset` (what `%pS` prints in the trace).
//!
//! When `kernel.kptr_restrict` hides addresses from the reader (every
//! address reads 0: `kptr_restrict` 2, or 1 without `CAP_SYSLOG`),
//! [`Kallsyms::hidden`] is true and locations stay as hexadecimal addresses.

/// Most symbols kept (6.18 has about 120 000 lines, most of them text).
pub const MAX_SYMBOLS: usize = 1 << 20;

/// Text symbols sorted by address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
    hidden: bool,
}

impl Kallsyms {
    /// Parse kallsyms text: `ADDR TYPE NAME [\[module\]]` lines; text symbols
    /// (`t`/`T`) only. Never panics; bad lines are skipped.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms = Vec::new();
        let mut lines = 0usize;
        let mut zero = 0usize;
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            lines += 1;
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 {
                zero += 1;
                continue;
            }
            if !matches!(kind, "t" | "T") || syms.len() >= MAX_SYMBOLS {
                continue;
            }
            let name: String = name.chars().take(128).collect();
            syms.push((addr, name));
        }
        syms.sort_unstable();
        Kallsyms {
            syms,
            hidden: lines > 0 && zero == lines,
        }
    }

    /// Whether every address read 0 (`kptr_restrict`).
    pub fn hidden(&self) -> bool {
        self.hidden
    }

    /// Text symbols known.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// Whether no symbol is known.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// `symbol+0xoff` for `addr`: the nearest text symbol at or below it
    /// (within 1 MiB); the address in hex otherwise.
    pub fn name(&self, addr: u64) -> String {
        let i = self.syms.partition_point(|(a, _)| *a <= addr);
        match i.checked_sub(1).and_then(|i| self.syms.get(i)) {
            Some((a, n)) if addr - a < (1 << 20) => format!("{n}+{:#x}", addr - a),
            _ => format!("{addr:#x}"),
        }
    }
}
