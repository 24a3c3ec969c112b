//! Interrupt moderation arithmetic, both ways, as Intel's AP-450
//! ("Interrupt Moderation Using Intel Gigabit Ethernet Controllers", section
//! 4.1, quoted in field notes on e1000 tuning) does it:
//!
//! * interrupts/s = packets/s ÷ packets per interrupt;
//! * timer = 1 ÷ interrupt rate.
//!
//! AP-450's example: 81,000 packets/s at 50 packets per interrupt is 1,620
//! interrupts/s, a timer of 617 µs; 3,000 interrupts/s is a 333 µs timer.
//! Integer arithmetic, rounded to the nearest; `None` on a zero divisor.

use std::fmt;

/// `a / b` rounded to the nearest integer (halves up); `None` when `b` is 0.
fn div_round(a: u64, b: u64) -> Option<u64> {
    if b == 0 {
        return None;
    }
    let q = a / b;
    let r = a % b;
    // r >= b - r  <=>  2r >= b, without overflowing.
    Some(if r >= b - r { q.saturating_add(1) } else { q })
}

/// Interrupts per second that deliver `pps` packets/s at `per_interrupt`
/// packets per interrupt.
pub fn interrupt_rate(pps: u64, per_interrupt: u64) -> Option<u64> {
    div_round(pps, per_interrupt)
}

/// The timer, in µs, that gives `rate` interrupts per second.
pub fn timer_us(rate: u64) -> Option<u64> {
    div_round(1_000_000, rate)
}

/// The interrupt rate a timer of `us` µs gives (the other way round).
pub fn rate_for_timer_us(us: u64) -> Option<u64> {
    div_round(1_000_000, us)
}

/// Packets per interrupt seen over an interval: `packets ÷ interrupts`, to
/// one decimal; `None` when there was no interrupt.
pub fn packets_per_interrupt(packets: u64, interrupts: u64) -> Option<f64> {
    if interrupts == 0 {
        return None;
    }
    Some((packets as f64 / interrupts as f64 * 10.0).round() / 10.0)
}

/// One moderation setting shown both ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moderation {
    /// Packets per second.
    pub pps: u64,
    /// Packets per interrupt.
    pub per_interrupt: u64,
    /// Interrupts per second.
    pub rate: u64,
    /// Timer between interrupts, µs.
    pub timer_us: u64,
}

impl Moderation {
    /// From a packet rate and a wanted number of packets per interrupt.
    pub fn from_packets(pps: u64, per_interrupt: u64) -> Option<Moderation> {
        let rate = interrupt_rate(pps, per_interrupt)?;
        Some(Moderation {
            pps,
            per_interrupt,
            rate,
            timer_us: timer_us(rate)?,
        })
    }

    /// From a packet rate and a timer (ethtool `rx-usecs`).
    pub fn from_timer(pps: u64, us: u64) -> Option<Moderation> {
        let rate = rate_for_timer_us(us)?;
        Some(Moderation {
            pps,
            per_interrupt: div_round(pps, rate)?,
            rate,
            timer_us: us,
        })
    }
}

/// `81000` as `81,000`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

impl fmt::Display for Moderation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} packets/s ÷ {} packets per interrupt = {} interrupts/s; 1 ÷ {} interrupts/s = {} µs timer",
            thousands(self.pps),
            thousands(self.per_interrupt),
            thousands(self.rate),
            thousands(self.rate),
            thousands(self.timer_us),
        )
    }
}
