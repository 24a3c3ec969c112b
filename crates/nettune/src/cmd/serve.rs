//! `nettune serve`: the traffic server (and agent) that `nettune bench` talks to.

use anyhow::Context;
use engine::config::{Limits, MAX_TEST_MS};
use engine::proto::DEFAULT_PORT;
use engine::{Server, ServerConfig};
use model::units::parse_size;
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `nettune serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  nettune serve                              listen on [::]:5290, IPv6 and IPv4 (dual-stack)
  nettune serve -4                           IPv4 only (0.0.0.0:5290)
  nettune serve -6                           IPv6 only ([::]:5290, IPV6_V6ONLY)
  nettune serve --listen 10.0.0.2 --port 6000
  NETTUNE_TOKEN=s3cret nettune serve         clients must prove the token, and the server proves
                                             it back (HMAC; the token is never sent)
  nettune serve --token-file /etc/nettune/token --max-tests-per-client 2
                                             (under systemd, LoadCredential=nettune-token
                                             is read from $CREDENTIALS_DIRECTORY)
  nettune serve --max-test-memory 64M        refuse tests whose buffers need more

Every test gets its own data port (ephemeral, SO_REUSEPORT), a random test id that each
data connection and UDP datagram carries, and its own worker threads. UDP data sockets take
datagrams only from the control connection's address. A connection has 5 s in total for its
handshake and holds no session slot until it has authenticated and sent its setup. Clients
that send garbage, stop mid-handshake or vanish mid-test are dropped without disturbing the
others; a test over the limits is refused with a one-line reason. Without a token, --rcvbuf
and --sndbuf are clamped to net.core.rmem_max/wmem_max (the result says so); with one, they
are forced past them where the server holds CAP_NET_ADMIN.")]
pub struct Args {
    // `[::]` is help text (clap), not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Address to listen on [default: [::] dual-stack, or 0.0.0.0 when the host has no IPv6].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<IpAddr>,
    /// Listen on IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Listen on IPv6 only (IPV6_V6ONLY).
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Control port.
    #[arg(long, short, default_value_t = DEFAULT_PORT, value_name = "P")]
    pub port: u16,
    /// File holding the pre-shared token (else the systemd credential
    /// `nettune-token`, $CREDENTIALS_DIRECTORY/nettune-token, else the
    /// NETTUNE_TOKEN environment variable).
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
    /// Most concurrent tests from one client address.
    #[arg(long, default_value_t = Limits::default().max_tests_per_client, value_name = "N")]
    pub max_tests_per_client: u32,
    /// Most flows in one test.
    #[arg(long, default_value_t = Limits::default().max_flows, value_name = "N")]
    pub max_flows: u32,
    /// Longest test (warm-up + duration), seconds (at most 7 days).
    #[arg(long, default_value_t = 3600, value_name = "S")]
    pub max_duration: u64,
    /// Most buffer memory the workers of one test may allocate (bytes; suffixes K, M, G).
    #[arg(long, default_value = "256M", value_name = "BYTES", value_parser = parse_size)]
    pub max_test_memory: u64,
    /// Most buffer memory all running tests together may hold (bytes;
    /// suffixes K, M, G); a test that would pass it is refused as busy.
    #[arg(long, default_value = "1G", value_name = "BYTES", value_parser = parse_size)]
    pub max_total_memory: u64,
    /// Most concurrent tests from one source prefix (IPv4 /24, IPv6 /64).
    #[arg(long, default_value_t = Limits::default().max_tests_per_prefix, value_name = "N")]
    pub max_tests_per_prefix: u32,
    /// Largest SO_SNDBUF/SO_RCVBUF a test may ask for (bytes; suffixes K, M, G).
    #[arg(long, default_value = "256M", value_name = "BYTES", value_parser = parse_size)]
    pub max_socket_buffer: u64,
    /// Most concurrent authenticated control sessions (tests).
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_sessions: usize,
    /// Most connections that have not finished the handshake, over all
    /// addresses; a new one beyond it closes the oldest.
    #[arg(long, default_value_t = Limits::default().max_unauthenticated, value_name = "N")]
    pub max_unauthenticated: u32,
    /// Most connections that have not finished the handshake per source
    /// prefix (IPv4 /24, IPv6 /64); a new one beyond it closes the prefix's oldest.
    #[arg(
        long,
        alias = "max-unauthenticated-per-ip",
        default_value_t = Limits::default().max_unauthenticated_per_prefix,
        value_name = "N"
    )]
    pub max_unauthenticated_per_prefix: u32,
    /// Directory standing for `/` when reading host facts and counters.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// Do not log sessions to stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print events as JSON lines on stdout (/usr/share/doc/nettune/docs/schema/serve.json):
    /// {schema_version, event: "listening", address, protocol, token_required,
    /// ipv4_only} once listening, {schema_version, event: "stopped", signal, error}
    /// on SIGTERM, SIGINT or SIGHUP (exit 128 + signal) or when the server fails.
    #[arg(long)]
    pub json: bool,
    /// With --json: stop as on SIGHUP when standard input ends. The fleet
    /// agent starts its server with a pipe here, so the server goes with
    /// the agent even when the agent is killed.
    #[arg(long, hide = true, requires = "json")]
    pub stop_on_stdin_eof: bool,
}

/// One `serve --json` event line.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    /// The control socket is bound.
    Listening {
        address: SocketAddr,
        protocol: u32,
        token_required: bool,
        ipv4_only: bool,
    },
    /// The server ended: by a signal, or failing.
    Stopped {
        signal: Option<usize>,
        error: Option<String>,
    },
}

fn emit(e: Event) -> anyhow::Result<()> {
    use std::io::Write;
    let line = serde_json::to_string(&super::Versioned::new(e))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// SIGHUP's number, which a server whose stdin ended reports as its stop.
const SIGHUP: usize = 1;

/// Raise `got` to SIGHUP once standard input ends (the parent that held
/// its other end is gone), from a thread of its own.
fn hang_up_on_stdin_eof(got: std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    std::thread::spawn(move || {
        use std::io::Read;
        let mut sink = [0u8; 256];
        let mut input = std::io::stdin().lock();
        while matches!(input.read(&mut sink), Ok(n) if n > 0) {}
        got.store(SIGHUP, std::sync::atomic::Ordering::Relaxed);
    });
}

/// `serve --json`: serve on a thread; the main thread waits for a stop
/// signal or the server's end and says so with a `stopped` event.
fn serve_json(
    server: Server,
    got: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> anyhow::Result<ExitCode> {
    use std::sync::atomic::Ordering;
    let worker = std::thread::Builder::new()
        .name("nt-serve".into())
        .spawn(move || server.serve())
        .context("starting the server thread")?;
    loop {
        let sig = got.load(Ordering::Relaxed);
        if sig != 0 {
            emit(Event::Stopped {
                signal: Some(sig),
                error: None,
            })?;
            let code = u8::try_from(sig.saturating_add(128)).unwrap_or(1);
            return Ok(ExitCode::from(code));
        }
        if worker.is_finished() {
            let error = match worker.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("the server thread panicked".to_string()),
            };
            let failed = error.is_some();
            emit(Event::Stopped {
                signal: None,
                error,
            })?;
            return Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

pub use crate::ops::token::{load_token, serve_token, TOKEN_CREDENTIAL, TOKEN_ENV};

/// Run `nettune serve`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let token = serve_token(args.token_file.as_ref())?;
    // No child of the server (ethtool) may inherit the token. The process
    // has one thread here, so changing the environment is sound.
    std::env::remove_var(TOKEN_ENV);
    if args.max_duration == 0 || args.max_duration > MAX_TEST_MS / 1000 {
        anyhow::bail!(
            "--max-duration must be between 1 and {} s (7 days)",
            MAX_TEST_MS / 1000
        );
    }
    let max_socket_buffer = u32::try_from(args.max_socket_buffer)
        .ok()
        .filter(|b| *b <= i32::MAX as u32)
        .ok_or_else(|| anyhow::anyhow!("--max-socket-buffer must be at most 2 GiB"))?;
    if args.max_unauthenticated == 0 || args.max_unauthenticated_per_prefix == 0 {
        anyhow::bail!(
            "--max-unauthenticated and --max-unauthenticated-per-prefix must be at least 1"
        );
    }
    let ip = match (args.listen, args.ipv4, args.ipv6) {
        (None, true, _) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (None, _, _) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        (Some(ip), v4, v6) => {
            let fam = if ip.to_canonical().is_ipv4() {
                "IPv4"
            } else {
                "IPv6"
            };
            if (v4 && fam != "IPv4") || (v6 && fam != "IPv6") {
                anyhow::bail!(
                    "--listen {ip} is an {fam} address, but {} asks for {}",
                    if v4 { "-4" } else { "-6" },
                    if v4 { "IPv4" } else { "IPv6" }
                );
            }
            ip
        }
    };
    let listen = SocketAddr::new(ip, args.port);
    let server = Server::bind(ServerConfig {
        listen,
        dual_stack: !args.ipv6,
        token: token.clone(),
        limits: Limits {
            max_flows: args.max_flows,
            max_threads: Limits::default().max_threads,
            max_duration_ms: args.max_duration * 1000,
            max_tests_per_client: args.max_tests_per_client,
            max_test_memory: args.max_test_memory,
            max_socket_buffer,
            max_unauthenticated: args.max_unauthenticated,
            max_unauthenticated_per_prefix: args.max_unauthenticated_per_prefix,
            max_total_memory: args.max_total_memory,
            max_tests_per_prefix: args.max_tests_per_prefix,
        },
        max_sessions: args.max_sessions,
        root: host::Root::new(&args.root),
        log: !args.quiet,
        doctor: Some(crate::diagnose::hook()),
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
    if server.ipv4_fallback() {
        eprintln!("nettune serve: IPv6 is not available here; IPv4 only");
    }
    if args.json {
        // Before `listening`: a client that stops the server on that line
        // gets its `stopped` line.
        let got = engine::interrupt::stop_signals().context("installing the signal handlers")?;
        if args.stop_on_stdin_eof {
            hang_up_on_stdin_eof(got.clone());
        }
        emit(Event::Listening {
            address: addr,
            protocol: u32::from(engine::proto::PROTO_VERSION),
            token_required: token.is_some(),
            ipv4_only: server.ipv4_fallback() || addr.ip().to_canonical().is_ipv4(),
        })?;
        return serve_json(server, got);
    }
    server.serve()?;
    Ok(ExitCode::SUCCESS)
}
