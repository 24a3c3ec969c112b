//! `nettune serve`: the traffic server (and agent) that `nettune bench` talks to.

use anyhow::Context;
use engine::config::Limits;
use engine::proto::DEFAULT_PORT;
use engine::{Server, ServerConfig};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `nettune serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  nettune serve                              listen on 0.0.0.0:5290
  nettune serve --listen 10.0.0.2 --port 6000
  NETTUNE_TOKEN=s3cret nettune serve         clients must prove the token (HMAC; never sent)
  nettune serve --token-file /etc/nettune/token --max-tests-per-client 2

Every test gets its own data port (ephemeral, SO_REUSEPORT), a random test id that each
data connection and UDP datagram carries, and its own worker threads. Clients that send
garbage, stop mid-handshake or vanish mid-test are dropped without disturbing the others.")]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0", value_name = "ADDR")]
    pub listen: IpAddr,
    /// Control port.
    #[arg(long, short, default_value_t = DEFAULT_PORT, value_name = "P")]
    pub port: u16,
    /// File holding the pre-shared token (else the NETTUNE_TOKEN environment variable).
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
    /// Most concurrent tests from one client address.
    #[arg(long, default_value_t = Limits::default().max_tests_per_client, value_name = "N")]
    pub max_tests_per_client: u32,
    /// Most flows in one test.
    #[arg(long, default_value_t = Limits::default().max_flows, value_name = "N")]
    pub max_flows: u32,
    /// Longest test (warm-up + duration), seconds.
    #[arg(long, default_value_t = 3600, value_name = "S")]
    pub max_duration: u64,
    /// Most concurrent control sessions.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_sessions: usize,
    /// Directory standing for `/` when reading host facts and counters.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// Do not log sessions to stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Read the token from `--token-file` or `NETTUNE_TOKEN`.
pub fn load_token(file: Option<&PathBuf>) -> anyhow::Result<Option<Vec<u8>>> {
    if let Some(f) = file {
        let text = std::fs::read_to_string(f)
            .with_context(|| format!("reading token file {}", f.display()))?;
        return match engine::auth::token_from_text(&text) {
            Some(t) => Ok(Some(t)),
            None => anyhow::bail!("token file {} is empty", f.display()),
        };
    }
    Ok(std::env::var("NETTUNE_TOKEN")
        .ok()
        .and_then(|t| engine::auth::token_from_text(&t)))
}

/// Run `nettune serve`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let token = load_token(args.token_file.as_ref())?;
    let listen = SocketAddr::new(args.listen, args.port);
    let server = Server::bind(ServerConfig {
        listen,
        token: token.clone(),
        limits: Limits {
            max_flows: args.max_flows,
            max_threads: Limits::default().max_threads,
            max_duration_ms: args.max_duration.saturating_mul(1000),
            max_tests_per_client: args.max_tests_per_client,
        },
        max_sessions: args.max_sessions,
        root: host::Root::new(&args.root),
        log: !args.quiet,
    })?;
    let addr = server.local_addr().unwrap_or(listen);
    eprintln!(
        "nettune serve: listening on {addr} (protocol v{}){}",
        engine::proto::PROTO_VERSION,
        if token.is_some() {
            ", token required"
        } else {
            ""
        }
    );
    server.serve()?;
    Ok(ExitCode::SUCCESS)
}
