//! Golden tests of the AP-450 arithmetic (seed 003 quotes section 4.1).

#![allow(clippy::unwrap_used)]

use nettune_model::moderation::*;

#[test]
fn ap450_example_81000_pps_at_50_per_interrupt_is_1620_per_s_and_617_us() {
    let m = Moderation::from_packets(81_000, 50).unwrap();
    assert_eq!(m.rate, 1620);
    assert_eq!(m.timer_us, 617);
    assert_eq!(
        m.to_string(),
        "81,000 packets/s ÷ 50 packets per interrupt = 1,620 interrupts/s; 1 ÷ 1,620 interrupts/s = 617 µs timer"
    );
}

#[test]
fn ap450_3000_interrupts_per_s_is_a_333_us_timer_and_back() {
    assert_eq!(timer_us(3000), Some(333));
    assert_eq!(rate_for_timer_us(333), Some(3003));
    assert_eq!(rate_for_timer_us(617), Some(1621));
    let m = Moderation::from_timer(81_000, 617).unwrap();
    assert_eq!((m.rate, m.per_interrupt), (1621, 50));
}

#[test]
fn zero_divisors_and_extremes_give_none_or_saturate() {
    assert_eq!(interrupt_rate(81_000, 0), None);
    assert_eq!(timer_us(0), None);
    assert_eq!(rate_for_timer_us(0), None);
    assert_eq!(packets_per_interrupt(10, 0), None);
    assert_eq!(packets_per_interrupt(81_000, 1620), Some(50.0));
    assert_eq!(packets_per_interrupt(10, 3), Some(3.3));
    assert_eq!(interrupt_rate(u64::MAX, 1), Some(u64::MAX));
    assert_eq!(interrupt_rate(u64::MAX, u64::MAX), Some(1));
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(thousands(617), "617");
}
