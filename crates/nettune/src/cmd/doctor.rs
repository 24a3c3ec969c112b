//! `nettune doctor [--root DIR] [--sample S] [--bdp RATE,RTT] [--allowance RATE,PPS] [--profile P]
//! [--json]`: read a snapshot (and, live, S seconds of counters) through
//! `host`, let `doctor` decide, print the findings. Exit status 0 when
//! nothing is above info, 1 on warnings, 2 on critical findings, 3 when
//! doctor could not run (a one-line error).

use crate::ops::doctor::{diagnose, Diagnosis, DoctorRequest};
pub use crate::ops::doctor::{
    parse_allowance, parse_sample, sample_live, DEFAULT_SAMPLE_S, MAX_SAMPLE_S, MIN_SAMPLE_S,
};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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

/// The typed request of the flags.
fn request(args: &Args) -> anyhow::Result<DoctorRequest> {
    let sample = args.sample.as_deref().map(parse_sample).transpose()?;
    DoctorRequest::parse(
        args.root.clone(),
        sample,
        args.profile.as_deref(),
        args.bdp.as_deref(),
        args.allowance.as_deref(),
    )
}

fn run_inner(args: Args) -> anyhow::Result<ExitCode> {
    let Diagnosis {
        report,
        input,
        sampled: sample,
    } = diagnose(&request(&args)?)?;
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
