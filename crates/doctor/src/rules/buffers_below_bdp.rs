//! `buffers-below-bdp`: socket buffer maxima below the bandwidth-delay
//! product of `--bdp RATE,RTT`, or without it of the link speed and the
//! RTTs the host's own TCP sockets report (`bdp_from_sockets.rs`).

use super::{DoctorId, DoctorRule, Skip};
use crate::finding::{Finding, Severity};
use crate::input::Cx;
use tune::RuleId;

/// Buffer limits below the BDP.
#[derive(Debug)]
pub struct BuffersBelowBdp;

impl DoctorRule for BuffersBelowBdp {
    fn id(&self) -> DoctorId {
        DoctorId::BuffersBelowBdp
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "socket buffer limits below the bandwidth-delay product"
    }
    fn rationale(&self) -> &'static str {
        "a TCP flow can have at most one buffer of data in flight per round trip, so a buffer smaller than rate x RTT caps the flow below the link rate however fast the path is"
    }
    fn source(&self) -> &'static str {
        "Jeremy Eder, \"Performance Tuning: Red Hat Enterprise Linux 6\" (Red Hat slides) (100 Mbit/s at 100 ms: untuned 21 Mbit/s, buffers at 1.33 x BDP 95 Mbit/s); Documentation/networking/ip-sysctl.rst (tcp_rmem, tcp_wmem)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let Some(bdp) = cx.input.bdp else {
            return super::bdp_from_sockets::check_from_sockets(self, cx, out);
        };
        let need = bdp.bytes();
        let s = &cx.snap().sysctls;
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
            match v {
                Some(v) if v < need => low.push((key, v)),
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
        let mut f = Finding::new(
            self,
            "host",
            format!(
                "buffer limits below the BDP of {} Mbit/s x {} ms = {} bytes",
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
        );
        for (key, v) in &low {
            let what = if key.contains("tcp_") {
                format!("{key} (max)")
            } else {
                key.to_string()
            };
            f = f.evidence(
                what,
                format!(
                    "{v} bytes, caps a flow near {:.1} Mbit/s",
                    *v as f64 * 8.0 / bdp.rtt_us as f64
                ),
                format!("/proc/sys/{}", key.replace('.', "/")),
            );
        }
        let fix = cx.plan_fix(
            &[RuleId::SocketBuffers],
            None,
            "Raise the TCP autotuning maxima (tcp_rmem/tcp_wmem third field) and rmem_max/wmem_max to about 1.33 x BDP.",
            &format!(
                "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 {n}\" net.ipv4.tcp_wmem=\"4096 16384 {n}\" net.core.rmem_max={n} net.core.wmem_max={n}",
                n = need.saturating_mul(4) / 3
            ),
        );
        out.push(f.fix(fix));
        Ok(())
    }
}
