//! `nettune fleet bench`: N clients → 1 server with synchronized starts
//! (docs/fleet.md, "fleet bench"). The run and its numbers are
//! `fleet::bench`; this module reads the flags and the inventory and prints.

use super::Common;
use fleet::bench::{Spec, Target};
use fleet::ops::Job;
use std::process::ExitCode;
use std::time::Duration;

const EXAMPLES: &str = "\
Examples:
  nettune fleet bench --inventory lab.toml --server hub --clients spokes --test tcp-rr -d 2
  nettune fleet bench --inventory hosts.toml --server srv1 --clients 'web*' \\
      --test udp-stream --size 64 --flows 2 --json
  nettune fleet bench --inventory hosts.toml --server srv1 --clients web --probe mon1
  nettune fleet bench --inventory hosts.toml --server 'srv*' --clients web   # N→M
  # more bench flags after --, the same for every client
  nettune fleet bench --inventory hosts.toml --server srv1 --clients web -- --congestion bbr

The server host's agent starts `nettune serve`; each client's clock offset is
estimated over its own pipe (8 samples, the one with the smallest round trip);
every client's flows start at the same controller instant (now + --start-margin),
its own clock's T + offset. The server takes a fresh random token for the run
(sent over the agents' pipes, set as NETTUNE_TOKEN, never in argv). The result names each client's actual start, the
skew between them, and the sum of the clients over the window in which all of
them ran (RR latency: every client's histogram added). A client reaches the
server at its `server_address` label, else --server-address, else the server's
`bench_address` label, its ssh address or its name. With several servers
(--server 'srv*', N→M) the clients are dealt to them in turn; a client's
`server_address.SERVER` label names its way to SERVER.

Exit codes: 0 every host ok, 4 some host failed (named on stderr), 1 error
(inventory, patterns), 2 usage error.";

/// Flags of `fleet bench`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct BenchArgs {
    /// The common flags.
    #[command(flatten)]
    pub common: Common,
    /// The host(s) running `nettune serve`: a host pattern; with several
    /// (N→M) the clients are dealt to them in turn.
    #[arg(long, value_name = "PATTERN")]
    pub server: String,
    /// The clients: a host pattern (`spokes`, `web*`, `a,b`).
    #[arg(long, value_name = "PATTERN")]
    pub clients: String,
    /// The address clients connect to, with one server (default: a client's
    /// `server_address` label, else the server's `bench_address` label, its
    /// ssh address, its name).
    #[arg(long, value_name = "ADDR")]
    pub server_address: Option<String>,
    /// The server's control port (0: one it picks).
    #[arg(long, default_value_t = 0, value_name = "P")]
    pub port: u16,
    /// Workload (as `nettune bench --test`).
    #[arg(long, short, default_value = "tcp-stream", value_name = "TEST",
          value_parser = engine::config::catalogue::names())]
    pub test: String,
    /// Message, request or datagram size (as `nettune bench --size`).
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// Measured seconds.
    #[arg(long, short, default_value = "10", value_name = "S")]
    pub duration: String,
    /// Unmeasured seconds before the window.
    #[arg(long, short = 'O', default_value = "1", value_name = "S")]
    pub warmup: String,
    /// Flows per client.
    #[arg(long, short = 'P', default_value_t = 1, value_name = "N")]
    pub flows: u32,
    /// A host running a latency probe (a paced 64-byte tcp-rr, 100/s) against
    /// the server beside the load; repeatable. Not in the aggregate.
    #[arg(long, value_name = "HOST")]
    pub probe: Vec<String>,
    /// Seconds between the clock estimates and the start (at least 2).
    #[arg(long, default_value_t = 2.0, value_name = "S")]
    pub start_margin: f64,
    /// More `nettune bench` flags for every client.
    #[arg(last = true, value_name = "BENCH FLAGS")]
    pub extra: Vec<String>,
}

fn seconds(s: &str, flag: &str) -> anyhow::Result<f64> {
    model::units::parse_seconds(s)
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0 && *v <= 86_400.0)
        .ok_or_else(|| anyhow::anyhow!("fleet bench: {flag} {s:?}: seconds from 0 to 86400"))
}

/// Run `nettune fleet bench`.
pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    let duration = seconds(&a.duration, "--duration")?;
    let warmup = seconds(&a.warmup, "--warmup")?;
    if !(a.start_margin.is_finite() && (2.0..=600.0).contains(&a.start_margin)) {
        anyhow::bail!("fleet bench: --start-margin must be from 2 to 600 seconds");
    }
    let jobs = super::jobs::jobs(&a.common)?;
    let inv =
        model::inventory::load(&a.common.inventory).map_err(|e| anyhow::anyhow!("fleet: {e}"))?;
    let find = |name: &str| -> anyhow::Result<Job> {
        jobs.iter()
            .find(|j| j.host == name)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("fleet bench: no host {name:?} in the selected hosts"))
    };
    let servers: Vec<Job> = model::inventory::select(&inv, &a.server)
        .map_err(|e| anyhow::anyhow!("fleet bench: --server: {e}"))?
        .iter()
        .map(|h| find(h.name.as_str()))
        .collect::<anyhow::Result<_>>()?;
    if servers.len() > 1 && a.server_address.is_some() {
        anyhow::bail!("fleet bench: --server-address names one server; with several, give each client a `server_address.SERVER` label or each server a `bench_address` label");
    }
    // How a client reaches server `s` (fleet::executor::server_address:
    // `nettune experiment` on a fleet chooses it the same way).
    let address = |client: &str, s: &Job| -> String {
        fleet::executor::server_address(
            &inv,
            client,
            &s.host,
            servers.len() == 1,
            a.server_address.as_deref(),
        )
    };
    let target = |i: usize, name: &str| -> anyhow::Result<Target> {
        let server = i % servers.len().max(1);
        let s = servers.get(server).ok_or_else(|| {
            anyhow::anyhow!("fleet bench: --server {:?} selects no host", a.server)
        })?;
        Ok(Target {
            job: find(name)?,
            server,
            address: address(name, s),
        })
    };
    let picked = model::inventory::select(&inv, &a.clients)
        .map_err(|e| anyhow::anyhow!("fleet bench: --clients: {e}"))?;
    let clients = picked
        .iter()
        .map(|h| h.name.as_str())
        .filter(|n| !servers.iter().any(|s| s.host == *n))
        .enumerate()
        .map(|(i, n)| target(i, n))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if clients.is_empty() {
        anyhow::bail!(
            "fleet bench: --clients {:?} selects no host but the server(s)",
            a.clients
        );
    }
    let probes = a
        .probe
        .iter()
        .enumerate()
        .map(|(i, p)| target(i, p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut args = vec![
        "--test".to_string(),
        a.test.clone(),
        "--duration".into(),
        duration.to_string(),
        "--warmup".into(),
        warmup.to_string(),
        "--flows".into(),
        a.flows.to_string(),
    ];
    if let Some(s) = &a.size {
        args.extend(["--size".to_string(), s.clone()]);
    }
    args.extend(a.extra.iter().cloned());
    let probe_args: Vec<String> = [
        "--test",
        "tcp-rr",
        "--size",
        "64",
        "--rate",
        "100",
        "--duration",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([duration.to_string(), "--warmup".into(), warmup.to_string()])
    .collect();
    let window = Duration::from_secs_f64(duration + warmup);
    let margin = Duration::from_secs_f64(a.start_margin);
    let opts = fleet::fanout::Options {
        parallel: a.common.parallel,
        deadline: Duration::from_secs_f64(a.common.timeout) + window + margin,
        copy: !a.common.no_copy,
        version: env!("CARGO_PKG_VERSION").to_string(),
        exe: std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("fleet: this nettune's path: {e}"))?,
    };
    let spec = Spec {
        servers,
        clients,
        probes,
        args,
        probe_args,
        port: a.port,
        margin,
        samples: fleet::clock::DEFAULT_SAMPLES,
        window,
        // A fresh token per run: the temporary server serves these clients only.
        token: Some(engine::auth::nonce()),
    };
    let rep = fleet::bench::run(&spec, &opts);
    if a.common.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&crate::cmd::Versioned::new(&rep))?
        );
    } else {
        print!("{}", fleet::bench::table(&rep));
    }
    for sv in &rep.servers {
        if let Some(e) = &sv.error {
            eprintln!(
                "nettune: fleet bench: {} failed: {}",
                model::text::printable_capped(&sv.host, 64),
                model::text::printable_capped(&e.message, 2000)
            );
        }
    }
    for h in rep.hosts.iter().filter(|h| h.outcome != "ok") {
        let why = h.error.as_ref().map(|e| e.message.as_str()).unwrap_or("");
        eprintln!(
            "nettune: fleet bench: {} failed: {}",
            model::text::printable_capped(&h.host, 64),
            model::text::printable_capped(why, 2000)
        );
    }
    Ok(ExitCode::from(if rep.failed.is_empty() {
        crate::exit::OK
    } else {
        super::HOSTS_FAILED
    }))
}
