//! `buffers-below-bdp`: socket buffer maxima whose window (the kernel's
//! share of the buffer, [`model::winshare`]) is below 1.33 × the
//! bandwidth-delay product of `--bdp RATE,RTT`, or without it of the link
//! speed and the RTTs the host's own TCP sockets report
//! (`bdp_from_sockets.rs`). `tcp_rmem[2]`/`tcp_wmem[2]` limit autotuned
//! flows; `rmem_max`/`wmem_max` only flows that set `SO_RCVBUF`/`SO_SNDBUF`.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use model::winshare::{so_buf_effective, WindowShare, TARGET_WINDOW_BDP};
use tune::RuleId;

/// Buffer limits below the BDP.
#[derive(Debug)]
pub struct BuffersBelowBdp;

impl DoctorRule for BuffersBelowBdp {
    fn id(&self) -> FindingId {
        FindingId::BuffersBelowBdp
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "socket buffer limits below the bandwidth-delay product"
    }
    fn rationale(&self) -> &'static str {
        "a TCP flow can have at most one window of data in flight per round trip, and the window is only a share of the buffer (the rest pays for packet overhead), so a buffer whose window is below rate x RTT caps the flow below the link rate however fast the path is"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides, undated, 2011 or later) (100 Mbit/s at 100 ms: untuned 21 Mbit/s; system buffers at 1 x BDP 58, at 1.33 x BDP 67; system and application buffers at 1.33 x BDP 95 Mbit/s); Documentation/networking/ip-sysctl.rst (tcp_rmem, tcp_wmem)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let Some(bdp) = cx.input.bdp else {
            return super::bdp_from_sockets::check_from_sockets(self, cx, out);
        };
        let need = bdp.bytes();
        let snap = cx.snap();
        let s = &snap.sysctls;
        let share = WindowShare::of(
            snap.source.kernel.as_deref(),
            s.get("net.ipv4.tcp_adv_win_scale").map(String::as_str),
        );
        // Buffer space whose window is the target; the fix proposes it.
        let target = share.buffer_for(need, TARGET_WINDOW_BDP);
        let mut low = Vec::new();
        let mut unknown = Vec::new();
        for (key, field) in [
            ("net.ipv4.tcp_rmem", Some(2)),
            ("net.ipv4.tcp_wmem", Some(2)),
            ("net.core.rmem_max", None),
            ("net.core.wmem_max", None),
        ] {
            let v = s.get(key).and_then(|t| match field {
                Some(i) => t.split_whitespace().nth(i)?.parse::<u64>().ok(),
                None => t.trim().parse::<u64>().ok(),
            });
            // Autotuned sockets grow to tcp_rmem[2]/tcp_wmem[2]; rmem_max and
            // wmem_max cap only SO_RCVBUF/SO_SNDBUF, which the kernel doubles.
            let space = |v: u64| match field {
                Some(_) => v,
                None => so_buf_effective(v, None, true),
            };
            match v {
                Some(v) if space(v) < target => low.push((key, v)),
                Some(_) => {}
                None => unknown.push(key),
            }
        }
        if low.is_empty() {
            if unknown.len() == 4 {
                return Err(Skip::because(
                    "/proc/sys/net/ipv4/tcp_rmem, tcp_wmem, core/rmem_max, wmem_max: not found",
                ));
            }
            return Ok(());
        }
        let mut f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "buffer limits give a window below {TARGET_WINDOW_BDP} x the BDP of {} Mbit/s x {} ms = {} bytes",
                bdp.rate_bps / 1_000_000,
                bdp.rtt_us as f64 / 1000.0,
                need
            ),
        )
        .evidence(
            "BDP (--bdp)",
            format!(
                "{} bit/s x {} us / 8 = {need} bytes",
                bdp.rate_bps, bdp.rtt_us
            ),
            "--bdp",
        )
        .evidence(
            "window share",
            share.describe(),
            "net/ipv4/tcp_input.c tcp_win_from_space; /proc/sys/net/ipv4/tcp_adv_win_scale, /proc/sys/kernel/osrelease",
        );
        for (key, v) in &low {
            let (what, value) = if key.contains("tcp_") {
                (
                    format!("{key} (max)"),
                    format!(
                        "{v} bytes, caps an autotuned flow near {:.1} Mbit/s",
                        share.cap_bps(*v, bdp.rtt_us) / 1e6
                    ),
                )
            } else {
                let opt = if key.contains("rmem") {
                    "SO_RCVBUF"
                } else {
                    "SO_SNDBUF"
                };
                (
                    key.to_string(),
                    format!(
                        "{v} bytes, caps a flow whose application sets {opt} near {:.1} Mbit/s (the kernel doubles the size; autotuned flows are not limited by it)",
                        share.cap_bps(so_buf_effective(*v, None, true), bdp.rtt_us) / 1e6
                    ),
                )
            };
            f = f.evidence(what, value, format!("/proc/sys/{}", key.replace('.', "/")));
        }
        let n = target;
        let fix = cx.plan_fix(
            &[RuleId::SocketBuffers],
            None,
            &format!(
                "Raise the TCP autotuning maxima (tcp_rmem/tcp_wmem third field) and rmem_max/wmem_max to about {TARGET_WINDOW_BDP} x BDP / window share = {n} bytes."
            ),
            &format!(
                "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 {n}\" net.ipv4.tcp_wmem=\"4096 16384 {n}\" net.core.rmem_max={n} net.core.wmem_max={n}"
            ),
        );
        out.push(f.fix(fix));
        Ok(())
    }
}
