//! Wraps, resets and hostile counters.

use super::*;

#[test]
fn softnet_wraps_at_32_bits() {
    assert_eq!(
        increase(u64::from(u32::MAX - 4), 5, Width::Bits32),
        Some(10)
    );
    assert_eq!(increase(3, 7, Width::Bits32), Some(4));
    // A 64-bit counter never wraps at 2^32: a decrease is a reset.
    assert_eq!(increase(u64::from(u32::MAX - 4), 5, Width::Bits64), None);
    // The wrapped difference must be plausible (below 2^31).
    assert_eq!(increase(0x100, 0x1, Width::Bits32), None);
    assert_eq!(increase(1 << 31, 0, Width::Bits32), None);
    assert_eq!(
        increase((1 << 31) + 1, 0, Width::Bits32),
        Some((1 << 31) - 1)
    );
    // Values beyond 32 bits cannot be a 32-bit wrap.
    assert_eq!(increase(1 << 40, 5, Width::Bits32), None);
}

#[test]
fn hostile_counters_do_not_overflow() {
    let stat =
        crate::parse::stat::parse_proc_stat("cpu  1 0 0 0 0 0 0 0 0 0\ncpu0 1 0 0 0 0 0 0 0 0 0\n")
            .unwrap();
    let mk = |v: i64| Sample {
        at: Nanos(0),
        stat: stat.clone(),
        softirqs: None,
        interrupts: None,
        netdev: None,
        softnet: None,
        counters: [Some(v); WATCHED_COUNTERS.len()],
        ..Sample::default()
    };
    let d = mk(i64::MAX).delta(&mk(-5));
    assert!(d.counters.values().all(|v| *v == 0), "{:?}", d.counters);
}
