//! `timewait-exhaustion`: TIME_WAIT sockets (`/proc/net/sockstat` `tw`)
//! holding most of the ephemeral port range while TIME_WAIT reuse is off for
//! this traffic.

use super::{DoctorRule, FindingId, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;

/// Share of the ephemeral port range in TIME_WAIT from which it is a warning.
pub const WARN_SHARE: f64 = 0.4;
/// Share from which it is critical. connect() takes ports of one parity
/// first (the other half is kept for bind(), Linux 4.6+), so it starts
/// searching hard at half the range: on this machine a tcp-crr burst fell
/// from 9.5k to under 400 connections/s with 14 739 of 28 232 ports in
/// TIME_WAIT (2026-11-23).
pub const CRITICAL_SHARE: f64 = 0.5;

/// Ephemeral ports used up by TIME_WAIT.
#[derive(Debug)]
pub struct TimewaitExhaustion;

impl DoctorRule for TimewaitExhaustion {
    fn id(&self) -> FindingId {
        FindingId::TimewaitExhaustion
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn title(&self) -> &'static str {
        "ephemeral ports used up by TIME_WAIT"
    }
    fn rationale(&self) -> &'static str {
        "each closed outgoing connection holds its local port in TIME_WAIT for 60 s; with short connections to one server the port range runs out and connect() stalls or fails with EADDRNOTAVAIL, collapsing the connection rate"
    }
    fn source(&self) -> &'static str {
        "an unpublished field test (2026, a 2-vCPU KVM guest with kernel 6.18, two network namespaces over veth): connection bursts fall from about 45k/s to under 1k/s, tcp_tw_reuse=1 and a wider ip_local_port_range keep 35-48k/s; bench/studies/time-wait.md (tcp_tw_reuse x ip_local_port_range against connection rate); Documentation/networking/ip-sysctl.rst (tcp_tw_reuse, ip_local_port_range)"
    }
    fn check(&self, cx: &Cx<'_>, out: &mut Vec<Finding>) -> Result<(), Skip> {
        let ss = cx.need(&cx.input.sockstat, "/proc/net/sockstat")?;
        let Some(tw) = ss.tcp_tw() else {
            return Err(Skip::because("/proc/net/sockstat: no TCP tw count"));
        };
        let sysctls = &cx.snap().sysctls;
        let Some(range) = sysctls.get("net.ipv4.ip_local_port_range") else {
            return Err(Skip::because(
                "/proc/sys/net/ipv4/ip_local_port_range: not found",
            ));
        };
        let Some((lo, hi)) = port_range(range) else {
            return Err(Skip::because(format!(
                "/proc/sys/net/ipv4/ip_local_port_range: `{range}` is not two port numbers"
            )));
        };
        let ports = hi.saturating_sub(lo).saturating_add(1);
        let reuse = sysctls
            .get("net.ipv4.tcp_tw_reuse")
            .map(|s| s.trim().to_string());
        let share = tw as f64 / ports as f64;
        // 1 = reuse for all traffic; 2 (the default on recent kernels) = loopback only.
        if share < WARN_SHARE || reuse.as_deref() == Some("1") {
            return Ok(());
        }
        let reuse_txt = match reuse.as_deref() {
            Some("0") => "0 (off)".to_string(),
            Some("2") => "2 (loopback only)".to_string(),
            Some(v) => v.to_string(),
            None => "?".to_string(),
        };
        let mut f = crate::finding::from_rule(
            self,
            "host",
            format!(
                "{tw} TIME_WAIT sockets against {ports} ephemeral ports ({:.0} %), tcp_tw_reuse {reuse_txt}",
                100.0 * share
            ),
        )
        .evidence("TCP sockets in TIME_WAIT", tw.to_string(), "/proc/net/sockstat TCP tw")
        .evidence(
            "net.ipv4.ip_local_port_range",
            format!("{lo}-{hi} ({ports} ports)"),
            "/proc/sys/net/ipv4/ip_local_port_range",
        )
        .evidence(
            "net.ipv4.tcp_tw_reuse",
            reuse_txt,
            "/proc/sys/net/ipv4/tcp_tw_reuse",
        );
        if let Some(w) = &cx.window {
            if let Some(segs) = w.counter_rate("Tcp.OutSegs") {
                f = f.evidence(
                    "Tcp.OutSegs",
                    format!("{segs:.0}/s"),
                    "/proc/net/snmp Tcp.OutSegs",
                );
            }
        }
        if share >= CRITICAL_SHARE {
            f = f.severity(Severity::Critical);
        }
        f = f.fix(Fix {
            text: "Let new outgoing connections reuse TIME_WAIT ports and give them more ports: net.ipv4.tcp_tw_reuse=1 and net.ipv4.ip_local_port_range=\"1024 65535\" (both per network namespace). Better still, keep connections open (pooling, keep-alive).".into(),
            changes: fix_changes(cx),
            command: None,
            app: Some("sysctl -w net.ipv4.tcp_tw_reuse=1 net.ipv4.ip_local_port_range=\"1024 65535\"; in the application, reuse connections".into()),
            bench: None,
        });
        out.push(f);
        Ok(())
    }
}

/// The two sysctl changes of the fix, as plan changes for this host (each
/// left out when the host lacks the sysctl), so `nettune lab` and a user's
/// `apply --plan` can apply them through the journal.
fn fix_changes(cx: &Cx<'_>) -> Vec<model::plan::Change> {
    use model::experiment::{Knob, Level};
    use tune::levels::{Effect, KnobKind, SysctlKnob};
    let wanted = [
        (Knob::TcpTwReuse, Level::Int(1)),
        (Knob::IpLocalPortRange, Level::Range([1024, 65535])),
    ];
    let mut out = Vec::new();
    for (knob, level) in wanted {
        if let Ok(Effect::Changes(changes)) = SysctlKnob.effect(cx.snap(), knob, &level) {
            for mut c in changes {
                if c.before
                    .as_deref()
                    .map(str::split_whitespace)
                    .map(Iterator::collect::<Vec<_>>)
                    == Some(c.after.split_whitespace().collect())
                {
                    continue;
                }
                c.rule = model::plan::Origin::Finding(FindingId::TimewaitExhaustion);
                c.reason = "TIME_WAIT sockets hold most of the ephemeral ports".into();
                c.source =
                    "Documentation/networking/ip-sysctl.rst (tcp_tw_reuse, ip_local_port_range)"
                        .into();
                out.push(c);
            }
        }
    }
    out
}

/// `"32768\t60999"` → (32768, 60999), `lo <= hi`.
fn port_range(s: &str) -> Option<(u64, u64)> {
    let mut it = s.split_whitespace().map(|t| t.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    (it.next().is_none() && lo <= hi && hi <= 65535).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::port_range;

    #[test]
    fn port_ranges() {
        assert_eq!(port_range("32768\t60999"), Some((32768, 60999)));
        assert_eq!(port_range("1024 65535"), Some((1024, 65535)));
        assert_eq!(port_range("60999 32768"), None);
        assert_eq!(port_range("1 2 3"), None);
        assert_eq!(port_range("x"), None);
        assert_eq!(port_range("1 99999"), None);
    }
}
