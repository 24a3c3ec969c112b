//! Unpredictable bytes from the kernel.

/// `N` bytes from the kernel's CSPRNG (getrandom(2), or /dev/urandom on
/// kernels without it): the one source of unpredictable values (nonces,
/// test ids, lab tokens). Seeded, reproducible streams use
/// `model::stats::SplitMix64` instead.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if let Err(e) = getrandom::fill(&mut b) {
        no_entropy(e)
    }
    b
}

/// A fresh random `u64` from [`random_bytes`].
pub fn random_u64() -> u64 {
    u64::from_ne_bytes(random_bytes::<8>())
}

#[cold]
fn no_entropy(e: getrandom::Error) -> ! {
    // As `rand::random` did: there is no safe value to carry on with.
    panic!("the kernel's random number generator failed: {e}")
}
