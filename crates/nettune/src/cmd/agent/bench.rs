//! The agent's bench requests: `clock`, `serve`, `stop_serve` and `bench`
//! (fleet bench, docs/fleet.md), with the `nettune serve` child a `serve`
//! starts.

use fleet::proto::Request;

/// The `nettune serve` a [`Request::Serve`] started: (child, its address).
static SERVER: std::sync::Mutex<Option<(std::process::Child, String)>> =
    std::sync::Mutex::new(None);

/// How long `serve` may take to say it listens.
const SERVE_READY: std::time::Duration = std::time::Duration::from_secs(10);
/// Time a bench child has beyond its start wait, warm-up and window.
const BENCH_SLACK: std::time::Duration = std::time::Duration::from_secs(60);
/// Most bench JSON read from the child (the agent's answer limit).
const MAX_BENCH_JSON: u64 = 64 << 20;

/// `clock`, `serve`, `stop_serve` and `bench` (fleet bench, docs/fleet.md).
pub(super) fn bench_answer(q: Request) -> anyhow::Result<(serde_json::Value, u8)> {
    let ok = crate::exit::OK;
    Ok(match q {
        Request::Clock => (
            serde_json::json!({ "realtime_ns": fleet::clock::realtime_ns() }),
            ok,
        ),
        Request::Serve {
            port,
            max_duration,
            lifetime,
            token,
            clients,
        } => (
            start_server(port, max_duration, lifetime, token, clients)?,
            ok,
        ),
        Request::StopServe => (serde_json::json!({ "stopped": stop_server() }), ok),
        Request::Bench {
            server,
            args,
            start_at_unix_ns,
            token,
        } => run_bench(&server, &args, start_at_unix_ns, token)?,
        other => anyhow::bail!("{}: not a bench request", other.name()),
    })
}

/// Kill the `serve` child, if any; whether there was one.
pub(super) fn stop_server() -> bool {
    let taken = SERVER.lock().ok().and_then(|mut g| g.take());
    match taken {
        Some((mut c, _)) => {
            let _ = c.kill();
            let _ = c.wait();
            true
        }
        None => false,
    }
}

/// Lines of a child's pipe on a channel (a thread drains it to its end).
fn lines_of(r: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(r).lines() {
            let Ok(l) = l else { return };
            let _ = tx.send(l);
        }
    });
    rx
}

/// Start `nettune serve --json --quiet` and wait for its `listening` line.
fn start_server(
    port: u16,
    max_duration: Option<u64>,
    lifetime: Option<u64>,
    token: Option<String>,
    clients: Option<u32>,
) -> anyhow::Result<serde_json::Value> {
    use std::process::{Command, Stdio};
    let mut g = SERVER
        .lock()
        .map_err(|_| anyhow::anyhow!("the server slot is poisoned"))?;
    if let Some((_, addr)) = g.as_ref() {
        anyhow::bail!("a server already runs here on {addr} (stop_serve first)");
    }
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("this nettune's path: {e}"))?;
    let mut cmd = Command::new(exe);
    // Its stdin is a pipe from this agent: when the agent goes, even by
    // SIGKILL, the server sees the end of input and stops.
    cmd.args(["serve", "--json", "--quiet", "--stop-on-stdin-eof"]);
    cmd.args(["--port", &port.to_string()]);
    if let Some(d) = max_duration {
        cmd.args(["--max-duration", &d.to_string()]);
    }
    if let Some(t) = token {
        cmd.env(crate::ops::token::TOKEN_ENV, t);
    }
    if let Some(n) = clients.filter(|n| *n > 4) {
        // Clients sharing an address (NAT, one host) must not hit the
        // per-client limit of 4.
        cmd.args(["--max-tests-per-client", &n.to_string()]);
        cmd.args(["--max-sessions", &n.max(64).to_string()]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting nettune serve: {e}"))?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!("no pipes to nettune serve");
    };
    let lines = lines_of(out);
    let errs = lines_of(err);
    let listening = lines
        .recv_timeout(SERVE_READY)
        .ok()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter(|v| v["event"] == "listening");
    let Some(v) = listening else {
        let _ = child.kill();
        let _ = child.wait();
        let why: Vec<String> = errs.try_iter().collect();
        anyhow::bail!(
            "serve: nettune serve did not listen within {} s: {}",
            SERVE_READY.as_secs(),
            model::text::printable_capped(why.join(" ").trim(), 500)
        );
    };
    let address = v["address"].as_str().unwrap_or_default().to_string();
    let bound: Option<std::net::SocketAddr> = address.parse().ok();
    let pid = child.id();
    *g = Some((child, address.clone()));
    drop(g);
    if let Some(secs) = lifetime {
        // Past its lifetime the server goes, whatever the controller does.
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(secs));
            if let Ok(mut g) = SERVER.lock() {
                if g.as_ref().is_some_and(|(c, _)| c.id() == pid) {
                    if let Some((mut c, _)) = g.take() {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                }
            }
        });
    }
    Ok(serde_json::json!({
        "address": address,
        "port": bound.map(|a| a.port()),
    }))
}

/// `nettune bench SERVER ARGS --json [--start-at NS]` as a child of the
/// agent (whose stdout is the protocol), checked by the CLI's own parser
/// first and killed past its start wait, warm-up, window and a minute.
fn run_bench(
    server: &str,
    args: &[String],
    start_at: Option<u64>,
    token: Option<String>,
) -> anyhow::Result<(serde_json::Value, u8)> {
    use clap::Parser;
    use std::io::Read;
    use std::process::{Command, Stdio};
    if server.starts_with('-') || server.is_empty() {
        anyhow::bail!("{server:?} is not a server address");
    }
    let mut argv: Vec<String> = vec!["nettune".into(), "bench".into(), server.into()];
    argv.extend(args.iter().cloned());
    argv.push("--json".into());
    if let Some(at) = start_at {
        argv.extend(["--start-at".into(), at.to_string()]);
    }
    let parsed = crate::cmd::cli::Cli::try_parse_from(&argv).map_err(|e| {
        let text = e.to_string();
        let line = text.lines().next().unwrap_or("");
        anyhow::anyhow!("{}", line.strip_prefix("error: ").unwrap_or(line))
    })?;
    let crate::cmd::cli::Command::Bench(b) = parsed.command else {
        anyhow::bail!("not a bench command line");
    };
    if b.json_stream || b.csv {
        anyhow::bail!(
            "--json-stream and --csv are not for the agent (it answers with --json's document)"
        );
    }
    let wait = start_at
        .map(|at| at.saturating_sub(fleet::clock::realtime_ns()))
        .unwrap_or(0);
    let limit = std::time::Duration::from_nanos(wait)
        .checked_add(std::time::Duration::try_from_secs_f64(
            b.warmup + b.duration,
        )?)
        .and_then(|d| d.checked_add(BENCH_SLACK))
        .ok_or_else(|| anyhow::anyhow!("the run is too long"))?;
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("this nettune's path: {e}"))?;
    let mut cmd = Command::new(exe);
    if let Some(t) = token {
        cmd.env(crate::ops::token::TOKEN_ENV, t);
    }
    let mut child = cmd
        .args(argv.iter().skip(1))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("starting nettune bench: {e}"))?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!("no pipes to nettune bench");
    };
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.take(MAX_BENCH_JSON).read_to_end(&mut b);
        b
    });
    let errs = lines_of(err);
    let end = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if std::time::Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stdout = reader.join().unwrap_or_default();
    // The child is gone: its stderr ends (or is a grandchild's, not waited on).
    let mut stderr: Vec<String> = Vec::new();
    while let Ok(l) = errs.recv_timeout(std::time::Duration::from_millis(200)) {
        stderr.push(l);
    }
    let why = || model::text::printable_capped(stderr.join(" ").trim(), 1000);
    let Some(status) = status else {
        anyhow::bail!("still running after {} s: killed", limit.as_secs());
    };
    let code = status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .unwrap_or(1);
    match serde_json::from_slice::<serde_json::Value>(&stdout) {
        Ok(v) if v.is_object() => Ok((v, code)),
        _ => anyhow::bail!("bench against {server} failed (exit {code}): {}", why()),
    }
}
