//! `nettune bench` flags to a validated [`TestConfig`].

use super::Args;
use engine::config::{Direction, TestConfig, TestKind};

/// A TOS byte in decimal or `0x` hex.
pub(super) fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u8::from_str_radix(h, 16),
        None => t.parse(),
    };
    v.map_err(|_| format!("`{s}` is not a byte (0-255, or 0x00-0xff)"))
}

/// `--probe KIND[:MS]`; a bad value is a usage error naming the accepted forms.
pub(super) fn parse_probe(s: &str) -> Result<engine::ProbeSpec, String> {
    s.parse()
        .map_err(|e: engine::probe::ProbeParseError| e.to_string())
}

/// `-l` is refused with a pointer to the flag that was meant.
pub(super) fn no_length(_: &str) -> Result<String, String> {
    Err(
        "nettune has no -l: use --size for iperf3's -l (buffer length) \
         or --duration (-d) for netperf's -l (test length)"
            .into(),
    )
}

/// The workload: `--test`, or udp-stream for `-u`; `-u` with a TCP test is refused.
fn test_kind(a: &Args) -> anyhow::Result<TestKind> {
    let name = match (&a.test, a.udp) {
        (Some(t), _) => t.as_str(),
        (None, true) => "udp-stream",
        (None, false) => "tcp-stream",
    };
    let test: TestKind = name.parse().map_err(anyhow::Error::msg)?;
    if a.udp && !test.is_udp() {
        anyhow::bail!(
            "-u (--udp) asks for UDP but --test {name} is a TCP test \
             (leave -u out; the UDP tests are {})",
            engine::config::catalogue::names_where(|k| k.is_udp())
        );
    }
    Ok(test)
}

/// The total rate over the flows of a direction: `--rate`, or iperf3's
/// per-stream `-b` times the flows (`-b 0`: unlimited).
fn rate(a: &Args) -> Option<f64> {
    match a.bitrate {
        Some(0.0) => None,
        Some(b) => Some(b * f64::from(a.flows)),
        None => a.rate,
    }
}

fn ms(what: &str, s: f64) -> anyhow::Result<u64> {
    if !s.is_finite() || s < 0.0 {
        anyhow::bail!("--{what} must be a non-negative number of seconds");
    }
    Ok((s * 1000.0).round() as u64)
}

fn buf(what: &str, v: Option<u64>) -> anyhow::Result<Option<u32>> {
    v.map(|b| {
        u32::try_from(b)
            .ok()
            .filter(|b| *b > 0 && *b <= i32::MAX as u32)
            .ok_or_else(|| anyhow::anyhow!("--{what} must be between 1 byte and 2 GiB"))
    })
    .transpose()
}

/// Turn flags into a validated configuration.
pub fn config(a: &Args, root: &host::Root) -> anyhow::Result<TestConfig> {
    let test = test_kind(a)?;
    if a.reverse && a.bidir {
        anyhow::bail!("--reverse and --bidir exclude each other (--bidir already runs both ways)");
    }
    if a.json && a.json_stream {
        anyhow::bail!("--json and --json-stream exclude each other");
    }
    let online = root
        .read_opt("/sys/devices/system/cpu/online")
        .ok()
        .flatten()
        .and_then(|l| model::CpuSet::parse_list(&l).ok());
    let cpus: Vec<u32> = match &a.cpus {
        Some(l) => {
            let set = model::CpuSet::parse_arg(l).map_err(|e| anyhow::anyhow!("--cpus: {e}"))?;
            if let Some(on) = &online {
                if let Some(bad) = set.iter().find(|c| !on.contains(*c)) {
                    anyhow::bail!(
                        "--cpus: CPU {bad} is not online here (online: {})",
                        on.to_list()
                    );
                }
            }
            set.iter().collect()
        }
        None => Vec::new(),
    };
    // The server's CPUs are the server host's: only their syntax is checked here.
    let server_cpus = a
        .server_cpus
        .as_deref()
        .map(|l| {
            model::CpuSet::parse_arg(l)
                .map(|s| s.iter().collect::<Vec<u32>>())
                .map_err(|e| anyhow::anyhow!("--server-cpus: {e}"))
        })
        .transpose()?;
    let ncpus = online.map(|o| o.len() as u32).unwrap_or(1).max(1);
    let threads = match (test, a.threads) {
        (TestKind::TcpCrr, Some(t)) if t != a.flows => anyhow::bail!(
            "tcp-crr runs one flow per thread: leave --threads out or set it to --flows ({})",
            a.flows
        ),
        (TestKind::TcpCrr, _) => a.flows,
        (_, Some(t)) if t > a.flows => anyhow::bail!(
            "--threads {t} is more than --flows {} (a thread without a flow would idle)",
            a.flows
        ),
        (_, Some(t)) => t,
        (_, None) => a.flows.min(ncpus).max(1),
    };
    let size = match a.size {
        Some(s) => u32::try_from(s).map_err(|_| anyhow::anyhow!("--size {s} is too large"))?,
        None => test.default_size(),
    };
    let rcvbuf = match (buf("rcvbuf", a.rcvbuf)?, test) {
        (Some(b), _) => Some(b),
        (None, TestKind::UdpStream) => Some(4 << 20),
        (None, _) => None,
    };
    let cfg = TestConfig {
        test,
        flows: a.flows,
        threads,
        cpus,
        server_cpus,
        size,
        duration_ms: ms("duration", a.duration)?,
        warmup_ms: ms("warmup", a.warmup)?,
        interval_ms: ms("interval", a.interval)?,
        direction: if a.bidir {
            Direction::Bidir
        } else if a.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        },
        rate: rate(a),
        outstanding: a.outstanding,
        nodelay: a.nodelay,
        busy_poll_us: a.busy_poll,
        zerocopy: a.zerocopy,
        udp_gso: a.udp_gso,
        udp_gro: a.udp_gro,
        sndbuf: buf("sndbuf", a.sndbuf)?,
        rcvbuf,
        congestion: a.congestion.clone(),
        tos: a.tos,
        mss: a.mss,
        force_buffers: a.force_buffers,
    };
    cfg.check_flags().map_err(|e| anyhow::anyhow!("{e}"))?;
    // Typed, so `run` can exit with the usage code.
    cfg.check_rate()?;
    Ok(cfg)
}
