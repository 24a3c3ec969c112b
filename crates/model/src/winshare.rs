//! How much of a TCP socket buffer the kernel turns into window: the rest
//! pays for `sk_buff` overhead (`skb->truesize` beyond the payload). Buffer
//! sizing (`socket-buffers`) and its check (`buffers-below-bdp`) share this
//! arithmetic.
//!
//! Kernel rules (net/ipv4/tcp_input.c, include/net/tcp.h `tcp_win_from_space`):
//! - before 6.6: window = space − space >> `tcp_adv_win_scale` when the
//!   sysctl is > 0 (1 → 1/2, 2 → 3/4), space >> −`tcp_adv_win_scale` when
//!   ≤ 0. The default is 1 (1/2) since 3.6 (it was 2 before).
//! - 6.6 and later (commit dfa2f0483360 "tcp: get rid of
//!   sysctl_tcp_adv_win_scale"): a per-socket `scaling_ratio`, measured as
//!   `skb->len / skb->truesize` of received segments, starting at 50 %
//!   (`TCP_DEFAULT_SCALING_RATIO`); the sysctl is read no more. The measured
//!   ratio depends on the NIC's buffer layout, so planning takes the
//!   starting 50 %.
//!
//! `SO_RCVBUF`/`SO_SNDBUF` double the value asked for (capped by
//! `net.core.rmem_max`/`wmem_max` first) and turn autotuning off for that
//! socket; autotuned sockets grow up to `tcp_rmem[2]`/`tcp_wmem[2]`, which
//! `rmem_max` does not limit (Documentation/networking/ip-sysctl.rst).

/// Window, as a multiple of the BDP, buffers are sized for: Red Hat's RHEL 6 tuning slides (Jeremy Eder) reached
/// 95 % of a 100 Mbit/s, 100 ms path with a window of about 1.33 × BDP
/// (buffers forced to 1.33 × BDP, doubled by the kernel, half of it window)
/// and 67 % with half that window.
pub const TARGET_WINDOW_BDP: f64 = 1.33;

/// The share of buffer space usable as window, as a fraction in (0, 1],
/// and the rule it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowShare {
    /// Usable fraction of the buffer.
    pub fraction: f64,
    /// Which kernel rule gave it.
    pub rule: ShareRule,
}

/// Where a [`WindowShare`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareRule {
    /// `net.ipv4.tcp_adv_win_scale` (kernels before 6.6), with its value.
    AdvWinScale(i32),
    /// The per-socket scaling ratio of 6.6 and later, at its 50 % start.
    ScalingRatio,
    /// Neither kernel version nor sysctl known: the 50 % both defaults give.
    Default,
}

impl WindowShare {
    /// The share on a kernel of release `kernel` (`/proc/sys/kernel/osrelease`)
    /// with `net.ipv4.tcp_adv_win_scale` = `adv_win_scale` (either unknown).
    pub fn of(kernel: Option<&str>, adv_win_scale: Option<&str>) -> WindowShare {
        let newer = kernel.and_then(release).map(|v| v >= (6, 6));
        let scale = adv_win_scale.and_then(|t| t.trim().parse::<i32>().ok());
        match (newer, scale) {
            (Some(true), _) => WindowShare {
                fraction: 0.5,
                rule: ShareRule::ScalingRatio,
            },
            (_, Some(s)) => WindowShare {
                fraction: adv_share(s),
                rule: ShareRule::AdvWinScale(s),
            },
            _ => WindowShare {
                fraction: 0.5,
                rule: ShareRule::Default,
            },
        }
    }

    /// Window a buffer of `space` bytes allows.
    pub fn window(&self, space: u64) -> u64 {
        // `as` saturates; the fraction is in (0, 1].
        (space as f64 * self.fraction) as u64
    }

    /// Buffer (bytes) whose window is `factor` × `bdp` bytes, rounded up and
    /// saturating.
    pub fn buffer_for(&self, bdp: u64, factor: f64) -> u64 {
        let want = bdp as f64 * factor / self.fraction;
        if want.is_finite() && want >= 0.0 {
            want.ceil() as u64
        } else {
            u64::MAX
        }
    }

    /// The rate, bit/s, a flow whose buffer is `space` bytes can reach over
    /// `rtt_us` µs: one window per round trip (0 for a zero RTT).
    pub fn cap_bps(&self, space: u64, rtt_us: u64) -> f64 {
        if rtt_us == 0 {
            return 0.0;
        }
        self.window(space) as f64 * 8.0 * 1e6 / rtt_us as f64
    }

    /// One line naming the share and its rule, for evidence and plan reasons.
    pub fn describe(&self) -> String {
        let pct = self.fraction * 100.0;
        match self.rule {
            ShareRule::AdvWinScale(s) => {
                format!("{pct:.1} % of the buffer is window (net.ipv4.tcp_adv_win_scale = {s})")
            }
            ShareRule::ScalingRatio => format!(
                "{pct:.1} % of the buffer is window (kernel ≥ 6.6: per-socket scaling ratio, 50 % at start)"
            ),
            ShareRule::Default => {
                format!("{pct:.1} % of the buffer is window (the kernels' default share)")
            }
        }
    }
}

/// Usable share under `tcp_adv_win_scale` = `s` (clamped to the kernel's
/// −31..=31).
fn adv_share(s: i32) -> f64 {
    let s = s.clamp(-31, 31);
    if s > 0 {
        1.0 - 0.5f64.powi(s)
    } else {
        0.5f64.powi(-s)
    }
}

/// `(major, minor)` of a kernel release such as `6.18.44-fc`.
fn release(r: &str) -> Option<(u32, u32)> {
    let mut it = r.trim().split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// Effective size the kernel gives a socket that asks for `requested` bytes
/// with `SO_RCVBUF`/`SO_SNDBUF` under a maximum of `max` (`rmem_max` or
/// `wmem_max`): twice the smaller. Forcing (`SO_RCVBUFFORCE`) skips `max`.
pub fn so_buf_effective(requested: u64, max: Option<u64>, forced: bool) -> u64 {
    let r = match (forced, max) {
        (false, Some(m)) => requested.min(m),
        _ => requested,
    };
    r.saturating_mul(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_follows_the_kernel_rule() {
        let s = WindowShare::of(Some("5.15.0-91-generic"), Some("1"));
        assert_eq!((s.fraction, s.rule), (0.5, ShareRule::AdvWinScale(1)));
        assert_eq!(WindowShare::of(Some("4.19.0"), Some("2")).fraction, 0.75);
        assert_eq!(WindowShare::of(None, Some("-2")).fraction, 0.25);
        // 6.6 and later ignore the sysctl.
        let s = WindowShare::of(Some("6.18.44-fc-v657"), Some("2"));
        assert_eq!((s.fraction, s.rule), (0.5, ShareRule::ScalingRatio));
        assert_eq!(WindowShare::of(None, None).rule, ShareRule::Default);
        assert!(WindowShare::of(Some("x"), Some("99")).fraction <= 1.0);
    }

    #[test]
    fn cap_is_the_window_per_round_trip() {
        let s = WindowShare::of(Some("6.1.0"), Some("1"));
        // 1.25 MB at 100 ms: 100 Mbit/s of buffer, 50 Mbit/s of window.
        assert_eq!(s.cap_bps(1_250_000, 100_000), 50e6);
        assert_eq!(s.buffer_for(1_250_000, 1.33), 3_325_000);
        assert_eq!(s.cap_bps(1, 0), 0.0);
        assert_eq!(s.buffer_for(u64::MAX, 16.0), u64::MAX);
    }

    #[test]
    fn so_rcvbuf_is_doubled_and_capped_unless_forced() {
        assert_eq!(so_buf_effective(4 << 20, Some(212_992), false), 425_984);
        assert_eq!(so_buf_effective(4 << 20, Some(212_992), true), 8 << 20);
        assert_eq!(so_buf_effective(4 << 20, None, false), 8 << 20);
    }
}
