//! `socket-buffers`: socket buffer limits sized to the bandwidth-delay
//! product: a window of `buffer_factor` × BDP (1.33 by default) divided by
//! the kernel's window share of a buffer ([`model::winshare`]). The same
//! size goes to `tcp_rmem[2]`/`tcp_wmem[2]` (what autotuned flows grow to)
//! and to `rmem_max`/`wmem_max` (what `SO_RCVBUF`/`SO_SNDBUF` may ask for,
//! which the kernel doubles, so such a flow gets at least that window).

use super::{Rule, RuleId};
use crate::context::Ctx;
use model::plan::Phase;
use model::snapshot::Interface;
use model::winshare::WindowShare;

/// Largest socket buffer size the kernel takes: `net.core.rmem_max`/`wmem_max`
/// and each value of `net.ipv4.tcp_rmem`/`tcp_wmem` are C ints, so a larger
/// number is refused with EINVAL.
pub const SOCKET_BUFFER_MAX: u64 = i32::MAX as u64;

/// Raises `rmem_max`/`wmem_max` and the maximum of `tcp_rmem`/`tcp_wmem`.
#[derive(Debug)]
pub struct SocketBuffers;

impl Rule for SocketBuffers {
    fn id(&self) -> RuleId {
        RuleId::SocketBuffers
    }

    fn rationale(&self) -> &'static str {
        "TCP needs a window of about 1.33 x the bandwidth-delay product to fill a long fat pipe, and only a share of a socket buffer (half by default) is window"
    }

    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (100 Mbit/s, 100 ms: 21 Mbit/s untuned, 95 Mbit/s with buffers at 1.33 x BDP)"
    }

    fn plan_host(&self, cx: &mut Ctx<'_>, ifaces: &[&Interface]) {
        let profile = cx.profile;
        let st = &profile.settings;
        let speed = ifaces.iter().filter_map(|i| i.speed_mbps).max();
        let (bdp, how) = match (&cx.opts.bdp, speed) {
            (Some(b), _) => (
                b.bytes(),
                format!("--bdp {} bit/s x {} µs", b.rate_bps, b.rtt_us),
            ),
            (None, Some(mbps)) => (
                link_bdp_bytes(mbps, st.default_rtt_us),
                format!("link {mbps} Mbit/s x default RTT {} µs", st.default_rtt_us),
            ),
            (None, None) => {
                cx.note(
                    self.id(),
                    "no link speed and no --bdp RATE,RTT: socket buffers left alone".into(),
                );
                return;
            }
        };
        // Only a share of a buffer is window (the rest is packet overhead):
        // size the buffer so its window is buffer_factor x BDP.
        let share = WindowShare::of(
            cx.snap.source.kernel.as_deref(),
            cx.snap
                .sysctls
                .get("net.ipv4.tcp_adv_win_scale")
                .map(String::as_str),
        );
        let want = share.buffer_for(bdp, st.buffer_factor);
        let buf = want.min(SOCKET_BUFFER_MAX);
        let mut why = format!(
            "window BDP {bdp} B ({how}) x {}; {}: buffer {want} B",
            st.buffer_factor,
            share.describe()
        );
        if buf < want {
            why.push_str(&format!(
                ", clamped to {buf} B (INT_MAX, the most the kernel takes)"
            ));
        }
        for key in ["net.core.rmem_max", "net.core.wmem_max"] {
            if let Some(cur) = cx.snap.sysctls.get(key) {
                let c: u64 = cur.trim().parse().unwrap_or(0);
                if c >= buf {
                    continue;
                }
            }
            cx.sysctl(Phase::Sysctls, self.id(), key, buf.to_string(), why.clone());
        }
        for key in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
            let Some(cur) = cx.snap.sysctls.get(key).cloned() else {
                cx.note(self.id(), format!("{key}: n/a (not in the snapshot)"));
                continue;
            };
            let parts: Vec<u64> = cur
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if parts.len() != 3 || parts[2] >= buf {
                continue;
            }
            let after = format!("{} {} {}", parts[0], parts[1], buf);
            cx.sysctl(
                Phase::Sysctls,
                self.id(),
                key,
                after,
                format!("{why}; min and default kept"),
            );
        }
    }
}

/// Bytes in flight at `mbps` Mbit/s over `rtt_us` µs, saturating instead of
/// overflowing (the speed comes from sysfs, the RTT from a profile).
fn link_bdp_bytes(mbps: u64, rtt_us: u64) -> u64 {
    // Mbit/s x µs = bits; / 8 = bytes. Exact in u128 for any u64 inputs.
    let bits = u128::from(mbps) * u128::from(rtt_us);
    u64::try_from(bits / 8).unwrap_or(u64::MAX)
}
