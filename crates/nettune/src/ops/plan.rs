//! Plans and snapshots of a root: what `nettune plan`, `inspect`, `profile
//! show`, `apply --replan` and the agent's `plan` and `inspect` run.

use host::Root;
use model::plan::{Bdp, BdpSpec, NetnsScope, Plan, PlanNote, PlanOptions, RttMeasured};
use model::snapshot::HostSnapshot;
use model::text::{printable, Printable};
use model::CpuSet;
use std::path::Path;
use std::time::Duration;
use tune::profile::Profile;

/// Check and open `--root`.
pub fn open_root(dir: &Path) -> anyhow::Result<Root> {
    if !dir.is_dir() {
        anyhow::bail!("--root {}: not a directory", dir.display());
    }
    Ok(Root::new(dir))
}

/// The snapshot `inspect --json` prints: `root` read, only the `iface`
/// interfaces (all when empty). `nettune agent` answers `inspect` with it.
pub fn snapshot(root: &Path, iface: &[String]) -> anyhow::Result<HostSnapshot> {
    let snap = host::read_snapshot(&open_root(root)?);
    filter(snap, iface)
}

/// Keep only the named interfaces (all when `names` is empty).
pub fn filter(mut snap: HostSnapshot, names: &[String]) -> anyhow::Result<HostSnapshot> {
    if names.is_empty() {
        return Ok(snap);
    }
    for n in names {
        if snap.interface(n).is_none() {
            let have: Vec<&str> = snap.interfaces.iter().map(|i| i.name.as_str()).collect();
            anyhow::bail!(
                "no interface {} (have: {})",
                Printable(n),
                printable(&have.join(", "))
            );
        }
    }
    snap.interfaces.retain(|i| names.contains(&i.name));
    Ok(snap)
}

/// Facts beyond the snapshot (namespace, softnet totals, PM QoS files),
/// read by host; `apply` re-plans with the same.
pub use host::extras::read_extras;

/// Snapshot the root and plan with `profile`.
pub fn make_plan(
    root: &Root,
    profile: &Profile,
    opts: PlanOptions,
) -> anyhow::Result<(Plan, HostSnapshot)> {
    let snap = host::read_snapshot(root);
    let extras = read_extras(root, &snap);
    let mut plan = tune::plan(&snap, &extras, profile, &opts)?;
    rtt_note(&mut plan);
    Ok((plan, snap))
}

/// The changes after the channels phase, planned again from the host as it is
/// now (the channel change renumbered IRQs and added or removed queues), with
/// the plan's own profile and options: what `apply` and the agent's `apply`
/// resume a paused generation with.
pub fn replan_later(
    root: &Root,
    plan: &Plan,
) -> Result<Vec<model::plan::Change>, host::apply::ReplanError> {
    let profile = match &plan.profile_toml {
        Some(t) => tune::profile::parse_user(t, &plan.profile)?,
        None => super::profile::load(&plan.profile)?,
    };
    let snap = host::read_snapshot(root);
    let extras = read_extras(root, &snap);
    let fresh = tune::plan(&snap, &extras, &profile, &plan.options)?;
    Ok(fresh
        .changes
        .into_iter()
        .filter(|c| c.phase > model::plan::Phase::Channels)
        .collect())
}

/// A note in the plan saying where `--bdp`'s RTT came from.
pub fn rtt_note(plan: &mut Plan) {
    let Some(m) = &plan.options.rtt_measured else {
        return;
    };
    let how = match m.method.as_str() {
        "nettune" => "the p50 of a 1-byte tcp-rr against nettune serve",
        _ => "the median of ICMP echo replies",
    };
    plan.notes.push(PlanNote {
        rule: "bdp".into(),
        message: format!(
            "RTT to {} ({}) measured: {} µs, {how} ({} sample(s)); --bdp uses it",
            m.host, m.address, m.median_us, m.samples
        ),
    });
}

/// The planner's options as flags give them (the agent's `plan` request
/// carries the same values).
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanRequest<'a> {
    /// `--iface`: only these interfaces (all when empty).
    pub ifaces: &'a [String],
    /// `--cpus LIST`.
    pub cpus: Option<&'a str>,
    /// `--exclude-cpus LIST`.
    pub exclude_cpus: Option<&'a str>,
    /// `--bdp RATE,RTT` or `RATE,HOST` (the RTT measured to HOST).
    pub bdp: Option<&'a str>,
    /// `--netns-scope`; `None` is auto.
    pub netns: Option<NetnsScope>,
}

/// Planner options from a request, each value checked, the error naming
/// its flag; `--bdp RATE,HOST` measures the RTT to HOST.
pub fn options(req: &PlanRequest<'_>) -> anyhow::Result<PlanOptions> {
    let (bdp, rtt_measured) = match req.bdp.map(bdp_option).transpose()? {
        Some((b, m)) => (Some(b), m),
        None => (None, None),
    };
    Ok(PlanOptions {
        ifaces: req.ifaces.to_vec(),
        cpus: cpus("--cpus", req.cpus)?,
        exclude_cpus: cpus("--exclude-cpus", req.exclude_cpus)?.unwrap_or_default(),
        bdp,
        rtt_measured,
        netns: req.netns,
        // Only `apply --allow-reload` (or an experiment factor) reloads.
        reload_modules: false,
    })
}

fn cpus(flag: &str, s: Option<&str>) -> anyhow::Result<Option<CpuSet>> {
    s.map(|s| CpuSet::parse_arg(s).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
        .transpose()
}

/// ICMP probes for `--bdp RATE,HOST` without a nettune server, and their total deadline.
const ICMP_PROBES: u32 = 5;
const ICMP_DEADLINE: Duration = Duration::from_secs(2);
/// The tcp-rr run against a nettune server: connect timeout and measured time.
const RR_CONNECT: Duration = Duration::from_secs(1);
const RR_MS: u64 = 300;

/// `--bdp`: as given, or with the RTT measured to HOST (and how).
fn bdp_option(s: &str) -> anyhow::Result<(Bdp, Option<RttMeasured>)> {
    match BdpSpec::parse(s).map_err(|e| anyhow::anyhow!("--bdp: {e}"))? {
        BdpSpec::Given(b) => Ok((b, None)),
        BdpSpec::Measure { rate_bps, host } => {
            let m = measure_rtt(&host)?;
            let bdp = Bdp {
                rate_bps,
                rtt_us: m.median_us,
            };
            bdp.validate()
                .map_err(|e| anyhow::anyhow!("--bdp: measured to {host}: {e}"))?;
            Ok((bdp, Some(m)))
        }
    }
}

/// The RTT to `host`: the p50 of a short tcp-rr against `nettune serve` on
/// it (the engine's client), else the median of ICMP echoes.
fn measure_rtt(host: &str) -> anyhow::Result<RttMeasured> {
    let port = engine::proto::DEFAULT_PORT;
    let addrs = host::rtt::resolve(host, port).map_err(|e| anyhow::anyhow!("--bdp: {e}"))?;
    let Some(addr) = addrs.first().copied() else {
        anyhow::bail!("--bdp: {host} resolves to no address");
    };
    let server = match rr_p50(addr) {
        Ok(us) => {
            return Ok(RttMeasured {
                host: host.to_string(),
                address: addr.ip().to_string(),
                method: "nettune".into(),
                samples: us.1,
                median_us: us.0,
            })
        }
        Err(e) => format!("{e:#}"),
    };
    match host::rtt::icmp_echo(addr.ip(), ICMP_PROBES, ICMP_DEADLINE) {
        Ok(e) => Ok(RttMeasured {
            host: host.to_string(),
            address: e.addr.to_string(),
            method: "icmp".into(),
            samples: e.rtts.len() as u64,
            median_us: e.median_us().unwrap_or(1),
        }),
        Err(icmp) => anyhow::bail!(
            "--bdp: cannot measure the RTT to {host} ({}): no nettune server on port {port} ({server}), and {icmp}; give it instead, e.g. --bdp RATE,20ms",
            addr.ip()
        ),
    }
}

/// p50 (µs, at least 1) and count of 1-byte transactions against `nettune serve`.
fn rr_p50(addr: std::net::SocketAddr) -> anyhow::Result<(u64, u64)> {
    let mut o = engine::ClientOpts::new(addr.ip().to_string(), addr.port());
    o.connect_timeout = RR_CONNECT;
    o.token = super::token::load_token(None)?;
    let cfg = engine::TestConfig {
        test: engine::TestKind::TcpRr,
        size: 1,
        duration_ms: RR_MS,
        warmup_ms: 0,
        interval_ms: RR_MS,
        nodelay: true,
        ..Default::default()
    };
    let r = engine::run_client(&o, &cfg, &mut |_| {})?;
    let lat = r
        .results
        .iter()
        .find_map(|d| d.latency.as_ref())
        .filter(|l| l.count > 0)
        .ok_or_else(|| anyhow::anyhow!("the server answered no transaction"))?;
    Ok(((lat.p50_ns.0 / 1000).max(1), lat.count))
}
