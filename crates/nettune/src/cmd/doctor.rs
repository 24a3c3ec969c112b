//! `nettune doctor [--root DIR] [--sample S] [--bdp RATE,RTT] [--allowance RATE,PPS] [--profile P]
//! [--json]`: read a snapshot (and, live, S seconds of counters) through
//! `host`, let `doctor` decide, print the findings. Exit status 0 when
//! nothing is above info, 1 on warnings, 2 on critical findings, 3 when
//! doctor could not run (a one-line error).

use host::sampler::Sampler;
use host::Root;
use model::plan::Bdp;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Default `--sample`, seconds.
pub const DEFAULT_SAMPLE_S: f64 = 3.0;
/// Longest `--sample`: an hour.
pub const MAX_SAMPLE_S: f64 = 3600.0;
/// Shortest `--sample`: two clock ticks of `/proc/stat` (USER_HZ 100).
pub const MIN_SAMPLE_S: f64 = 0.02;
/// Exit status when doctor could not run.
pub const EXIT_ERROR: u8 = 3;

const EXAMPLES: &str = "\
Examples:
  # Snapshot plus 3 s of counters on this host; exit 0 / 1 / 2 by the worst finding
  nettune doctor

  # Sample 10 s while the load runs, with the latency intent (coalescing, C-states)
  nettune doctor --sample 10 --profile latency

  # Are the socket buffers big enough for 100 Mbit/s at 100 ms?
  nettune doctor --bdp 100mbit,100ms

  # A cloud instance with a 5 Gbit/s and 400K pps allowance: which one binds?
  nettune doctor --sample 10 --allowance 5gbit,400k

  # A capture someone sent: record 10 s of counters there, diagnose it here (the
  # rate rules run on its samples; without --samples they are skipped)
  nettune capture --out host-a --samples 11 --interval 1
  nettune doctor --root host-a --json

  # Inside a network namespace: its /proc/net counters and sysctls
  ip netns exec ns1 nettune doctor

Each finding has a stable id, a severity (critical, warning, info), the evidence with the
file or counter each number came from, why it matters, the fix (plan changes and the
`nettune plan` command that makes them, or the application's socket option) and its
source. Exit status: 0 nothing above info, 1 warnings, 2 critical, 3 doctor could not
run. JSON shape: /usr/share/doc/nettune/docs/doctor.md.";

/// Flags of `nettune doctor`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Directory standing for `/` (a fixture or a `nettune capture`); default the live host.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Seconds of counters to sample on the live host (default 3; up to 3600).
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub sample: Option<String>,
    /// Bandwidth-delay product the socket buffers must hold, e.g. 100mbit,100ms.
    #[arg(long, value_name = "RATE,RTT", allow_hyphen_values = true)]
    pub bdp: Option<String>,
    /// The cloud instance's allowances, e.g. 5gbit,400k: cloud-allowance
    /// compares the observed bit rate and packet rate with them.
    #[arg(long, value_name = "RATE,PPS", allow_hyphen_values = true)]
    pub allowance: Option<String>,
    /// The intent: latency, throughput, balanced or a TOML profile; fixes are
    /// planned with it (default balanced).
    #[arg(long, short, value_name = "P")]
    pub profile: Option<String>,
    /// Print the report as JSON (shape: /usr/share/doc/nettune/docs/doctor.md).
    #[arg(long)]
    pub json: bool,
}

/// `--sample S` checked: more than 0, at most an hour.
pub fn parse_sample(s: &str) -> anyhow::Result<Duration> {
    let v = match model::units::parse_seconds(s) {
        Ok(v) => v,
        Err(model::units::UnitError::Negative(_)) => f64::NAN,
        Err(_) => anyhow::bail!("--sample `{s}`: not a number of seconds (or 500ms, 2s, 1m)"),
    };
    if !v.is_finite() || v <= 0.0 {
        anyhow::bail!("--sample `{s}`: must be more than 0 seconds");
    }
    if v < MIN_SAMPLE_S {
        anyhow::bail!("--sample `{s}`: below the {MIN_SAMPLE_S} s minimum");
    }
    if v > MAX_SAMPLE_S {
        anyhow::bail!("--sample `{s}`: above the {MAX_SAMPLE_S} s maximum");
    }
    Ok(Duration::from_secs_f64(v))
}

/// `--allowance RATE,PPS`: the bandwidth allowance (`5gbit`) and the
/// packets-per-second allowance (`400k`, `1M`, 1 to 10^9).
pub fn parse_allowance(s: &str) -> anyhow::Result<doctor::Allowance> {
    let Some((rate, pps)) = s.split_once(',') else {
        anyhow::bail!("--allowance `{s}`: want RATE,PPS, e.g. 5gbit,400k");
    };
    let bandwidth = super::lab::parse_rate(rate)
        .map_err(|e| anyhow::anyhow!("--allowance: {}", e.to_string().replace("--rate ", "")))?;
    let p = model::units::parse_si(pps.trim().to_ascii_lowercase().as_str())
        .map_err(|e| anyhow::anyhow!("--allowance `{pps}`: {e}"))?;
    if !(1.0..=1e9).contains(&p) {
        anyhow::bail!("--allowance `{pps}`: the pps allowance must be 1 to 10^9");
    }
    Ok(doctor::Allowance {
        bandwidth_bps: Some(bandwidth),
        pps: Some(p as u64),
    })
}

/// Run `nettune doctor`; errors are one line and exit status 3.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match run_inner(args) {
        Ok(c) => Ok(c),
        Err(e) => {
            eprintln!("nettune: doctor: {e:#}");
            Ok(ExitCode::from(EXIT_ERROR))
        }
    }
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let (report, input, sample) = diagnose(&args)?;
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        doctor::render::human(&header(&input, &args, sample), &report)
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // The reader closed the pipe (`doctor | head`): the findings' exit
        // status still tells a script what was found.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok(ExitCode::from(report.exit_code()))
}

/// Read the host (sampling it live for `--sample` seconds unless `--root`
/// names a capture) and diagnose it: the report `doctor --json` prints,
/// with the input and the sampled span for the human header. `nettune
/// agent` answers `doctor` with the report.
pub fn diagnose(args: &Args) -> anyhow::Result<(doctor::Report, doctor::Input, Option<Duration>)> {
    let profile = args
        .profile
        .as_deref()
        .map(super::profile::load)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--profile: {e}"))?;
    let bdp = args
        .bdp
        .as_deref()
        .map(Bdp::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--bdp: {e}"))?;
    let allowance = args
        .allowance
        .as_deref()
        .map(parse_allowance)
        .transpose()?
        .unwrap_or_default();
    let sample = match (&args.root, &args.sample) {
        (Some(_), Some(_)) => {
            anyhow::bail!("--sample: not with --root (a capture's own samples are used)")
        }
        (Some(_), None) => None,
        (None, s) => Some(match s {
            Some(s) => parse_sample(s)?,
            None => Duration::from_secs_f64(DEFAULT_SAMPLE_S),
        }),
    };
    let root = match &args.root {
        Some(dir) => super::plan::open_root(dir)?,
        None => Root::live(),
    };
    // Sample first: the host's facts (sockstat in particular) are read at
    // the end of the window, as `bench --doctor` reads them.
    // Drops by reason over the same window, when the tracepoint opens.
    let mut watcher = host::drops::DropWatcher::open(&root, host::drops::Sampling::Adaptive);
    let first = watcher.as_mut().ok().map(|w| w.counts());
    let samples = sample
        .map(|span| sample_live_draining(&root, span, watcher.as_mut().ok()))
        .transpose()?;
    let mut input = crate::diagnose::read_host(&root).into_input();
    input.profile = profile;
    input.profile_arg = args.profile.clone();
    input.bdp = bdp;
    input.allowance = allowance;
    input.root_arg = args.root.as_ref().map(|d| d.display().to_string());
    match samples {
        Some(s) => input.samples = s,
        // A capture's samples are streamed into the window: doctor holds the
        // first and the latest sample and a summary per interval, not every
        // parsed sample.
        None => {
            let mut window = doctor::input::WindowBuilder::new();
            match host::capture::for_each_sample(&root, |s| {
                window.push(s);
                Ok(())
            }) {
                Ok(0) => input.no_samples = doctor::input::NO_SAMPLES_IN_CAPTURE.to_string(),
                // One sample leaves the rate rules skipped with "one sample only".
                Ok(1) => input.no_samples = doctor::input::ONE_SAMPLE.to_string(),
                Ok(_) => match window.finish() {
                    Some(w) => input.window = Some(w),
                    None => {
                        input.no_samples =
                            "no time between the first and the last sample".to_string()
                    }
                },
                // A corrupt index: the rate rules skip naming the file, the others run.
                Err(e) => input.no_samples = format!("samples in the capture: {e}"),
            }
        }
    }
    input.drops = match (watcher, first, sample) {
        (Ok(mut w), Some(first), Some(span)) => Ok(model::drops::DropInterval::between(
            &first,
            &w.counts(),
            span.as_secs_f64(),
        )),
        (Err(model::drops::Unavailable::NotCaptured), ..) => host::drops::captured_window(&root),
        (Err(why), ..) => Err(why),
        _ => Err(model::drops::Unavailable::NotRead),
    };
    if input.window.is_none() && input.samples.len() < 2 {
        input.since_boot = since_boot(&root);
    }
    let report = doctor::diagnose(&input);
    Ok((report, input, sample))
}

/// One reading of the root's counters (totals since boot) and its uptime,
/// for the rate rules when there is no window; `None` when the counters
/// cannot be read (a fixture without `/proc/stat`).
fn since_boot(root: &Root) -> Option<doctor::input::SinceBoot> {
    let sample = Sampler::new(root.clone()).sample().ok()?;
    let uptime_s = root
        .read_trim("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok());
    Some(doctor::input::SinceBoot { sample, uptime_s })
}

/// Samples a second apart (or `span` apart when shorter) over `span`, each
/// with the driver counters of every interface but `lo`.
pub fn sample_live(root: &Root, span: Duration) -> anyhow::Result<Vec<host::sampler::Sample>> {
    sample_live_draining(root, span, None)
}

/// [`sample_live`], draining the drop watcher's rings while it waits.
fn sample_live_draining(
    root: &Root,
    span: Duration,
    mut drops: Option<&mut host::drops::DropWatcher>,
) -> anyhow::Result<Vec<host::sampler::Sample>> {
    // Driver counters (`ethtool -S`) of every interface too, so nic-drops and
    // cloud-allowance see their growth over the window, as in a capture.
    let mut sampler = Sampler::new(root.clone()).with_nic_stats(&[]);
    let steps = span.as_secs_f64().ceil().max(1.0) as u32;
    let step = span / steps;
    let start = Instant::now();
    let mut out = Vec::with_capacity(steps as usize + 1);
    out.push(sampler.sample()?);
    for i in 1..=steps {
        let due = start + step * i;
        while let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait.min(host::drops::DRAIN_EVERY));
            if let Some(w) = drops.as_deref_mut() {
                w.drain();
            }
        }
        out.push(sampler.sample()?);
    }
    Ok(out)
}

fn header(input: &doctor::Input, args: &Args, sample: Option<Duration>) -> String {
    let s = &input.snapshot.source;
    let host = s.hostname.as_deref().unwrap_or("host");
    let kernel = s
        .kernel
        .as_deref()
        .map(|k| format!(" (kernel {k})"))
        .unwrap_or_default();
    let what = match (&args.root, sample) {
        (Some(d), _) => format!("root {}", d.display()),
        (None, Some(d)) => format!("sampled {:.1} s", d.as_secs_f64()),
        (None, None) => "no samples".to_string(),
    };
    let intent = args
        .profile
        .as_deref()
        .unwrap_or("none (fixes planned with balanced)");
    format!("nettune doctor: {host}{kernel}, {what}, intent {intent}")
}
