//! [`CpuSet`]: a set of CPUs that reads and writes both kernel notations.
//!
//! * cpulist: `0-8,18-26` (as in `local_cpulist`, `smp_affinity_list`,
//!   `/sys/devices/system/node/node0/cpulist`); the kernel's `a-b:u/g` stride
//!   form is accepted too.
//! * hex mask: comma-separated 32-bit groups, most significant first
//!   (`00000000,000001fe`, `f,ffffffff`, `3`), as in `smp_affinity`,
//!   `rps_cpus` and `xps_cpus`.

use crate::error::ParseError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Highest CPU number accepted by the parsers (the kernel's NR_CPUS maximum is 8192).
pub const MAX_CPU: u32 = 65_535;

/// A set of logical CPU numbers.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet {
    words: Vec<u64>,
}

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        CpuSet { words: Vec::new() }
    }

    /// CPUs `lo..=hi`.
    pub fn range(lo: u32, hi: u32) -> Self {
        (lo..=hi).collect()
    }

    /// A set with one CPU.
    pub fn single(cpu: u32) -> Self {
        let mut s = CpuSet::new();
        s.insert(cpu);
        s
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Add a CPU.
    pub fn insert(&mut self, cpu: u32) {
        let w = (cpu / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1u64 << (cpu % 64);
    }

    /// Remove a CPU.
    pub fn remove(&mut self, cpu: u32) {
        let w = (cpu / 64) as usize;
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1u64 << (cpu % 64));
        }
        self.trim();
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.words
            .get((cpu / 64) as usize)
            .is_some_and(|w| w & (1u64 << (cpu % 64)) != 0)
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// The lowest CPU, if any.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The highest CPU, if any.
    pub fn last(&self) -> Option<u32> {
        let (i, w) = self
            .words
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)?;
        Some(i as u32 * 64 + 63 - w.leading_zeros())
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }

    fn zip_with(&self, other: &CpuSet, f: impl Fn(u64, u64) -> u64) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let mut words = Vec::with_capacity(n);
        for i in 0..n {
            let a = self.words.get(i).copied().unwrap_or(0);
            let b = other.words.get(i).copied().unwrap_or(0);
            words.push(f(a, b));
        }
        let mut s = CpuSet { words };
        s.trim();
        s
    }

    /// CPUs in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        self.zip_with(other, |a, b| a | b)
    }

    /// CPUs in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        self.zip_with(other, |a, b| a & b)
    }

    /// CPUs in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        self.zip_with(other, |a, b| a & !b)
    }

    /// Whether every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.difference(other).is_empty()
    }

    /// Parse a cpulist such as `0-8,18-26`, `3`, `0-31:2/8` or an empty string (empty set).
    pub fn parse_list(s: &str) -> Result<CpuSet, ParseError> {
        let s = s.trim();
        let mut set = CpuSet::new();
        if s.is_empty() {
            return Ok(set);
        }
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(ParseError::invalid(1, "cpulist element", part));
            }
            let (range, stride) = match part.split_once(':') {
                Some((r, st)) => (r, Some(st)),
                None => (part, None),
            };
            let (lo, hi) = match range.split_once('-') {
                Some((a, b)) => (parse_cpu(a)?, parse_cpu(b)?),
                None => {
                    let c = parse_cpu(range)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(ParseError::invalid(1, "cpulist range", part));
            }
            let (used, group) = match stride {
                None => (1, 1),
                Some(st) => {
                    let (u, g) = st
                        .split_once('/')
                        .ok_or_else(|| ParseError::invalid(1, "cpulist stride", part))?;
                    let u: u32 = u
                        .parse()
                        .map_err(|_| ParseError::invalid(1, "cpulist stride", part))?;
                    let g: u32 = g
                        .parse()
                        .map_err(|_| ParseError::invalid(1, "cpulist stride", part))?;
                    if u == 0 || g == 0 || u > g {
                        return Err(ParseError::invalid(1, "cpulist stride", part));
                    }
                    (u, g)
                }
            };
            for c in lo..=hi {
                if (c - lo) % group < used {
                    set.insert(c);
                }
            }
        }
        Ok(set)
    }

    /// Parse a kernel hex mask: comma-separated groups of up to 8 hex digits,
    /// most significant group first (`00000000,000001fe`, `f,ffffffff`, `3`).
    pub fn parse_mask(s: &str) -> Result<CpuSet, ParseError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ParseError::Empty);
        }
        let s = s.strip_prefix("0x").unwrap_or(s);
        let groups: Vec<&str> = s.split(',').collect();
        if groups.len() as u32 * 32 > MAX_CPU + 1 {
            return Err(ParseError::invalid(1, "hex mask (too wide)", s));
        }
        let mut set = CpuSet::new();
        for (i, g) in groups.iter().rev().enumerate() {
            if g.is_empty() || g.len() > 8 || !g.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(ParseError::invalid(1, "hex mask group", g));
            }
            let v = u32::from_str_radix(g, 16)
                .map_err(|_| ParseError::invalid(1, "hex mask group", g))?;
            for b in 0..32 {
                if v & (1 << b) != 0 {
                    set.insert(i as u32 * 32 + b);
                }
            }
        }
        Ok(set)
    }

    /// Format as a cpulist (`0-8,18-26`); the empty set is an empty string.
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut it = self.iter().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi += 1;
                it.next();
            }
            if !out.is_empty() {
                out.push(',');
            }
            if lo == hi {
                out.push_str(&lo.to_string());
            } else {
                out.push_str(&format!("{lo}-{hi}"));
            }
        }
        out
    }

    /// Format as the kernel prints a mask for `nbits` possible CPUs
    /// (`nr_cpu_ids`): the top group holds only the digits it needs, the
    /// others are 8 digits. `nbits` is raised to cover the highest member.
    pub fn to_mask(&self, nbits: u32) -> String {
        let nbits = nbits.max(self.last().map_or(1, |l| l + 1)).max(1);
        let ngroups = nbits.div_ceil(32);
        let mut out = String::new();
        for g in (0..ngroups).rev() {
            let mut v: u32 = 0;
            for b in 0..32 {
                if self.contains(g * 32 + b) {
                    v |= 1 << b;
                }
            }
            if g == ngroups - 1 {
                let top_bits = nbits - g * 32;
                let digits = top_bits.div_ceil(4) as usize;
                out.push_str(&format!("{v:0digits$x}"));
            } else {
                out.push_str(&format!(",{v:08x}"));
            }
        }
        out
    }

    /// Format as full 32-bit groups (`00000000,000001fe`), the form seed
    /// scripts echo; `groups` is raised to cover the highest member.
    pub fn to_mask_groups(&self, groups: u32) -> String {
        let need = self.last().map_or(1, |l| l / 32 + 1);
        let n = groups.max(need).max(1);
        let mut parts = Vec::new();
        for g in (0..n).rev() {
            let mut v: u32 = 0;
            for b in 0..32 {
                if self.contains(g * 32 + b) {
                    v |= 1 << b;
                }
            }
            parts.push(format!("{v:08x}"));
        }
        parts.join(",")
    }
}

fn parse_cpu(s: &str) -> Result<u32, ParseError> {
    let s = s.trim();
    let v: u32 = s
        .parse()
        .map_err(|_| ParseError::invalid(1, "cpu number", s))?;
    if v > MAX_CPU {
        return Err(ParseError::invalid(1, "cpu number (too large)", s));
    }
    Ok(v)
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut s = CpuSet::new();
        for c in iter {
            s.insert(c);
        }
        s
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({})", self.to_list())
    }
}

impl std::str::FromStr for CpuSet {
    type Err = ParseError;
    /// Parses a cpulist.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse_list(s)
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_list())
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CpuSet::parse_list(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn seed_000_masks() {
        let node0 = CpuSet::parse_list("0-8,18-26").unwrap();
        assert_eq!(node0.len(), 18);
        let rps0 = CpuSet::parse_mask("00000000,000001fe").unwrap();
        assert_eq!(rps0.to_list(), "1-8");
        let rps1 = CpuSet::parse_mask("00000000,0003fc00").unwrap();
        assert_eq!(rps1.to_list(), "10-17");
        assert_eq!(rps1.to_mask_groups(2), "00000000,0003fc00");
        assert_eq!(CpuSet::single(9).to_mask_groups(2), "00000000,00000200");
    }

    #[test]
    fn kernel_width_masks() {
        assert_eq!(CpuSet::range(0, 35).to_mask(36), "f,ffffffff");
        assert_eq!(
            CpuSet::parse_mask("f,ffffffff").unwrap(),
            CpuSet::range(0, 35)
        );
        assert_eq!(CpuSet::range(0, 1).to_mask(2), "3");
        assert_eq!(CpuSet::new().to_mask(2), "0");
        assert_eq!(CpuSet::parse_mask("3").unwrap().to_list(), "0-1");
        assert_eq!(CpuSet::single(1).to_mask(64), "00000000,00000002");
    }

    #[test]
    fn stride_lists() {
        assert_eq!(CpuSet::parse_list("0-7:2/4").unwrap().to_list(), "0-1,4-5");
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["x", "1-", "-1", "3-1", "1,,2", "0-99999999", "1:2"] {
            assert!(CpuSet::parse_list(bad).is_err(), "list {bad:?}");
        }
        for bad in ["", "g", "123456789", "1,,2", ",", "0x"] {
            assert!(CpuSet::parse_mask(bad).is_err(), "mask {bad:?}");
        }
    }

    #[test]
    fn set_ops() {
        let a = CpuSet::parse_list("0-8").unwrap();
        let b = CpuSet::parse_list("5-12").unwrap();
        assert_eq!(a.intersection(&b).to_list(), "5-8");
        assert_eq!(a.difference(&b).to_list(), "0-4");
        assert_eq!(a.union(&b).to_list(), "0-12");
        assert_eq!(b.last(), Some(12));
        assert!(CpuSet::parse_list("5-6").unwrap().is_subset(&a));
    }

    proptest! {
        #[test]
        fn list_round_trip(cpus in proptest::collection::btree_set(0u32..600, 0..80)) {
            let s: CpuSet = cpus.iter().copied().collect();
            let back = CpuSet::parse_list(&s.to_list()).unwrap();
            prop_assert_eq!(&back, &s);
            prop_assert_eq!(back.iter().collect::<Vec<_>>(), cpus.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn mask_round_trip(cpus in proptest::collection::btree_set(0u32..600, 0..80), nbits in 1u32..640) {
            let s: CpuSet = cpus.into_iter().collect();
            prop_assert_eq!(CpuSet::parse_mask(&s.to_mask(nbits)).unwrap(), s.clone());
            prop_assert_eq!(CpuSet::parse_mask(&s.to_mask_groups(1)).unwrap(), s);
        }

        #[test]
        fn parsers_never_panic(s in ".{0,40}") {
            let _ = CpuSet::parse_list(&s);
            let _ = CpuSet::parse_mask(&s);
        }
    }
}
