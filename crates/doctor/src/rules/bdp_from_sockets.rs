//! The second form of `buffers-below-bdp`: without `--bdp`, the BDP is the
//! fastest NIC's link speed times the RTT the host's own TCP sockets report
//! (`INET_DIAG` `tcp_info`), checked against the window the TCP buffer
//! maxima give (their kernel's window share, [`model::winshare`]).

use super::{DoctorRule, Skip};
use crate::finding::{Finding, Fix, Severity};
use crate::input::Cx;
use model::doctor_facts::TcpSocket;
use model::plan::Bdp;
use model::winshare::{WindowShare, TARGET_WINDOW_BDP};

/// A socket that moved at least this many bytes counts as bulk; the RTT of
/// bulk sockets is the one buffers must cover.
pub const BULK_BYTES: u64 = 1 << 20;

/// The maximum (third) value of a `min default max` sysctl.
fn max_of(v: Option<&String>) -> Option<u64> {
    v?.split_whitespace().nth(2)?.parse().ok()
}

/// Check the TCP buffer maxima against link speed × the sockets' RTT;
/// findings carry `rule`'s id. `Err(Skip)` when there is no socket RTT or no
/// link speed to compute with.
pub(crate) fn check_from_sockets(
    rule: &dyn DoctorRule,
    cx: &Cx<'_>,
    out: &mut Vec<Finding>,
) -> Result<(), Skip> {
    let socks = cx
        .input
        .facts
        .tcp_sockets
        .get()
        .map_err(|e| Skip(format!("no --bdp RATE,RTT given, and no socket RTTs: {e}")))?;
    let remote: Vec<&TcpSocket> = socks
        .iter()
        .filter(|s| !s.is_loopback() && s.rtt_us > 0)
        .collect();
    if remote.is_empty() {
        return Err(Skip::because(
            "no --bdp RATE,RTT given, and no established non-loopback TCP socket to take an RTT from",
        ));
    }
    let moved = |s: &TcpSocket| {
        s.bytes_acked
            .unwrap_or(0)
            .saturating_add(s.bytes_received.unwrap_or(0))
    };
    let bulk: Vec<&TcpSocket> = remote
        .iter()
        .copied()
        .filter(|s| moved(s) >= BULK_BYTES)
        .collect();
    let pool = if bulk.is_empty() { &remote } else { &bulk };
    let Some(sock) = pool.iter().copied().max_by_key(|s| s.rtt_us) else {
        return Err(Skip::because("no socket RTT"));
    };
    let s = cx.snap();
    let Some(nic) = s
        .interfaces
        .iter()
        .filter(|i| i.driver.is_some() && i.operstate.as_deref() != Some("down"))
        .filter(|i| i.speed_mbps.is_some_and(|v| v > 0))
        .max_by_key(|i| i.speed_mbps)
    else {
        return Err(Skip::because(
            "no --bdp RATE,RTT given, and no NIC reports its link speed (/sys/class/net/IF/speed)",
        ));
    };
    let mbps = nic.speed_mbps.unwrap_or(0);
    let bdp = Bdp {
        rate_bps: mbps.saturating_mul(1_000_000),
        rtt_us: u64::from(sock.rtt_us),
    };
    let bytes = bdp.bytes();
    let share = WindowShare::of(
        s.source.kernel.as_deref(),
        s.sysctls
            .get("net.ipv4.tcp_adv_win_scale")
            .map(String::as_str),
    );
    let target = share.buffer_for(bytes, TARGET_WINDOW_BDP);
    let mut short = Vec::new();
    for k in ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"] {
        if let Some(m) = max_of(s.sysctls.get(k)).filter(|m| *m < target) {
            short.push((k, m));
        }
    }
    if short.is_empty() {
        return Ok(());
    }
    let rtt_ms = f64::from(sock.rtt_us) / 1000.0;
    let mut f = crate::finding::from_rule(
        rule,
        "tcp",
        format!(
            "TCP buffer maxima give a window below {TARGET_WINDOW_BDP} × the BDP of {} Mbit/s × {rtt_ms:.1} ms = {} bytes",
            mbps, bytes
        ),
    )
    .severity(Severity::Warning)
    .evidence(
        format!("{} link speed", nic.name),
        format!("{mbps} Mbit/s"),
        format!("/sys/class/net/{}/speed", nic.name),
    )
    .evidence(
        format!(
            "RTT of {}:{} → {}:{}",
            sock.local, sock.local_port, sock.remote, sock.remote_port
        ),
        format!(
            "{rtt_ms:.1} ms (largest of {} {}socket{})",
            pool.len(),
            if bulk.is_empty() { "" } else { "bulk " },
            if pool.len() == 1 { "" } else { "s" }
        ),
        "netlink INET_DIAG tcp_info (ss -ti)",
    )
    .evidence(
        "window share",
        share.describe(),
        "net/ipv4/tcp_input.c tcp_win_from_space; /proc/sys/net/ipv4/tcp_adv_win_scale, /proc/sys/kernel/osrelease",
    );
    for (k, m) in &short {
        f = f.evidence(
            format!("{k} max"),
            format!(
                "{m} bytes, caps an autotuned flow near {:.1} Mbit/s",
                share.cap_bps(*m, bdp.rtt_us) / 1e6
            ),
            format!("/proc/sys/{}", k.replace('.', "/")),
        );
    }
    let arg = format!("{mbps}mbit,{}us", sock.rtt_us);
    let mut cmd = format!("nettune plan --profile {} --bdp {arg}", cx.plan_profile);
    if let Some(r) = &cx.input.root_arg {
        cmd.push_str(&format!(" --root {r}"));
    }
    out.push(f.fix(Fix {
        text: format!(
            "Plan socket buffers for this path: the socket-buffers rule with --bdp {arg} raises tcp_rmem/tcp_wmem (and rmem_max/wmem_max) above the BDP; review, then `nettune apply` with the same flags."
        ),
        command: Some(cmd),
        app: Some("leave SO_RCVBUF/SO_SNDBUF unset so autotuning can grow to tcp_rmem/tcp_wmem, or set them at least to the BDP".into()),
        ..Fix::default()
    }));
    Ok(())
}
