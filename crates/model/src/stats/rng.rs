//! A small, well-known seeded PRNG: SplitMix64 (Steele, Lea and Flood,
//! "Fast splittable pseudorandom number generators", OOPSLA 2014).
//!
//! Chosen over `rand`'s `StdRng` because its output for a seed is fixed by
//! its published definition, so a seed written in an experiment file gives
//! the same run order and the same intervals in every nettune version.

/// SplitMix64 generator. Not for cryptography.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index in `0..n` (`0` when `n` is 0). Multiply-shift
    /// reduction: the bias is below `n / 2^64`.
    pub fn below(&mut self, n: usize) -> usize {
        let r = (u128::from(self.next_u64()) * n as u128) >> 64;
        // r < n <= usize::MAX, so the conversion cannot fail.
        usize::try_from(r).unwrap_or(0)
    }

    /// A uniform integer in `0..n` (`0` when `n` is 0), by the same
    /// multiply-shift reduction as [`SplitMix64::below`].
    pub fn below_u64(&mut self, n: u64) -> u64 {
        let r = (u128::from(self.next_u64()) * u128::from(n)) >> 64;
        // r < n <= u64::MAX, so the conversion cannot fail.
        u64::try_from(r).unwrap_or(0)
    }

    /// `true` with probability `p` (never for `p <= 0` or NaN, always for
    /// `p >= 1`); one draw of [`SplitMix64::next_f64`] either way.
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// A uniform float in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A normal variate (Box–Muller), for simulations and tests.
    pub fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        // 1 - u is in (0, 1], so ln is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        mean + sd * z
    }

    /// Fisher–Yates shuffle in place.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_the_published_splitmix64() {
        // The reference implementation's first outputs for seed 0
        // (Vigna's splitmix64.c): a dependency or refactor cannot move them.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn bounded_draws_stay_in_range() {
        let mut r = SplitMix64::new(3);
        assert_eq!(r.below_u64(0), 0);
        for _ in 0..1000 {
            assert!(r.below_u64(7) < 7);
            assert!(r.below_u64(u64::MAX) < u64::MAX);
        }
        assert!(!(0..100).any(|_| r.chance(0.0)));
        assert!(!(0..100).any(|_| r.chance(f64::NAN)));
        assert!((0..100).all(|_| r.chance(1.0)));
        let hits = (0..10_000).filter(|_| r.chance(0.25)).count();
        assert!((2200..2800).contains(&hits), "{hits}");
    }
}
