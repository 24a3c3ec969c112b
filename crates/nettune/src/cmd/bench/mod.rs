//! `nettune bench`: measure throughput, packet rate, request/response latency
//! or connection rate against a `nettune serve`.

use anyhow::Context;
use engine::proto::DEFAULT_PORT;
use engine::report::IntervalReport;
use engine::{ClientOpts, Family, Source};
use model::units::{parse_rate, parse_seconds, parse_size};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Flags of `nettune bench`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples (run `nettune serve` on host B first):
  nettune bench B --test tcp-stream --flows 2                 bulk TCP, 2 connections
  nettune bench B --test tcp-stream --reverse                 B sends, this host receives
  nettune bench B --test udp-stream --size 64 --flows 2       small-datagram rate, loss, reordering
  nettune bench B --test udp-stream --size 1400 --udp-gso --udp-gro
  nettune bench B --test tcp-rr --size 1 --cpus 0             transactions/s, p50..p99.99 latency
  nettune bench B --test udp-rr --rate 20k --outstanding 8    open loop, no coordinated omission
  nettune bench B --test tcp-rr --busy-poll 50                spin instead of sleeping
  nettune bench B --test tcp-crr --flows 2                    connections/s
  nettune bench B -P 2 -J -R -O 2 -C bbr                      iperf3's letters (-t stays the test: --duration/-d is time)
  nettune bench B --json > result.json                        one document: both hosts, config, histogram
  nettune bench B --json-stream | jq .                        NDJSON: intervals, then the result
  nettune bench B --csv > run.csv                             one row per interval, then per result
  nettune bench -6 B --test udp-rr                            over IPv6 (B's AAAA address)
  nettune bench B --bind 10.0.0.1 --cport 5001 --flows 2      source address; flows from ports 5001, 5002
  nettune bench B --congestion bbr --tos 0x10 --mss 1400      socket options on both ends
  nettune bench B --test udp-stream --size 64 --doctor        findings of both hosts too
  nettune bench B --probe rr                                  latency under load: a paced TCP RR flow
  nettune bench B --test udp-stream --size 64 --probe icmp:200  ICMP echo every 200 ms (ping -i 0.2 beside the load)

Ctrl-C stops the test and prints what was measured so far (exit status 130); a second
Ctrl-C exits at once.

Numbers take suffixes: --rate 10G (bits/s for streams, transactions/s for RR; the total over
all flows: -P 2 --rate 10G paces each flow at 5G, -P 2 -b 10G at 10G), --size 64K,
durations -d 2s, -O 500ms, -d 1m (a plain number is seconds).
Throughput and loss are measured where the packets arrive; RR/CRR latency at the client.
CPU: per-CPU usr/sys/irq/softirq of both hosts over the window, and service demand
(host CPU µs per MB / transaction / 1000 datagrams, as netperf computes it).")]
pub struct Args {
    /// Server running `nettune serve`.
    pub host: String,
    /// Use IPv4 only (HOST resolves to its IPv4 address).
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// Use IPv6 only (HOST resolves to its IPv6 address).
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Source address of the control and data connections.
    #[arg(long, short = 'B', value_name = "ADDR")]
    pub bind: Option<std::net::IpAddr>,
    /// Bind every socket to this interface (SO_BINDTODEVICE).
    #[arg(long, value_name = "IF")]
    pub bind_dev: Option<String>,
    /// First client port of stream flows: flow i uses PORT + i.
    #[arg(long, value_name = "PORT")]
    pub cport: Option<u16>,
    /// TCP congestion control of data connections on both ends (e.g. cubic, bbr).
    #[arg(long, short = 'C', value_name = "ALGO")]
    pub congestion: Option<String>,
    /// IP TOS / IPv6 traffic class byte of data sockets on both ends (e.g. 0x10, 184).
    #[arg(long, value_name = "BYTE", value_parser = parse_tos)]
    pub tos: Option<u8>,
    /// TCP maximum segment size of data connections on both ends (TCP_MAXSEG).
    #[arg(long, value_name = "BYTES")]
    pub mss: Option<u32>,
    /// Server control port.
    #[arg(long, short, default_value_t = DEFAULT_PORT, value_name = "P")]
    pub port: u16,
    /// Workload [default: tcp-stream; udp-stream with -u].
    #[arg(long, short, value_name = "TEST", value_parser = TestName)]
    pub test: Option<String>,
    /// UDP (iperf3's -u): udp-stream unless --test names another UDP test.
    #[arg(short = 'u', long = "udp")]
    pub udp: bool,
    /// Flows (connections or UDP sockets), per direction.
    #[arg(long, short = 'P', default_value_t = 1, value_name = "N")]
    pub flows: u32,
    /// Worker threads per direction on each side (default: min(flows, CPUs); tcp-crr: flows).
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,
    /// Pin workers round-robin to these CPUs on both sides (cpulist, e.g. `0,1` or `2-3`).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Pin the server's workers to these CPUs instead (netperf's -T lcpu,rcpu); `--cpus` then pins the client's only.
    #[arg(long, value_name = "LIST")]
    pub server_cpus: Option<String>,
    /// Message, request or datagram size in bytes [default: tcp-stream 128K, udp-stream 1472, RR/CRR 1].
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Measured seconds.
    #[arg(long, short, default_value_t = 10.0, value_name = "S", value_parser = parse_seconds)]
    pub duration: f64,
    /// Unmeasured seconds before the window (iperf3's -O, omit).
    #[arg(long, short = 'O', default_value_t = 1.0, value_name = "S", value_parser = parse_seconds)]
    pub warmup: f64,
    /// Seconds per interval report.
    #[arg(long, short, default_value_t = 1.0, value_name = "S", value_parser = parse_seconds)]
    pub interval: f64,
    /// Server sends, client receives (stream tests).
    #[arg(long, short = 'R')]
    pub reverse: bool,
    /// Both directions at once on separate flows (stream tests).
    #[arg(long)]
    pub bidir: bool,
    /// Open-loop rate, the total over all flows and threads of a direction:
    /// bits/s for streams, transactions/s for RR; each flow is paced at
    /// RATE ÷ --flows, from one message a second to one a nanosecond (and
    /// at most 1 Tbit/s) per flow.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// iperf3's -b: the rate of each flow (`-P 2 -b 100M` sends 200 Mbit/s
    /// in all, as iperf3 does; it is `--rate 200M`); 0: unlimited.
    #[arg(short = 'b', value_name = "RATE", value_parser = parse_rate, conflicts_with = "rate")]
    pub bitrate: Option<f64>,
    /// Requests in flight per RR flow.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub outstanding: u32,
    /// TCP_NODELAY on data connections.
    #[arg(long)]
    pub nodelay: bool,
    /// SO_BUSY_POLL µs on data sockets; request/response workers also spin this long before sleeping.
    #[arg(long, value_name = "USEC", default_value_t = 0)]
    pub busy_poll: u32,
    /// MSG_ZEROCOPY sends (tcp-stream).
    #[arg(long, short = 'Z')]
    pub zerocopy: bool,
    /// UDP GSO on senders (udp-stream; reported separately from plain sends).
    #[arg(long)]
    pub udp_gso: bool,
    /// UDP GRO on receivers (udp-stream).
    #[arg(long)]
    pub udp_gro: bool,
    /// SO_SNDBUF of data sockets (bytes, e.g. 4M), set as an application
    /// would: the kernel caps it at net.core.wmem_max and doubles it; the
    /// size it gave is reported. Turns send autotuning off.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF of data sockets [default: udp-stream 4M, else the kernel's
    /// autotuning], capped at net.core.rmem_max and doubled like --sndbuf.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub rcvbuf: Option<u64>,
    /// Set --sndbuf/--rcvbuf with SO_SNDBUFFORCE/SO_RCVBUFFORCE, past
    /// wmem_max/rmem_max (needs CAP_NET_ADMIN; the server forces only for a
    /// client with its token). No application does this unprivileged.
    #[arg(long)]
    pub force_buffers: bool,
    /// Print one JSON document at the end (both hosts' facts, full config, histograms).
    #[arg(long, short = 'J')]
    pub json: bool,
    /// Print NDJSON: one line per interval, then the result.
    #[arg(long)]
    pub json_stream: bool,
    /// Print CSV: a header, one row per interval, then one row per result.
    #[arg(long, conflicts_with_all = ["json", "json_stream"])]
    pub csv: bool,
    /// File holding the pre-shared token (else the NETTUNE_TOKEN environment variable).
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
    /// Most buffer memory the test may take on this host (bytes; suffixes K, M, G).
    #[arg(long, default_value = "256M", value_name = "BYTES", value_parser = parse_size)]
    pub max_memory: u64,
    /// Seconds to wait for the control connection.
    #[arg(long, default_value_t = 3.0, value_name = "S", value_parser = parse_seconds)]
    pub connect_timeout: f64,
    /// Run the doctor rules on both hosts over the measured window and show
    /// their findings after the summary (in --json: `doctor`; not in --csv).
    #[arg(long)]
    pub doctor: bool,
    /// Latency probe beside the load for the whole window: `rr` (a paced
    /// 64-byte TCP request/response flow of its own) or `icmp` (echo
    /// requests), one every MS ms (default 10, 1-1000).
    #[arg(long, value_name = "KIND[:MS]", value_parser = parse_probe)]
    pub probe: Option<engine::ProbeSpec>,
    /// Start the data flows at this instant of CLOCK_REALTIME, ns since the
    /// Unix epoch (what `fleet bench` sends each client): the flows open up to
    /// 3 s before, then wait; the result's `started_at_unix_ns` says when they began.
    #[arg(long, value_name = "UNIX_NS")]
    pub start_at: Option<u64>,
    /// Directory standing for `/` when reading host facts and counters.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// No -l: iperf3 (buffer length) and netperf (test length) disagree on
    /// it; parsing it always fails with that hint.
    #[arg(short = 'l', hide = true, num_args = 0..=1, default_missing_value = "",
          allow_hyphen_values = true, value_parser = no_length)]
    pub length: Option<String>,
}

mod config;
pub use config::config;
use config::{no_length, parse_probe, parse_tos};

/// Run `nettune bench`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let root = host::Root::new(&args.root);
    let cfg = match config(&args, &root) {
        Err(e) => match e.downcast_ref::<engine::config::rate::RateError>() {
            // A rate no flow can be paced at is a usage error, in one line.
            Some(r) => {
                eprintln!("nettune: {r}");
                return Ok(ExitCode::from(crate::exit::USAGE));
            }
            None => return Err(e),
        },
        Ok(c) => c,
    };
    let token = super::serve::load_token(args.token_file.as_ref())?;
    let connect_timeout = Duration::try_from_secs_f64(args.connect_timeout)
        .ok()
        .filter(|d| !d.is_zero() && *d <= Duration::from_secs(3600))
        .ok_or_else(|| {
            anyhow::anyhow!("--connect-timeout must be a positive number of seconds, at most 3600")
        })?;
    let opts = ClientOpts {
        host: args.host.clone(),
        port: args.port,
        token,
        root,
        connect_timeout,
        max_memory: args.max_memory,
        family: if args.ipv4 {
            Some(Family::Ipv4)
        } else if args.ipv6 {
            Some(Family::Ipv6)
        } else {
            None
        },
        source: Source {
            addr: args.bind,
            dev: args.bind_dev.clone(),
        },
        cport: args.cport,
        interrupt: engine::interrupt::sigint_flag().ok(),
        doctor: args.doctor.then(crate::diagnose::hook),
        start_at: args.start_at,
    };
    let csv = args.csv;
    let human = !args.json && !args.json_stream && !csv;
    let tty = human && std::io::stderr().is_terminal();
    let total = (cfg.warmup_ms + cfg.duration_ms) as f64 / 1000.0;
    let pb = if tty {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_message(format!("{} to {}: warming up", cfg.test, args.host));
        pb.enable_steady_tick(Duration::from_millis(200));
        Some(pb)
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    let test = cfg.test;
    let stream = args.json_stream;
    if csv {
        writeln!(out, "{}", engine::render::CSV_HEADER)?;
    }
    let mut on_interval = |i: &IntervalReport| {
        if csv {
            let _ = writeln!(out, "{}", engine::render::csv_interval_row(test, i));
            let _ = out.flush();
        } else if stream {
            let mut v = serde_json::to_value(i).unwrap_or_default();
            if let Some(m) = v.as_object_mut() {
                m.insert("type".into(), "interval".into());
                m.insert(
                    "schema_version".into(),
                    engine::report::RESULT_SCHEMA_VERSION.into(),
                );
                // Wall clock (the interval's start_s/end_s count from warm-up).
                let now = model::time::rfc3339_utc(std::time::SystemTime::now());
                m.insert("time".into(), now.into());
            }
            let _ = writeln!(out, "{v}");
            let _ = out.flush();
        } else if human {
            let line = engine::render::interval_line(test, i);
            match &pb {
                Some(pb) => {
                    pb.println(&line);
                    pb.set_message(format!(
                        "{} to {}: {:.1} of {:.1} s",
                        test,
                        args.host,
                        i.end_s + cfg.warmup_ms as f64 / 1000.0,
                        total
                    ));
                }
                None => {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
    };
    let result = engine::run_with_probe(&opts, &cfg, args.probe.as_ref(), &mut on_interval);
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    if let Err(engine::EngineError::Interrupted(when)) = &result {
        eprintln!("nettune bench: interrupted {when}");
        return Ok(ExitCode::from(engine::interrupt::EXIT_INTERRUPTED));
    }
    let result = result.context(format!("{} against {}", cfg.test, args.host))?;
    if csv {
        for row in engine::render::csv_result_rows(&result) {
            writeln!(out, "{row}")?;
        }
    } else if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else if stream {
        // Like every interval line, the result line says its schema version
        // at the top, so a reader of the stream need not open the result.
        let v = serde_json::json!({
            "type": "result",
            "schema_version": engine::report::RESULT_SCHEMA_VERSION,
            "result": result,
        });
        writeln!(out, "{v}")?;
    } else {
        writeln!(out)?;
        write!(out, "{}", engine::render::human(&result))?;
    }
    out.flush()?;
    if result.interrupted {
        return Ok(ExitCode::from(engine::interrupt::EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests;

/// `--test`: a name of the catalogue (offered to completion); a number is
/// iperf3's `-t` (time), so the error points to `-d`.
#[derive(Debug, Clone, Copy)]
struct TestName;

impl clap::builder::TypedValueParser for TestName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let s = value.to_string_lossy();
        if engine::config::catalogue::names().contains(&s.as_ref()) {
            return Ok(s.into_owned());
        }
        let hint = if s.trim().parse::<f64>().is_ok() {
            format!(" (-t is the test here; iperf3's -t, the time, is -d/--duration: -d {s})")
        } else {
            String::new()
        };
        let msg = format!(
            "invalid value '{}' for '--test <TEST>': one of {}{hint}\n",
            model::text::printable_capped(&s, 64),
            engine::config::catalogue::names_list()
        );
        Err(clap::Error::raw(clap::error::ErrorKind::InvalidValue, msg).with_cmd(cmd))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            engine::config::catalogue::names()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}
