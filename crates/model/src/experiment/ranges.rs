//! Accepted ranges of numeric keys and factors. Each range is written once,
//! in a macro that derives the error text (`expected`) from the same
//! literals, so the check and the message cannot drift apart.

/// An inclusive integer range and how an error describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IntRange {
    /// Smallest accepted value.
    pub(super) lo: i64,
    /// Largest accepted value.
    pub(super) hi: i64,
    /// What is accepted, for errors.
    pub(super) expected: &'static str,
}

impl IntRange {
    /// Whether `v` is inside.
    pub(super) fn contains(&self, v: i64) -> bool {
        (self.lo..=self.hi).contains(&v)
    }
}

/// An inclusive float range (finite values only) and how an error
/// describes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct FloatRange {
    /// Smallest accepted value.
    pub(super) lo: f64,
    /// Largest accepted value.
    pub(super) hi: f64,
    /// What is accepted, for errors.
    pub(super) expected: &'static str,
}

impl FloatRange {
    /// Whether `v` is finite and inside.
    pub(super) fn contains(&self, v: f64) -> bool {
        v.is_finite() && (self.lo..=self.hi).contains(&v)
    }
}

/// An [`IntRange`] from its bounds, its text derived from them:
/// `int_range!(1..=1024)` ("an integer 1..=1024"),
/// `int_range!(0..=100000, "µs")` ("an integer of µs 0..=100000"),
/// `int_range!(0, 1 or 2)` (a short contiguous list, "0, 1 or 2"),
/// `int_range!("a size of" 1 to 16777216 "bytes")`.
macro_rules! int_range {
    ($lo:literal ..= $hi:literal) => {
        $crate::experiment::ranges::IntRange {
            lo: $lo,
            hi: $hi,
            expected: concat!("an integer ", $lo, "..=", $hi),
        }
    };
    ($lo:literal ..= $hi:literal, $unit:literal) => {
        $crate::experiment::ranges::IntRange {
            lo: $lo,
            hi: $hi,
            expected: concat!("an integer of ", $unit, " ", $lo, "..=", $hi),
        }
    };
    ($first:literal $(, $mid:literal)* or $last:literal) => {
        $crate::experiment::ranges::IntRange {
            lo: $first,
            hi: $last,
            expected: concat!($first, $(", ", $mid,)* " or ", $last),
        }
    };
    ($what:literal $lo:literal to $hi:literal $unit:literal) => {
        $crate::experiment::ranges::IntRange {
            lo: $lo,
            hi: $hi,
            expected: concat!($what, " ", $lo, " to ", $hi, " ", $unit),
        }
    };
}

/// A [`FloatRange`] from its bounds, its text derived from them:
/// `float_range!("a delay of" 0 to 10000 "ms")` ("a delay of 0 to 10000 ms").
/// Bounds are written as the text shows them (`0`, `0.001`).
macro_rules! float_range {
    ($what:literal $lo:literal to $hi:literal $unit:literal) => {
        $crate::experiment::ranges::FloatRange {
            lo: $lo as f64,
            hi: $hi as f64,
            expected: concat!($what, " ", $lo, " to ", $hi, " ", $unit),
        }
    };
}
