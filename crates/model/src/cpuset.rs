//! [`CpuSet`]: a set of CPUs that reads and writes both kernel notations.
//!
//! * cpulist: `0-8,18-26` (as in `local_cpulist`, `smp_affinity_list`,
//!   `/sys/devices/system/node/node0/cpulist`); the kernel's `a-b:u/g` stride
//!   form is accepted too.
//! * hex mask: comma-separated 32-bit groups, most significant first
//!   (`00000000,000001fe`, `f,ffffffff`, `3`), as in `smp_affinity`,
//!   `rps_cpus` and `xps_cpus`.
//!
//! (Over 700 lines: the last ~200 are unit and property tests of both
//! notations; the set itself is ~500.)
//!
//! Both parsers are linear in their input and bounded: CPU numbers above
//! [`MAX_CPU`] are refused, and a range costs one step per 64 CPUs (whole
//! words are filled), so no input makes them allocate more than
//! `(MAX_CPU + 1) / 8` bytes or spend more than a few hundred steps per element.

use crate::error::ParseError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use thiserror::Error;

/// Highest CPU number a set can hold: CPUs are `0..=MAX_CPU` (2^15 CPUs, four
/// times the largest `NR_CPUS` mainline Linux builds today, 8192 on x86-64
/// with MAXSMP). The parsers refuse larger numbers; [`CpuSet::insert`] ignores them.
pub const MAX_CPU: u32 = (1 << 15) - 1;

/// Words of a full set.
const MAX_WORDS: usize = (MAX_CPU as usize + 1) / 64;

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

    /// CPUs `lo..=hi` (clamped to [`MAX_CPU`]; empty when `lo > hi`).
    pub fn range(lo: u32, hi: u32) -> Self {
        let mut s = CpuSet::new();
        let hi = hi.min(MAX_CPU);
        if lo <= hi {
            s.fill(lo, hi, &mut 0);
        }
        s
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

    /// Add a CPU. A number above [`MAX_CPU`] cannot name a CPU and is
    /// ignored, so that no number read from a file makes the set allocate.
    pub fn insert(&mut self, cpu: u32) {
        if cpu > MAX_CPU {
            return;
        }
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

    /// Make room for CPU `hi` (at most [`MAX_CPU`]).
    fn grow_to(&mut self, hi: u32) {
        let w = (hi / 64) as usize + 1;
        if self.words.len() < w {
            self.words.resize(w, 0);
        }
    }

    /// Add CPUs `lo..=hi` (both at most [`MAX_CPU`], `lo <= hi`) a word at a
    /// time; `work` counts the words touched.
    fn fill(&mut self, lo: u32, hi: u32, work: &mut u64) {
        self.grow_to(hi);
        let (lw, hw) = ((lo / 64) as usize, (hi / 64) as usize);
        if lw == hw {
            self.words[lw] |= word_bits(lo % 64, hi % 64);
        } else {
            self.words[lw] |= word_bits(lo % 64, 63);
            self.words[lw + 1..hw].fill(u64::MAX);
            self.words[hw] |= word_bits(0, hi % 64);
        }
        *work += (hw - lw + 1) as u64;
    }

    /// Add the kernel's stride form `lo-hi:used/group`: the first `used` CPUs
    /// of every `group`, starting at `lo`. Costs one step per word of the range
    /// (a precomputed pattern when `group < 64`, otherwise whole runs, of
    /// which a word holds at most two).
    fn fill_stride(&mut self, lo: u32, hi: u32, used: u32, group: u32, work: &mut u64) {
        if used >= group {
            self.fill(lo, hi, work);
            return;
        }
        if group >= 64 {
            let mut start = lo;
            while start <= hi {
                let end = start.saturating_add(used - 1).min(hi);
                self.fill(start, end, work);
                match start.checked_add(group) {
                    Some(next) => start = next,
                    None => break,
                }
            }
            return;
        }
        // Bit k of `pattern` is set when k % group < used, for k in 0..128;
        // `pattern >> o` is then the word that starts at offset o of a group.
        let mut pattern: u128 = 0;
        for k in 0..128u32 {
            if k % group < used {
                pattern |= 1u128 << k;
            }
        }
        self.grow_to(hi);
        let (lw, hw) = ((lo / 64) as usize, (hi / 64) as usize);
        for w in lw..=hw {
            let base = w as u32 * 64;
            let bits = if base < lo {
                // First word: CPU `lo` is bit lo % 64 and starts a group.
                (pattern << (lo - base)) as u64
            } else {
                (pattern >> ((base - lo) % group)) as u64
            };
            let from = if w == lw { lo % 64 } else { 0 };
            let to = if w == hw { hi % 64 } else { 63 };
            self.words[w] |= bits & word_bits(from, to);
            *work += 1;
        }
    }

    /// Parse a cpulist such as `0-8,18-26`, `3`, `0-31:2/8` or an empty string (empty set).
    pub fn parse_list(s: &str) -> Result<CpuSet, ParseError> {
        parse_list_counted(s, &mut 0).map_err(|e| e.into_parse_error())
    }

    /// Parse a CPU list given on the command line (`--cpus`, `--exclude-cpus`):
    /// like [`CpuSet::parse_list`], with an error that names the list and shows
    /// the expected form instead of a line number.
    pub fn parse_arg(s: &str) -> Result<CpuSet, CpuListError> {
        parse_list_counted(s, &mut 0).map_err(|problem| CpuListError {
            list: s.chars().take(64).collect(),
            problem,
        })
    }

    /// Parse a kernel hex mask: comma-separated groups of up to 8 hex digits,
    /// most significant group first (`00000000,000001fe`, `f,ffffffff`, `3`).
    pub fn parse_mask(s: &str) -> Result<CpuSet, ParseError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ParseError::Empty);
        }
        let s = s.strip_prefix("0x").unwrap_or(s);
        let ngroups = s.split(',').count();
        if ngroups > MAX_WORDS * 2 {
            return Err(ParseError::invalid(1, "hex mask (too wide)", s));
        }
        let mut set = CpuSet {
            words: vec![0; ngroups.div_ceil(2)],
        };
        for (i, g) in s.split(',').rev().enumerate() {
            if g.is_empty() || g.len() > 8 || !g.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(ParseError::invalid(1, "hex mask group", g));
            }
            let v = u32::from_str_radix(g, 16)
                .map_err(|_| ParseError::invalid(1, "hex mask group", g))?;
            set.words[i / 2] |= u64::from(v) << (32 * (i % 2));
        }
        set.trim();
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
    /// others are 8 digits. `nbits` is raised to cover the highest member
    /// and lowered to `MAX_CPU + 1`.
    pub fn to_mask(&self, nbits: u32) -> String {
        let nbits = nbits
            .min(MAX_CPU + 1)
            .max(self.last().map_or(1, |l| l + 1))
            .max(1);
        let ngroups = nbits.div_ceil(32);
        let mut out = String::new();
        for g in (0..ngroups).rev() {
            let v = self.group(g);
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
    /// scripts echo; `groups` is raised to cover the highest member and
    /// lowered to the groups of `MAX_CPU + 1` CPUs.
    pub fn to_mask_groups(&self, groups: u32) -> String {
        let need = self.last().map_or(1, |l| l / 32 + 1);
        let n = groups.min((MAX_CPU + 1) / 32).max(need).max(1);
        let mut parts = Vec::new();
        for g in (0..n).rev() {
            parts.push(format!("{:08x}", self.group(g)));
        }
        parts.join(",")
    }

    /// The 32-bit group `g` of the mask (CPUs `32g..32g+31`).
    fn group(&self, g: u32) -> u32 {
        let w = self.words.get((g / 2) as usize).copied().unwrap_or(0);
        (w >> (32 * (g % 2))) as u32
    }
}

/// Bits `from..=to` of a word (`from <= to <= 63`).
fn word_bits(from: u32, to: u32) -> u64 {
    (u64::MAX >> (63 - to)) & (u64::MAX << from)
}

/// What is wrong with a cpulist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuListProblem {
    /// Not of the form `0-3,8` (or `0-31:2/8`); holds the offending element.
    Syntax(String),
    /// A CPU number above [`MAX_CPU`].
    TooLarge(String),
    /// A range whose end is below its start.
    Backwards(String),
    /// A stride `used/group` with `used` 0 or above `group`.
    BadStride(String),
}

impl CpuListProblem {
    fn into_parse_error(self) -> ParseError {
        match self {
            CpuListProblem::Syntax(t) => ParseError::invalid(1, "cpulist element", &t),
            CpuListProblem::TooLarge(t) => ParseError::invalid(1, "cpu number (too large)", &t),
            CpuListProblem::Backwards(t) => ParseError::invalid(1, "cpulist range", &t),
            CpuListProblem::BadStride(t) => ParseError::invalid(1, "cpulist stride", &t),
        }
    }
}

impl fmt::Display for CpuListProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuListProblem::Syntax(t) if t.is_empty() => {
                f.write_str("an empty element; expected a list like 0-3,8")
            }
            CpuListProblem::Syntax(_) => f.write_str("expected a list like 0-3,8"),
            CpuListProblem::TooLarge(t) => {
                write!(f, "CPU {t} is above {MAX_CPU}, the highest CPU number")
            }
            CpuListProblem::Backwards(t) => write!(f, "range {t} ends below its start"),
            CpuListProblem::BadStride(t) => write!(
                f,
                "stride in {t} must be USED/GROUP with 1 <= USED <= GROUP (as in 0-31:2/8)"
            ),
        }
    }
}

/// A command-line CPU list that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid CPU list {list:?}: {problem}")]
pub struct CpuListError {
    /// The list as given (first 64 characters).
    pub list: String,
    /// What is wrong with it.
    pub problem: CpuListProblem,
}

fn token(s: &str) -> String {
    s.chars().take(64).collect()
}

/// CPU number `s` of element `part`.
fn parse_cpu(s: &str, part: &str) -> Result<u32, CpuListProblem> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuListProblem::Syntax(token(part)));
    }
    match s.parse::<u32>() {
        Ok(v) if v <= MAX_CPU => Ok(v),
        _ => Err(CpuListProblem::TooLarge(token(s))),
    }
}

fn parse_stride_part(s: &str, part: &str) -> Result<u32, CpuListProblem> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuListProblem::BadStride(token(part)));
    }
    s.parse()
        .map_err(|_| CpuListProblem::BadStride(token(part)))
}

/// The cpulist parser; `work` counts the words it touched (at most
/// `MAX_WORDS + 2` per element, so the whole parse is linear in `s`).
fn parse_list_counted(s: &str, work: &mut u64) -> Result<CpuSet, CpuListProblem> {
    let s = s.trim();
    let mut set = CpuSet::new();
    if s.is_empty() {
        return Ok(set);
    }
    for part in s.split(',') {
        *work += 1;
        let part = part.trim();
        if part.is_empty() {
            return Err(CpuListProblem::Syntax(String::new()));
        }
        let (range, stride) = match part.split_once(':') {
            Some((r, st)) => (r, Some(st)),
            None => (part, None),
        };
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (parse_cpu(a, part)?, parse_cpu(b, part)?),
            None => {
                let c = parse_cpu(range, part)?;
                (c, c)
            }
        };
        if lo > hi {
            return Err(CpuListProblem::Backwards(token(part)));
        }
        match stride {
            None => set.fill(lo, hi, work),
            Some(st) => {
                let (u, g) = st
                    .split_once('/')
                    .ok_or_else(|| CpuListProblem::BadStride(token(part)))?;
                let used = parse_stride_part(u, part)?;
                let group = parse_stride_part(g, part)?;
                if used == 0 || group == 0 || used > group {
                    return Err(CpuListProblem::BadStride(token(part)));
                }
                set.fill_stride(lo, hi, used, group, work);
            }
        }
    }
    set.trim();
    Ok(set)
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

    #[test]
    fn cpu_numbers_the_kernel_cannot_have_are_refused_not_allocated() {
        for bad in [
            "32768",
            "0-32768",
            "65535",
            "0-65535",
            "4294967295",
            "0-4294967295:1/2",
        ] {
            assert!(CpuSet::parse_list(bad).is_err(), "list {bad:?}");
        }
        assert_eq!(CpuSet::parse_list("32767").unwrap().last(), Some(32767));
        let widest = vec!["ffffffff"; 1024].join(",");
        assert_eq!(CpuSet::parse_mask(&widest).unwrap().len(), 32768);
        let too_wide = vec!["ffffffff"; 1025].join(",");
        assert!(CpuSet::parse_mask(&too_wide).is_err());
        // Numbers from other files (a `cpuN` directory name) cannot make a set allocate.
        let mut s = CpuSet::new();
        s.insert(u32::MAX);
        assert!(s.is_empty());
        assert_eq!(CpuSet::range(0, u32::MAX).len(), 32768);
    }

    /// Sanity check only (the bound that matters is `parse_work_is_linear`):
    /// a megabyte of whole-range elements took tens of seconds when every
    /// element walked its CPUs one by one. The limit is generous on purpose.
    #[test]
    fn megabyte_cpulist_parses_promptly() {
        let unit = "0-32767,";
        let s = unit.repeat((1 << 20) / unit.len());
        let s = s.trim_end_matches(',').to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(CpuSet::parse_list(&s).map(|set| set.len()));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(
            got,
            Ok(Ok(32768)),
            "1 MiB cpulist did not parse within 60 s"
        );
    }

    /// Per element, the parser touches at most a few passes over the words of
    /// a full set, whatever the element spans: CPUs are never walked one by one.
    #[test]
    fn parse_work_is_linear() {
        let per_element = 3 * MAX_WORDS as u64 + 4;
        for unit in [
            "0-32767,",
            "0-32767:1/2,",
            "0-32767:63/64,",
            "0-32767:1/64,",
            "0-32767:999/1000,",
            "5,",
            "0-32767:1/1,",
        ] {
            let s = unit.repeat((64 << 10) / unit.len());
            let s = s.trim_end_matches(',');
            let elements = s.matches(',').count() as u64 + 1;
            let mut work = 0;
            let set = parse_list_counted(s, &mut work);
            assert!(set.is_ok(), "{unit}");
            assert!(
                work <= per_element * elements,
                "{unit}: {work} steps for {elements} elements"
            );
        }
    }

    #[test]
    fn command_line_lists_say_what_is_expected() {
        let e = CpuSet::parse_arg("x").unwrap_err().to_string();
        assert_eq!(e, "invalid CPU list \"x\": expected a list like 0-3,8");
        assert!(!e.contains("line"), "{e}");
        let e = CpuSet::parse_arg("0-99999").unwrap_err().to_string();
        assert!(e.contains("99999") && e.contains("32767"), "{e}");
        let e = CpuSet::parse_arg("3-1").unwrap_err().to_string();
        assert!(e.contains("3-1"), "{e}");
        let e = CpuSet::parse_arg("-1").unwrap_err().to_string();
        assert_eq!(e, "invalid CPU list \"-1\": expected a list like 0-3,8");
        let e = CpuSet::parse_arg("1,,2").unwrap_err().to_string();
        assert!(e.contains("empty element"), "{e}");
        assert_eq!(CpuSet::parse_arg("0-3,8").unwrap().to_list(), "0-3,8");
    }

    #[test]
    fn wide_masks_are_clamped_when_printed() {
        let s = CpuSet::single(3);
        assert_eq!(s.to_mask(u32::MAX).split(',').count(), 1024);
        assert_eq!(s.to_mask_groups(u32::MAX).split(',').count(), 1024);
    }

    /// One element of a cpulist, and the CPUs a naive walk gives for it.
    fn element() -> impl Strategy<Value = (String, Vec<u32>)> {
        (
            0u32..400,
            0u32..400,
            proptest::option::of((1u32..80, 1u32..80)),
        )
            .prop_map(|(a, b, stride)| {
                let (lo, hi) = (a.min(b), a.max(b));
                match stride {
                    None => (format!("{lo}-{hi}"), (lo..=hi).collect()),
                    Some((x, y)) => {
                        let (used, group) = (x.min(y), x.max(y));
                        let cpus = (lo..=hi).filter(|c| (c - lo) % group < used).collect();
                        (format!("{lo}-{hi}:{used}/{group}"), cpus)
                    }
                }
            })
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
        fn word_filling_matches_a_naive_walk(elems in proptest::collection::vec(element(), 1..6)) {
            let text: Vec<&str> = elems.iter().map(|(t, _)| t.as_str()).collect();
            let want: CpuSet = elems.iter().flat_map(|(_, c)| c.iter().copied()).collect();
            prop_assert_eq!(CpuSet::parse_list(&text.join(",")).unwrap(), want);
        }

        #[test]
        fn ranges_match_a_naive_walk(lo in 0u32..300, len in 0u32..300) {
            let want: CpuSet = (lo..=lo + len).collect();
            prop_assert_eq!(CpuSet::range(lo, lo + len), want);
        }

        #[test]
        fn parsers_never_panic(s in ".{0,40}") {
            let _ = CpuSet::parse_list(&s);
            let _ = CpuSet::parse_mask(&s);
        }
    }
}
